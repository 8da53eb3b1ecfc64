"""Fault injection: a file that crashes, exhausts or stalls its worker is that file's one-line error.

Each test runs port-fix as a user would (the CLI, `-j 1` unless said) on a tree with one hostile
file and one good file, and checks: the exit code, exactly one error line naming the hostile file,
the good file fixed, the hostile file unchanged, no temporary file left. The crashes are real where
they are fast (libcst's parser on a 10,000-term `and` chain; libcst under a memory limit; a
5,000-term sum that takes libcst minutes, under a 1 s CPU limit) and injected otherwise.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

import candle_port.rewriters.fixer as fixer
from candle_port.pipeline import parallel
from candle_port.cli.entry import single_command_app
from candle_port.cli.fix import fix_command
from candle_port.rewriters import writeback

# Workers die by SIGSEGV on purpose here: their crash dumps stay in each test's output.
pytestmark = pytest.mark.crashes_workers

SITE = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
APP = single_command_app(fix_command, "port-fix")


LIMIT_S = 180  # a hard bound per test, whatever the fault does (CI: each takes 1-16 s)


@pytest.fixture(autouse=True)
def bounded_in_time():
    def expire(signum, frame):
        pytest.fail(f"a fault-injection test ran over {LIMIT_S} s", pytrace=False)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(LIMIT_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def run(*args, jobs: int = 1):
    return CliRunner().invoke(APP, ["--jobs", str(jobs), *map(str, args)])


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def only_error_is(result, path: Path, reason: str) -> None:
    lines = error_lines(result)
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: "), result.stderr[-3000:]
    assert reason in lines[0], lines[0]


def hostile_tree(tmp_path: Path, tail: str) -> tuple[Path, Path]:
    bad, good = tmp_path / "bad.py", tmp_path / "good.py"
    bad.write_text(SITE + tail)
    good.write_text(SITE)
    return bad, good


def no_temp_files(directory: Path) -> bool:
    return not list(directory.rglob(f"*{writeback.TEMP_SUFFIX}"))


def test_a_parser_segfault_in_a_one_process_run_is_one_files_error(tmp_path: Path):
    """libcst's native parser overflows its stack on a 10,000-term `and` (valid Python): SIGSEGV."""
    tail = "z = " + " and ".join(["a"] * 10_000) + "\n"
    bad, good = hostile_tree(tmp_path, tail)
    result = run(tmp_path)
    assert result.exit_code == 3
    assert len(error_lines(result)) == 1 and str(bad) in error_lines(result)[0], result.stderr[-3000:]
    assert "candle_runtime" in good.read_text() and bad.read_text() == SITE + tail


def _segfault_on_bad(text, **kwargs):
    if kwargs["path"].endswith("bad.py"):
        os.kill(os.getpid(), signal.SIGSEGV)
    return REAL_FIX_TEXT(text, **kwargs)


REAL_FIX_TEXT = fixer.fix_text


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_dead_worker_is_named_and_every_other_file_fixed(tmp_path: Path, monkeypatch, jobs: int):
    """-j1 and a pooled run (60 files, 2 workers): the crash costs one file, with its cause, and the
    summary counts every other file. The crashing file sorts mid-chunk (-j1 runs 8 files a task), so
    files written before it in its chunk, and in a pooled run files other workers wrote when the
    executor stopped them, are found in the run's journal."""
    monkeypatch.setattr(fixer, "fix_text", _segfault_on_bad)
    bad, good = tmp_path / "m03bad.py", tmp_path / "good.py"
    for i in range(58):
        (tmp_path / f"m{i:02}.py").write_text(SITE)
    bad.write_text(SITE)
    good.write_text(SITE)
    result = run(tmp_path, jobs=jobs)
    assert result.exit_code == 3
    only_error_is(result, bad, "the parser crashed (SIGSEGV")
    assert bad.read_text() == SITE
    assert all("candle_runtime" in p.read_text() for p in tmp_path.glob("*.py") if p != bad)
    assert re.search(r"59 sites fixed in (\d+) files", result.stderr).group(1) == "59", result.stderr


