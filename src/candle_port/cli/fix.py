"""`port-fix` / `candle-port fix`: rewrite the sites port-check reports, without breaking code.

Exit codes: 0 done (refused sites are reported, not failures: port-check is the gate for what is
left); 1 with --check when a file would change; 2 usage, configuration or internal error; 3 some
file could not be read, decoded, parsed or written; 4 some file was left untouched to protect it
(edited since it was read, read-only, hard-linked, a symlink out of the given paths). With 3 and 4
every other file was still fixed; when several apply the highest wins.
"""

from __future__ import annotations

import enum
import errno
import json
import os
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import typer

from candle_port.cli import common
from candle_port.cli.console import escape
from candle_port.cli.exit_codes import ExitCode, worst


class Strategy(str, enum.Enum):
    RUNTIME = "runtime"
    NEAREST = "nearest"
    CONVTRANSPOSE = "convtranspose"
    DETACH = "detach"


class SummaryFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"


def fix_command(
    paths: common.Paths = None,
    strategy: Annotated[
        Optional[Strategy],
        typer.Option(
            "--strategy",
            help="runtime: exact drop-in (default); nearest: mode='nearest' (numerics change); "
            "convtranspose: learnable transposed conv, exact at init; detach: x.detach() before a resize (gradients change by design). Default: `strategy` in \\[tool.candle-port], else runtime.",
            case_sensitive=False,
        ),
    ] = None,
    diff: Annotated[bool, typer.Option("--diff", help="Print a unified diff on stdout; write nothing.", rich_help_panel=common.OUTPUT)] = False,
    check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 if any file would change (for CI).", rich_help_panel=common.OUTPUT)] = False,
    vendor: Annotated[
        Optional[Path],
        typer.Option(
            "--vendor",
            help="Write the runtime as one module DIR/candle_port_runtime.py (torch only) and import it from there, "
            "so the model does not depend on candle-port.",
            rich_help_panel=common.CONFIGURATION,
        ),
    ] = None,
    select: common.Select = None,
    ignore: common.Ignore = None,
    config: common.ConfigPath = None,
    stdin_filename: common.StdinFilename = None,
    output_format: Annotated[
        SummaryFormat,
        typer.Option("--output-format", help="The summary: text on stderr, or json (on stdout; on stderr with '-').", case_sensitive=False, rich_help_panel=common.OUTPUT),
    ] = SummaryFormat.TEXT,
    force_read_only: Annotated[
        bool,
        typer.Option("--force-read-only", help="Rewrite read-only files too (they stay read-only); by default they are left alone and reported (exit 4).", rich_help_panel=common.CONFIGURATION),
    ] = False,
    include_no_grad: Annotated[
        bool,
        typer.Option("--include-no-grad", help="Also rewrite sites under torch.no_grad() / torch.inference_mode() (left alone by default: no gradient flows there).", rich_help_panel=common.CONFIGURATION),
    ] = False,
    ops_crate: Annotated[
        Optional[str],
        typer.Option(
            "--ops-crate",
            help="Where Rust code rewritten to candle-port-ops gets that crate: a directory (a path dependency in Cargo.toml) "
            "or a version requirement. Default: this installation's crates/candle-port-ops when it has one, else its version.",
            rich_help_panel=common.CONFIGURATION,
        ),
    ] = None,
    instrument: Annotated[
        bool,
        typer.Option(
            "--instrument",
            help="Rust only, instead of the fixes: make each candle module's forward record its output under its torch name "
            "(the VarBuilder prefix it was built with), so `candle-port compare` names the first module that diverges. "
            "The crate gets candle-port-parity.",
            rich_help_panel=common.CONFIGURATION,
        ),
    ] = False,
    parity_crate: Annotated[
        Optional[str],
        typer.Option(
            "--parity-crate",
            help="With --instrument: where the crate gets candle-port-parity, a directory (a path dependency) or a version requirement. "
            "Default: this installation's crates/candle-port-parity when it has one, else its version.",
            rich_help_panel=common.CONFIGURATION,
        ),
    ] = None,
    include_untrained: Annotated[
        bool,
        typer.Option("--include-untrained", help="Also rewrite sites on no training path (a method of a class that is no nn.Module or loss; left alone by default).", rich_help_panel=common.CONFIGURATION),
    ] = False,
    jobs: common.Jobs = None,
    quiet: common.Quiet = False,
    version: common.VersionOption = None,
) -> None:
    """Rewrite what candle cannot train (interpolate, pooling, grid_sample, transposed and 3-D convolutions) into ops it can differentiate (runtime, nearest or convtranspose)."""
    paths = paths or ["."]
    settings = common.effective_config(config, paths, select, ignore).with_options(include_no_grad=include_no_grad or None, include_untrained=include_untrained or None)
    chosen = strategy.value if strategy is not None else settings.strategy
    if instrument and strategy is not None:
        common.fail_usage("--instrument rewrites Rust only and takes no --strategy")
    if parity_crate is not None and not instrument:
        common.fail_usage("--parity-crate goes with --instrument")
    write = not (diff or check)
    from candle_port.rewriters.files import fix_files, unified_diff

    if "-" in paths:
        if len(paths) > 1:
            common.fail_usage("'-' (stdin) cannot be combined with other paths")
        report = _fix_stdin(stdin_filename or "<stdin>", chosen, settings, vendor, instrument)
        result = report.results[0] if report.results else None
        if vendor is not None and chosen != "nearest" and write and result is not None and result.changed:
            report.vendored = _write_vendored(vendor)  # before the text that imports it is emitted
        if result is not None and not check:
            if diff:
                sys.stdout.write(unified_diff(result))
            else:
                sys.stdout.flush()
                sys.stdout.buffer.write(report.stdin_source.encode(result.text))  # same encoding, BOM, newlines
                sys.stdout.buffer.flush()
        elif result is None and not (check or diff):
            sys.stdout.flush()
            sys.stdout.buffer.write(report.raw_input)  # unreadable: pass the bytes through unchanged
            sys.stdout.buffer.flush()
    else:
        from candle_port.rewriters.vendor import VendorError
        from candle_port.rewriters.writeback import WriteFailed, WriteRefused

        stop = _StopSignals()  # Ctrl-C, SIGTERM, SIGHUP: stop once, report what was written
        try:
            try:
                report = fix_files(
                    paths, chosen, settings, write=write, vendor=vendor, jobs=jobs, force_read_only=force_read_only, ops_crate=ops_crate,
                    instrument=instrument, parity_crate=parity_crate,
                )
            except (OSError, VendorError, WriteFailed, WriteRefused) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                common.fail_usage(f"cannot write the vendored runtime, no file was changed: {reason}")
            stop.hold()  # from here on a signal cannot cut the report short
            if diff:
                for result in report.changed:
                    sys.stdout.write(unified_diff(result))
            _report(report, "instrument" if instrument else chosen, output_format, quiet, write, check)
        finally:
            stop.restore()
    _report(report, "instrument" if instrument else chosen, output_format, quiet, write, check, stdin=True)


