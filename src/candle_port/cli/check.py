"""`port-check` / `candle-port check`: report what candle cannot train, without importing torch
(or typer: the command line is read by argparse, cli/check_args.py)."""

from __future__ import annotations

import argparse

from candle_port.pipeline.cache import DEFAULT_CACHE_DIR
from candle_port.cli import check_args
from candle_port.cli.console import escape
from candle_port.cli.exit_codes import ExitCode
from candle_port.cli.progress import progress_factory
from candle_port.cli.settings import effective_config, fail_usage, read_stdin_bytes, stderr_console, stdout_console
from candle_port.pipeline.findings import FileResult, Severity
from candle_port.output import OutputFormat
from candle_port.pipeline.sources import SourceError, decode_source


def main(argv: list[str], prog: str = "port-check") -> None:
    """Parse `argv` and check; exits with the command's code (cli/exit_codes.py)."""
    raise SystemExit(run_check(check_args.parse(argv, prog)))


def run_check(options: argparse.Namespace) -> int:
    """Find every construct that candle cannot train (bilinear upsampling, grid_sample, ...)."""
    paths, output_format = options.paths or ["."], options.output_format
    settings = effective_config(options.config, paths, options.select, options.ignore)
    if options.candle_version is not None:
        from candle_port.config import ConfigError, check_candle_version

        try:
            settings = settings.replace(candle_version=check_candle_version(options.candle_version, "--candle-version"))
        except ConfigError as exc:
            fail_usage(str(exc))
    settings = settings.with_options(include_untrained=options.include_untrained or None)
    from candle_port.pipeline.engine import CheckReport, check_paths

    report = CheckReport()
    if "-" in paths:
        if len(paths) > 1:
            fail_usage("'-' (stdin) cannot be combined with other paths")
        report.results.append(_check_stdin(options.stdin_filename or "<stdin>", settings))
        report.files_checked = 1
        report.errors = [r.error for r in report.results if r.error is not None]
    else:
        directory = None if options.no_cache else (options.cache_dir or settings.cache_dir or DEFAULT_CACHE_DIR)
        report = check_paths(paths, settings, cache_dir=directory, jobs=options.jobs, progress_factory=progress_factory("Checking"))
    findings = report.findings
    _emit(findings, report, output_format, options.statistics)
    stderr = stderr_console()
    if output_format is OutputFormat.TEXT:
        from candle_port.output.text import print_file_errors

        print_file_errors(stderr, report.errors)
    for directory in report.empty_directories:
        stderr.print(f"[yellow]warning[/yellow]: no Python or Rust files found under {escape(directory)}", highlight=False, soft_wrap=True)
    if not options.quiet:
        from candle_port.output.text import summary

        stderr.print(summary(findings, report.errors, report.files_checked), highlight=False, markup=False, soft_wrap=True)
    if report.errors:
        return ExitCode.BAD_INPUT
    if not options.exit_zero and any(f.severity is Severity.ERROR for f in findings):
        return ExitCode.FINDINGS
    return ExitCode.OK


def _check_stdin(filename: str, settings) -> FileResult:
    from candle_port.pipeline.checker import check_text
    from candle_port.pipeline.findings import FileError

    if filename.endswith(".rs"):
        from candle_port.rust.cargo import context_for
        from candle_port.rust.checker import check_rust_bytes

        return check_rust_bytes(read_stdin_bytes(), filename, settings, context_for(filename, settings.candle_version))
    try:
        source = decode_source(read_stdin_bytes())
    except SourceError as exc:
        return FileResult(filename, error=FileError(filename, str(exc)))
    return check_text(source.text, filename, settings)


def _emit(findings, report, output_format: OutputFormat, statistics: bool) -> None:
    out = stdout_console()
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

        print_statistics(stderr_console(), findings)
