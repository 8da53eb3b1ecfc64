"""Fix files on disk: discovery and config as port-check, diffs, the vendored runtime.

A file that cannot be read, decoded or parsed is reported (FileError) and every other file is
still fixed. Bytes are written back in the file's own encoding, with its BOM and newlines, only
when the text changed, and only through rewriters.writeback (atomic, checked against concurrent
edits; a file it protects becomes a NotWritten error).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from candle_port.config import Config
from candle_port.pipeline.discovery import discover
from candle_port.pipeline.findings import FileError
from candle_port.pipeline.isolation import isolated
from candle_port.pipeline.parallel import Interrupted, call_in_worker, map_files, note, runs_in_parallel
from candle_port.pipeline.prefilter import is_vendored_runtime, may_hold_sites
from candle_port.rewriters.eligibility import NEAREST, STRATEGIES
from candle_port.rewriters.results import FixError, FixResult
from candle_port.rewriters.writeback import (
    NotWritten,
    WriteFailed,
    WritePolicy,
    WriteRefused,
    remove_temp_files,
    take_snapshot,
    write_back,
)
from candle_port.pipeline.sources import SourceError, decode_source, load_source_in_main_process, read_regular_file

@dataclass
class FixReport:
    """What fixing a set of paths did, in path order."""

    results: list[FixResult] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    empty_directories: list[str] = field(default_factory=list)
    files_seen: int = 0
    vendored: str | None = None  # the file written by --vendor, if any
    raw_input: bytes = b""  # stdin only: the bytes read, passed through when they cannot be fixed
    stdin_source: object = None  # stdin only: the decoded SourceText (encoding, BOM)
    interrupted: bool = False  # Ctrl-C or SIGTERM: the results are those finished before it

    @property
    def changed(self) -> list[FixResult]:
        return [r for r in self.results if r.changed]

    @property
    def fixed(self):
        return [(r.path, f) for r in self.results for f in r.fixed]

    @property
    def refused(self):
        return [(r.path, f) for r in self.results for f in r.refused]

    @property
    def skipped(self):
        return [(r.path, f) for r in self.results for f in r.skipped]

    @property
    def unfixable(self):
        return [(r.path, f) for r in self.results for f in r.unfixable]


def unified_diff(result: FixResult) -> str:
    return "".join(
        difflib.unified_diff(
            result.original.splitlines(keepends=True),
            result.text.splitlines(keepends=True),
            fromfile=f"a/{result.path}",
            tofile=f"b/{result.path}",
        )
    )


def fix_file(
    path: str,
    strategy: str,
    config: Config,
    write: bool,
    vendored_module: str | None,
    policy: WritePolicy = WritePolicy(),
    untrained: dict | None = None,
    instrument: bool = False,
) -> FixResult | FileError:
    """Fix one file; write it back through writeback when `write` and something changed.
    `untrained`: (line, column) -> why, the sites the project index puts on no training path.
    `instrument`: port-fix --instrument, Rust only (rust/instrument.py); Python files are left."""
    if path.endswith(".rs"):
        return _fix_rust_file(path, config, write, policy, instrument)
    if instrument:
        return FixResult(path, "instrument", "", "")
    try:
        snapshot = take_snapshot(path)
        source = decode_source(snapshot.data)
    except SourceError as exc:
        return FileError(path, str(exc))
    unchanged = _unchanged(path, strategy, source.text)
    if unchanged is not None:
        return unchanged
    from candle_port.rewriters.fixer import fix_text

    result = isolated(
        path, lambda: fix_text(source.text, strategy=strategy, path=path, config=config, vendored_module=vendored_module,
                               untrained=untrained)
    )
    if isinstance(result, FileError):
        return result
    if result.error is not None:
        return result.error
    if write and result.changed:
        try:
            encoded = source.encode(result.text)
        except UnicodeEncodeError as exc:
            return FileError(path, f"cannot encode the rewrite as {source.encoding}: {exc.reason}")
        return _write(path, snapshot, encoded, result, policy)
    return result


def _fix_rust_file(path: str, config: Config, write: bool, policy: WritePolicy, instrument: bool = False) -> FixResult | FileError:
    """fix_file for a Rust file (candle_port.rust.fixer, or rust/instrument.py): UTF-8, its BOM kept."""
    import codecs

    from candle_port.rust.cargo import context_for
    from candle_port.rust.checker import RustSourceError, decode_rust

    try:
        snapshot = take_snapshot(path)
        data = decode_rust(snapshot.data)
    except (SourceError, RustSourceError) as exc:
        return FileError(path, str(exc))
    text = data.decode("utf-8")
    context = context_for(path, config.candle_version)
    if instrument:
        from candle_port.rust.instrument import instrument_rust_text, may_hold_forwards

        if not may_hold_forwards(text):
            return FixResult(path, "instrument", text, text)
        result = isolated(path, lambda: instrument_rust_text(text, path, dict(context.renames)))
    else:
        from candle_port.rust.sites import may_hold_sites as rust_may_hold_sites

        if not rust_may_hold_sites(text):
            return FixResult(path, "rust", text, text)
        from candle_port.rust.fixer import fix_rust_text

        result = isolated(path, lambda: fix_rust_text(text, path, config, context))
    if isinstance(result, FileError):
        return result
    if result.error is not None:
        return result.error
    if write and result.changed:
        bom = codecs.BOM_UTF8 if snapshot.data.startswith(codecs.BOM_UTF8) else b""
        return _write(path, snapshot, bom + result.text.encode("utf-8"), result, policy)
    return result


def _write(path: str, snapshot, encoded: bytes, result: FixResult, policy: WritePolicy) -> FixResult | FileError:
    """Write one file's rewrite back (atomic, checked against concurrent edits)."""
    # Journaled before the replace: if this worker's result is lost (it or another worker dies
    # after the write), the run finds the file holding these bytes and counts it (_written).
    note(path, (snapshot.real, hashlib.sha256(encoded).hexdigest(), result))
    try:
        write_back(snapshot, encoded, policy)
    except WriteRefused as exc:
        return NotWritten(path, f"not written: {exc}")
    except WriteFailed as exc:
        return FileError(path, str(exc))
    except OSError as exc:
        return FileError(path, f"cannot write: {exc.strerror or exc}")
    return result


