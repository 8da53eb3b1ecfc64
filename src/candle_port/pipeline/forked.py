"""Chunks of work in forked worker processes, results back over pipes: map_files' light path.

concurrent.futures' process pool costs about 30 ms of imports per run, and a manager thread,
queues and feeder threads on top: a fifth of port-check's whole time on a small package, where
ruff takes about 0.12 s. A run with no side effect to recover (port-check; port-fix journals its
writes and keeps the pool, parallel.py) forks its workers directly: worker w takes chunks w, w + n,
w + 2n, ..., sends each chunk's results through its own pipe as soon as it has them, and exits.
Chunks a worker did not send (it died) are returned to the caller, which redoes their files one
at a time to find the one that kills its worker. Linux only (fork).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:
    from typing import Callable, Sequence

_LENGTH = struct.Struct("<Q")


class WorkerFailed(Exception):
    """The work raised in a worker: its exception, re-raised in the caller as the pool would."""


def run_forked(
    run_chunk: Callable[[object], list],
    chunks: Sequence[object],
    workers: int,
    init: Callable[[], None],
    on_result: Callable[[int, list], None],
) -> dict[int, int | None]:
    """`run_chunk(chunks[c])` in `workers` forked processes; `on_result(c, results)` in the caller
    as each chunk's results arrive. Returns, for each chunk whose results never arrived, its
    worker's exit code (negative: the signal that killed it). An exception raised by the work is
    re-raised here once every worker has stopped; KeyboardInterrupt stops them all and propagates."""
    workers = min(workers, len(chunks))
    children: dict[int, tuple[int, list[int]]] = {}  # read fd -> (pid, its chunks)
    sent: dict[int, set[int]] = {}  # read fd -> the chunks whose results arrived
    try:
        for w in range(workers):
            read, write = os.pipe()
            mine = list(range(w, len(chunks), workers))
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the worker; coverage cannot follow it
                os.close(read)
                _work(run_chunk, chunks, mine, init, write)
            os.close(write)
            children[read] = (pid, mine)
            sent[read] = set()
        failure = _collect(children, sent, on_result)
    except BaseException:
        for pid, _ in children.values():
            _kill(pid)
        _reap(children)
        raise
    finally:
        for fd in children:
            _close(fd)
    codes = _reap(children)
    if failure is not None:
        raise failure
    return {c: codes[pid] for fd, (pid, mine) in children.items() for c in mine if c not in sent[fd]}


def _work(run_chunk, chunks, mine: list[int], init, write: int) -> None:  # pragma: no cover - in the worker
    code = 0
    try:
        init()
        with os.fdopen(write, "wb") as out:
            for c in mine:
                try:
                    payload = pickle.dumps((c, run_chunk(chunks[c]), None), protocol=pickle.HIGHEST_PROTOCOL)
                except Exception as exc:  # noqa: BLE001 - sent to the caller, which raises it
                    try:
                        payload = pickle.dumps((c, None, exc), protocol=pickle.HIGHEST_PROTOCOL)
                    except Exception:  # noqa: BLE001 - an exception that cannot be pickled
                        payload = pickle.dumps((c, None, WorkerFailed(repr(exc))), protocol=pickle.HIGHEST_PROTOCOL)
                out.write(_LENGTH.pack(len(payload)) + payload)
                out.flush()
    except BaseException:  # noqa: BLE001 - a broken pipe (the caller stopped) or an interrupt
        code = 1
    finally:
        os._exit(code)  # never the caller's exit handlers or its buffered output


def _collect(children: dict[int, tuple[int, list[int]]], sent: dict[int, set[int]], on_result) -> BaseException | None:
    """Read every worker's messages until each pipe closes (the chunks that arrived into `sent`);
    the first exception the work raised."""
    buffers = {fd: bytearray() for fd in children}
    failure: BaseException | None = None
    poller = select.poll()
    for fd in children:
        poller.register(fd, select.POLLIN)
    open_fds = set(children)
    while open_fds:
        for fd, _event in poller.poll():
            data = os.read(fd, 1 << 16)
            if not data:
                poller.unregister(fd)
                open_fds.discard(fd)
                continue
            buffer = buffers[fd]
            buffer += data
            while len(buffer) >= _LENGTH.size:
                (size,) = _LENGTH.unpack_from(buffer)
                if len(buffer) < _LENGTH.size + size:
                    break
                c, results, exc = pickle.loads(bytes(buffer[_LENGTH.size : _LENGTH.size + size]))
                del buffer[: _LENGTH.size + size]
                sent[fd].add(c)
                if exc is not None:
                    failure = failure or exc
                else:
                    on_result(c, results)
    return failure


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reap(children: dict[int, tuple[int, list[int]]]) -> dict[int, int | None]:
    """Wait for every worker; exit codes by pid."""
    codes: dict[int, int | None] = {}
    for pid, _ in children.values():
        try:
            _, status = os.waitpid(pid, 0)
            codes[pid] = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            codes[pid] = None
    return codes
