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
