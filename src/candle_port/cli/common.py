"""Options and helpers shared by port-check and port-fix, so both behave the same way."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from candle_port.cli.console import console_for, escape
from candle_port.config import Config, ConfigError, check_codes, load_config
from candle_port.output import OutputFormat

SETTINGS = {"help_option_names": ["-h", "--help"]}
SELECTION = "Rule selection"
CONFIGURATION = "Configuration"
OUTPUT = "Output"

Paths = Annotated[
    Optional[list[str]],
    typer.Argument(help="Files or directories to process; '-' reads stdin. Default: the current directory.", show_default=False),
]
Select = Annotated[
    Optional[str],
    typer.Option("--select", help="Comma-separated rule codes or prefixes to enable (e.g. CP101,CP102).", rich_help_panel=SELECTION),
]
Ignore = Annotated[
    Optional[str],
    typer.Option("--ignore", help="Comma-separated rule codes or prefixes to disable.", rich_help_panel=SELECTION),
]
ConfigPath = Annotated[
    Optional[Path],
    typer.Option("--config", help="A pyproject.toml (its \\[tool.candle-port] table) or a TOML file of the same keys.", rich_help_panel=CONFIGURATION),
]
StdinFilename = Annotated[
    Optional[str],
    typer.Option("--stdin-filename", help="The path to report for source read from stdin.", rich_help_panel=CONFIGURATION),
]
Format = Annotated[
    OutputFormat,
    typer.Option("--output-format", help="How to report findings.", case_sensitive=False, rich_help_panel=OUTPUT),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Print no summary on stderr.", rich_help_panel=OUTPUT)]
Jobs = Annotated[
    Optional[int],
    typer.Option("--jobs", "-j", min=1, help="Worker processes (default: every core).", rich_help_panel=CONFIGURATION),
]


def _version(value: bool) -> None:
    if value:
        from candle_port import __version__

        print(f"candle-port {__version__}")
        raise typer.Exit(0)


VersionOption = Annotated[
    Optional[bool], typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
]


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
    stderr_console().print(f"[bold red]error[/bold red]: {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def read_stdin_bytes() -> bytes:
    return sys.stdin.buffer.read()
