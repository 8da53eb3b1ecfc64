"""What a Rust rule is: the Python rules' shape (code, message, why, candle source, examples),
judging a RustSite against the op table of the candle version the crate builds with."""

from __future__ import annotations

from candle_port.pipeline.findings import Severity
from candle_port.pipeline.records import Record
from candle_port.rust.versions import Judgement, judge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar, Iterator

    from candle_port.rust.sites import RustSite

# The verdicts under which candle trains the op: no finding.
TRAINS = frozenset({"backward", "no-gradient"})


class RustHit(Record):
    """A rule's verdict on one site: the message, a severity when it differs from the rule's
    default, and the measurement it rests on (None: judged from candle's source, where the op
    table has no measurement of this case)."""

    __slots__ = ("message", "severity", "judgement")

    def __init__(self, message: str, severity: Severity | None = None, judgement: Judgement | None = None) -> None:
        self.message = message
        self.severity = severity
        self.judgement = judgement


class RustRule:
    """Base of every Rust rule; VALID and INVALID are whole Rust files (tests/test_rust_rules.py
    runs them all, judged at the newest measured candle version)."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    why: ClassVar[str]
    source: ClassVar[str]
    default_severity: ClassVar[Severity] = Severity.ERROR
    severity_note: ClassVar[str] = ""
    fix_hint: ClassVar[str] = ""
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[str, ...]] = ()

    def check(self, site: RustSite, version: str) -> Iterator[RustHit]:
        raise NotImplementedError


def measured(version: str, op: str, probe: str) -> tuple[bool, Judgement | None]:
    """(whether the site is a finding, the measurement) for one probe of the table nearest
    `version`; a probe the table lacks counts as a finding judged from candle's source."""
    found = judge(version, op, probe)
    if found is None:
        return True, None
    return found.verdict not in TRAINS, found