def _report(report, chosen: str, output_format, quiet: bool, write: bool, check: bool, stdin: bool = False) -> None:
    """The summary, the list of files rewritten before an interrupt, and the exit code.

    When the summary cannot be written (stdout closed or on a full disk), the files changed are
    still said on stderr where possible, and the exit code is at least 3, never 2 (which would say
    nothing was done).
    """
    code = ExitCode.INTERRUPTED if report.interrupted else _exit_code(report, check)
    try:
        if output_format is SummaryFormat.JSON and not stdin and sys.stdout is None:
            raise OSError(errno.EBADF, "stdout is closed")  # print() would drop it without a word
        _summarize(report, chosen, output_format, quiet, write, stdin=stdin)
        if report.interrupted:
            _list_interrupted(report, write)
        if sys.stdout is not None:
            sys.stdout.flush()
    except OSError as exc:
        _summary_lost(report, write, exc)
        code = worst(code, ExitCode.BAD_INPUT)
    raise typer.Exit(code)


def _list_interrupted(report, write: bool) -> None:
    err = common.stderr_console()
    verb = "rewritten" if write else "would change"
    for result in report.changed:
        err.print(f"{result.path}: {verb} before the interrupt", soft_wrap=True, markup=False, highlight=False)
    changed = len(report.changed)
    err.print(
        f"port-fix: interrupted after {report.files_seen} file{'s' * (report.files_seen != 1)}; "
        f"{changed} {verb} (listed above), the others untouched",
        soft_wrap=True, markup=False,
    )


def _summary_lost(report, write: bool, exc: OSError) -> None:
    """The summary could not be written: what changed, one line a file, plainly on stderr (if it can)."""
    verb = "rewritten" if write else "would change"
    lines = [f"{result.path}: {verb}" for result in report.changed]
    lines.append(f"port-fix: could not write the summary ({exc.strerror or exc}); {len(report.changed)} file(s) {verb} (listed above)")
    try:
        sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # stderr closed too (None)
        pass  # no stream left to say it on: the exit code still does
    try:
        sys.stdout = open(os.devnull, "w")  # nothing more reaches the closed stream at exit
    except OSError:
        pass


