"""Check many files: discovery, prefilter, cache, and every core on large trees."""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from pathlib import Path

from candle_port.pipeline.cache import ResultCache
from candle_port.pipeline.cache import prune as prune_cache
from candle_port.config import Config
from candle_port.pipeline.discovery import discover
from candle_port.pipeline.findings import FileError, FileResult, Finding, Severity
from candle_port.pipeline.isolation import OverCpuBudget, isolated, within_cpu_seconds
from candle_port.pipeline.parallel import FILE_CPU_SECONDS, map_files, runs_in_parallel, workers_inherit_memory
from candle_port.pipeline.prefilter import is_vendored_runtime, may_hold_sites
from candle_port.pipeline.sources import SourceError, SourceText, load_source, load_source_in_main_process

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:
    from typing import Callable


class CheckReport:
    """What checking a set of paths produced, in path order; `index` is the checked tree's
    analysis.index.ProjectIndex, when it has one."""

    __slots__ = ("results", "errors", "empty_directories", "files_checked", "files_parsed", "index")

    def __init__(
        self,
        results: list[FileResult] | None = None,
        errors: list[FileError] | None = None,
        empty_directories: list[str] | None = None,
    ) -> None:
        self.results: list[FileResult] = [] if results is None else results
        self.errors: list[FileError] = [] if errors is None else errors
        self.empty_directories: list[str] = [] if empty_directories is None else empty_directories
        self.files_checked = 0
        self.files_parsed = 0
        self.index: object = None

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]


def check_file(
    path: str,
    config: Config,
    cache: ResultCache | None = None,
    index=None,
    digest: str = "",
    known_without_sites: bool = False,
) -> FileResult:
    """Read, decode and check one file; any failure becomes the result's error.

    Without `index` (the first pass) a file that cannot hold a site is skipped unparsed; with it
    (the second pass, analysis/index.py) a file that may call a project wrapper is checked too, and
    `digest` (the index entries the file's findings depend on) is part of its cache key.
    `known_without_sites`: an earlier pass found no API name in the file (skips that scan).
    """
    if path.endswith(".rs"):
        return check_rust_file(path, config, cache)
    screened = _screened.pop(path, None) if index is None else None
    if screened is not None:
        data, source = screened  # its prefilter said: parse it
    else:
        try:
            data, source = load_source(path)
        except SourceError as exc:
            return FileResult(path, error=FileError(path, str(exc)))
        unparsed = _without_parse(path, source.text, index, known_without_sites)
        if unparsed is not None:
            return unparsed
    key = cache.key(path, data + (b"\0index\0" + digest.encode() if index is not None else b"")) if cache is not None else None
    if cache is not None and key is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    from candle_port.analysis.index import module_name_of
    from candle_port.pipeline.checker import check_text

    module, package = module_name_of(path)
    result = isolated(
        path,
        lambda: check_text(source.text, path, config, index, package, module, prefiltered=True, skip_unrelated=True, defer_training=True),
    )
    if isinstance(result, FileError):
        return FileResult(path, error=result)  # never cached: a deeper stack or a fix may read it
    if cache is not None and key is not None:
        cache.put(key, result)
    return result


def check_rust_file(path: str, config: Config, cache: ResultCache | None = None) -> FileResult:
    """check_file for a Rust file (candle_port.rust): its crate's candle version and names of
    candle's crates are part of its cache key."""
    from candle_port.rust.cargo import context_for
    from candle_port.rust.checker import check_rust_bytes
    from candle_port.rust.versions import tables_fingerprint
    from candle_port.pipeline.sources import read_regular_file

    try:
        data, _ = read_regular_file(path)
    except SourceError as exc:
        return FileResult(path, error=FileError(path, str(exc)))
    context = context_for(path, config.candle_version)
    key = cache.key(path, data + b"\0rust\0" + f"{context.digest_text()}\0{tables_fingerprint()}".encode()) if cache is not None else None
    if cache is not None and key is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    result = isolated(path, lambda: check_rust_bytes(data, path, config, context))
    if isinstance(result, FileError):
        return FileResult(path, error=result)
    if cache is not None and key is not None and result.error is None:
        cache.put(key, result)
    return result


