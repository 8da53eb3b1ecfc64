"""Run a per-file function over many files in worker processes, so that no file can stop the run.

With `on_crash`, every file is processed in a worker process (on Linux, started by fork; with
-j1 or a small tree, one worker), never in the main one (port-fix reads a small tree's files in
the main process first, with no parser, to skip those that need none: rewriters/files.py):
libcst's native parser can crash the process (SIGSEGV on deep nesting), abort it when an
allocation fails, or take minutes on hostile input, and none of that can be caught in the process
it happens in. (port-check parses with CPython's parser, which raises instead, and checks a
small tree in its main process: engine._check_parsing.) Each worker runs under limits
(WORKER_MEMORY_BYTES of address space beyond what it started with; FILE_CPU_SECONDS of CPU per
file), so a file that needs more kills its worker instead of the machine's memory or the run's time.

A worker that dies breaks the whole pool. The chunks already done are kept; the remaining files
are then run one at a time in a fresh single-worker pool, so the file whose worker dies again is
found and becomes `on_crash(file, cause)`, and every other file is still processed.

When the pool breaks, the executor stops every worker, so a file another worker had just written
(or whose result was on its way back) would lose its result, and redoing it would find nothing to
do. With `recover`, a worker journals such a side effect before making it (`note(path, record)`,
in a private per-run directory under the system's temporary directory); for a file whose result
was lost, the run reads the journal and `recover(path, record)` says whether the side effect
happened (the file holds the new bytes) and what its result is; otherwise the file is redone. A
record appears whole or not at all (written under a temporary name, then renamed). The journal is
removed when map_files returns, raises or is interrupted.

Ctrl-C (or SIGTERM turned into KeyboardInterrupt by the command) stops the run: queued chunks are
not started (with a journal: a stop mark in it, so no future is cancelled, which would hang the
executor if workers die too), running ones finish (a worker ignores SIGINT, so it never dies
mid-write), and Interrupted carries every result obtained, the journal's included, so the caller
can say what was already written. call_in_worker runs one call (port-fix's stdin) the same way.
Workers die with the main process (Linux: PR_SET_PDEATHSIG), so a killed run leaves none hung.
Elsewhere (Windows, macOS) a one-process run stays in-process.

On Linux a run without a journal (port-check) forks its workers itself (forked.py: no process
pool, whose imports alone cost about 30 ms); a worker that dies leaves its unsent chunks, whose
files are then run one at a time as above. Ctrl-C there stops the workers at once (they write
nothing) and Interrupted carries the results already sent.
"""

from __future__ import annotations

import functools
import itertools
import os
import signal
import stat
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor
    from typing import Callable, Sequence, TypeVar

    T = TypeVar("T")

try:
    import resource
except ImportError:  # Windows
    resource = None


# Below this many files one worker is faster than starting several.
PARALLEL_THRESHOLD = 48
_PR_SET_PDEATHSIG = 1
# A worker may map this much beyond its size at start (the largest file the checker accepts,
# 4 MB, needs about 2.4 GB in libcst; the deep-recursion retry reserves a 512 MB stack).
WORKER_MEMORY_BYTES = 4 << 30
# CPU seconds a file may take (libcst needs under 20 s for the largest accepted file; a
# 5,000-term `x+x+...` takes it minutes).
FILE_CPU_SECONDS = 120


JOURNAL_PREFIX = "candle-port-journal-"
# A journal no record was added to for this long, whose run's process is gone, is swept.
STALE_JOURNAL_SECONDS = 3600
_journal: str | None = None  # in a worker of a map_files run with `recover`: that run's journal directory
_records = itertools.count()
_STOP = "stop"  # in the journal: the run was interrupted, workers start no further file


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during map_files; `results` holds what was done, in file order, possibly with gaps."""

    def __init__(self, results: list) -> None:
        super().__init__("interrupted")
        self.results = results


def _address_space_now() -> int | None:
    try:  # bytes: a text file would load the ascii codec in every worker (1 ms)
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _worker_init() -> None:
    """In each worker: leave Ctrl-C to the main process, die when it dies, cap its memory."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the command's handler, inherited by fork
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_DFL)  # a hang-up stops the workers; the main process reports
    if sys.platform.startswith("linux"):
        import ctypes  # here: a run that starts no worker never needs it (1 ms)

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


