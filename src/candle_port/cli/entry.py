"""Console-script entry points. port-check imports only what checking needs, to start fast."""

from __future__ import annotations

import sys

import typer

from candle_port.cli.common import SETTINGS
from candle_port.cli.exit_codes import ExitCode


def single_command_app(command, name: str) -> typer.Typer:
    """A one-command app: typer runs its only command directly, so `port-check PATH` works."""
    single = typer.Typer(name=name, context_settings=SETTINGS, pretty_exceptions_show_locals=False, add_completion=False)
    single.command(name)(command)
    return single


def run(application: typer.Typer, name: str) -> None:
    try:
        application(prog_name=name)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # an internal error: one line, no locals (they hold user source)
        print(f"{name}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(ExitCode.USAGE)


def port_check_entry() -> None:
    from candle_port.cli.check import check_command

    run(single_command_app(check_command, "port-check"), "port-check")


def port_fix_entry() -> None:
    from candle_port.cli.fix import fix_command

    run(single_command_app(fix_command, "port-fix"), "port-fix")


def app_entry() -> None:
    from candle_port.cli.main import app

    run(app, "candle-port")
