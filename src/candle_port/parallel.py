"""Run a per-file function over many files, on every core when the tree is large enough.

A worker that dies (a crash in a native parser, the OOM killer, a kill) breaks the whole pool.
The chunks already done are kept; the remaining files are then run one at a time in a fresh
single-worker pool, so the file whose worker dies again is found and becomes `on_crash(file)`,
and every other file is still processed.

Ctrl-C (or SIGTERM turned into KeyboardInterrupt by the command) stops the run: queued chunks are
cancelled, running ones finish (a worker ignores SIGINT, so it never dies mid-write), and
Interrupted carries every result obtained, so the caller can say what was already written.
Workers die with the main process (Linux: PR_SET_PDEATHSIG), so a killed run leaves none hung.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

# Below this many files one process is faster than starting workers.
PARALLEL_THRESHOLD = 48
_PR_SET_PDEATHSIG = 1


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during map_files; `results` holds what was done, in file order, possibly with gaps."""

    def __init__(self, results: list) -> None:
        super().__init__("interrupted")
        self.results = results


def _worker_init() -> None:
    """In each worker: leave Ctrl-C to the main process, and die when it dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the command's handler, inherited by fork
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            pass


def _pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=workers, initializer=_worker_init)


def map_files(
    work: Callable[[tuple], list[T]],
    files: Sequence[str],
    args: tuple = (),
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
    on_crash: Callable[[str], T] | None = None,
) -> list[T]:
    """`work((chunk, *args))` over chunks of `files`, results in file order.

    `work` must be a module-level function (it is pickled to the workers) that returns one result
    per file of its chunk. `on_crash(path)`: the result for a file whose worker process died
    (without it, BrokenProcessPool propagates).
    """
    jobs = jobs or os.cpu_count() or 1
    parallel = jobs > 1 and len(files) >= PARALLEL_THRESHOLD
    if parallel:
        size = max(8, len(files) // (min(jobs, len(files)) * 8))
    else:
        size = 1 if progress else max(1, len(files))  # with progress, an interrupt loses no finished file
    chunks = [(list(files[i : i + size]), *args) for i in range(0, len(files), size)]
    results: list[T] = []
    if not parallel:
        try:
            for chunk in chunks:
                chunk_results = work(chunk)
                results.extend(chunk_results)
                if progress:
                    progress(len(chunk_results))
        except KeyboardInterrupt:
            raise Interrupted(results) from None
        return results
    # More workers than chunks or than a few per core gains nothing; a huge -j (fork starts them
    # all at once) would exhaust the process table or overflow.
    workers = max(1, min(jobs, len(chunks), 4 * (os.cpu_count() or 1)))
    pool = _pool(workers)
    futures = [pool.submit(work, chunk) for chunk in chunks]
    done = 0
    try:
        for future in futures:
            chunk_results = future.result()
            results.extend(chunk_results)
            done += 1
            if progress:
                progress(len(chunk_results))
    except BrokenProcessPool:
        if on_crash is None:
            raise
        remaining = [path for chunk in chunks[done:] for path in chunk[0]]
        results.extend(_one_by_one(work, remaining, args, progress, on_crash))
    except KeyboardInterrupt:
        for future in futures[done:]:
            future.cancel()
        wait(futures[done:])  # the running chunks finish: their files may already be written
        for future in futures[done:]:
            if not future.cancelled() and future.exception() is None:
                results.extend(future.result())
        raise Interrupted(results) from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results


def _one_by_one(work, files: list[str], args: tuple, progress, on_crash) -> list:
    """Each file alone in a single-worker pool, restarted whenever a file kills its worker."""
    results = []
    pool = _pool(1)
    try:
        for path in files:
            try:
                results.extend(pool.submit(work, ([path], *args)).result())
            except BrokenProcessPool:
                results.append(on_crash(path))
                pool.shutdown(wait=True, cancel_futures=True)
                pool = _pool(1)
            if progress:
                progress(1)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results
