"""The rewritten copy: the source root mirrored in a temporary directory and port-fix applied there.

The user's files are only read. Every ``.py`` file of the copy that can hold a site (the same
substring prefilter port-check uses, proven on the corpus to lose nothing) goes through
``fix_source``. The copy is a mirror: rewritten files are real files, everything else symbolic
links to the originals (a directory without a rewritten file is one link), so mirroring a
package of thousands of files (transformers: 2,951) costs a few hundred file-system operations
instead of a copy, and nothing is ever written through a link.

port-fix's answer for a file is cached by content (``RewriteCache``: tool version, the checker's
and rewriters' own source files, strategy and the file's text), so a second verify of the same
package rewrites nothing again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .spec import SourceRoot

# (text, strategy, path) -> (new text, changed) or (new text, changed, fixed count, refusal notes)
RewriteFn = Callable[[str, str, str], tuple]


@dataclass
class RewriteSummary:
    root: Path  # the copy's root directory (goes on the rewritten worker's module map)
    modules: dict[str, str]  # module name -> absolute path in the copy
    scanned: int = 0
    changed: list[str] = field(default_factory=list)  # paths relative to the source root
    errors: list[str] = field(default_factory=list)
    sites_fixed: int = 0
    refused: list[str] = field(default_factory=list)  # "path:line: reason" for sites port-fix left alone
    seconds: float | None = None  # mirroring and rewriting the source root
    from_cache: int = 0  # files whose port-fix answer came from the rewrite cache
    not_imported: int | None = None  # .py files left as they are because the model does not import them

    def to_json(self) -> dict:
        out = {"scanned": self.scanned, "changed": self.changed, "errors": self.errors,
               "sites_fixed": self.sites_fixed, "refused": self.refused}
        if self.not_imported is not None:
            out["not_imported"] = self.not_imported
        if self.seconds is not None:
            out.update(seconds=self.seconds, from_cache=self.from_cache)
        return out


def cache_directory() -> Path | None:
    """``$CANDLE_PORT_VERIFY_CACHE`` (``off`` disables), else ``$XDG_CACHE_HOME/candle-port/verify``
    (``~/.cache/candle-port/verify``)."""
    configured = os.environ.get("CANDLE_PORT_VERIFY_CACHE")
    if configured is not None:
        return None if configured.strip().lower() in ("", "0", "off", "no", "false") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "candle-port" / "verify"


class RewriteCache:
    """port-fix's result per file text, as small JSON entries written atomically (a bad entry is a
    miss), laid out and pruned as port-check's results cache (candle_port.pipeline.cache.prune)."""

    def __init__(self, directory: Path, strategy: str):
        from candle_port import __version__
        from candle_port.pipeline.cache import checker_fingerprint

        self.directory = directory
        self._salt = f"{__version__}\0{checker_fingerprint()}\0{strategy}\0".encode()

    def _entry(self, text: str) -> Path:
        key = hashlib.sha256(self._salt + text.encode("utf-8", "surrogatepass")).hexdigest()
        return self.directory / key[:2] / f"{key}.json"

    def get(self, text: str) -> tuple | None:
        from candle_port.pipeline.cache import read_entry

        try:
            raw = read_entry(self._entry(text))
            return (text if raw["text"] is None else raw["text"], bool(raw["changed"]), int(raw["fixed"]),
                    [str(r) for r in raw["refused"]])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, text: str, outcome: tuple) -> None:
        new_text, changed, fixed, refused = outcome
        entry = self._entry(text)
        payload = {"text": None if new_text == text else new_text, "changed": changed, "fixed": fixed,
                   "refused": list(refused)}
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh)
            os.replace(tmp, entry)
        except OSError:  # a cache that cannot be written is only slower
            pass


def fix_with_port_fix(text: str, strategy: str, path: str) -> tuple[str, bool, int, list[str]]:
    """The real rewrite: candle_port.api.fix_source (port-fix)."""
    from candle_port.api import fix_source

    result = fix_source(text, strategy=strategy, path=path)
    error = getattr(result, "error", None)
    if error is not None:
        raise ValueError(getattr(error, "message", None) or str(error))
    refused = [f"{getattr(r, 'line', '?')}: {getattr(r, 'reason', r)}" for r in getattr(result, "refused", [])]
    return result.text, bool(result.changed), len(getattr(result, "fixed", [])), refused


_PORT_FIX = fix_with_port_fix  # the real port-fix: only its answers go to the rewrite cache


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n == "__pycache__" or n.endswith((".pyc", ".pyo"))}


