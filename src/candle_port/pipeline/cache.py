"""A results cache like ruff's: keyed by file content, path, tool version and effective config.

Also by the checker's own source files (their size and mtime): an editable install updated by
`git pull` keeps its version number, and must not answer with the old rules' findings.

Entries are small JSON files written atomically (temp file + rename), so two runs sharing the
directory never see a half-written entry; an unreadable entry is simply a miss. Every edit of a
file, and every upgrade, adds entries, so once a day a run removes those unused for 30 days
(`prune`); a hit marks its entry used.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

from candle_port import __version__
from candle_port.pipeline.digests import hex_digest, new_digest
from candle_port.pipeline.findings import FileError, FileResult, Finding, Severity

DEFAULT_CACHE_DIR = ".candle_port_cache"

# What an entry holds, in the key: an entry of another layout is never read as this one. 2: a
# finding in a class is stored as if it may train, with what decides it (`untrained_if`), and the
# verdict is made each run with that run's project index (engine._decide_training).
SCHEMA = 2


def _json():
    """json, imported by the first cache read or write: a run with --no-cache never needs it."""
    import json

    return json


def checker_fingerprint() -> str:
    """Size and mtime of every source file of the checker (not runtime/ or verify/: torch-side)."""
    root = Path(__file__).resolve().parent.parent  # the candle_port package
    parts = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(("runtime/", "verify/")):
            continue
        try:
            stat = path.stat()
        except OSError:
            continue
        parts.append(f"{relative}:{stat.st_size}:{stat.st_mtime_ns}")
    return hex_digest("\n".join(parts).encode())


class ResultCache:
    def __init__(self, directory: Path, config_fingerprint: str) -> None:
        self.directory = Path(directory)
        self._salt = f"{__version__}\0{SCHEMA}\0{checker_fingerprint()}\0{config_fingerprint}\0".encode()

    def key(self, path: str, data: bytes) -> str:
        digest = new_digest(self._salt)
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(data)
        return digest.hexdigest()

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> FileResult | None:
        try:
            raw = read_entry(self._entry(key))
        except (OSError, ValueError):
            return None
        try:
            result = FileResult(raw["path"], parsed=raw.get("parsed", False))
            result.summary = raw.get("summary")
            result.refs = tuple(raw.get("refs") or ())
            words = raw.get("call_words")
            result.call_words = frozenset(words) if words is not None else None
            if result.summary is not None and not isinstance(result.summary, dict):
                return None
            if not all(_is_finding(f) for f in raw["findings"]) or not _are_strings(result.refs):
                return None
            if words is not None and not _are_strings(words):
                return None
            result.findings = [
                Finding(**{**f, "severity": Severity(f["severity"]), "fixes": tuple(f["fixes"])})
                for f in raw["findings"]
            ]
            pending = raw.get("untrained_if") or ()
            if not _are_training_conditions(pending, len(result.findings)):
                return None
            result.untrained_if = tuple((i, reason, tuple(own), tuple(map(tuple, users))) for i, reason, own, users in pending)
            if raw.get("error"):
                if not _is_file_error(raw["error"]):
                    return None
                result.error = FileError(**raw["error"])
        except (KeyError, TypeError, ValueError, AttributeError):
            return None  # valid JSON of the wrong shape (edited, another version): a miss, rewritten
        return result

    def put(self, key: str, result: FileResult) -> None:
        entry = self._entry(key)
        payload = {
            "path": result.path,
            "parsed": result.parsed,
            "findings": [_finding_fields(f) for f in result.findings],
            "error": result.error.as_dict() if result.error else None,
            "summary": result.summary,
            "refs": list(result.refs),
            "call_words": sorted(result.call_words) if result.call_words is not None else None,
            "untrained_if": [[i, reason, list(own), [list(u) for u in users]] for i, reason, own, users in result.untrained_if],
        }
        # A name no other writer uses (this process, a counter), created exclusively: what
        # tempfile.mkstemp does, without importing tempfile in every worker.
        tmp = entry.with_name(f"{entry.name}.{os.getpid()}.{next(_WRITES)}.tmp")
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            _ensure_gitignore(self.directory)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                _json().dump(payload, handle)
            os.replace(tmp, entry)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            # a cache that cannot be written is only a slower run


_WRITES = itertools.count()

# What each field of a cached finding or error must be: an edited or corrupted entry (a line of
# "NaN", a message that is a number) is a miss, never a result (SARIF would carry it).
_FINDING_FIELDS = {
    "code": str, "path": str, "line": int, "column": int, "message": str, "severity": str, "why": str,
    "fixes": list, "end_line": (int, type(None)), "hint": str, "wrapper": str,
}
_ERROR_FIELDS = {"path": str, "reason": str, "line": (int, type(None)), "column": (int, type(None))}


def _fields_are(raw, fields: dict, required: tuple[str, ...]) -> bool:
    if not isinstance(raw, dict) or set(raw) - set(fields) or not set(required) <= set(raw):
        return False
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, fields[name]):
            return False  # bool is an int to isinstance: a line of `true` is no line
        if isinstance(value, int) and name in ("line", "column", "end_line") and value < (1 if name != "column" else 0):
            return False
    return True


def _are_strings(values) -> bool:
    return isinstance(values, (list, tuple)) and all(isinstance(v, str) for v in values)


def _are_training_conditions(raw, findings: int) -> bool:
    """[[finding index, reason, [names], [[names], ...]], ...] (FileResult.untrained_if)."""
    if not isinstance(raw, (list, tuple)):
        return False
    for entry in raw:
        if not isinstance(entry, list) or len(entry) != 4:
            return False
        i, reason, own, users = entry
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < findings or not isinstance(reason, str):
            return False
        if not _are_strings(own) or not isinstance(users, list) or not all(_are_strings(u) for u in users):
            return False
    return True


def _is_finding(raw) -> bool:
    return (
        _fields_are(raw, _FINDING_FIELDS, ("code", "path", "line", "column", "message", "severity", "why", "fixes"))
        and _are_strings(raw["fixes"])
    )


def _is_file_error(raw) -> bool:
    return _fields_are(raw, _ERROR_FIELDS, ("path", "reason"))

DAY_SECONDS = 24 * 3600
UNUSED_DAYS = 30  # an entry no run read or wrote for this long is removed
PRUNE_MARKER = ".pruned"  # its mtime: when the directory was last pruned
_ABANDONED_TEMP_SECONDS = 3600  # a temporary entry this old was left by a run that was killed


def read_entry(entry: Path):
    """A cache entry's JSON (OSError or ValueError when it is missing or unreadable), marked used:
    its mtime set to now, at most once a day (atime cannot be trusted: noatime mounts), so `prune`
    keeps it. port-check's results cache and verify's rewrite cache both read through here."""
    with open(entry, "rb") as handle:
        raw = _json().loads(handle.read().decode("utf-8"))
        try:
            if time.time() - os.fstat(handle.fileno()).st_mtime > DAY_SECONDS:
                os.utime(entry)
        except OSError:
            pass
    return raw


def prune(directory: Path | str, now: float | None = None) -> int:
    """Remove the entries of `directory` unused for UNUSED_DAYS, and temporary entries of killed
    runs, at most once a day (PRUNE_MARKER). Returns how many files were removed.

    Safe beside another run: an entry it removes is a miss there, checked and written again.
    """
    directory = Path(directory)
    now = time.time() if now is None else now
    marker = directory / PRUNE_MARKER
    try:
        if now - marker.stat().st_mtime < DAY_SECONDS:
            return 0
    except FileNotFoundError:
        pass
    except OSError:
        return 0
    removed = 0
    try:
        shards = [e for e in os.scandir(directory) if len(e.name) == 2 and e.is_dir(follow_symlinks=False)]
    except OSError:
        return 0
    for shard in shards:
        try:
            entries = list(os.scandir(shard.path))
        except OSError:
            continue
        for entry in entries:
            limit = UNUSED_DAYS * DAY_SECONDS if entry.name.endswith(".json") else _ABANDONED_TEMP_SECONDS
            try:
                if entry.is_file(follow_symlinks=False) and now - entry.stat(follow_symlinks=False).st_mtime > limit:
                    os.unlink(entry.path)
                    removed += 1
            except OSError:
                continue
    try:
        marker.touch()
        os.utime(marker, (now, now))
    except OSError:
        pass
    return removed


def _finding_fields(finding: Finding) -> dict:
    return {
        "code": finding.code,
        "path": finding.path,
        "line": finding.line,
        "column": finding.column,
        "message": finding.message,
        "severity": finding.severity.value,
        "why": finding.why,
        "fixes": list(finding.fixes),
        "end_line": finding.end_line,
        "hint": finding.hint,
        "wrapper": finding.wrapper,
    }


def _ensure_gitignore(directory: Path) -> None:
    marker = directory / ".gitignore"
    if not marker.exists():
        try:
            marker.write_text("# Created by candle-port automatically.\n*\n", encoding="utf-8")
        except OSError:
            pass
