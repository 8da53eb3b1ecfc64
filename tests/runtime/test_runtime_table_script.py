"""bench/runtime_table.py, the command the docs give for the speed table, runs and prints rows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| AdaptiveAvgPool2d\(7\) cl \| \(8, 512, 14, 14\) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$", re.M)


def _table(*extra: str) -> str:
    command = [sys.executable, str(ROOT / "bench" / "runtime_table.py"), "--rounds", "1", "--only", "AdaptiveAvgPool2d(7) cl", *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_each_row_in_its_own_process():
    out = _table()
    assert ROW.search(out), out
    assert "| **median** |" in out


def test_same_process():
    assert ROW.search(_table("--same-process")), "no row printed"


def test_path_eager_and_composition():
    """--path eager times the runtime as plain eager PyTorch runs it (torch's kernels, even with
    the suite's CANDLE_PORT_RUNTIME=composition); the default times the compositions."""
    eager = _table("--path", "eager", "--no-memory")
    assert ROW.search(eager.replace("| nan |", "| 0 |")) and "runtime path: eager" in eager, eager
    assert "runtime path: composition" in _table("--no-memory", "--same-process")
