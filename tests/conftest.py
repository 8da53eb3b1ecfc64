"""Shared test fixtures: the real corpus and its ground truth, and CLI runners."""

from __future__ import annotations

import ast
import faulthandler
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The runtime's ops call torch's own kernel in plain eager mode (candle_port/runtime/_dispatch.py);
# a test that compares one with torch would compare torch with itself. The whole suite, and every
# process it starts (verify's workers, port-fix's numerics, the bench script), runs the
# composition; tests/runtime/test_runtime_dispatch.py unsets this to test the eager choice.
os.environ["CANDLE_PORT_RUNTIME"] = "composition"
CORPUS_PACKAGES = ("timm", "diffusers", "segmentation_models_pytorch", "kornia")


def shared_dir() -> Path | None:
    """../shared beside the checkout (or $CANDLE_PORT_SHARED): candle-ops.md and the corpus truth."""
    candidates = [os.environ.get("CANDLE_PORT_SHARED"), ROOT.parent / "shared"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "corpus" / "truth").is_dir():
            return Path(candidate)
    return None


def _missing(reason: str):
    """Skip where the corpus cannot be had; in CI (.ci/run sets CANDLE_PORT_REQUIRE_CORPUS) fail."""
    if os.environ.get("CANDLE_PORT_REQUIRE_CORPUS"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    directory = Path(os.environ.get("CANDLE_PORT_CORPUS", ROOT / ".corpus"))
    if not all((directory / p).is_dir() for p in CORPUS_PACKAGES):
        shared = shared_dir()
        if shared is None:
            _missing("../shared/corpus is not beside this checkout, so the corpus cannot be fetched")
        done = subprocess.run(["bash", str(shared / "corpus" / "fetch.sh"), str(directory)], capture_output=True, text=True)
        if done.returncode != 0 or not all((directory / p).is_dir() for p in CORPUS_PACKAGES):
            _missing(f"the corpus could not be fetched: {done.stderr.strip()[-300:]}")
    return directory


REAL_PROJECTS = ("ultralytics", "segment_anything")


@pytest.fixture(scope="session")
def real_projects_dir() -> Path:
    """ultralytics and segment-anything from PyPI (scripts/fetch-real-projects.sh), for the
    findings tests/truth/training_paths.jsonl labels on or off a training path; kept apart from
    the dev corpus, whose tests check every file under it against its own truth."""
    directory = Path(os.environ.get("CANDLE_PORT_REAL_PROJECTS", ROOT / ".real-projects"))
    if not all((directory / p).is_dir() for p in REAL_PROJECTS):
        script = ROOT / "scripts" / "fetch-real-projects.sh"
        done = subprocess.run(["bash", str(script), str(directory)], capture_output=True, text=True)
        if done.returncode != 0 or not all((directory / p).is_dir() for p in REAL_PROJECTS):
            _missing(f"the real projects could not be fetched: {done.stderr.strip()[-300:]}")
    return directory


@pytest.fixture(scope="session")
def truth_rows() -> list[dict]:
    shared = shared_dir()
    if shared is None:
        _missing("../shared/corpus/truth is not beside this checkout")
    rows = []
    for path in sorted((shared / "corpus" / "truth").glob("*.jsonl")):
        if path.name.count(".") > 1:  # <package>.wrappers.jsonl, <package>.wrapper_calls.jsonl: not sites
            continue
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


def run_tool(*args: str, stdin: bytes | None = None, cwd: Path | None = None, tool: str = "check") -> subprocess.CompletedProcess:
    """Run `candle-port <tool> ...` in a fresh interpreter, as a user would."""
    command = [sys.executable, "-m", "candle_port", tool, *args]
    return subprocess.run(command, input=stdin, capture_output=True, cwd=cwd, timeout=600)


def modules_loaded_by(
    entry: str, argv: list[str], modules: tuple[str, ...], exit_code: int, cwd: Path | None = None
) -> tuple[list[str], subprocess.CompletedProcess]:
    """Which of `modules` a console script's run imported, and the run: `entry` (port_check_entry
    or port_fix_entry) with `argv`, in a fresh interpreter, which must exit with `exit_code`."""
    code = (
        f"import sys; from candle_port.cli.entry import {entry}\n"
        f"sys.argv = {argv!r}\n"
        f"try:\n    {entry}()\nexcept SystemExit as exit:\n    assert exit.code == {exit_code}, exit.code\n"
        f"print('loaded:', [m for m in {modules!r} if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=cwd)
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("loaded: "), done.stdout
    return ast.literal_eval(last[len("loaded: ") :]), done


@pytest.fixture(autouse=True)
def _crash_dumps_captured(request):
    """Tests marked ``crashes_workers`` kill a worker with SIGSEGV on purpose. Forked workers inherit
    pytest's faulthandler, which writes "Fatal Python error: Segmentation fault" and a traceback to
    a copy of the real stderr, past the capture, into the log of every run. For those tests it
    writes to fd 2, which pytest captures (shown only if the test fails); then back to pytest's."""
    if request.node.get_closest_marker("crashes_workers") is None or not faulthandler.is_enabled():
        yield
        return
    faulthandler.enable(file=2)
    try:
        yield
    finally:
        try:
            from _pytest.faulthandler import fault_handler_stderr_fd_key

            faulthandler.enable(file=request.config.stash[fault_handler_stderr_fd_key])
        except (ImportError, KeyError):
            faulthandler.enable(file=sys.__stderr__)
