"""port-check's command line, read by argparse.

typer and click cost about 50 ms of CPU at every start, a third of a run on a small file
(pre-commit, editors, CI on a changed file), so the check command parses its arguments with the
standard library. `candle-port check` hands its arguments to this same parser, so the two spellings
take the same flags; the help of the options port-fix also takes is shared (settings.HELP).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from candle_port.cli.settings import HELP
from candle_port.output import OutputFormat

def _jobs(value: str) -> int:
    try:
        jobs = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"{jobs} is below 1")
    return jobs


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter at the terminal's width, found as shutil.get_terminal_size finds
    it (COLUMNS, else the terminal, else 80) without importing shutil: argparse imports it for
    every parser it builds, help or not (2 ms of port-check's start)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


def _columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Version(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, help=HELP["version"])

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from candle_port import __version__

        print(f"candle-port {__version__}")
        parser.exit(0)


def parser(prog: str) -> argparse.ArgumentParser:
    from candle_port.pipeline.cache import DEFAULT_CACHE_DIR

    p = argparse.ArgumentParser(
        prog=prog,
        formatter_class=_Formatter,
        description="Find every construct that candle cannot train (bilinear upsampling, grid_sample, ...).",
    )
    p.add_argument("paths", nargs="*", metavar="PATHS", help=HELP["paths"])
    p.add_argument("--version", action=_Version)
    selection = p.add_argument_group("rule selection")
    selection.add_argument("--select", help=HELP["select"])
    selection.add_argument("--ignore", help=HELP["ignore"])
    output = p.add_argument_group("output")
    output.add_argument(
        "--output-format",
        type=str.lower,
        choices=[f.value for f in OutputFormat],
        default=OutputFormat.TEXT.value,
        help=HELP["output_format"] + " (default: text)",
    )
    output.add_argument("--statistics", action="store_true", help="Print the number of findings per rule code.")
    output.add_argument("--exit-zero", action="store_true", help="Exit 0 even when findings are reported (unreadable files still exit 3).")
    output.add_argument("-q", "--quiet", action="store_true", help=HELP["quiet"])
    configuration = p.add_argument_group("configuration")
    configuration.add_argument("--config", type=Path, help=HELP["config"].replace("%", "%%"))
    configuration.add_argument(
        "--include-untrained",
        action="store_true",
        help="Report a finding in code on no training path (a method of a class that is no nn.Module "
        "or loss: a predictor, a validator, plotting) as an error, not a warning.",
    )
    configuration.add_argument("--stdin-filename", help=HELP["stdin_filename"])
    configuration.add_argument("--no-cache", action="store_true", help="Neither read nor write the results cache.")
    configuration.add_argument("--cache-dir", help=f"Where to keep the results cache (default: {DEFAULT_CACHE_DIR}).")
    configuration.add_argument(
        "--candle-version",
        metavar="X.Y.Z",
        help="Judge Rust files against this candle release instead of the one their Cargo.lock (or Cargo.toml) names.",
    )
    configuration.add_argument("-j", "--jobs", type=_jobs, help=HELP["jobs"])
    return p


def parse(argv: list[str], prog: str) -> argparse.Namespace:
    """The options, or a usage error (exit 2) as argparse reports it. Options and paths may mix."""
    options = parser(prog).parse_intermixed_args(argv)
    options.output_format = OutputFormat(options.output_format)
    return options
