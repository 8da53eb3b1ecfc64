"""Run a per-file function over many files in worker processes, so that no file can stop the run.

Every file is processed in a worker process (on Linux, started by fork; with -j1 or a small
tree, one worker), never in the main one: libcst's native parser can crash the
process (SIGSEGV on deep nesting), abort it when an allocation fails, or take minutes on hostile
input, and none of that can be caught in the process it happens in. Each worker runs under limits
(WORKER_MEMORY_BYTES of address space beyond what it started with; FILE_CPU_SECONDS of CPU per
file), so a file that needs more kills its worker instead of the machine's memory or the run's time.

A worker that dies breaks the whole pool. The chunks already done are kept; the remaining files
are then run one at a time in a fresh single-worker pool, so the file whose worker dies again is
found and becomes `on_crash(file, cause)`, and every other file is still processed.

Ctrl-C (or SIGTERM turned into KeyboardInterrupt by the command) stops the run: queued chunks are
cancelled, running ones finish (a worker ignores SIGINT, so it never dies mid-write), and
Interrupted carries every result obtained, so the caller can say what was already written.
Workers die with the main process (Linux: PR_SET_PDEATHSIG), so a killed run leaves none hung.
Elsewhere (Windows, macOS) a one-process run stays in-process.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Sequence, TypeVar

try:
    import resource
except ImportError:  # Windows
    resource = None

T = TypeVar("T")

# Below this many files one worker is faster than starting several.
PARALLEL_THRESHOLD = 48
_PR_SET_PDEATHSIG = 1
# A worker may map this much beyond its size at start (the largest file the checker accepts,
# 4 MB, needs about 2.4 GB in libcst; the deep-recursion retry reserves a 512 MB stack).
WORKER_MEMORY_BYTES = 4 << 30
# CPU seconds a file may take (libcst needs under 20 s for the largest accepted file; a
# 5,000-term `x+x+...` takes it minutes).
FILE_CPU_SECONDS = 120


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during map_files; `results` holds what was done, in file order, possibly with gaps."""

    def __init__(self, results: list) -> None:
        super().__init__("interrupted")
        self.results = results


def _address_space_now() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _worker_init() -> None:
    """In each worker: leave Ctrl-C to the main process, die when it dies, cap its memory."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the command's handler, inherited by fork
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            pass
    if resource is None:
        return
    try:  # a crashing parser must not drop multi-GB core files into the user's tree
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (ValueError, OSError):
        pass
    size = _address_space_now()
    if size is not None:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        soft = size + WORKER_MEMORY_BYTES
        if hard == resource.RLIM_INFINITY or soft < hard:
            try:
                resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
            except (ValueError, OSError):
                pass


def _limit_cpu(files: int) -> None:
    """The worker's CPU limit, FILE_CPU_SECONDS per file from now on (SIGXCPU kills it past that)."""
    if resource is None:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(usage.ru_utime + usage.ru_stime) + 1 + FILE_CPU_SECONDS * files
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):
        pass


def _run_limited(work: Callable[[tuple], list], chunk: tuple) -> list:
    _limit_cpu(len(chunk[0]))
    return work(chunk)


def _can_fork() -> bool:
    return sys.platform.startswith("linux")


def _pool(workers: int) -> ProcessPoolExecutor:
    # fork on Linux whatever the default (forkserver from Python 3.14): workers start in
    # milliseconds, with the command's state, and a one-process run can afford its worker.
    context = multiprocessing.get_context("fork") if _can_fork() else None
    return ProcessPoolExecutor(max_workers=workers, initializer=_worker_init, mp_context=context)


def death_cause(exitcode: int | None) -> str:
    """Why a worker died, from its exit code, in words."""
    if exitcode is None or exitcode >= 0:
        return "the worker process died"
    signum = -exitcode
    if signum == getattr(signal, "SIGXCPU", None):
        return f"it took more than {FILE_CPU_SECONDS} s of CPU (the worker was stopped)"
    if signum == signal.SIGABRT:
        return f"the parser ran out of memory or aborted (a worker may use {WORKER_MEMORY_BYTES >> 30} GiB)"
    if signum == signal.SIGSEGV:
        return "the parser crashed (SIGSEGV; deeply nested code does this to libcst)"
    if signum == signal.SIGKILL:
        return "the worker was killed (SIGKILL: the out-of-memory killer, or a kill)"
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    return f"the worker was killed by {name}"


