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


PORT_MANIFEST = """[package]
name = "{name}"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
candle = {{ package = "candle-core", version = "=0.11.0" }}
candle-nn = "=0.11.0"
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"

[workspace]
"""


def build_instrumented(crate: Path, name: str, sources: dict[str, str]) -> tuple[Path, str]:
    """A binary crate `name` of `sources` (file name -> text, main.rs among them), run through
    `port-fix --instrument` against this checkout's candle-port-parity (a second run must change
    nothing) and built offline in the workspace's target directory (its Cargo.lock, so only the
    crate itself compiles): the binary, and port-fix's summary."""
    (crate / "src").mkdir(parents=True)
    for file, text in sources.items():
        (crate / "src" / file).write_text(text)
    (crate / "Cargo.toml").write_text(PORT_MANIFEST.format(name=name))
    shutil.copy(ROOT / "Cargo.lock", crate / "Cargo.lock")
    fixed = candle_port("fix", "--instrument", "--parity-crate", str(ROOT / "crates" / "candle-port-parity"), str(crate))
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    assert "candle-port-parity = { path = " in (crate / "Cargo.toml").read_text()
    again = candle_port("fix", "--instrument", "--check", str(crate))
    assert again.returncode == 0, again.stderr  # twice is once
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    build = subprocess.run([cargo, "build", "--offline", "--message-format=short"], cwd=crate, capture_output=True,
                           text=True, env={**os.environ, "CARGO_TARGET_DIR": str(target)})
    assert build.returncode == 0, build.stderr[-3000:]
    return target / "debug" / name, fixed.stderr


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
