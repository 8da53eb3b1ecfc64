"""What port-check and port-fix share without typer: the effective configuration, usage errors,
the consoles and stdin. port-check's start imports this, not cli/common.py (typer's options)."""

from __future__ import annotations

import sys
from pathlib import Path

from candle_port.cli.console import console_for, escape
from candle_port.cli.exit_codes import ExitCode
from candle_port.config import Config, ConfigError, check_codes, load_config

# The help of the options both commands take, one text each (typer's in cli/common.py, argparse's
# in cli/check_args.py).
HELP = {
    "paths": "Files or directories to process; '-' reads stdin. Default: the current directory.",
    "select": "Comma-separated rule codes or prefixes to enable (e.g. CP101,CP102).",
    "ignore": "Comma-separated rule codes or prefixes to disable.",
    "config": "A pyproject.toml (its [tool.candle-port] table) or a TOML file of the same keys.",
    "stdin_filename": "The path to report for source read from stdin.",
    "output_format": "How to report findings.",
    "quiet": "Print no summary on stderr.",
    "jobs": "Worker processes (default: every core).",
    "version": "Show the version and exit.",
}


def split_codes(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(code.strip().upper() for code in value.split(",") if code.strip())


def effective_config(config_path: Path | None, paths: list[str], select: str | None, ignore: str | None) -> Config:
    """The nearest [tool.candle-port] (or --config), with --select/--ignore applied on top."""
    start = None
    for given in paths:
        if given != "-":
            start = Path(given)
            break
    try:
        config = load_config(config_path, start if start is not None and start.exists() else None)
        selected, ignored = split_codes(select), split_codes(ignore)
        if selected == ():  # `--select ""` or `--select ,`: every rule off, and "no findings" would be a lie
            raise ConfigError(f"--select {select!r} names no rule code; omit it to run every rule")
        check_codes(selected or (), "--select")
        check_codes(ignored or (), "--ignore")
    except ConfigError as exc:
        fail_usage(str(exc))
    return config.with_options(select=selected, ignore=ignored)


def stderr_console():
    """rich's Console for stderr, or a plain one where nothing would be styled (cli/console.py)."""
    return console_for(stderr=True)


def stdout_console():
    return console_for(stderr=False)


def fail_usage(message: str) -> None:
    """A one-line usage error on stderr, exit 2 (SystemExit passes through typer's commands too)."""
    stderr_console().print(f"[bold red]error[/bold red]: {escape(message)}", highlight=False, soft_wrap=True)
    raise SystemExit(ExitCode.USAGE)


def read_stdin_bytes() -> bytes:
    return sys.stdin.buffer.read()
