"""What port-fix did to a file: the result types, apart from the fixer that makes them.

A run reads these without the fixer: files.py screens the files that name no API in the main
process and reports them unchanged, and the fixer (which imports libcst, about 170 ms of CPU) is
imported only when a file needs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from candle_port.pipeline.findings import FileError


@dataclass(frozen=True)
class Fixed:
    code: str  # the finding(s) fixed, e.g. "CP101" or "CP101,CP102"
    line: int
    column: int
    strategy: str
    api: str
    note: str = ""  # what the user must know (numerics, new parameters)


@dataclass(frozen=True)
class Refused:
    code: str
    line: int
    column: int
    reason: str


@dataclass(frozen=True)
class Skipped:
    code: str
    line: int
    column: int
    reason: str
    no_grad: bool = False  # left alone: under torch.no_grad(), or on no training path (still a finding)


@dataclass(frozen=True)
class Unfixable:
    """A finding no strategy rewrites (an API without a runtime drop-in): left for the user, with a hint."""

    code: str
    line: int
    column: int
    reason: str


@dataclass
class FixResult:
    """What port-fix did to one source text. `text` is the original when nothing changed."""

    path: str
    strategy: str
    original: str
    text: str
    fixed: list[Fixed] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    unfixable: list[Unfixable] = field(default_factory=list)
    error: FileError | None = None
    import_added: str | None = None
    imports_removed: list[str] = field(default_factory=list)  # names whose torch import the fix left unused
    needs_ops_crate: bool = False  # a Rust rewrite calls candle-port-ops: its crate needs the dependency
    needs_parity_crate: bool = False  # port-fix --instrument calls candle-port-parity: likewise

    @property
    def changed(self) -> bool:
        return self.text != self.original


class FixError(ValueError):
    """An unknown strategy or option."""