def _worker_died(path: str, cause: str = "the worker process died") -> FileError:
    # Writes are atomic: the file is either as it was or completely rewritten.
    return FileError(path, f"{cause} while fixing this file (writes are atomic: it is unchanged or fully rewritten); rerun port-fix on it")


def _written(path: str, record) -> FixResult | None:
    """A lost result from its journal record: the file's result if it holds the bytes it was to get."""
    real, digest, result = record
    try:
        data, _ = read_regular_file(real)
    except SourceError:
        return None
    return result if hashlib.sha256(data).hexdigest() == digest else None


def _unchanged(path: str, strategy: str, text: str) -> FixResult | None:
    """The unchanged result of a text that names no API, or is the vendored runtime; else None."""
    if not may_hold_sites(text) or is_vendored_runtime(text):
        return FixResult(path, strategy, text, text)
    return None


def _left_by_instrument(path: str) -> FixResult | None:
    """--instrument is for Rust only: a Python file is left, unread."""
    return None if path.endswith(".rs") else FixResult(path, "instrument", "", "")


def _unchanged_without_fixer(path: str, strategy: str) -> FixResult | None:
    if path.endswith(".rs"):
        return None  # its own screen runs in _fix_rust_file
    return _python_unchanged_without_fixer(path, strategy)


def _python_unchanged_without_fixer(path: str, strategy: str) -> FixResult | None:
    """`_unchanged` for a file read in the main process, without the fixer; None for every other
    file, including one that cannot be read (the worker reports it, as before). A pre-commit run
    on files with nothing to fix then imports no libcst and starts no process pool (about 130 ms
    of CPU)."""
    try:
        loaded = load_source_in_main_process(path)
    except (OSError, SourceError):
        return None
    return None if loaded is None else _unchanged(path, strategy, loaded[1].text)


def _in_file_order(screened: list, outcomes: list) -> list:
    """The screened results with the workers' outcomes (one per file left as None, in order) in
    their places."""
    pending = iter(outcomes)
    return [next(pending) if result is None else result for result in screened]


def _fix_chunk(args) -> list:
    paths, strategy, config, write, vendored_module, policy, untrained, instrument = args
    return [fix_file(p, strategy, config, write, vendored_module, policy, untrained.get(p), instrument) for p in paths]


def _untrained_sites(files: list[str], config: Config) -> dict:
    """path -> {(line, column): why} for the sites on no training path as port-check decides it
    with the project index (a class whose bases are in other modules: analysis/training.py),
    which one file alone cannot tell."""
    from candle_port.pipeline.engine import check_files_with_index

    # In this process: a worker pool here would be killed or interrupted before the fix's own
    # pool starts its journal (tests/fix/test_fix_interrupt.py).
    results, _index = check_files_with_index(files, config, config.cache_dir, 1)
    out: dict = {}
    for result in results:
        for finding in result.findings:
            if finding.untrained:
                out.setdefault(result.path, {})[(finding.line, finding.column)] = finding.untrained
    return out


