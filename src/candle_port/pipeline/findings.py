"""The result types every part of candle-port speaks: findings, file errors, severities."""

from __future__ import annotations

import enum

from candle_port.pipeline.records import MutableRecord, Record


class Severity(str, enum.Enum):
    """How bad a finding is; only `error` findings make port-check exit 1."""

    ERROR = "error"
    WARNING = "warning"


class Finding(Record):
    """One construct that candle cannot train, at a 1-based line and column.

    `hint`: how to rewrite it by hand, for findings no port-fix strategy rewrites (CP105, CP108,
    CP110). `wrapper`: for a call of a project function or class that passes its mode to the API,
    the wrapper's qualified name (the wrapper itself is reported, and rewritten, at the API call
    inside it). `untrained`: why the site is on no training path, when that made it a warning
    (analysis/training.py; port-fix leaves it alone)."""

    __slots__ = ("code", "path", "line", "column", "message", "severity", "why", "fixes", "end_line", "hint", "wrapper", "untrained")

    def __init__(
        self,
        code: str,
        path: str,
        line: int,
        column: int,
        message: str,
        severity: Severity,
        why: str,
        fixes: tuple[str, ...] = (),
        end_line: int | None = None,
        hint: str = "",
        wrapper: str = "",
        untrained: str = "",
    ) -> None:
        self.code = code
        self.path = path
        self.line = line
        self.column = column
        self.message = message
        self.severity = severity
        self.why = why
        self.fixes = fixes
        self.end_line = end_line
        self.hint = hint
        self.wrapper = wrapper
        self.untrained = untrained

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line if self.end_line is not None else self.line,
            "message": self.message,
            "severity": self.severity.value,
            "why": self.why,
            "fixes": list(self.fixes),
            "hint": self.hint,
        }


class FileError(Record):
    """A file that could not be checked (unreadable, undecodable, unparsable), and why."""

    __slots__ = ("path", "reason", "line", "column")

    def __init__(self, path: str, reason: str, line: int | None = None, column: int | None = None) -> None:
        self.path = path
        self.reason = reason
        self.line = line
        self.column = column

    def describe(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}:{self.column or 1}"
        return f"{where}: {self.reason}"


class FileResult(MutableRecord):
    """What checking one file produced.

    For the project index (analysis/index.py): `summary`, what the module exports (ModuleSummary
    as JSON), and `refs`, the qualified names it refers to that another module of the tree may
    define. `call_words`: for a file the first pass did not parse, the names it may call a wrapper
    by (analysis/mentions.call_words); for one parsed with functions left out, the same words for
    those functions (analysis/relevance.recheck_names). A later pass reads it again only when a
    new wrapper has one of them. `untrained_if`: for findings made as if they may train whose
    verdict depends on other modules' classes, (finding's index, reason, names that must all be
    plain classes, names of each class that keeps it on the path when all plain): the engine
    decides them with the whole project index (engine._decide_training, analysis/training.py)."""

    __slots__ = ("path", "findings", "error", "parsed", "summary", "refs", "call_words", "untrained_if")

    def __init__(
        self,
        path: str,
        findings: list[Finding] | None = None,
        error: FileError | None = None,
        parsed: bool = False,
        summary: dict | None = None,
        refs: tuple[str, ...] = (),
        call_words: frozenset[str] | None = None,
        untrained_if: tuple = (),
    ) -> None:
        self.path = path
        self.findings = [] if findings is None else findings
        self.error = error
        self.parsed = parsed
        self.summary = summary
        self.refs = refs
        self.call_words = call_words
        self.untrained_if = untrained_if
