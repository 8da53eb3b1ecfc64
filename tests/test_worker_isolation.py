"""A worker process that dies takes down only the file it was working on; every other file is done."""

from __future__ import annotations

import os
import signal

import pytest

from candle_port.config import Config
from candle_port.pipeline.engine import check_paths
from candle_port.pipeline.parallel import Interrupted, map_files

# Workers die by SIGSEGV on purpose here: their crash dumps stay in each test's output.
pytestmark = pytest.mark.crashes_workers

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


def _pid_per_file(args):
    return [os.getpid() for _ in args[0]]


def test_every_worker_is_a_forked_process_and_results_come_back_in_order():
    files = [f"f{i:03}.py" for i in range(200)]
    pids = map_files(_pid_per_file, files, (), jobs=2, on_crash=lambda p, cause: None)
    assert len(pids) == len(files) and os.getpid() not in pids and len(set(pids)) == 2


def _slow(args):
    import time

    time.sleep(0.05)
    return [f"ok {p}" for p in args[0]]


def test_ctrl_c_stops_the_workers_and_keeps_what_was_sent():
    files = [f"f{i:03}.py" for i in range(40)]
    seen = []

    def progress(n):
        seen.append(n)
        if len(seen) == 3:
            raise KeyboardInterrupt

    try:
        map_files(_slow, files, (), jobs=1, progress=progress, on_crash=lambda p, cause: None)
    except Interrupted as stop:
        assert stop.results == [f"ok {p}" for p in files[:3]]
    else:
        raise AssertionError("not interrupted")


def _raise_on(args):
    paths, marker = args
    if marker in paths:
        raise ValueError(f"bug on {marker}")
    return list(paths)


def test_an_exception_in_the_work_reaches_the_caller():
    files = [f"f{i:03}.py" for i in range(60)]
    try:
        map_files(_raise_on, files, ("f041.py",), jobs=2, on_crash=lambda p, cause: None)
    except ValueError as exc:
        assert "bug on f041.py" in str(exc)
    else:
        raise AssertionError("the exception was lost")


def test_deeply_nested_brackets_never_reach_libcst(tmp_path):
    """5,000 nested parentheses crash libcst's parser; CPython rejects them, so it is a syntax error."""
    (tmp_path / "deep.py").write_text(BILINEAR + "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    (tmp_path / "strings.py").write_text(BILINEAR + "s = '" + "(" * 300 + "'\n")  # brackets in a string are fine
    report = check_paths([str(tmp_path)], Config(), jobs=1)
    assert [(e.path.endswith("deep.py"), "too many nested parentheses" in e.reason) for e in report.errors] == [(True, True)]
    assert [os.path.basename(f.path) for f in report.findings] == ["strings.py"]


def test_code_that_crashes_libcst_is_checked_in_a_one_process_check(tmp_path):
    """A 10,000-term `and` (valid Python) overflows libcst's native parser (SIGSEGV); port-check
    parses with CPython's, so -j1 checks it in the main process like any other file."""
    (tmp_path / "bad.py").write_text(BILINEAR + "z = " + " and ".join(["a"] * 10_000) + "\n")
    (tmp_path / "good.py").write_text(BILINEAR)
    report = check_paths([str(tmp_path)], Config(), jobs=1)
    assert sorted(os.path.basename(f.path) for f in report.findings) == ["bad.py", "good.py"]
    assert report.errors == []


def test_a_small_check_starts_no_worker(tmp_path, monkeypatch):
    """A tree whose files to parse are small is checked in the main process (a worker costs more
    CPU than it saves there), on any -j; large parse work goes to every core."""
    from candle_port.pipeline import engine, parallel

    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(BILINEAR)

    def no_fork():
        raise AssertionError("forked")

    monkeypatch.setattr(os, "fork", no_fork)
    for jobs in (1, 2, None):
        report = check_paths([str(tmp_path)], Config(), jobs=jobs)
        assert len(report.findings) == 3 and report.errors == []
    monkeypatch.undo()  # os.fork back: the workers below are real
    asked = []
    real = parallel.map_files
    monkeypatch.setattr(engine, "map_files", lambda *a, **k: asked.append(k.get("parallel")) or real(*a, **k))
    monkeypatch.setattr(engine, "PARALLEL_PARSE_BYTES", 2 * len(BILINEAR))
    report = check_paths([str(tmp_path)], Config(), jobs=2)
    assert asked == [True] and len(report.findings) == 3
    asked.clear()
    report = check_paths([str(tmp_path)], Config(), jobs=1)
    assert asked == [None] and len(report.findings) == 3


def test_a_file_past_its_cpu_budget_in_the_main_process_costs_only_that_file(tmp_path, monkeypatch):
    """In the main process no worker's CPU limit stops a file that never ends: an interval timer
    does, and the file becomes its own error, as a stopped worker's file would."""
    from candle_port.pipeline import checker, engine

    (tmp_path / "a_good.py").write_text(BILINEAR)
    (tmp_path / "b_endless.py").write_text(BILINEAR + "# endless\n")
    (tmp_path / "c_good.py").write_text(BILINEAR)
    real = checker.check_text

    def check_text(text, *args, **kwargs):
        while "# endless" in text:
            pass
        return real(text, *args, **kwargs)

    monkeypatch.setattr(checker, "check_text", check_text)
    monkeypatch.setattr(engine, "FILE_CPU_SECONDS", 0.3)
    report = check_paths([str(tmp_path)], Config(), jobs=1)
    assert sorted(os.path.basename(f.path) for f in report.findings) == ["a_good.py", "c_good.py"]
    assert [(os.path.basename(e.path), e.reason) for e in report.errors] == [
        ("b_endless.py", "not checked: it took more than 0.3 s of CPU while checking this file")
    ]


def test_screening_a_small_tree_in_the_main_process_changes_no_result(tmp_path, monkeypatch):
    """A one-worker run reads its files in the main process first and sends only those that need
    the parser to a worker (engine._first_pass); every result, error and wrapper call is what a
    run that reads every file in its worker gives."""
    from candle_port.pipeline import engine

    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "clean.py").write_text("import os\n")
    (tmp_path / "site.py").write_text(BILINEAR)
    (tmp_path / "comment.py").write_text("# F.interpolate(x, mode='bilinear')\n")
    (tmp_path / "binary.py").write_bytes(b"\x00\x01")
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")  # not UTF-8 and no cookie
    (tmp_path / "wrap.py").write_text(
        "import torch.nn.functional as F\n\ndef resize(x, mode='nearest'):\n    return F.interpolate(x, scale_factor=2, mode=mode)\n"
    )
    (tmp_path / "user.py").write_text("from .wrap import resize\ny = resize(x, mode='bilinear')\n")

    def summary(report):
        return (
            [(os.path.basename(r.path), r.parsed, r.call_words) for r in report.results],
            sorted((os.path.basename(f.path), f.line, f.code, f.wrapper) for f in report.findings),
            sorted((os.path.basename(e.path), e.reason) for e in report.errors),
        )

    screened = summary(check_paths([str(tmp_path)], Config(), jobs=1))
    calls = []
    real = engine.screen_file
    monkeypatch.setattr(engine, "screen_file", lambda path: calls.append(path) or None)
    in_workers = summary(check_paths([str(tmp_path)], Config(), jobs=1))
    assert len(calls) == 8 and screened == in_workers
    assert ("user.py", 2, "CP101", f"{tmp_path.name}.wrap.resize") in screened[1]
    assert [name for name, _ in screened[2]] == ["binary.py", "latin.py"]
    assert real(str(tmp_path / "site.py")) is None and real(str(tmp_path / "clean.py")).parsed is False
