"""examples/train_both.py: the example U-Net trains in candle with torch's losses and gradients
(judged by `candle-port compare` on a parity directory), and the port with candle's native ops
fails at its first backward with the seed's error.

The demo runs 20 steps; these tests run a few (each step is a full forward and backward in both
frameworks). The candle side is built in cargo's dev profile, the one `cargo test` already built.
Without cargo they skip, except where CANDLE_PORT_REQUIRE_CARGO is set (CI): there they fail.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "train_both.py"
STEPS = 3
REL_TOL = {"f64": 1e-9, "f32": 1e-4}  # issue 11's bounds, as in the script
NATIVE_ERROR = "backward not supported for upsample_bilinear2d"
VERDICT = re.compile(r"^candle-port compare, (?P<dtype>f64|f32): (?P<verdict>MATCH|DIVERGES): 22 step-0 gradients, worst "
                     r"(?P<grad>\S+) of scale \(\S+, allowed (?P<allowed>\S+)\); losses, \d+ steps, worst relative "
                     r"difference (?P<loss>\S+) \(step \d+\)$", re.M)

pytestmark = pytest.mark.slow


def _cargo_or_skip() -> None:
    if shutil.which("cargo") or (Path.home() / ".cargo" / "bin" / "cargo").exists():
        return
    reason = "cargo not found: the candle side needs Rust (https://rustup.rs)"
    if os.environ.get("CANDLE_PORT_REQUIRE_CARGO"):
        pytest.fail(f"{reason}, and CANDLE_PORT_REQUIRE_CARGO is set")
    pytest.skip(reason)


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
    cmd = [sys.executable, str(SCRIPT), "--profile", "dev", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800, env={**base, **(env or {})})


@pytest.fixture(scope="module")
def both():
    _cargo_or_skip()
    result = _run("--steps", str(STEPS))
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_compare_finds_that_candle_matches_torch(both, dtype):
    found = {m["dtype"]: m for m in VERDICT.finditer(both)}
    assert dtype in found, both
    m = found[dtype]
    assert m["verdict"] == "MATCH"
    assert float(m["grad"]) <= float(m["allowed"])
    assert float(m["loss"]) <= REL_TOL[dtype]


def test_loss_table_has_a_row_per_step_with_both_columns(both):
    header = next(line for line in both.splitlines() if line.lstrip().startswith("step "))
    assert header.split() == ["step", "torch", "f64", "candle", "f64", "rel", "diff", "torch", "f32", "candle", "f32", "rel", "diff"]
    rows = [line.split() for line in both.splitlines() if re.match(r"^\s+\d+\s+\d\.\d+", line)]
    assert [int(r[0]) for r in rows] == list(range(STEPS))
    # The model learns: the loss falls in both frameworks.
    assert float(rows[-1][1]) < float(rows[0][1]) and float(rows[-1][2]) < float(rows[0][2])


def test_port_fix_changes_no_number_in_torch(both):
    assert re.search(r"^torch: port-fix'ed model vs examples/unet.py.* ok$", both, re.M), both


def test_native_port_fails_at_the_first_backward_with_the_seed_message(both):
    assert f"error: loss.backward() failed at step 0: {NATIVE_ERROR}" in both
    assert re.search(r"^native step\s+0\s+forward runs$", both, re.M)
    assert f"native port fails at the first backward with {NATIVE_ERROR!r}: ok" in both
    # Its forward is torch's (compare judges the outputs): the failure is the backward's alone.
    assert re.search(r"^native forward agrees with torch \(candle-port compare\), f64: \S+ of scale ok$", both, re.M), both


def test_a_candle_run_that_differs_fails_the_comparison():
    """compare can fail: candle stepping with another learning rate leaves torch's curve at step 1."""
    _cargo_or_skip()
    result = _run("--steps", "2", "--dtype", "f64", "--candle-lr", "0.06")
    assert result.returncode == 1, result.stdout + result.stderr
    m = VERDICT.search(result.stdout)
    assert m and m["verdict"] == "DIVERGES", result.stdout
    rows = [line.split() for line in result.stdout.splitlines() if re.match(r"^\s+\d+\s+\d\.\d+", line)]
    assert float(rows[0][3]) < 1e-12 < float(rows[1][3])


@pytest.mark.parametrize(("require", "code"), [("", 0), ("1", 2)], ids=["optional", "required-in-ci"])
def test_without_cargo_the_torch_part_runs_and_says_how_to_get_rust(tmp_path, require, code):
    env = {"CANDLE_PORT_CARGO": str(tmp_path / "no-cargo-here"), "CANDLE_PORT_REQUIRE_CARGO": require}
    result = _run("--steps", "1", "--dtype", "f64", env=env)
    assert result.returncode == code, result.stdout + result.stderr
    assert "cargo not found: the candle side needs Rust, from https://rustup.rs" in result.stdout
    assert re.search(r"^torch f64 losses: \d\.\d+$", result.stdout, re.M)
