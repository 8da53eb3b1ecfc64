"""Run a per-file function over many files, on every core when the tree is large enough."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
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
) -> list[T]:
    """`work((chunk, *args))` over chunks of `files`, results in file order.

    `work` must be a module-level function (it is pickled to the workers) that returns one result
    per file of its chunk.
    """
    jobs = jobs or os.cpu_count() or 1
    parallel = jobs > 1 and len(files) >= PARALLEL_THRESHOLD
    if parallel:
        size = max(8, len(files) // (min(jobs, len(files)) * 8))
    else:
        size = 1 if progress else max(1, len(files))
    chunks = [(list(files[i : i + size]), *args) for i in range(0, len(files), size)]
    pool = None
    if parallel:
        # More workers than chunks or than a few per core gains nothing; a huge -j (fork starts
        # them all at once) would exhaust the process table or overflow.
        pool = ProcessPoolExecutor(max_workers=max(1, min(jobs, len(chunks), 4 * (os.cpu_count() or 1))))
    results: list[T] = []
    try:
        for chunk_results in (pool.map(work, chunks) if pool else map(work, chunks)):
            results.extend(chunk_results)
            if progress:
                progress(len(chunk_results))
    finally:
        if pool:
            pool.shutdown()
    return results
