"""Per-file isolation: whatever one file does to the analysis becomes that file's one-line error.

Valid Python with long chains (`x+x+...` 500 terms, 500 `elif`s, a 1,200-deep call chain) is
deeper than the default recursion limit of the recursive tree walks. Such a file is retried once
in a thread with a large stack and a high recursion limit (safe: the stack is big enough for the
limit), and if it still fails, or raises anything else, only that file is reported; the run goes
on with the others.
"""

from __future__ import annotations

import _thread
import sys

from candle_port.pipeline.findings import FileError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:
    from typing import Callable, TypeVar

    T = TypeVar("T")

DEEP_STACK_BYTES = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 60_000
# The recursion limit is per process: one deep retry at a time. (`threading` is imported by the
# retry only: few runs need it.)
_deep_lock = _thread.allocate_lock()


class OverCpuBudget(BaseException):
    """A file's work went past its CPU seconds (a BaseException: `isolated` must let it through)."""


def within_cpu_seconds(seconds: float, work: Callable[[], T]) -> T:
    """`work()`, stopped by OverCpuBudget once this process has spent `seconds` more of CPU on it.

    What a worker's RLIMIT_CPU does for a file checked in a worker (parallel.py), for a file
    checked in the main process, where that limit would end the whole run. Unguarded outside the
    main thread and where there are no interval timers (Windows)."""
    import signal

    if not hasattr(signal, "setitimer"):
        return work()

    def over_budget(signum, frame):
        raise OverCpuBudget

    try:
        previous = signal.signal(signal.SIGPROF, over_budget)
    except ValueError:  # not the main thread
        return work()
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        return work()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def isolated(path: str, work: Callable[[], T]) -> T | FileError:
    """`work()`, retried with a deep stack on RecursionError; any failure is `path`'s FileError."""
    try:
        return work()
    except RecursionError:
        pass
    except MemoryError:
        return FileError(path, "out of memory while processing this file; left unchanged")
    except Exception as exc:  # noqa: BLE001 - one file's bug must not stop the run
        return FileError(path, f"internal error, file left unchanged: {type(exc).__name__}: {exc}")
    return _deep_retry(path, work)


def _deep_retry(path: str, work: Callable[[], T]) -> T | FileError:
    import threading

    outcome: list = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # noqa: BLE001 - carried back to the calling thread
            outcome.append(exc)

    with _deep_lock:
        old_limit, old_stack = sys.getrecursionlimit(), threading.stack_size()
        try:
            threading.stack_size(DEEP_STACK_BYTES)
            sys.setrecursionlimit(DEEP_RECURSION_LIMIT)
            # A daemon: if the main thread stops waiting (Ctrl-C, a CPU budget), exit need not wait.
            thread = threading.Thread(target=run, name="candle-port-deep", daemon=True)
            thread.start()
            thread.join()
        finally:
            threading.stack_size(old_stack)
            sys.setrecursionlimit(old_limit)
    result = outcome[0] if outcome else RuntimeError("no result")
    if isinstance(result, RecursionError):
        return FileError(path, "nested too deeply to analyse (RecursionError even with a deep stack); left unchanged")
    if isinstance(result, MemoryError):
        return FileError(path, "out of memory while processing this file; left unchanged")
    if isinstance(result, KeyboardInterrupt):
        raise result
    if isinstance(result, BaseException):
        return FileError(path, f"internal error, file left unchanged: {type(result).__name__}: {result}")
    return result