def _without_parse(path: str, text: str, index=None, known_without_sites: bool = False) -> FileResult | None:
    """The result of a file that needs no parse (the vendored runtime; no API name written in it,
    so the first pass keeps only the names it may call a wrapper by, and a later pass skips it
    unless it mentions a wrapper), else None."""
    if is_vendored_runtime(text):
        return FileResult(path)
    if known_without_sites or not may_hold_sites(text):
        if index is None:
            from candle_port.analysis.mentions import call_words

            return FileResult(path, call_words=call_words(text))
        from candle_port.analysis.index import module_name_of

        if not index.mentioned_in(text, module_name_of(path)[1]):
            return FileResult(path)
    return None


def screen_file(path: str) -> FileResult | None:
    """check_file's first pass for a file that needs no parse (unreadable, or `_without_parse`),
    else None. Text work only (no parser, no analysis), so it runs in the main process. The text
    of a file that needs the parse is kept for check_file (`_screened`): read and prefiltered once.
    A Rust file is left to check_file (its own prefilter runs there, before tree-sitter loads)."""
    if path.endswith(".rs"):
        return None
    try:
        loaded = load_source_in_main_process(path)
    except SourceError as exc:
        return FileResult(path, error=FileError(path, str(exc)))
    if loaded is None:
        return None
    result = _without_parse(path, loaded[1].text)
    if result is None:
        _screened[path] = loaded
    return result


# Files the main process read and found to need the parser, by path, until check_file takes them
# (in this process, or in a worker forked with a copy).
_screened: dict[str, tuple[bytes, SourceText]] = {}


# Up to this many files the main process reads them first (no parser) and starts workers only for
# the parse work left; a larger tree is read by its workers (reading in one process would serialise it).
SCREEN_IN_MAIN_PROCESS_FILES = 400
# Parse work, in bytes of source, that pays for starting workers: about 0.25 s of one core (a
# worker costs 5-10 ms of CPU, the fork and the pages it copies; basicsr's 24 files to parse,
# 262 kB, took 20 ms more CPU on two workers than on one).
PARALLEL_PARSE_BYTES = 700_000


def _first_pass(files: list[str], config: Config, cache_dir: str | None, jobs: int | None, progress) -> list[FileResult]:
    """Every file alone. A small tree (pre-commit, an editor, a package) is read here first, and
    the analysis imported and run only for the files that need the parser: on more than one worker
    only when their size pays for the workers (_check_parsing). A larger tree is read by its
    workers."""
    args = (config, cache_dir, None, None, frozenset())
    if len(files) > SCREEN_IN_MAIN_PROCESS_FILES and runs_in_parallel(len(files), jobs):
        _load_the_checker()
        return map_files(_check_chunk, files, args, jobs, progress, on_crash=_worker_died, parallel=True)
    results = [screen_file(path) for path in files]
    todo = [i for i, result in enumerate(results) if result is None]
    if progress and len(todo) < len(files):
        progress(len(files) - len(todo))
    if todo:
        _load_the_checker()
        try:
            parsed = _check_parsing([files[i] for i in todo], args, jobs, progress)
        finally:
            _screened.clear()  # a worker's file was taken in its copy; and an interrupted run's
        for i, result in zip(todo, parsed):
            results[i] = result
    return results  # type: ignore[return-value]


def _check_parsing(paths: list[str], args: tuple, jobs: int | None, progress) -> list[FileResult]:
    """`_check_chunk` over `paths`: on every core when their size pays for the workers, else in this
    process. Checking needs no worker to survive a file: the parser is CPython's (deep nesting is a
    SyntaxError or RecursionError, never a crash), isolation.py turns whatever a file does into its
    error, and _check_chunk gives each file the CPU budget a worker would (FILE_CPU_SECONDS)."""
    if _worth_workers(paths, jobs):
        return map_files(_check_chunk, paths, args, jobs, progress, on_crash=_worker_died, parallel=True)
    return map_files(_check_chunk, paths, args, 1, progress)


