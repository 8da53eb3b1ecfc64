"""Nothing lost when a worker dies: every file port-fix wrote is counted, and stdin is isolated too.

A worker journals each write before it makes it (parallel.note: path, the new bytes' hash, the
result). When results are lost (a worker dies, and the executor stops every worker with it), the
run reads the journal: a file that holds the journaled bytes counts as fixed. The journal lives in
a private directory under the system's temporary directory and is removed when the run ends, also
on Ctrl-C. `port-fix -` parses in a worker under the same limits as a file.
"""

from __future__ import annotations

import codecs
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import candle_port.rewriters.fixer as fixer
from candle_port.pipeline import parallel
from candle_port.cli.entry import single_command_app
from candle_port.cli.fix import fix_command
from candle_port.rewriters import files as files_module
from candle_port.rewriters import writeback

# Workers die by SIGSEGV on purpose here: their crash dumps stay in each test's output.
pytestmark = pytest.mark.crashes_workers

SITE = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
APP = single_command_app(fix_command, "port-fix")
ROOT = Path(__file__).resolve().parents[2]
REAL_FIX_TEXT = fixer.fix_text
REAL_WRITE_BACK = files_module.write_back
LIMIT_S = 180


@pytest.fixture(autouse=True)
def bounded_in_time():
    def expire(signum, frame):
        pytest.fail(f"a journal test ran over {LIMIT_S} s", pytrace=False)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(LIMIT_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch) -> Path:
    """The system temporary directory for this test, to see the journal come and go."""
    root = tmp_path / "system-tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def tree(tmp_path: Path, names) -> Path:
    directory = tmp_path / "tree"
    directory.mkdir()
    for name in names:
        (directory / name).write_text(SITE)
    return directory


def run(*args, jobs: int = 1, **kwargs):
    return CliRunner().invoke(APP, ["--jobs", str(jobs), *map(str, args)], **kwargs)


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def counted(result) -> tuple[int, int]:
    """(sites, files) of the summary line."""
    match = re.search(r"(\d+) sites? fixed in (\d+) files?", result.stderr)
    assert match, result.stderr[-3000:]
    return int(match.group(1)), int(match.group(2))


def left_behind(temp_root: Path, directory: Path) -> list[str]:
    """The run's journal, wherever it would be: the temporary directory and the user's tree."""
    return [str(p) for p in [*temp_root.iterdir(), *directory.rglob("*")] if parallel.JOURNAL_PREFIX in p.name or p.suffix in {".rec", ".tmp"}]


def test_a_file_written_when_another_worker_died_is_counted(tmp_path: Path, temp_root: Path, monkeypatch):
    """Pooled (2 workers): w.py is written, then bad.py's worker segfaults while w.py's worker has
    not returned; the executor stops both. Without the journal w.py would be redone and found done."""
    monkeypatch.setattr(parallel, "PARALLEL_THRESHOLD", 2)
    directory = tree(tmp_path, ["bad.py", "w.py"])
    marker = tmp_path / "w-written"

    def write_then_hang(snapshot, data, policy):
        REAL_WRITE_BACK(snapshot, data, policy)
        if snapshot.path.endswith("w.py"):
            marker.touch()
            time.sleep(120)  # the executor stops this worker when bad.py's dies

    def segfault_once_w_is_written(text, **kwargs):
        if kwargs["path"].endswith("bad.py"):
            deadline = time.monotonic() + 60
            while not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGSEGV)
        return REAL_FIX_TEXT(text, **kwargs)

    monkeypatch.setattr(files_module, "write_back", write_then_hang)
    monkeypatch.setattr(fixer, "fix_text", segfault_once_w_is_written)
    result = run(directory, jobs=2)
    assert marker.exists()
    assert result.exit_code == 3, result.stderr[-3000:]
    [line] = error_lines(result)
    assert line.startswith(f"error: {directory / 'bad.py'}: the parser crashed (SIGSEGV"), line
    assert counted(result) == (1, 1)
    assert "candle_runtime" in (directory / "w.py").read_text() and (directory / "bad.py").read_text() == SITE
    assert left_behind(temp_root, directory) == []


