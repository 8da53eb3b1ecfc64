"""The measured op tables, one per candle version, and the verdict of one measured probe.

`verify/candle_ops.json` is the table of the version its header names (0.11.0 today); every
`verify/candle_ops-<X.Y.Z>.json` beside it is another version's, in the same format
(scripts/gen_optable.py). A new table file needs no code change: it is found by its name. A
version without a table is judged by the nearest measured one, and the finding says which.
"""

from __future__ import annotations

import functools
import json
import os

from candle_port.pipeline.records import Record
from candle_port.rust.cargo import version_key

_TABLE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "verify")
_BASE = "candle_ops.json"
_PREFIX = "candle_ops-"


class Judgement(Record):
    """What the table measured for one probe: `verdict` ("backward", "forward-only",
    "wrong-gradient", "silent-cut", "no-op", ...), `evidence` (the measurement's words), and the
    version of the table that said it."""

    __slots__ = ("verdict", "evidence", "table_version")

    def __init__(self, verdict: str, evidence: str, table_version: str) -> None:
        self.verdict = verdict
        self.evidence = evidence
        self.table_version = table_version


@functools.lru_cache(maxsize=1)
def table_files() -> dict[str, str]:
    """Measured version -> its table file."""
    found: dict[str, str] = {}
    try:
        names = sorted(os.listdir(_TABLE_DIR))
    except OSError:
        return found
    for name in names:
        if name.startswith(_PREFIX) and name.endswith(".json"):
            found[name[len(_PREFIX) : -len(".json")]] = os.path.join(_TABLE_DIR, name)
    base = os.path.join(_TABLE_DIR, _BASE)
    if os.path.isfile(base):
        version = _load(base).get("candle", {}).get("version", "")
        if version:
            found.setdefault(version, base)
    return found


def measured_versions() -> list[str]:
    return sorted(table_files(), key=version_key)


def nearest_measured(version: str) -> str:
    """The measured version closest to `version`: the same one, else the nearest on its
    major.minor line, else the nearest release at all (ties go to the later one)."""
    versions = measured_versions()
    if not versions:
        return ""
    if not version or version in versions:
        return version or versions[-1]
    wanted = version_key(version)

    def distance(candidate: str):
        have = version_key(candidate)
        return (abs(have[0] - wanted[0]), abs(have[1] - wanted[1]), abs(have[2] - wanted[2]), -have[1], -have[2])

    return min(versions, key=distance)


@functools.lru_cache(maxsize=16)
def _load(path: str) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def judge(version: str, op: str, probe: str) -> Judgement | None:
    """The verdict measured for `probe` of `op` in the table nearest `version`; None when that
    table has no such measurement (the rule then judges from candle's source)."""
    measured = nearest_measured(version)
    path = table_files().get(measured)
    if path is None:
        return None
    for entry in _load(path).get("ops", {}).get(op, {}).get("measured", []):
        if entry.get("probe") == probe:
            return Judgement(entry.get("verdict", ""), entry.get("evidence", ""), measured)
    return None


def tables_fingerprint() -> str:
    """Name, size and mtime of every table file: part of a Rust file's cache key (a new or
    re-measured table changes the verdicts; the checker fingerprint covers only *.py)."""
    parts = []
    for version, path in sorted(table_files().items()):
        try:
            info = os.stat(path)
        except OSError:
            continue
        parts.append(f"{version}:{os.path.basename(path)}:{info.st_size}:{info.st_mtime_ns}")
    return "\n".join(parts)
