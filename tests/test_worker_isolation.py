"""A worker process that dies takes down only the file it was working on; every other file is done."""

from __future__ import annotations

import os
import signal

from candle_port.config import Config
from candle_port.engine import check_paths
from candle_port.parallel import map_files

BILINEAR = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"


def _crash_on_poison(args):
    paths, marker = args
    out = []
    for path in paths:
        if path.endswith(marker):
            os.kill(os.getpid(), signal.SIGSEGV)  # as libcst's native parser does on deep nesting
        out.append(f"ok {path}")
    return out


def test_a_dead_worker_costs_only_its_file():
    files = [f"f{i:03}.py" for i in range(100)]
    results = map_files(_crash_on_poison, files, ("f037.py",), jobs=2, on_crash=lambda p, cause: f"crashed {p}")
    assert results == [f"crashed {p}" if p == "f037.py" else f"ok {p}" for p in files]


def test_two_poisoned_files_both_found():
    files = [f"f{i:03}.py" for i in range(60)]
    results = map_files(_crash_on_poison, files, ("9.py",), jobs=2, on_crash=lambda p, cause: f"crashed {p}")
    assert results == [f"crashed {p}" if p.endswith("9.py") else f"ok {p}" for p in files]


def test_deeply_nested_brackets_never_reach_libcst(tmp_path):
    """5,000 nested parentheses crash libcst's parser; CPython rejects them, so it is a syntax error."""
    (tmp_path / "deep.py").write_text(BILINEAR + "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    (tmp_path / "strings.py").write_text(BILINEAR + "s = '" + "(" * 300 + "'\n")  # brackets in a string are fine
    report = check_paths([str(tmp_path)], Config(), jobs=1)
    assert [(e.path.endswith("deep.py"), "too many nested parentheses" in e.reason) for e in report.errors] == [(True, True)]
    assert [os.path.basename(f.path) for f in report.findings] == ["strings.py"]


def test_a_parser_crash_in_a_one_process_check_costs_only_its_file(tmp_path):
    """A 10,000-term `and` (valid Python) overflows libcst's native parser (SIGSEGV); -j1 still finishes."""
    (tmp_path / "bad.py").write_text(BILINEAR + "z = " + " and ".join(["a"] * 10_000) + "\n")
    (tmp_path / "good.py").write_text(BILINEAR)
    report = check_paths([str(tmp_path)], Config(), jobs=1)
    assert [os.path.basename(f.path) for f in report.findings if f.path.endswith("good.py")] == ["good.py"]
    assert all(e.path.endswith("bad.py") for e in report.errors)
