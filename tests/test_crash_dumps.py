"""A test that kills a forked worker with SIGSEGV on purpose keeps faulthandler's "Fatal Python
error" dump inside its own captured output when marked `crashes_workers` (tests/conftest.py);
unmarked, the dump reaches the run's log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CRASHING_TEST = '''
import multiprocessing, os, signal
import pytest


def die():
    os.kill(os.getpid(), signal.SIGSEGV)


{mark}
def test_a_worker_dies():
    worker = multiprocessing.get_context("fork").Process(target=die)
    worker.start()
    worker.join()
    assert worker.exitcode == -signal.SIGSEGV
'''


@pytest.mark.parametrize("mark, dumped", [
    pytest.param("@pytest.mark.crashes_workers", False, id="marked-stays-inside"),
    pytest.param("", True, id="unmarked-reaches-the-log"),
])
def test_crash_dump_reaches_the_log_only_when_unmarked(tmp_path, mark, dumped):
    test = tmp_path / "test_crash.py"
    test.write_text(CRASHING_TEST.format(mark=mark), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), str(test)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("Fatal Python error: Segmentation fault" in done.stdout + done.stderr) is dumped, done.stdout + done.stderr