def test_a_worker_killed_right_after_its_write_counts_the_file(tmp_path: Path, temp_root: Path, monkeypatch):
    """-j1: a.py's worker is killed (SIGKILL: the OOM killer, a kill) after the replace: a.py is
    fixed, so it is counted, with no error; b.py is fixed in a fresh worker."""
    directory = tree(tmp_path, ["a.py", "b.py"])

    def write_then_die(snapshot, data, policy):
        REAL_WRITE_BACK(snapshot, data, policy)
        if snapshot.path.endswith("a.py"):
            os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(files_module, "write_back", write_then_die)
    result = run(directory)
    assert result.exit_code == 0, result.stderr[-3000:]
    assert error_lines(result) == []
    assert counted(result) == (2, 2)
    assert all("candle_runtime" in (directory / n).read_text() for n in ("a.py", "b.py"))
    assert left_behind(temp_root, directory) == []


def test_a_worker_killed_before_its_replace_is_that_files_error(tmp_path: Path, temp_root: Path, monkeypatch):
    """The journal record is made before the write; the file does not hold the new bytes, so it is
    not counted: it is the file's error, left unchanged, and its temporary file is removed."""
    directory = tree(tmp_path, ["a.py", "b.py"])
    real_fsync = os.fsync

    def fsync(fd):
        if Path(os.readlink(f"/proc/self/fd/{fd}")).name.startswith(".a.py."):
            os.kill(os.getpid(), signal.SIGKILL)
        return real_fsync(fd)

    monkeypatch.setattr(writeback.os, "fsync", fsync)
    result = run(directory)
    assert result.exit_code == 3
    [line] = error_lines(result)
    assert line.startswith(f"error: {directory / 'a.py'}: the worker was killed (SIGKILL"), line
    assert counted(result) == (1, 1)
    assert (directory / "a.py").read_text() == SITE and "candle_runtime" in (directory / "b.py").read_text()
    assert left_behind(temp_root, directory) == [] and not list(directory.glob(f".*{writeback.TEMP_SUFFIX}"))


def test_ctrl_c_lists_every_written_file_and_removes_the_journal(tmp_path: Path, temp_root: Path, monkeypatch):
    names = [f"{c}.py" for c in "abcdef"]
    directory = tree(tmp_path, names)
    main = os.getpid()

    def ctrl_c_at_c(text, **kwargs):
        if kwargs["path"].endswith("c.py"):
            os.kill(main, signal.SIGINT)
            time.sleep(0.5)
        return REAL_FIX_TEXT(text, **kwargs)

    monkeypatch.setattr(fixer, "fix_text", ctrl_c_at_c)
    result = run(directory)
    assert result.exit_code == 130
    listed = {line.split(": rewritten before")[0] for line in result.stderr.splitlines() if ": rewritten before the interrupt" in line}
    assert listed == {str(directory / n) for n in names if "candle_runtime" in (directory / n).read_text()}
    assert str(directory / "c.py") in listed and len(listed) < len(names)
    assert left_behind(temp_root, directory) == []


