"""The result types every part of candle-port speaks: findings, file errors, severities."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    """How bad a finding is; only `error` findings make port-check exit 1."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    """One construct that candle cannot train, at a 1-based line and column."""

    code: str
    path: str
    line: int
    column: int
    message: str
    severity: Severity
    why: str
    fixes: tuple[str, ...] = ()
    end_line: int | None = None
    # How to rewrite it by hand, for findings no port-fix strategy rewrites (CP105, CP108, CP110).
    hint: str = ""
    # A call of a project function or class that passes its mode to the API: the wrapper's qualified
    # name (the wrapper itself is reported, and rewritten, at the API call inside it).
    wrapper: str = ""

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


@dataclass(frozen=True)
class FileError:
    """A file that could not be checked (unreadable, undecodable, unparsable), and why."""

    path: str
    reason: str
    line: int | None = None
    column: int | None = None

    def describe(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}:{self.column or 1}"
        return f"{where}: {self.reason}"


@dataclass
class FileResult:
    """What checking one file produced."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    parsed: bool = False
    # For the project index (analysis/index.py): what the module exports (ModuleSummary as JSON),
    # and the qualified names it refers to that another module of the tree may define.
    summary: dict | None = None
    refs: tuple[str, ...] = ()
    # For a file the first pass did not parse: the names it may call a wrapper by (analysis/
    # mentions.call_words); for one parsed with functions left out: the same words for those
    # functions (analysis/relevance.recheck_names). A later pass reads it again only when a new
    # wrapper has one of them.
    call_words: frozenset[str] | None = None