class _StopSignals:
    """SIGINT, SIGTERM and SIGHUP stop the run once (KeyboardInterrupt); a second one while it
    winds down (workers stopping, journal read and removed) or reports is ignored, so a double
    Ctrl-C or a hang-up never loses the list of files already rewritten."""

    SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))

    def __init__(self) -> None:
        self.stopping = False
        self.previous = {signum: signal.signal(signum, self._handle) for signum in self.SIGNALS}

    def _handle(self, signum, frame) -> None:
        if not self.stopping:
            self.stopping = True
            raise KeyboardInterrupt

    def hold(self) -> None:
        self.stopping = True

    def restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)


def _exit_code(report, check: bool) -> int:
    from candle_port.rewriters.writeback import NotWritten

    codes = [ExitCode.NOT_WRITTEN if isinstance(e, NotWritten) else ExitCode.BAD_INPUT for e in report.errors]
    if check and report.changed:
        codes.append(ExitCode.FINDINGS)
    return worst(*codes)


def _write_vendored(vendor: Path) -> str:
    """`--vendor DIR` with stdin: the module the emitted text imports, written first; exit 2 if it cannot be."""
    from candle_port.rewriters.vendor import VendorError, write_vendored
    from candle_port.rewriters.writeback import WriteFailed, WriteRefused

    try:
        return str(write_vendored(vendor))
    except (OSError, VendorError, WriteFailed, WriteRefused) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        common.fail_usage(f"cannot write the vendored runtime, nothing was emitted: {reason}")


def _fix_stdin(filename: str, strategy: str, settings, vendor: Optional[Path], instrument: bool = False):
    from candle_port.rewriters.files import fix_stdin

    module_name = None
    if vendor is not None and strategy != "nearest":
        from candle_port.rewriters.vendor import vendored_module_name

        module_name = vendored_module_name(vendor)
    # Parsed in a worker, like a file: a parser crash is the input's one-line error, not this process's end.
    return fix_stdin(common.read_stdin_bytes(), filename, strategy, settings, module_name, instrument)


def _summarize(report, strategy: str, output_format: SummaryFormat, quiet: bool, write: bool, stdin: bool) -> None:
    fixed, refused, skipped = report.fixed, report.refused, report.skipped
    if output_format is SummaryFormat.JSON:
        data = {
            "strategy": strategy,
            "fixed": [{"path": p, **vars(f)} for p, f in fixed],
            "refused": [{"path": p, **vars(f)} for p, f in refused],
            "skipped": [{"path": p, **vars(f)} for p, f in skipped],
            "unfixable": [{"path": p, **vars(f)} for p, f in report.unfixable],
            "errors": [{"path": e.path, "reason": e.reason, "line": e.line, "not_written": type(e).__name__ == "NotWritten"} for e in report.errors],
            "files_changed": [r.path for r in report.changed],
            "vendored": report.vendored,
            "interrupted": report.interrupted,
            "empty_directories": list(report.empty_directories),
        }
        text = json.dumps(data, indent=2)
        print(text, file=sys.stderr if stdin else sys.stdout)
        return
    err = common.stderr_console()
    for e in report.errors:
        err.print(f"[bold red]error[/bold red]: {escape(e.describe())}", soft_wrap=True)
    for directory in report.empty_directories:  # as port-check says it
        err.print(f"[yellow]warning[/yellow]: no Python or Rust files found under {escape(directory)}", soft_wrap=True)
    if quiet:
        return
    notes = sorted({f.note for _, f in fixed if f.note})
    for path, r in refused:
        err.print(f"{escape(path)}:{r.line}:{r.column}: refused {r.code}: {escape(r.reason)}", soft_wrap=True, markup=True)
    for path, s in skipped:
        err.print(f"{escape(path)}:{s.line}:{s.column}: skipped {s.code}: {escape(s.reason)}", soft_wrap=True)
    for note in notes:
        err.print(f"[yellow]warning[/yellow]: {escape(note)}", soft_wrap=True)
    if report.vendored:
        err.print(f"wrote the vendored runtime to {escape(report.vendored)}", soft_wrap=True)
    verb = "fixed" if write else "would be fixed"
    files = len(report.changed)
    per_code = Counter(f.code for _, f in report.unfixable)
    unfixable = ""
    if per_code:
        counts = ", ".join(f"{code} {n}" for code, n in sorted(per_code.items()))
        total = sum(per_code.values())
        unfixable = f"; {total} site{'s' * (total != 1)} with no automatic fix ({counts}): see port-check"
    err.print(
        f"port-fix ({strategy}): {len(fixed)} site{'s' * (len(fixed) != 1)} {verb} in {files} file{'s' * (files != 1)}, "
        f"{len(refused)} refused, {len(skipped)} skipped"
        + (f", {len(report.errors)} file{'s' * (len(report.errors) != 1)} could not be processed" if report.errors else "")
        + unfixable
        + ".",
        soft_wrap=True,
        markup=False,
    )