def map_files(
    work: Callable[[tuple], list[T]],
    files: Sequence[str],
    args: tuple = (),
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
    on_crash: Callable[[str, str], T] | None = None,
    per_file: bool = False,
) -> list[T]:
    """`work((chunk, *args))` over chunks of `files`, results in file order.

    `work` must be a module-level function (it is pickled to the workers) that returns one result
    per file of its chunk. `on_crash(path, cause)`: the result for a file whose worker process
    died (without it, BrokenProcessPool propagates, and a one-process run stays in-process).
    `per_file`: one file per task, for work that writes files: when a worker dies, the executor
    stops every worker, and a chunk cut short would have written files whose results are lost.
    """
    jobs = jobs or os.cpu_count() or 1
    parallel = jobs > 1 and len(files) >= PARALLEL_THRESHOLD
    if not files:
        return []
    if not parallel and (on_crash is None or not _can_fork()):
        return _in_process(work, files, args, progress)
    if parallel:
        size = 1 if per_file else max(8, len(files) // (min(jobs, len(files)) * 8))
    else:
        size = 1 if len(files) < PARALLEL_THRESHOLD else 8  # an interrupt loses no finished file
    chunks = [(list(files[i : i + size]), *args) for i in range(0, len(files), size)]
    # More workers than chunks or than a few per core gains nothing; a huge -j (fork starts them
    # all at once) would exhaust the process table or overflow.
    workers = max(1, min(jobs, len(chunks), 4 * (os.cpu_count() or 1))) if parallel else 1
    results: list[T] = []
    pool = _pool(workers)
    futures = [pool.submit(_run_limited, work, chunk) for chunk in chunks]
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
        # Chunks another worker finished before the pool broke keep their results (their files may
        # already be written: redoing them would report nothing to do); the rest are redone one by one.
        finished = {i: f.result() for i, f in enumerate(futures) if i >= done and _succeeded(f)}
        pool.shutdown(wait=True, cancel_futures=True)
        remaining = [path for i, chunk in enumerate(chunks) if i >= done and i not in finished for path in chunk[0]]
        for chunk_results in finished.values():
            if progress:
                progress(len(chunk_results))
        redone: list[T] = []
        try:
            _one_by_one(work, remaining, args, progress, on_crash, redone)
        except KeyboardInterrupt:
            raise Interrupted([*results, *(r for rs in finished.values() for r in rs), *redone]) from None
        redone_iter = iter(redone)
        for i in range(done, len(chunks)):
            results.extend(finished[i] if i in finished else [next(redone_iter) for _ in chunks[i][0]])
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


def _in_process(work, files: Sequence[str], args: tuple, progress) -> list:
    size = 1 if progress else max(1, len(files))  # with progress, an interrupt loses no finished file
    results: list = []
    try:
        for i in range(0, len(files), size):
            chunk_results = work((list(files[i : i + size]), *args))
            results.extend(chunk_results)
            if progress:
                progress(len(chunk_results))
    except KeyboardInterrupt:
        raise Interrupted(results) from None
    return results


def _succeeded(future) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


def _exit_codes(processes, timeout: float = 5.0) -> list[int]:
    """The non-zero exit codes of a broken pool's workers.

    The executor's own manager thread reaps dead workers too; when it wins the race, our join
    returns at once with no status (waitpid: ECHILD) and the code appears on the shared process
    object a moment later, so poll for it briefly.
    """
    deadline = time.monotonic() + timeout
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
    while any(p.exitcode is None for p in processes) and time.monotonic() < deadline:
        time.sleep(0.01)
    return [p.exitcode for p in processes if p.exitcode]


def _one_by_one(work, files: list[str], args: tuple, progress, on_crash, results: list) -> None:
    """Each file alone in a single-worker pool, restarted whenever a file kills its worker."""
    pool = _pool(1)
    try:
        for path in files:
            future = pool.submit(_run_limited, work, ([path], *args))
            processes = list(getattr(pool, "_processes", {}).values())  # to read a dead one's exit code
            try:
                results.extend(future.result())
            except BrokenProcessPool:
                codes = _exit_codes(processes)
                results.append(on_crash(path, death_cause(codes[0] if codes else None)))
                pool.shutdown(wait=True, cancel_futures=True)
                pool = _pool(1)
            if progress:
                progress(1)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
