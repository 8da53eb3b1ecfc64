"""The `candle-port` app and its subcommands (check, fix, verify, rules); entry.py starts it."""

from __future__ import annotations

import typer

from candle_port.cli import common
from candle_port.cli.check import check_command
from candle_port.cli.fix import fix_command
from candle_port.cli.rules import rules_command
from candle_port.cli.verify import verify_command

app = typer.Typer(
    name="candle-port",
    help="Find and fix the PyTorch constructs that candle cannot train.",
    context_settings=common.SETTINGS,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)


@app.callback()
def _main(version: common.VersionOption = None) -> None:
    """Find and fix the PyTorch constructs that candle cannot train."""


# Each command module imports its heavy dependencies (libcst, torch) only when it runs.
app.command("check")(check_command)
app.command("fix")(fix_command)
app.command("verify")(verify_command)
app.command("rules")(rules_command)