def fix_files(
    paths: list[str],
    strategy: str | None = None,
    config: Config | None = None,
    *,
    write: bool = True,
    vendor: str | os.PathLike | None = None,
    jobs: int | None = None,
    force_read_only: bool = False,
    ops_crate: str | None = None,
    instrument: bool = False,
    parity_crate: str | None = None,
) -> FixReport:
    """Fix every Python file under `paths` with `strategy` (default: the config's), and every Rust
    file (candle_port.rust.fixer; the strategy is Python's).

    `write=False` computes everything and writes nothing (for --diff and --check). `vendor`:
    write the single-file runtime into that directory and import it from there (not for the
    nearest strategy, which imports nothing); it is written, atomically, before any other file.
    `force_read_only`: rewrite read-only files too (they stay read-only). `ops_crate`: where a
    Rust crate whose rewrite calls candle-port-ops gets it (rust/ops_dependency.py).
    `instrument`: instead of all that, make each Rust forward record its output under its torch
    name (rust/instrument.py); each crate changed gets candle-port-parity (from `parity_crate`).
    """
    config = config or Config()
    strategy = strategy or config.strategy
    if strategy not in STRATEGIES:
        raise FixError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    vendored_module = None
    if vendor is not None and strategy != NEAREST:
        from candle_port.rewriters.vendor import vendored_module_name, write_vendored

        vendored_module = vendored_module_name(Path(vendor))
    report = FixReport()
    try:
        found = discover(paths, config, rust=True)
        report.errors, report.empty_directories = list(found.errors), found.empty_directories
        files = found.files
        if vendor is not None:
            vendored_file = (Path(vendor) / "candle_port_runtime.py").resolve()
            files = [f for f in files if Path(f).resolve() != vendored_file]
        if vendored_module is not None and write:
            # Before any model file imports it: a failure here (full disk) leaves every model untouched.
            report.vendored = str(write_vendored(Path(vendor)))
    except KeyboardInterrupt:  # before any model file was touched
        report.interrupted = True
        return report
    try:
        # A run on one worker (a few files: pre-commit) reads them here first; a parallel run
        # reads every file in its workers, on every core.
        screen = not runs_in_parallel(len(files), jobs)
        if instrument:
            screened = [_left_by_instrument(path) for path in files]
        else:
            screened = [_unchanged_without_fixer(path, strategy) if screen else None for path in files]
    except KeyboardInterrupt:  # nothing was written yet
        report.interrupted = True
        return report
    todo = [path for path, result in zip(files, screened) if result is None]
    outcomes: list = []
    if todo:
        import candle_port.rewriters.fixer  # noqa: F401 - once here, inherited by every forked worker

        try:
            untrained = {} if config.include_untrained or instrument or len(files) < 2 else _untrained_sites(files, config)
        except KeyboardInterrupt:  # nothing was written yet
            report.interrupted = True
            return report

        run_tag = uuid.uuid4().hex[:12]  # names this run's temporary files, so a killed worker's are found
        policy = WritePolicy(force_read_only=force_read_only, roots=tuple(os.path.realpath(p) for p in paths), temp_tag=run_tag)
        try:
            # A progress callback makes a one-process run go file by file, so an interrupt keeps every finished result.
            outcomes = map_files(
                _fix_chunk, todo, (strategy, config, write, vendored_module, policy, untrained, instrument), jobs, lambda _: None, on_crash=_worker_died,
                per_file=True, recover=_written if write else None,
            )
        except Interrupted as stop:
            outcomes = stop.results
            report.interrupted = True
        finally:
            if write:
                # Every worker has exited: a temporary file of this run still there is a killed worker's.
                remove_temp_files({os.path.dirname(os.path.realpath(f)) for f in todo}, run_tag)
    if report.interrupted:  # the workers' results may have gaps: the screened ones first
        outcomes = [result for result in screened if result is not None] + list(outcomes)
    else:
        outcomes = _in_file_order(screened, outcomes)
    for outcome in outcomes:
        report.files_seen += 1
        if isinstance(outcome, FileError):
            report.errors.append(outcome)
        else:
            report.results.append(outcome)
    if not report.interrupted:
        _add_ops_dependencies(report, ops_crate, write, force_read_only)
        _add_ops_dependencies(report, parity_crate, write, force_read_only, parity=True)
    return report