def test_sigterm_to_the_process_group_lists_every_written_file(tmp_path: Path):
    """SIGTERM to the run's process group kills the workers too (a service stop): whatever a
    worker wrote before it died is listed, from the journal; the journal is removed."""
    directory = tmp_path / "tree"
    directory.mkdir()
    for i in range(120):
        (directory / f"m{i:03}.py").write_text(SITE + "".join(f"z{j} = {j}\n" for j in range(300)))
    temp_root = tmp_path / "system-tmp"
    temp_root.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TMPDIR": str(temp_root)}
    process = subprocess.Popen(
        [sys.executable, "-m", "candle_port", "fix", "-j", "2", str(directory)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path, start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sum("candle_runtime" in p.read_text() for p in directory.glob("m*.py")) < 5:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err[-2000:]
    rewritten = {line.split(": rewritten before")[0] for line in err.splitlines() if ": rewritten before the interrupt" in line}
    on_disk = {str(p) for p in directory.glob("m*.py") if "candle_runtime" in p.read_text()}
    assert rewritten == on_disk and len(on_disk) >= 5, err[-2000:]
    assert list(temp_root.iterdir()) == [] and not list(directory.glob(".*"))


def test_an_unwritable_temporary_directory_still_fixes_every_file(tmp_path: Path, monkeypatch):
    """No journal can be made: the run goes on without it (only a lost result could not be recovered)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    directory = tree(tmp_path, ["a.py", "b.py"])
    result = run(directory)
    assert result.exit_code == 0, result.stderr[-3000:]
    assert counted(result) == (2, 2) and not (tmp_path / "missing").exists()


def _journal_dir(root: Path, suffix: str, age_s: float) -> Path:
    path = root / f"{parallel.JOURNAL_PREFIX}{suffix}"
    path.mkdir()
    (path / "1-0.rec").write_bytes(b"record")
    old = time.time() - age_s
    os.utime(path, (old, old))
    return path


def _a_dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid  # reaped: no process has this id until it is reused


def test_a_killed_runs_journal_is_swept_by_the_next_run(tmp_path: Path, temp_root: Path):
    """SIGKILL leaves a run no chance to remove its journal; the next pooled run removes journals
    whose process is gone and that are older than an hour, and leaves every other one alone."""
    stale_age = parallel.STALE_JOURNAL_SECONDS + 60
    dead = _a_dead_pid()
    swept = [_journal_dir(temp_root, f"{dead}-abc", stale_age), _journal_dir(temp_root, "oldname1", stale_age)]
    kept = [
        _journal_dir(temp_root, f"{os.getpid()}-live", stale_age),  # its run is alive
        _journal_dir(temp_root, f"{dead}-fresh", 60),  # a run another PID namespace may still hold
    ]
    (temp_root / f"{parallel.JOURNAL_PREFIX}a-file").write_text("not a journal")
    directory = tree(tmp_path, [f"m{i:03}.py" for i in range(60)])
    result = run(directory, jobs=2)
    assert result.exit_code == 0 and counted(result) == (60, 60), result.stderr[-3000:]
    assert not any(p.exists() for p in swept)
    assert all((p / "1-0.rec").exists() for p in kept)
    assert sorted(p.name for p in temp_root.iterdir()) == sorted([*(p.name for p in kept), f"{parallel.JOURNAL_PREFIX}a-file"])


def test_the_sweep_leaves_other_users_journals_alone(tmp_path: Path, monkeypatch):
    journal = _journal_dir(tmp_path, "oldname2", parallel.STALE_JOURNAL_SECONDS + 60)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(journal).st_uid + 1)
    assert parallel._sweep_stale_journals(str(tmp_path)) == [] and journal.exists()


# stdin: parsed in a worker


def test_a_parser_crash_on_stdin_is_one_line_and_exit_3(tmp_path: Path):
    """The 10,000-term `and` that segfaults libcst (test_fix_faults): one error line with the cause,
    exit 3, the input passed through unchanged, instead of the command dying with SIGSEGV."""
    source = (SITE + "z = " + " and ".join(["a"] * 10_000) + "\n").encode()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    process = subprocess.run(
        [sys.executable, "-X", "faulthandler=0", "-m", "candle_port", "fix", "-"],
        input=source, capture_output=True, env=env, cwd=tmp_path, timeout=120,
    )
    err = process.stderr.decode()
    assert process.returncode == 3, err[-2000:]
    assert process.stdout == source
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert lines == [line for line in lines if line.startswith("error: <stdin>: the parser crashed (SIGSEGV")] and len(lines) == 1, err
    assert list(tmp_path.iterdir()) == []  # no core file


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_stdin_round_trips_byte_exact_with_bom_and_newlines(newline: str):
    source = codecs.BOM_UTF8 + SITE.replace("\n", newline).encode()
    result = run("-", "--stdin-filename", "m.py", input=source)
    assert result.exit_code == 0, result.stderr
    fixed = REAL_FIX_TEXT(SITE, path="m.py").text
    assert result.stdout_bytes == codecs.BOM_UTF8 + fixed.replace("\n", newline).encode()
    unchanged = codecs.BOM_UTF8 + b"x = 1\r\n"
    assert run("-", input=unchanged).stdout_bytes == unchanged


def test_stdin_is_parsed_in_a_worker_under_the_limits(tmp_path: Path, monkeypatch):
    import resource

    seen = tmp_path / "seen"

    def record(text, **kwargs):
        limits = [resource.getrlimit(r)[0] for r in (resource.RLIMIT_CORE, resource.RLIMIT_AS, resource.RLIMIT_CPU)]
        seen.write_text(" ".join(map(str, [os.getpid(), *limits])))
        return REAL_FIX_TEXT(text, **kwargs)

    monkeypatch.setattr(fixer, "fix_text", record)
    result = run("-", input=SITE)
    assert result.exit_code == 0 and "candle_runtime" in result.stdout
    pid, core, address_space, cpu = map(int, seen.read_text().split())
    assert pid != os.getpid() and core == 0
    assert address_space != resource.RLIM_INFINITY and cpu != resource.RLIM_INFINITY
