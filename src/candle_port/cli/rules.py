"""`candle-port rules [CODE]`: the rule catalog, or one rule explained with its examples."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.markup import escape

from candle_port.cli import common


def rules_command(
    code: Annotated[Optional[str], typer.Argument(help="A rule code (e.g. CP101) to explain in full.")] = None,
) -> None:
    """List every rule, or explain one rule with its why, source and examples."""
    from candle_port.rules import all_rules, rules_by_code

    out = common.stdout_console()
    if code is None:
        for rule in all_rules():
            out.print(f"[bold]{rule.code}[/bold] {rule.name} ({rule.default_severity.value}): {escape(rule.summary)}")
        return
    rule = rules_by_code().get(code.upper())
    if rule is None:
        common.fail_usage(f"unknown rule code {code!r}; run `candle-port rules` for the list")
    note = f"; {rule.severity_note}" if rule.severity_note else ""
    out.print(f"[bold]{rule.code}[/bold] {rule.name}  (default severity: {rule.default_severity.value}{note})")
    out.print(f"\n{escape(rule.summary)}")
    out.print(f"\n[bold]Why[/bold]: {escape(rule.why)}.\n[bold]Source[/bold]: {escape(rule.source)}")
    if rule.fix_hint:
        out.print(f"[bold]Fix[/bold]: {escape(rule.fix_hint)}")
    out.print("\n[bold]Reported[/bold]:")
    for example in rule.INVALID[:3]:
        out.print(escape(example), highlight=False)
    out.print("[bold]Not reported[/bold]:")
    for example in rule.VALID[:3]:
        out.print(escape(example), highlight=False)