def _worth_workers(paths: list[str], jobs: int | None) -> bool:
    if (jobs or os.cpu_count() or 1) < 2 or len(paths) < 2:
        return False
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            continue
        if total >= PARALLEL_PARSE_BYTES:
            return True
    return False


def _worker_died(path: str, cause: str = "the worker process died") -> FileResult:
    return FileResult(path, error=FileError(path, f"not checked: {cause} while checking this file"))


def _check_chunk(args) -> list[FileResult]:
    paths, config, cache_dir, index, digests, without_sites = args
    if index == _INHERITED:
        index = _index_for_workers
    cache = ResultCache(Path(cache_dir), config.fingerprint()) if cache_dir else None
    budgeted = _budgeted if os.getpid() == _MAIN_PID else _unbudgeted  # a worker has RLIMIT_CPU
    with _collect_cycles_per_file() as after_each:
        return [
            after_each(budgeted(p, lambda p=p: check_file(p, config, cache, index, digests.get(p, "") if digests else "", p in without_sites)))
            for p in paths
        ]


_MAIN_PID = os.getpid()


def _budgeted(path: str, check: Callable[[], FileResult]) -> FileResult:
    """`check()` in the main process, stopped as a worker would be past FILE_CPU_SECONDS."""
    try:
        return within_cpu_seconds(FILE_CPU_SECONDS, check)
    except OverCpuBudget:
        return _worker_died(path, f"it took more than {FILE_CPU_SECONDS} s of CPU")


def _unbudgeted(path: str, check: Callable[[], FileResult]) -> FileResult:
    return check()


# A file that was only read (no parse) leaves a few objects: no collection for it.
_ALLOCATIONS_WORTH_A_COLLECTION = 10_000


@contextmanager
def _collect_cycles_per_file():
    """Cycle collection once per file instead of during its parse.

    A parse allocates ~10^5 tree nodes, and with automatic collection on, those allocations set
    off collections that walk every live object again and again (a third of the parse's time on
    the corpus). So automatic collection is off while a file is checked, and one young-generation
    collection after each parsed file frees its cycles (scopes point at each other; collecting less
    often saved nothing measurable and held 50% more memory). What lived before the chunk is
    frozen out of every collection.
    """
    enabled = gc.isenabled()
    gc.freeze()
    gc.disable()

    def after_each(result):
        if gc.get_count()[0] > _ALLOCATIONS_WORTH_A_COLLECTION:
            gc.collect(0)
        return result

    try:
        yield after_each
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


