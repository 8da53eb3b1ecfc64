"""Options and helpers shared by port-check and port-fix, so both behave the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from candle_port.cli.settings import (  # noqa: F401  (the typer-free helpers, re-exported for port-fix and rules)
    HELP,
    effective_config,
    fail_usage,
    read_stdin_bytes,
    split_codes,
    stderr_console,
    stdout_console,
)
from candle_port.output import OutputFormat

SETTINGS = {"help_option_names": ["-h", "--help"]}
SELECTION = "Rule selection"
CONFIGURATION = "Configuration"
OUTPUT = "Output"

Paths = Annotated[
    Optional[list[str]],
    typer.Argument(help=HELP["paths"], show_default=False),
]
Select = Annotated[
    Optional[str],
    typer.Option("--select", help=HELP["select"], rich_help_panel=SELECTION),
]
Ignore = Annotated[
    Optional[str],
    typer.Option("--ignore", help=HELP["ignore"], rich_help_panel=SELECTION),
]
ConfigPath = Annotated[
    Optional[Path],
    typer.Option("--config", help=HELP["config"].replace("[", "\\["), rich_help_panel=CONFIGURATION),
]
StdinFilename = Annotated[
    Optional[str],
    typer.Option("--stdin-filename", help=HELP["stdin_filename"], rich_help_panel=CONFIGURATION),
]
Format = Annotated[
    OutputFormat,
    typer.Option("--output-format", help=HELP["output_format"], case_sensitive=False, rich_help_panel=OUTPUT),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help=HELP["quiet"], rich_help_panel=OUTPUT)]
Jobs = Annotated[
    Optional[int],
    typer.Option("--jobs", "-j", min=1, help=HELP["jobs"], rich_help_panel=CONFIGURATION),
]


def _version(value: bool) -> None:
    if value:
        from candle_port import __version__

        print(f"candle-port {__version__}")
        raise typer.Exit(0)


VersionOption = Annotated[
    Optional[bool], typer.Option("--version", callback=_version, is_eager=True, help=HELP["version"])
]

