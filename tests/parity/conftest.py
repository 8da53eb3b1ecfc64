"""Fixtures the parity tests share: the ports binary and a parity directory per dtype."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL = "fixtures/parity/small_net.py:SmallNet"


@pytest.fixture(scope="session")
def parity_ports() -> Path:
    """examples/parity-ports, built by cargo (dev profile). Without cargo the tests skip, except
    where CANDLE_PORT_REQUIRE_CARGO is set (CI): there they fail."""
    cargo = shutil.which("cargo")
    if not cargo:
        reason = "cargo not found: the candle side needs Rust (https://rustup.rs)"
        if os.environ.get("CANDLE_PORT_REQUIRE_CARGO"):
            pytest.fail(f"{reason}, and CANDLE_PORT_REQUIRE_CARGO is set")
        pytest.skip(reason)
    build = subprocess.run([cargo, "build", "-p", "parity-ports", "--locked", "--message-format=short"],
                           cwd=ROOT, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "parity-ports"


def candle_port(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "candle_port", *args], cwd=cwd, capture_output=True, text=True)


def write_reference(out: Path, *args: str) -> Path:
    done = candle_port("reference", *args, "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="session")
def small_f64(tmp_path_factory) -> Path:
    return write_reference(tmp_path_factory.mktemp("small64") / "dir", SMALL, "--input-shape", "2,3,12,12",
                           "--dtype", "float64", "--eval", "--steps", "3")


@pytest.fixture(scope="session")
def small_f32(tmp_path_factory) -> Path:
    return write_reference(tmp_path_factory.mktemp("small32") / "dir", SMALL, "--input-shape", "2,3,12,12", "--eval")


def port_side(binary: Path, port: str, torch_side: Path, copy_to: Path, extra: str = "") -> Path:
    """A copy of the torch side with `port`'s candle side written into it."""
    shutil.copytree(torch_side, copy_to)
    done = subprocess.run([str(binary), port, str(copy_to), *([extra] if extra else [])], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return copy_to