def test_memory_beyond_the_workers_limit_is_one_files_error(tmp_path: Path, monkeypatch):
    """libcst needs about 260-600 bytes per byte of source; over the limit its allocator aborts the worker."""
    monkeypatch.setattr(parallel, "WORKER_MEMORY_BYTES", 150 << 20)
    tail = "data = [\n" + "    1234567890,\n" * 60_000 + "]\n"  # about 1 MB: several hundred MB in libcst
    bad, good = hostile_tree(tmp_path, tail)
    result = run(tmp_path)
    assert result.exit_code == 3
    only_error_is(result, bad, "out of memory")
    assert "candle_runtime" in good.read_text() and bad.read_text() == SITE + tail


def test_a_file_over_the_cpu_limit_is_one_files_error(tmp_path: Path, monkeypatch):
    """A 5,000-term sum takes libcst minutes (valid Python); the worker is stopped after its CPU budget."""
    monkeypatch.setattr(parallel, "FILE_CPU_SECONDS", 1)
    tail = "z = " + "+".join(["x"] * 5000) + "\n"
    bad, good = hostile_tree(tmp_path, tail)
    result = run(tmp_path)
    assert result.exit_code == 3
    only_error_is(result, bad, "it took more than 1 s of CPU")
    assert "candle_runtime" in good.read_text() and bad.read_text() == SITE + tail


def _killed_mid_write(fd):
    # Inside write_back, after the temporary file is written and before the replace.
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_mid_write_leaves_the_file_and_no_temporary_file(tmp_path: Path, monkeypatch):
    bad, good = hostile_tree(tmp_path, "")
    real_fsync = os.fsync

    def fsync(fd):
        if Path(os.readlink(f"/proc/self/fd/{fd}")).name.startswith(".bad.py."):
            _killed_mid_write(fd)
        return real_fsync(fd)

    monkeypatch.setattr(writeback.os, "fsync", fsync)
    result = run(tmp_path)
    assert result.exit_code == 3
    only_error_is(result, bad, "the worker was killed (SIGKILL")
    assert bad.read_text() == SITE and "candle_runtime" in good.read_text()
    assert no_temp_files(tmp_path)


def test_another_runs_temporary_file_is_left_alone(tmp_path: Path):
    """Only this run's temporary files (named with its tag) are removed; another run's may be mid-write."""
    hostile_tree(tmp_path, "")
    other = tmp_path / f".good.py.0123456789ab.xyz{writeback.TEMP_SUFFIX}"
    other.write_text("another run's")
    assert run(tmp_path).exit_code == 0
    assert other.read_text() == "another run's"


def test_a_symlink_to_dev_zero_is_not_read(tmp_path: Path):
    bad, good = tmp_path / "zero.py", tmp_path / "good.py"
    bad.symlink_to("/dev/zero")
    good.write_text(SITE)
    result = run(tmp_path)
    assert result.exit_code == 3
    only_error_is(result, bad, "not a regular file")
    assert "candle_runtime" in good.read_text()


def test_one_process_run_never_parses_in_the_main_process(tmp_path: Path, monkeypatch):
    """The guarantee behind the tests above: with -j1 the parse happens in a worker, not in the run's process."""
    main = os.getpid()
    pids = tmp_path / "pids"

    def record(text, **kwargs):
        with open(pids, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        return REAL_FIX_TEXT(text, **kwargs)

    monkeypatch.setattr(fixer, "fix_text", record)
    (tmp_path / "m.py").write_text(SITE)
    assert run(tmp_path / "m.py").exit_code == 0
    assert str(main) not in pids.read_text().split()


def _limits_in_worker(args):
    import resource

    return [tuple(resource.getrlimit(r)[0] for r in (resource.RLIMIT_CORE, resource.RLIMIT_AS, resource.RLIMIT_CPU)) for _ in args[0]]


def test_workers_run_under_limits_and_the_main_process_does_not():
    """No core file from a crashing parser; memory and CPU capped in the worker only."""
    import resource

    before = [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU)]
    [(core, address_space, cpu)] = parallel.map_files(_limits_in_worker, ["m.py"], (), jobs=1, on_crash=lambda p, c: None)
    assert core == 0
    assert address_space != resource.RLIM_INFINITY and cpu != resource.RLIM_INFINITY
    assert [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU)] == before
