"""Console-script entry points. port-check imports only what checking needs (not even typer), to
start fast."""

from __future__ import annotations

import sys

from candle_port.cli.exit_codes import ExitCode


def single_command_app(command, name: str):
    """A one-command app: typer runs its only command directly, so `port-fix PATH` works."""
    import typer

    from candle_port.cli.common import SETTINGS

    single = typer.Typer(name=name, context_settings=SETTINGS, pretty_exceptions_show_locals=False, add_completion=False)
    single.command(name)(command)
    return single


def run(start, name: str) -> None:
    """`start()`, which exits with the command's code; an internal error becomes one line."""
    try:
        start()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # an internal error: one line, no locals (they hold user source)
        print(f"{name}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(ExitCode.USAGE)


def port_check_entry() -> None:
    from candle_port.cli.check import main

    run(lambda: main(sys.argv[1:], "port-check"), "port-check")


def port_fix_entry() -> None:
    from candle_port.cli.fix import fix_command

    app = single_command_app(fix_command, "port-fix")
    run(lambda: app(prog_name="port-fix"), "port-fix")


def app_entry() -> None:
    from candle_port.cli.main import app

    run(lambda: app(prog_name="candle-port"), "candle-port")
