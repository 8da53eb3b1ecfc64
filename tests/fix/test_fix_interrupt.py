"""Ctrl-C and SIGTERM stop port-fix cleanly: it lists what it had already rewritten and exits 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

import candle_port.rewriters.fixer as fixer
from candle_port.pipeline import parallel
from candle_port.cli.entry import single_command_app
from candle_port.cli.fix import fix_command
from candle_port.rewriters import writeback

SITE = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
APP = single_command_app(fix_command, "port-fix")
ROOT = Path(__file__).resolve().parents[2]


def test_ctrl_c_lists_what_was_rewritten_and_exits_130(tmp_path: Path, monkeypatch):
    names = [f"{c}.py" for c in "abcdefgh"]
    for name in names:
        (tmp_path / name).write_text(SITE)
    real_fix_text = fixer.fix_text
    main = os.getpid()

    def ctrl_c_at_b(text, **kwargs):  # runs in the worker: Ctrl-C reaches the main process, as a terminal's would
        if kwargs["path"].endswith("b.py"):
            os.kill(main, signal.SIGINT)
            time.sleep(0.5)
        return real_fix_text(text, **kwargs)

    monkeypatch.setattr(fixer, "fix_text", ctrl_c_at_b)
    result = CliRunner().invoke(APP, ["--jobs", "1", str(tmp_path)])
    assert result.exit_code == 130
    listed = {line.split(": rewritten before")[0] for line in result.stderr.splitlines() if ": rewritten before the interrupt" in line}
    rewritten = {str(tmp_path / name) for name in names if "candle_runtime" in (tmp_path / name).read_text()}
    assert listed == rewritten
    assert str(tmp_path / "a.py") in rewritten and len(rewritten) < len(names)  # the running file finishes, the queued ones do not start
    assert f"port-fix: interrupted after {len(listed)} files; {len(listed)} rewritten (listed above), the others untouched" in result.stderr
    assert all((tmp_path / name).read_text() == SITE for name in names if str(tmp_path / name) not in rewritten)
    assert not list(tmp_path.glob(f".*{writeback.TEMP_SUFFIX}"))


def test_sigterm_on_a_pooled_run_stops_the_workers_and_reports(tmp_path: Path):
    for i in range(600):  # far more than 3 s of work on any machine
        (tmp_path / f"m{i:03}.py").write_text(SITE + "".join(f"z{j} = {j}\n" for j in range(400)))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    process = subprocess.Popen(
        [sys.executable, "-m", "candle_port", "fix", "-j", "2", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )
    time.sleep(3)  # past start-up, inside the pooled run
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    children = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True).stdout.split()
    assert children == []
    assert process.returncode == 130, err[-2000:]
    assert "port-fix: interrupted after" in err
    rewritten = {line.split(": rewritten before")[0] for line in err.splitlines() if ": rewritten before the interrupt" in line}
    for path in tmp_path.glob("m*.py"):
        assert ("candle_runtime" in path.read_text()) == (str(path) in rewritten), path
    assert not list(tmp_path.glob(f".*{writeback.TEMP_SUFFIX}"))


def test_killing_the_main_process_leaves_no_worker_behind(tmp_path: Path):
    for i in range(600):
        (tmp_path / f"m{i:03}.py").write_text(SITE + "".join(f"z{j} = {j}\n" for j in range(400)))
    temp_root = tmp_path.parent / f"{tmp_path.name}-system-tmp"  # outside the tree it fixes
    temp_root.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TMPDIR": str(temp_root)}
    process = subprocess.Popen(
        [sys.executable, "-m", "candle_port", "fix", "-j", "2", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path,
    )
    workers: list[str] = []
    deadline = time.monotonic() + 60
    while len(workers) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        workers = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True).stdout.split()
    assert len(workers) >= 2, "the pooled run never started its workers"
    process.kill()
    process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.2)
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]]
    assert alive == []
    # The kill left the run's journal, named with its process id, for the next run's sweep.
    assert [p.name.startswith(f"{parallel.JOURNAL_PREFIX}{process.pid}-") for p in temp_root.iterdir()] == [True]


def _pooled_run(tmp_path: Path):
    """port-fix -j 2 on 600 files (far more than 3 s of work), its system temporary directory private."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(600):
        (tree / f"m{i:03}.py").write_text(SITE + "".join(f"z{j} = {j}\n" for j in range(400)))
    temp_root = tmp_path / "system-tmp"
    temp_root.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TMPDIR": str(temp_root)}
    process = subprocess.Popen(
        [sys.executable, "-m", "candle_port", "fix", "-j", "2", str(tree)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tree, start_new_session=True,
    )
    time.sleep(3)  # past start-up, inside the pooled run
    return tree, temp_root, process


def _assert_every_written_file_listed(tree: Path, temp_root: Path, process, err: str) -> None:
    assert process.returncode == 130, err[-2000:]
    assert "port-fix: interrupted after" in err
    rewritten = {line.split(": rewritten before")[0] for line in err.splitlines() if ": rewritten before the interrupt" in line}
    assert rewritten, err[-2000:]
    for path in tree.glob("m*.py"):
        assert ("candle_runtime" in path.read_text()) == (str(path) in rewritten), path
    assert not list(tree.glob(f".*{writeback.TEMP_SUFFIX}"))
    assert list(temp_root.iterdir()) == []  # the journal removed


def test_ctrl_c_twice_still_lists_every_written_file(tmp_path: Path):
    tree, temp_root, process = _pooled_run(tmp_path)
    process.send_signal(signal.SIGINT)
    time.sleep(0.01)  # the second lands while the run winds down (workers finishing, journal read)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    _assert_every_written_file_listed(tree, temp_root, process, err)


def test_sighup_to_the_process_group_lists_every_written_file_and_removes_the_journal(tmp_path: Path):
    tree, temp_root, process = _pooled_run(tmp_path)
    os.killpg(process.pid, signal.SIGHUP)  # the terminal closed: the workers get it too
    _, err = process.communicate(timeout=120)
    children = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True).stdout.split()
    assert children == []
    _assert_every_written_file_listed(tree, temp_root, process, err)
