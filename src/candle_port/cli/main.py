"""The `candle-port` app and its subcommands (check, fix, verify, rules, reference, compare); entry.py starts it."""

from __future__ import annotations

import typer

from candle_port.cli import check, common
from candle_port.cli.fix import fix_command
from candle_port.cli.parity import compare_command, reference_command
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
@app.command(
    "check",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
def _check(ctx: typer.Context) -> None:
    """Find every construct that candle cannot train (port-check; `candle-port check --help`)."""
    check.main(list(ctx.args), "candle-port check")  # one parser for both spellings (cli/check_args.py)


app.command("fix")(fix_command)
app.command("verify")(verify_command)
app.command("rules")(rules_command)
app.command("reference")(reference_command)
app.command("compare")(compare_command)
