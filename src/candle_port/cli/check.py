"""`port-check` / `candle-port check`: report what candle cannot train, without importing torch."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from candle_port.cache import DEFAULT_CACHE_DIR
from candle_port.cli import common
from candle_port.cli.console import escape
from candle_port.cli.exit_codes import ExitCode
from candle_port.cli.progress import progress_factory
from candle_port.findings import FileResult, Severity
from candle_port.output import OutputFormat
from candle_port.sources import SourceError, decode_source


def check_command(
    paths: common.Paths = None,
    select: common.Select = None,
    ignore: common.Ignore = None,
    config: common.ConfigPath = None,
    output_format: common.Format = OutputFormat.TEXT,
    statistics: Annotated[bool, typer.Option("--statistics", help="Print the number of findings per rule code.", rich_help_panel=common.OUTPUT)] = False,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when findings are reported (unreadable files still exit 3).")] = False,
    stdin_filename: common.StdinFilename = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the results cache.", rich_help_panel=common.CONFIGURATION)] = False,
    cache_dir: Annotated[Optional[str], typer.Option("--cache-dir", help=f"Where to keep the results cache (default: {DEFAULT_CACHE_DIR}).", rich_help_panel=common.CONFIGURATION)] = None,
    jobs: common.Jobs = None,
    quiet: common.Quiet = False,
    version: common.VersionOption = None,
) -> None:
    """Find every construct that candle cannot train (bilinear upsampling, grid_sample, ...)."""
    paths = paths or ["."]
    settings = common.effective_config(config, paths, select, ignore)
    from candle_port.engine import CheckReport, check_paths

    report = CheckReport()
    if "-" in paths:
        if len(paths) > 1:
            common.fail_usage("'-' (stdin) cannot be combined with other paths")
        report.results.append(_check_stdin(stdin_filename or "<stdin>", settings))
        report.files_checked = 1
        report.errors = [r.error for r in report.results if r.error is not None]
    else:
        directory = None if no_cache else (cache_dir or settings.cache_dir or DEFAULT_CACHE_DIR)
        report = check_paths(paths, settings, cache_dir=directory, jobs=jobs, progress_factory=progress_factory("Checking"))
    findings = report.findings
    _emit(findings, report, output_format, statistics)
    stderr = common.stderr_console()
    if output_format is OutputFormat.TEXT:
        from candle_port.output.text import print_file_errors

        print_file_errors(stderr, report.errors)
    for directory in report.empty_directories:
        stderr.print(f"[yellow]warning[/yellow]: no Python files found under {escape(directory)}", highlight=False, soft_wrap=True)
    if not quiet:
        from candle_port.output.text import summary

        stderr.print(summary(findings, report.errors, report.files_checked), highlight=False, markup=False, soft_wrap=True)
    if report.errors:
        raise typer.Exit(ExitCode.BAD_INPUT)
    if not exit_zero and any(f.severity is Severity.ERROR for f in findings):
        raise typer.Exit(ExitCode.FINDINGS)
    raise typer.Exit(ExitCode.OK)


def _check_stdin(filename: str, settings) -> FileResult:
    from candle_port.checker import check_text
    from candle_port.findings import FileError

    try:
        source = decode_source(common.read_stdin_bytes())
    except SourceError as exc:
        return FileResult(filename, error=FileError(filename, str(exc)))
    return check_text(source.text, filename, settings)


def _emit(findings, report, output_format: OutputFormat, statistics: bool) -> None:
    out = common.stdout_console()
    if output_format is OutputFormat.TEXT:
        from candle_port.output.text import print_findings, print_statistics

        if statistics:
            print_statistics(out, findings)
        else:
            print_findings(out, findings)
        return
    if output_format is OutputFormat.JSON:
        from candle_port.output.json_format import render
    elif output_format is OutputFormat.SARIF:
        from candle_port.output.sarif import render
    else:
        from candle_port.output.github import render
    text = render(findings, report.errors)
    if text:
        print(text)
    if statistics:
        from candle_port.output.text import print_statistics

        print_statistics(common.stderr_console(), findings)
