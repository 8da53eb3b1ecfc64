"""Entry points: the `candle-port` app with its subcommands, and the port-check / port-fix shortcuts."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from candle_port.cli import common
from candle_port.cli.check import check_command
from candle_port.cli.entry import run



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


app.command("check")(check_command)


def _register_optional() -> None:
    """Commands owned by other modules; each imports its heavy dependencies lazily."""
    try:
        from candle_port.cli.fix import fix_command
    except ImportError:  # pragma: no cover - during development only
        fix_command = None
    if fix_command is not None:
        app.command("fix")(fix_command)
    try:
        from candle_port.cli.verify import verify_command
    except ImportError:  # pragma: no cover
        verify_command = None
    if verify_command is not None:
        app.command("verify")(verify_command)
    from candle_port.cli.rules import rules_command

    app.command("rules")(rules_command)


_register_optional()


def app_entry() -> None:
    run(app, "candle-port")
