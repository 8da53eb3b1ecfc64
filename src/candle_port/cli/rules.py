"""`candle-port rules [CODE]`: the rule catalog, or one rule explained with its examples."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from candle_port.cli import common
from candle_port.cli.console import escape


def rules_command(
    code: Annotated[Optional[str], typer.Argument(help="A rule code (e.g. CP101) to explain in full.")] = None,
) -> None:
    """List every rule, or explain one rule with its why, source and examples."""
    from candle_port.rules import all_rules, rules_by_code
    from candle_port.rust_rules import all_rust_rules

    out = common.stdout_console()
    if code is None:
        for rule in all_rules() + all_rust_rules():
            out.print(
                f"[bold]{rule.code}[/bold] {rule.name} ({rule.default_severity.value}): {escape(rule.summary)}"
                f" [dim]\\[fix: {escape(_fixed_by(rule.code))}][/dim]"
            )
            out.print(f"    why: {escape(rule.why)}", highlight=False)
        return
    rule = {**rules_by_code(), **{r.code: r for r in all_rust_rules()}}.get(code.upper())
    if rule is None:
        common.fail_usage(f"unknown rule code {code!r}; run `candle-port rules` for the list")
    note = f"; {rule.severity_note}" if rule.severity_note else ""
    out.print(f"[bold]{rule.code}[/bold] {rule.name}  (default severity: {rule.default_severity.value}{note})")
    out.print(f"\n{escape(rule.summary)}")
    out.print(f"\n[bold]Why[/bold]: {escape(rule.why)}.\n[bold]Source[/bold]: {escape(rule.source)}")
    out.print(f"[bold]port-fix[/bold]: {escape(_fixed_by(rule.code, long=True))}")
    if rule.fix_hint:
        out.print(f"[bold]Fix[/bold]: {escape(rule.fix_hint)}")
    out.print("\n[bold]Reported[/bold]:")
    for example in rule.INVALID[:3]:
        out.print(escape(example), highlight=False)
    out.print("[bold]Not reported[/bold]:")
    for example in rule.VALID[:3]:
        out.print(escape(example), highlight=False)


def _fixed_by(code: str, long: bool = False) -> str:
    """The port-fix strategies that rewrite this code's sites (at the sites whose literals allow)."""
    from candle_port.rewriters.strategies import FIXED_CODES, LISTED_STRATEGIES

    names = [strategy for strategy, codes in FIXED_CODES.items() if code in codes and strategy in LISTED_STRATEGIES]
    if not names:
        return "none: rewrite by hand" if long else "by hand"
    if not long:
        return ", ".join(names)
    return ", ".join(f"--strategy {name}" for name in names) + (
        " (nearest/convtranspose: literal 'bilinear' and an integer, uniform scale only)" if len(names) > 1 else ""
    )