def _mirror(source: Path, target: Path, written: dict[str, str]) -> None:
    """``target`` mirrors the directory ``source``: a rewritten file (``written``: relative path ->
    text) is a real file, every directory on the way to one a real directory, and everything else
    one symbolic link to the original (a whole directory with no rewritten file is one link), so a
    package of thousands of files costs a few hundred file-system operations."""
    needed = {"."}
    for rel in written:
        parent = Path(rel).parent
        while parent.as_posix() not in needed:
            needed.add(parent.as_posix())
            parent = parent.parent

    def walk(rel_dir: str) -> None:
        here = target / rel_dir
        here.mkdir(parents=True, exist_ok=True)
        with os.scandir(source / rel_dir) as entries:
            for entry in entries:
                rel = Path(rel_dir, entry.name).as_posix()
                if entry.name == "__pycache__" or entry.name.endswith((".pyc", ".pyo")):
                    continue
                if rel in written:
                    with open(here / entry.name, "w", encoding="utf-8", newline="") as fh:
                        fh.write(written[rel])
                elif rel in needed and entry.is_dir(follow_symlinks=False):
                    walk(rel)
                else:
                    os.symlink(os.path.abspath(entry.path), here / entry.name)

    walk(".")


def make_rewritten_copy(
    source: SourceRoot, dest: Path, strategy: str, rewrite: RewriteFn | None = None,
    entries: list[Path] | None = None,
) -> RewriteSummary:
    """Mirror ``source`` into ``dest`` and rewrite the files that may hold a site (see _mirror):
    with ``entries`` (the model's module, import_graph.entry_files), only the files they import."""
    from candle_port.pipeline.prefilter import may_hold_sites

    from .import_graph import imported_files, linked_directories

    started = time.monotonic()
    cache = None
    if rewrite is None and fix_with_port_fix is _PORT_FIX:  # not a planted rewrite (tests)
        directory = cache_directory()
        cache = RewriteCache(directory, strategy) if directory is not None else None
    rewrite = rewrite or fix_with_port_fix
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / source.path.name
    if source.path.is_file():
        files = [source.path]
        base = source.path.parent
    else:
        files = sorted(p for p in source.path.rglob("*.py") if "__pycache__" not in p.parts)
        base = source.path
    summary = RewriteSummary(root=dest, modules={
        name: str(dest / rel) if source.is_one_module else str(target / rel) for name, rel in source.modules.items()
    })
    if source.path.is_dir():
        for rel, points_to in linked_directories(source.path):
            summary.errors.append(f"{rel}: a symbolic link to {points_to}, not followed: nothing under it is "
                                  f"rewritten (give that directory as --source-root to rewrite it)")
        if entries is not None:
            imported = imported_files(source, entries)
            summary.not_imported = sum(1 for file in files if file.resolve() not in imported)
            files = [file for file in files if file.resolve() in imported]
    written: dict[str, str] = {}
    for file in files:
        summary.scanned += 1
        rel = file.relative_to(base).as_posix()
        with open(file, encoding="utf-8", newline="") as fh:
            try:
                text = fh.read()
            except UnicodeDecodeError:
                summary.errors.append(f"{rel}: not UTF-8, left unchanged")
                continue
        if not may_hold_sites(text):
            continue
        outcome = cache.get(text) if cache is not None else None
        if outcome is not None:
            summary.from_cache += 1
        else:
            try:
                outcome = tuple(rewrite(text, strategy, str(file)))
            except Exception as exc:  # one file's failure must not hide the others' results
                summary.errors.append(f"{rel}: rewrite failed: {type(exc).__name__}: {exc}")
                continue
            if cache is not None and len(outcome) >= 4:
                cache.put(text, outcome)
        new_text, changed = outcome[0], bool(outcome[1])
        if len(outcome) >= 4:
            summary.sites_fixed += int(outcome[2])
            summary.refused.extend(f"{rel}:{note}" for note in outcome[3])
        if changed and new_text != text:
            written[rel] = new_text
            summary.changed.append(rel)
    if source.path.is_file():
        if source.path.name in written:
            target.write_text(written[source.path.name], encoding="utf-8", newline="")
        else:
            shutil.copy2(source.path, target)
    else:
        _mirror(source.path, target, written)
    if cache is not None:
        from candle_port.pipeline.cache import prune

        prune(cache.directory)  # once a day: entries unused for 30 days go, as port-check's
    summary.seconds = round(time.monotonic() - started, 2)
    return summary


def use_prepared_copy(source: SourceRoot, prepared: Path, dest: Path) -> RewriteSummary:
    """A hand-made rewritten copy of ``source`` (tests, planted rewrites) used as is."""
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / source.path.name
    if prepared.is_file():
        shutil.copy2(prepared, target)
    else:
        shutil.copytree(prepared, target, ignore=_ignore)
    modules = {name: str(dest / rel) if source.is_one_module else str(target / rel) for name, rel in source.modules.items()}
    changed = [source.path.name] if prepared.is_file() else sorted(
        p.relative_to(target).as_posix() for p in target.rglob("*.py"))
    return RewriteSummary(root=dest, modules=modules, scanned=len(changed), changed=changed)
