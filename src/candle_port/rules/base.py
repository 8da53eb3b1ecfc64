"""What a rule is: a stable code, a message, why candle cannot train it, and its own examples."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.pipeline.findings import Severity
from candle_port.pipeline.records import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:
    from typing import ClassVar, Iterator


class Hit(Record):
    """A rule's verdict on one site: the message, the fix strategies that apply, and a severity
    when this site's differs from the rule's default (a guess about a value the checker cannot
    see is a warning; the configured `severity` of the code still wins). `hint`: how to rewrite
    it by hand, where no port-fix strategy does (the rule's fix_hint). `backward_only`: only the
    backward is missing or wrong (candle runs the forward): harmless under torch.no_grad()."""

    __slots__ = ("message", "fixes", "severity", "hint", "backward_only")

    def __init__(
        self,
        message: str,
        fixes: tuple[str, ...] = (),
        severity: Severity | None = None,
        hint: str = "",
        backward_only: bool = False,
    ) -> None:
        self.message = message
        self.fixes = fixes
        self.severity = severity
        self.hint = hint
        self.backward_only = backward_only


class Rule:
    """Base of every rule. Subclasses set the class attributes and implement `check`.

    VALID holds sources the rule must leave alone, INVALID sources where it must fire (at least
    once); tests/test_rule_examples.py runs them all, and a rule without examples fails it.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    why: ClassVar[str]
    source: ClassVar[str]  # where in candle the reason comes from, and the docs page that shows it
    default_severity: ClassVar[Severity] = Severity.ERROR
    severity_note: ClassVar[str] = ""  # when some sites get another severity than the default
    fix_hint: ClassVar[str] = ""
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[str, ...]] = ()

    def check(self, site: Site) -> Iterator[Hit]:
        raise NotImplementedError


def describe_call(site: Site) -> str:
    """How the user wrote the API, for messages: `nn.Upsample`, `F.interpolate`, `torch.max_pool2d`, ..."""
    prefix = "functools.partial of " if site.kind == "partial" else ""
    if site.kind == "chosen":
        prefix = f"{site.chosen_from}, layer chosen at run time, possibly "
    shown = site.api.name
    if site.api.family not in ("interpolate", "grid_sample"):
        if site.api.is_module:
            shown = f"torchvision.ops.{site.api.name}" if site.api.family == "torchvision_ops" else f"nn.{site.api.name}"
            if site.kind == "subclass" and site.subclass_name:
                shown = f"{site.subclass_name} (a subclass of {shown})"
        elif site.qualified_name.startswith("torch.nn.functional."):
            shown = f"F.{site.api.name}"
        else:
            shown = site.qualified_name
    elif site.kind == "subclass" and site.subclass_name:
        shown = f"{site.subclass_name} (a subclass of nn.Upsample)"
    elif site.api.family == "grid_sample" or not site.api.is_module:
        shown = f"F.{site.api.name}"
    else:
        shown = f"nn.{site.api.name}"
    if site.kind == "wrapper":
        return f"{site.wrapper.rsplit('.', 1)[-1]} -> {shown}"
    if site.kind == "value":
        return f"{shown} ({site.used_as}; its layers are built elsewhere)"
    return prefix + shown