def check_files(
    files: list[str],
    config: Config,
    cache_dir: str | None = None,
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[FileResult]:
    return check_files_with_index(files, config, cache_dir, jobs, progress)[0]


def check_files_with_index(
    files: list[str],
    config: Config,
    cache_dir: str | None = None,
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
):
    """(results, the project index or None). Two passes: every file alone (its sites, and its summary for the project index), then the
    files whose findings depend on the index (a wrapper call, an imported constant, enum or
    subclass) again, with it. Both run on every core and use the cache. Last, whether each
    finding in a class is on a training path, with the whole index (_decide_training)."""
    results, index = _check_with_index(files, config, cache_dir, jobs, progress)
    _decide_training(results, index, config)
    return results, index


def _decide_training(results: list[FileResult], index, config: Config) -> None:
    """Make the findings that are on no training path warnings saying why (analysis/training.py).

    Each file's check left them as if they may train, with what decides it (its class's bases in
    other modules, and those of the classes of its module that name it: FileResult.untrained_if).
    Decided here, once, with the complete index: a file is not checked again when the module of
    a base is summarized in a later pass, and a cached result never holds a verdict made with an
    older index (the other modules' classes may have changed since it was cached)."""
    pending = [result for result in results if result.untrained_if]
    if not pending:
        return
    from candle_port.analysis.index import ModuleSummary, ProjectIndex, module_name_of
    from candle_port.analysis.training import condition_holds

    whole = index if index is not None else ProjectIndex([])
    for result in pending:
        # As the check saw it (sites.scan_module): the index with this module as the file is now.
        if result.summary:
            summary = ModuleSummary.from_json(result.summary)
        else:
            summary = ModuleSummary(module_name_of(result.path)[0], result.path)
        local = whole.overlay(summary)
        findings = list(result.findings)
        for i, reason, own, users in result.untrained_if:
            why = condition_holds((reason, own, users), local)
            if why:
                finding = findings[i]
                findings[i] = finding.replace(
                    severity=config.severity_of(finding.code, Severity.WARNING),
                    message=f"{finding.message} (not on a training path: {why})",
                    untrained=why,
                )
        result.findings = findings
        result.untrained_if = ()  # decided: deciding again would add the reason twice


def _check_with_index(files: list[str], config: Config, cache_dir: str | None, jobs: int | None, progress):
    results = _first_pass(files, config, cache_dir, jobs, progress)
    _summarize_value_modules(files, results)
    if not any(r.summary for r in results):
        return results, None
    _load_the_checker()
    from candle_port.analysis.index import ModuleSummary, ProjectIndex

    used: dict[int, str | None] = {}  # the index digest each file was last checked with
    names_seen: set[str] = set()
    index = None
    # A file checked in a later pass may define a wrapper of a wrapper (it names no API, so the first
    # pass skipped it): then its callers are checked again. Each pass adds a level; a few suffice.
    for _ in range(6):
        summaries = [r.summary for r in results if r.summary]
        if not summaries:
            return results, None
        index = ProjectIndex([ModuleSummary.from_json(s) for s in summaries])
        new_names = index.called_names() - names_seen
        names_seen |= new_names
        redo: list[int] = []
        digests: dict[str, str] = {}
        for i, result in enumerate(results):
            if result.error is not None:
                continue
            if result.parsed:
                digest = index.digest_for(result.refs)
                # Functions left out of its parse (analysis/relevance.py) may call a new wrapper.
                left_out_call = result.call_words is not None and bool(new_names & result.call_words)
                if digest == used.get(i) and not left_out_call:
                    continue  # what it refers to says the same as when it was checked
                # Checked again with refs the last check did not see: keyed by the whole index.
                digests[files[i]] = (index.digest() if left_out_call else digest) or ""
                redo.append(i)
            elif result.call_words is not None and new_names & result.call_words:
                digests[files[i]] = index.digest()
                redo.append(i)  # may call a new wrapper: read again, checked if a call of it is written there
        if not redo:
            break
        without_sites = frozenset(files[i] for i in redo if not results[i].parsed)
        again = _check_parsing(
            [files[i] for i in redo],
            (config, cache_dir, _share_with_workers(index.for_workers()), digests, without_sites),
            jobs,
            None,
        )
        for i, result in zip(redo, again):
            if not result.parsed and result.summary is None:
                result.summary = results[i].summary  # a constants module summarized above
            if not result.parsed and result.call_words is None:
                result.call_words = results[i].call_words
            results[i] = result
            if result.parsed:
                used[i] = index.digest_for(result.refs)
        # A file first parsed in this pass may use a constant, or subclass a class, of a module
        # no pass has summarized yet (fastsam's predictor, found by its wrapper call).
        _summarize_value_modules(files, results)
    return results, index


def _load_the_checker() -> None:
    """Import the analysis here, once: every worker of every pass is forked from this process, and
    each imported it again on its first file (about 40 ms of CPU per worker, 8 workers a run)."""
    import candle_port.analysis.index  # noqa: F401
    import candle_port.analysis.mentions  # noqa: F401
    import candle_port.pipeline.checker  # noqa: F401


# The project index reaches forked workers as this global, set before the pool forks: sent with
# every task instead, its pickle (about 1 MB on the corpus) cost more than the checks it served.
_INHERITED = "<the index set before the workers forked>"
_index_for_workers = None


def _share_with_workers(index):
    global _index_for_workers
    if not workers_inherit_memory():
        return index
    index.called_names()  # built once here, not once per worker
    _index_for_workers = index
    return _INHERITED


def _summarize_value_modules(files: list[str], results: list[FileResult]) -> None:
    """Summarize the modules that define the constants and enums the checked files use at a site
    (`from .consts import MODE`): such a module names no API, so the first pass skipped it. The
    modules behind them are summarized too: a package `__init__` re-exporting the name, the
    module of an enum's base class (monai's `InterpolateMode(StrEnum)`). So are the modules of the
    bases of a class holding a site (`b:`), which say whether it trains (analysis/training.py)."""
    # (name, whether its module's function bodies are needed): a base class needs only the outline.
    refs = {(ref[2:], ref[0] == "v") for result in results for ref in result.refs if ref.startswith(("v:", "b:"))}
    pending = sorted(refs, reverse=True)
    if not pending:
        return
    by_tail: dict[tuple[str, ...], int] = {}
    for i, path in enumerate(files):
        parts = Path(path).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        by_tail.setdefault(tuple(parts[-2:]), i)
    seen: set[str] = set()
    while pending and len(seen) < _MAX_VALUE_NAMES:
        name, bodies = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            i = by_tail.get(tuple(parts[:cut][-2:]))
            if i is None:
                continue
            result = results[i]
            if result.error is not None:
                break
            if not result.parsed and not result.summary:
                result.summary = _summary_of(files[i], bodies)
            pending.extend((behind, bodies) for behind in _names_behind(result.summary, parts[cut:]))
            break


# Names followed through re-exports and enum bases, at most (a chain is a few names long).
_MAX_VALUE_NAMES = 1000


def _names_behind(summary: dict | None, rest: list[str]) -> list[str]:
    """The qualified names a summarized module's `rest[0]` stands for elsewhere: its import's
    target, or its class bases outside torch and the standard library."""
    if not summary or not rest:
        return []
    target = summary.get("imports", {}).get(rest[0])
    if target is not None:
        return [".".join([target, *rest[1:]])]
    bases = summary.get("classes", {}).get(rest[0], ())
    return [base for base in bases if not base.startswith(("torch.", "builtins.", "enum."))]


def _summary_of(path: str, bodies: bool = True) -> dict | None:
    """The summary of a module the first pass skipped; without `bodies`, of its outline only (its
    classes' bases and its imports: analysis/outline.py), for a base class's module (diffusers'
    lora_pipeline.py is 300 kB of function bodies)."""
    from candle_port.analysis.index import module_name_of
    from candle_port.analysis.outline import Outline
    from candle_port.analysis.sites import scan_module
    from candle_port.pipeline.checker import parse

    try:
        _, source = load_source(path)
    except SourceError:
        return None
    text = source.text
    outline = None if bodies else Outline.of(text)
    if outline is not None:
        left_out = [u for unit in outline.units for u in (unit.methods if unit.is_class else [unit]) if u.body_line]
        skeleton = outline.skeleton(left_out)
        tree = parse(skeleton, path)
        if not isinstance(tree, FileError) and outline.matches(tree, left_out):
            text = skeleton
        else:
            tree = parse(source.text, path)
    else:
        tree = parse(source.text, path)
    if isinstance(tree, FileError):
        return None
    module, package = module_name_of(path)
    summary = isolated(path, lambda: scan_module(tree, text, None, package, module, path).summary)
    return None if isinstance(summary, FileError) or summary is None else summary.to_json()


def check_paths(
    paths: list[str],
    config: Config | None = None,
    cache_dir: str | None = None,
    jobs: int | None = None,
    progress_factory=None,
) -> CheckReport:
    """Check every Python file under `paths`; unreadable files are reported, never fatal."""
    config = config or Config()
    found = discover(paths, config, rust=True)
    report = CheckReport(errors=list(found.errors), empty_directories=found.empty_directories)
    progress = progress_factory(len(found.files)) if progress_factory else None
    try:
        results, report.index = check_files_with_index(found.files, config, cache_dir, jobs, progress.advance if progress else None)
    finally:
        if progress:
            progress.close()
    if cache_dir:
        prune_cache(cache_dir)
    for result in results:
        report.files_checked += 1
        report.files_parsed += int(result.parsed)
        if result.error is not None:
            report.errors.append(result.error)
        report.results.append(result)
    return report
