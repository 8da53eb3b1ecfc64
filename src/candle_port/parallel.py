"""Run a per-file function over many files, on every core when the tree is large enough.

A worker that dies (a crash in a native parser, the OOM killer, a kill) breaks the whole pool.
The chunks already done are kept; the remaining files are then run one at a time in a fresh
single-worker pool, so the file whose worker dies again is found and becomes `on_crash(file)`,
and every other file is still processed.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

# Below this many files one process is faster than starting workers.
PARALLEL_THRESHOLD = 48


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
        size = 1 if progress else max(1, len(files))
    chunks = [(list(files[i : i + size]), *args) for i in range(0, len(files), size)]
    results: list[T] = []
    if not parallel:
        for chunk in chunks:
            chunk_results = work(chunk)
            results.extend(chunk_results)
            if progress:
                progress(len(chunk_results))
        return results
    # More workers than chunks or than a few per core gains nothing; a huge -j (fork starts them
    # all at once) would exhaust the process table or overflow.
    workers = max(1, min(jobs, len(chunks), 4 * (os.cpu_count() or 1)))
    done = 0
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        for chunk_results in pool.map(work, chunks):
            results.extend(chunk_results)
            done += 1
            if progress:
                progress(len(chunk_results))
    except BrokenProcessPool:
        if on_crash is None:
            raise
        remaining = [path for chunk in chunks[done:] for path in chunk[0]]
        results.extend(_one_by_one(work, remaining, args, progress, on_crash))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results


def _one_by_one(work, files: list[str], args: tuple, progress, on_crash) -> list:
    """Each file alone in a single-worker pool, restarted whenever a file kills its worker."""
    results = []
    pool = ProcessPoolExecutor(max_workers=1)
    try:
        for path in files:
            try:
                results.extend(pool.submit(work, ([path], *args)).result())
            except BrokenProcessPool:
                results.append(on_crash(path))
                pool.shutdown(wait=True, cancel_futures=True)
                pool = ProcessPoolExecutor(max_workers=1)
            if progress:
                progress(1)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results