def _add_ops_dependencies(report: FixReport, ops_crate: str | None, write: bool, force_read_only: bool, parity: bool = False) -> None:
    """Each crate whose Rust rewrites call candle-port-ops (`parity`: candle-port-parity) gets the
    dependency in its Cargo.toml (in this process, once per manifest, after every file: workers
    never edit a shared file)."""
    wanted = [r for r in report.results if (r.needs_parity_crate if parity else r.needs_ops_crate)]
    if not wanted:
        return
    from candle_port.rust.cargo import find_manifest
    from candle_port.rust import ops_dependency
    from candle_port.rust.ops_dependency import manifest_edit

    NAME = ops_dependency.PARITY if parity else ops_dependency.NAME

    manifests = sorted({m for m in (find_manifest(os.path.dirname(os.path.abspath(r.path))) for r in wanted) if m})
    for manifest in manifests:
        shown = os.path.relpath(manifest) if not os.path.isabs(wanted[0].path) else manifest
        edit = manifest_edit(manifest, ops_crate, NAME)
        if edit is None:
            continue
        if isinstance(edit, str):
            report.errors.append(FileError(shown, edit))
            continue
        old, new = edit
        result = FixResult(shown, "rust", old, new)
        if write:
            try:
                write_back(take_snapshot(manifest), new.encode("utf-8"), WritePolicy(force_read_only=force_read_only))
            except WriteRefused as exc:
                report.errors.append(NotWritten(shown, f"not written ({NAME} not added): {exc}"))
                continue
            except (WriteFailed, SourceError) as exc:
                report.errors.append(FileError(shown, f"{NAME} not added: {exc}"))
                continue
            except OSError as exc:
                report.errors.append(FileError(shown, f"{NAME} not added: cannot write: {exc.strerror or exc}"))
                continue
        report.results.append(result)


def _fix_source(text: str, strategy: str, path: str, config: Config, vendored_module: str | None) -> FixResult | FileError:
    from candle_port.rewriters.fixer import fix_text

    result = isolated(path, lambda: fix_text(text, strategy=strategy, path=path, config=config, vendored_module=vendored_module))
    if isinstance(result, FixResult) and result.error is not None:
        return result.error
    return result


def fix_stdin(data: bytes, filename: str, strategy: str, config: Config, vendored_module: str | None = None,
              instrument: bool = False) -> FixReport:
    """Fix source read from stdin, parsed in a worker under the same limits as a file's.

    A crash, abort or runaway in the parser becomes `filename`'s one-line error with its cause;
    `report.raw_input` keeps the bytes, to be passed through unchanged.
    """
    report = FixReport(files_seen=1, raw_input=data)
    if filename.endswith(".rs"):
        return _fix_rust_stdin(report, data, filename, config, instrument)
    try:
        source = decode_source(data)
    except SourceError as exc:
        report.errors.append(FileError(filename, str(exc)))
        return report
    report.stdin_source = source
    outcome = call_in_worker(
        _fix_source, (source.text, strategy, filename, config, vendored_module),
        on_crash=lambda cause: FileError(filename, f"{cause} while fixing this input; passed through unchanged"),
    )
    if isinstance(outcome, FileError):
        report.errors.append(outcome)
    else:
        report.results.append(outcome)
    return report


def _fix_rust_stdin(report: FixReport, data: bytes, filename: str, config: Config, instrument: bool = False) -> FixReport:
    from candle_port.pipeline.sources import SourceText
    from candle_port.rust.cargo import context_for
    from candle_port.rust.checker import RustSourceError, decode_rust
    from candle_port.rust.fixer import fix_rust_text

    try:
        text = decode_rust(data).decode("utf-8")
    except RustSourceError as exc:
        report.errors.append(FileError(filename, str(exc)))
        return report
    import codecs

    report.stdin_source = SourceText(text, "utf-8", data.startswith(codecs.BOM_UTF8))
    context = context_for(filename, config.candle_version)
    if instrument:
        from candle_port.rust.instrument import instrument_rust_text

        outcome = isolated(filename, lambda: instrument_rust_text(text, filename, dict(context.renames)))
    else:
        outcome = isolated(filename, lambda: fix_rust_text(text, filename, config, context))
    if isinstance(outcome, FixResult) and outcome.error is not None:
        outcome = outcome.error
    if isinstance(outcome, FileError):
        report.errors.append(outcome)
    else:
        report.results.append(outcome)
    return report
