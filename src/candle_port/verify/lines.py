"""Map a location in the rewritten copy (``copy/pkg/a.py:13``) back to the user's own file and line.

port-fix adds lines (an import, a longer call split over lines), so the copy's line numbers drift
from the user's. A line diff of the two texts maps each copy line to its original: unchanged lines
exactly, rewritten ones to the start of the code they replace.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path
from typing import Any


def line_map(original: list[str], rewritten: list[str]) -> list[int]:
    """For each rewritten line (0-based), the original line (0-based) it comes from."""
    mapping = [0] * len(rewritten)
    matcher = difflib.SequenceMatcher(None, original, rewritten, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for j in range(j1, j2):
            if tag == "equal":
                mapping[j] = i1 + (j - j1)
            elif i2 > i1:  # replaced: the same offset, clamped into the original block
                mapping[j] = i1 + min(j - j1, i2 - i1 - 1)
            else:  # inserted: the original line that follows the insertion
                mapping[j] = min(i1, max(len(original) - 1, 0))
    return mapping


@lru_cache(maxsize=256)
def _file_map(original: str, rewritten: str) -> tuple[int, ...]:
    def read(path: str) -> list[str]:
        try:
            return Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return []

    return tuple(line_map(read(original), read(rewritten)))


def map_location(where: str, copy_root: Path, original_root: Path) -> str:
    """``<copy>/a.py:13`` -> ``<original>/a.py:12``; other locations are returned unchanged."""
    copy, original = str(copy_root), str(original_root)
    path, sep, line = where.rpartition(":")
    if not sep or not path.startswith(copy) or not line.isdigit():
        return where
    target = original + path[len(copy):]
    mapping = _file_map(target, path)
    index = int(line) - 1
    if 0 <= index < len(mapping):
        return f"{target}:{mapping[index] + 1}"
    return f"{target}:{line}"


def map_locations_in_text(text: str, copy_root: Path, original_root: Path) -> str:
    """Every ``<copy>/a.py:13`` in a message (a trace error naming the model's line) mapped as
    map_location does."""
    import re

    return re.sub(r"\S+\.py:\d+", lambda m: map_location(m.group(0), copy_root, original_root), text)


def map_graph_locations(graph: dict[str, Any] | None, copy_root: Path, original_root: Path) -> None:
    """Rewrite every location of a classified graph in place (call before the copy is deleted)."""
    if not graph:
        return
    for row in graph.get("summary", []):
        row["where"] = [map_location(w, copy_root, original_root) for w in row["where"]]
    for key in ("lacking", "wrong"):
        for row in graph.get(key, []):
            row["where"] = map_location(row["where"], copy_root, original_root)


def map_result_locations(value: Any, copy_root: Path, original_root: Path) -> None:
    """Every location in a candle result (verify --candle's run of the rewritten copy), from the
    copy to the user's file and line, in place: ``location``, each of a suspect's ``locations``,
    and the ``file:line`` a message or an error names (the copy is deleted once the run ends)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "location" and isinstance(item, str):
                value[key] = map_location(item, copy_root, original_root)
            elif key == "locations" and isinstance(item, list):
                value[key] = [map_location(w, copy_root, original_root) if isinstance(w, str) else w for w in item]
            elif key in ("error", "message") and isinstance(item, str):
                value[key] = map_locations_in_text(item, copy_root, original_root)
            else:
                map_result_locations(item, copy_root, original_root)
    elif isinstance(value, list):
        for item in value:
            map_result_locations(item, copy_root, original_root)