class _NotRun:
    """A file a worker did not start because the run was interrupted."""


def _run_limited(work: Callable[[tuple], list], chunk: tuple, journal: str | None = None) -> list:
    global _journal
    if journal is not None and os.path.exists(os.path.join(journal, _STOP)):
        return [_NotRun() for _ in chunk[0]]
    _journal = journal
    _limit_cpu(len(chunk[0]))
    return work(chunk)


def note(path: str, record: object) -> bool:
    """In a worker: journal `record` for `path` before a side effect whose result could be lost.

    If the worker's result for `path` never arrives (it dies, or the pool breaks because another
    worker died, and the executor stops every worker), map_files gives the record to
    `recover(path, record)`. The record is written under a temporary name and renamed: it exists
    whole or not at all. No fsync: only this run's own process reads it back, from the page cache,
    and a machine crash ends the run anyway. Returns whether it was journaled (False outside a
    worker of a map_files run with `recover`, or when the temporary directory cannot be written:
    the side effect still happens, only its result would not be recovered).
    """
    if _journal is None:
        return False
    import pickle  # a journal is port-fix's: port-check never needs it here

    name = os.path.join(_journal, f"{os.getpid()}-{next(_records)}")
    try:
        with open(name + ".tmp", "wb") as handle:
            pickle.dump((path, record), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.rename(name + ".tmp", name + ".rec")
    except (OSError, pickle.PicklingError):
        return False
    return True


def _new_journal() -> str | None:
    """A private directory for a run's journal, named with this process's id; None (no recovery)
    if the temporary directory cannot be written. Journals of runs that were killed are swept."""
    import tempfile

    _sweep_stale_journals(tempfile.gettempdir())
    try:
        return tempfile.mkdtemp(prefix=f"{JOURNAL_PREFIX}{os.getpid()}-")
    except OSError:
        return None


def _sweep_stale_journals(directory: str, now: float | None = None) -> list[str]:
    """Remove the journals that runs killed outright (SIGKILL, a power cut) left in `directory`.

    A run removes its journal as it ends, whatever ends it, except a kill it cannot catch. A
    journal is stale when it is ours (same user), its run's process is gone (an older version's
    journal, without a process id, counts as gone) and nothing was journaled in it for
    STALE_JOURNAL_SECONDS: the age guards a live run whose process id this process cannot see (another
    PID namespace sharing /tmp). Returns the paths removed.
    """
    import shutil

    now = time.time() if now is None else now
    removed = []
    try:
        names = [n for n in os.listdir(directory) if n.startswith(JOURNAL_PREFIX)]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(directory, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or now - info.st_mtime < STALE_JOURNAL_SECONDS:
            continue
        if _journal_owner_alive(name[len(JOURNAL_PREFIX) :]):
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            removed.append(path)
    return removed


def _journal_owner_alive(suffix: str) -> bool:
    """Whether the process a journal's name starts with (`<pid>-<random>`) is running."""
    pid, dash, _ = suffix.partition("-")
    if not dash or not pid.isdigit():
        return False  # an older version's name: no process id to ask
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # someone else's process: leave it
    return True


def _mark_stop(journal: str | None) -> bool:
    """Tell the workers to start no further file: queued chunks are answered without being run.

    Not Future.cancel(): if a worker dies too (a SIGTERM to the process group), the executor then
    fails on the cancelled future (InvalidStateError in its manager thread) and the run hangs.
    """
    if journal is None:
        return False
    try:
        with open(os.path.join(journal, _STOP), "wb"):
            pass
    except OSError:
        return False
    return True


def _read_journal(journal: str | None) -> dict[str, list]:
    """The journal's records by path; a record being written when its worker died is not there."""
    records: dict[str, list] = {}
    if journal is None:
        return records
    import pickle

    try:
        names = sorted(os.listdir(journal))
    except OSError:
        return records
    for name in names:
        if not name.endswith(".rec"):
            continue
        try:
            with open(os.path.join(journal, name), "rb") as handle:
                path, record = pickle.load(handle)
        except Exception:  # noqa: BLE001 - an unreadable record is one that was never made
            continue
        records.setdefault(path, []).append(record)
    return records


def _recover(recover, path: str, records: dict[str, list]):
    """`path`'s result from its journal record, if `recover` finds its side effect happened."""
    if recover is None:
        return None
    for record in records.get(path, ()):
        result = recover(path, record)
        if result is not None:
            return result
    return None


def _can_fork() -> bool:
    return sys.platform.startswith("linux")


def workers_inherit_memory() -> bool:
    """Whether workers are forked from the caller (so a module global set before `map_files`
    reaches them without being sent with every task)."""
    return _can_fork()


def _pool(workers: int) -> ProcessPoolExecutor:
    # fork on Linux whatever the default (forkserver from Python 3.14): workers start in
    # milliseconds, with the command's state, and a one-process run can afford its worker.
    # Imported here: a run without a journal forks its workers itself (forked.py) and never
    # needs the pool, whose imports are about 30 ms.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

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


def runs_in_parallel(count: int, jobs: int | None = None) -> bool:
    """Whether map_files runs `count` files on several workers (else on one, or in-process)."""
    jobs = jobs or os.cpu_count() or 1
    return jobs > 1 and count >= PARALLEL_THRESHOLD


def map_files(
    work: Callable[[tuple], list[T]],
    files: Sequence[str],
    args: tuple = (),
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
    on_crash: Callable[[str, str], T] | None = None,
    per_file: bool = False,
    recover: Callable[[str, object], T | None] | None = None,
    parallel: bool | None = None,
) -> list[T]:
    """`work((chunk, *args))` over chunks of `files`, results in file order.

    `work` must be a module-level function (it is pickled to the workers) that returns one result
    per file of its chunk. `on_crash(path, cause)`: the result for a file whose worker process
    died (without it, BrokenProcessPool propagates, and a one-process run stays in-process).
    `per_file`: one file per task in a pooled run, for work that writes files. `recover(path,
    record)`: for a file whose result was lost, its result from the record `work` journaled with
    `note` (None: the side effect did not happen, the file is redone or is `on_crash`'s).
    `parallel`: several workers or one, where the caller knows the work better than the file
    count does (None: runs_in_parallel decides).
    """
    jobs = jobs or os.cpu_count() or 1
    if parallel is None:
        parallel = runs_in_parallel(len(files), jobs)
    parallel = parallel and jobs > 1 and len(files) > 1
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
    first = [i * size for i in range(len(chunks))]  # index of each chunk's first file
    if recover is None and not per_file and _can_fork():
        return _map_forked(work, files, args, chunks, first, workers, progress, on_crash)
    from concurrent.futures import wait
    from concurrent.futures.process import BrokenProcessPool

    journal = _new_journal() if recover is not None else None
    results: dict[int, T] = {}  # by index in `files`
    stored: set[int] = set()

    def store(c: int, chunk_results: list[T]) -> None:
        got = {k: r for k, r in enumerate(chunk_results, start=first[c]) if not isinstance(r, _NotRun)}
        results.update(got)
        stored.add(c)
        if progress and got:
            progress(len(got))

    def recover_lost() -> None:
        # Every worker has exited, so the disk is final: a file whose result was lost but whose
        # journaled write happened gets its result (redoing it would find nothing to do).
        records = _read_journal(journal)
        for k, path in enumerate(files):
            if k not in results and (result := _recover(recover, path, records)) is not None:
                results[k] = result
                if progress:
                    progress(1)

    pool: ProcessPoolExecutor | None = None
    futures: list = []
    try:
        try:
            pool = _pool(workers)
            futures = [pool.submit(_run_limited, work, chunk, journal) for chunk in chunks]
            for c, future in enumerate(futures):
                store(c, future.result())
        except BrokenProcessPool:
            if on_crash is None:
                raise
            # Chunks another worker finished before the pool broke keep their results; lost results
            # of written files come from the journal; the other files are redone one by one.
            for c, future in enumerate(futures):
                if c not in stored and _succeeded(future):
                    store(c, future.result())
            pool.shutdown(wait=True, cancel_futures=True)
            recover_lost()
            remaining = [k for k in range(len(files)) if k not in results]
            _one_by_one(work, files, remaining, args, progress, on_crash, results, journal, recover)
    except KeyboardInterrupt:
        if not _mark_stop(journal):
            for future in futures:
                future.cancel()
        wait(futures)  # the running chunks finish: their files may already be written
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        for c, future in enumerate(futures):
            if c not in stored and _succeeded(future):
                store(c, future.result())
        recover_lost()  # a worker that died meanwhile (a SIGTERM to the process group) or a redo cut short
        raise Interrupted([results[k] for k in sorted(results)]) from None
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if journal is not None:
            import shutil

            shutil.rmtree(journal, ignore_errors=True)
    return [results[k] for k in range(len(files))]


def _map_forked(work, files: Sequence[str], args: tuple, chunks: list, first: list[int], workers: int, progress, on_crash) -> list:
    """map_files without a journal: workers forked directly (forked.py), no process pool."""
    from candle_port.pipeline.forked import run_forked

    results: dict[int, object] = {}

    def store(c: int, chunk_results: list) -> None:
        results.update(enumerate(chunk_results, start=first[c]))
        if progress:
            progress(len(chunk_results))

    try:
        lost = run_forked(functools.partial(_run_limited, work), chunks, workers, _worker_init, store)
        if lost:
            if on_crash is None:
                from concurrent.futures.process import BrokenProcessPool

                raise BrokenProcessPool(f"a worker died ({death_cause(next(iter(lost.values())))})")
            remaining = [k for k in range(len(files)) if k not in results]
            _one_by_one(work, files, remaining, args, progress, on_crash, results)
    except KeyboardInterrupt:
        raise Interrupted([results[k] for k in sorted(results)]) from None
    return [results[k] for k in range(len(files))]


def call_in_worker(work: Callable[..., T], args: tuple, on_crash: Callable[[str], T]) -> T:
    """`work(*args)` in a worker process under the limits above (one file's CPU), as map_files does.

    A worker that dies gives `on_crash(cause)`. Ctrl-C stops the worker (it writes nothing) and
    propagates. Elsewhere than Linux, `work` runs in-process.
    """
    if not _can_fork():
        return work(*args)
    from concurrent.futures.process import BrokenProcessPool

    pool = _pool(1)
    try:
        future = pool.submit(_call_limited, work, args)
        processes = list(getattr(pool, "_processes", {}).values())
        try:
            return future.result()
        except BrokenProcessPool:
            codes = _exit_codes(processes)
            return on_crash(death_cause(codes[0] if codes else None))
        except KeyboardInterrupt:
            for process in processes:
                process.terminate()
            raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _call_limited(work: Callable[..., T], args: tuple) -> T:
    _limit_cpu(1)
    return work(*args)


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


def _one_by_one(work, files, indices: list[int], args: tuple, progress, on_crash, results: dict, journal=None, recover=None) -> None:
    """Each of `files[k]` for k in `indices` alone in a single-worker pool (restarted whenever a
    file kills its worker), its result into `results[k]`.

    A file whose worker died after journaling a write that happened (it was written, then the
    worker was killed) gets its recovered result, not `on_crash`'s.
    """
    from concurrent.futures.process import BrokenProcessPool

    pool = _pool(1)
    try:
        for k in indices:
            path = files[k]
            future = pool.submit(_run_limited, work, ([path], *args), journal)
            processes = list(getattr(pool, "_processes", {}).values())  # to read a dead one's exit code
            try:
                [results[k]] = future.result()
            except BrokenProcessPool:
                codes = _exit_codes(processes)
                pool.shutdown(wait=True, cancel_futures=True)
                result = _recover(recover, path, _read_journal(journal))
                results[k] = result if result is not None else on_crash(path, death_cause(codes[0] if codes else None))
                pool = _pool(1)
            if progress:
                progress(1)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
