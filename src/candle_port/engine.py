"""Check many files: discovery, prefilter, cache, and every core on large trees."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from candle_port.cache import ResultCache
from candle_port.config import Config
from candle_port.discovery import discover
from candle_port.findings import FileError, FileResult, Finding
from candle_port.isolation import isolated
from candle_port.parallel import map_files
from candle_port.prefilter import is_vendored_runtime, may_hold_sites
from candle_port.sources import SourceError, load_source

@dataclass
class CheckReport:
    """What checking a set of paths produced, in path order."""

    results: list[FileResult] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    empty_directories: list[str] = field(default_factory=list)
    files_checked: int = 0
    files_parsed: int = 0

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]


def check_file(path: str, config: Config, cache: ResultCache | None = None) -> FileResult:
    """Read, decode and check one file; any failure becomes the result's error."""
    try:
        data, source = load_source(path)
    except SourceError as exc:
        return FileResult(path, error=FileError(path, str(exc)))
    if not may_hold_sites(source.text) or is_vendored_runtime(source.text):
        return FileResult(path)
    key = cache.key(path, data) if cache is not None else None
    if cache is not None and key is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    from candle_port.checker import check_text  # libcst loads only when a file may hold a site

    result = isolated(path, lambda: check_text(source.text, path, config))
    if isinstance(result, FileError):
        return FileResult(path, error=result)  # never cached: a deeper stack or a fix may read it
    if cache is not None and key is not None:
        cache.put(key, result)
    return result


def _worker_died(path: str, cause: str = "the worker process died") -> FileResult:
    return FileResult(path, error=FileError(path, f"not checked: {cause} while checking this file"))


def _check_chunk(args: tuple[list[str], Config, str | None]) -> list[FileResult]:
    paths, config, cache_dir = args
    cache = ResultCache(Path(cache_dir), config.fingerprint()) if cache_dir else None
    return [check_file(p, config, cache) for p in paths]


def check_files(
    files: list[str],
    config: Config,
    cache_dir: str | None = None,
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[FileResult]:
    return map_files(_check_chunk, files, (config, cache_dir), jobs, progress, on_crash=_worker_died)


def check_paths(
    paths: list[str],
    config: Config | None = None,
    cache_dir: str | None = None,
    jobs: int | None = None,
    progress_factory=None,
) -> CheckReport:
    """Check every Python file under `paths`; unreadable files are reported, never fatal."""
    config = config or Config()
    found = discover(paths, config)
    report = CheckReport(errors=list(found.errors), empty_directories=found.empty_directories)
    progress = progress_factory(len(found.files)) if progress_factory else None
    try:
        results = check_files(found.files, config, cache_dir, jobs, progress.advance if progress else None)
    finally:
        if progress:
            progress.close()
    for result in results:
        report.files_checked += 1
        report.files_parsed += int(result.parsed)
        if result.error is not None:
            report.errors.append(result.error)
        report.results.append(result)
    return report
