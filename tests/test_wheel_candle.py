"""A pip user gets `verify --candle` without Rust: candle-port's wheel and candle-port-run's
companion wheel (crates/candle-port-run, maturin), both built from this checkout, installed into a
fresh venv, run the README's U-Net with `--candle` with no cargo on PATH and no source tree; and
no stage of that run is silent for more than MAX_SILENCE_S (piped, as in a CI log)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_SILENCE_S = 10.0


def _run(command: list[str], timeout: int, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _wheels(out: Path) -> list[Path]:
    """candle-port's wheel (setuptools, no isolation) and candle-port-run's (maturin, the dev
    profile: `cargo test` has built it already, so this is seconds in CI, not a release build)."""
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)], 300)
    _run([sys.executable, "-m", "maturin", "build", "--profile", "dev", "--out", str(out)], 900,
         cwd=ROOT / "crates" / "candle-port-run")
    python_wheel = sorted(out.glob("candle_port-*.whl"))
    binary_wheel = sorted(out.glob("candle_port_run-*.whl"))
    assert len(python_wheel) == 1 and len(binary_wheel) == 1, sorted(p.name for p in out.iterdir())
    assert python_wheel[0].name.endswith("-py3-none-any.whl"), "candle-port itself stays pure Python"
    return python_wheel + binary_wheel


def _fresh_venv(path: Path, wheels: list[Path]) -> Path:
    """A new venv with the wheels installed; torch and the other dependencies come from this
    environment's site-packages (a .pth line after the venv's own, written after pip ran so that
    pip does not see this environment's candle-port), not from a download."""
    _run([sys.executable, "-m", "venv", str(path)], 120)
    python = path / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", *map(str, wheels)], 300,
         env={"PATH": "/usr/bin:/bin"})
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], 60).stdout.strip()
    Path(purelib, "zz-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    return python


@pytest.mark.slow
def test_wheels_give_verify_candle_without_cargo(tmp_path):
    """About a minute after `cargo test`: two wheel builds, a venv, one verify --candle."""
    if shutil.which("cargo") is None:
        if os.environ.get("CANDLE_PORT_REQUIRE_CARGO"):
            pytest.fail("cargo not found")
        pytest.skip("cargo not found (building candle-port-run's wheel needs Rust: https://rustup.rs)")
    wheels = _wheels(tmp_path / "dist")
    python = _fresh_venv(tmp_path / "venv", wheels)
    bin_dir = python.parent
    assert (bin_dir / "candle-port-run").is_file(), "the companion wheel installs the binary next to python"
    # No cargo (rustup puts it in ~/.cargo/bin), no CANDLE_PORT_RUN, no source tree on the path, and
    # the venv not activated (its bin/ not on PATH): the binary is found beside the venv's python.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    assert shutil.which("cargo", path=env["PATH"]) is None, "cargo must not be reachable for this test"
    where = _run([str(python), "-c", "import candle_port; print(candle_port.__file__)"], 60, env=env).stdout
    assert where.startswith(str(tmp_path / "venv")), where
    command = [str(bin_dir / "candle-port"), "verify", "examples/unet.py:UNet", "--input-shape", "1,3,32,32", "--candle"]
    lines, returncode = _timed_lines(command, cwd=ROOT, env=env)
    out = "\n".join(text for _, text in lines)
    assert returncode == 0, out[-6000:]
    assert "candle, rewritten copy (port-fix):" in out
    assert "candle port: PASS" in out, out[-3000:]
    times = [0.0] + [at for at, _ in lines]
    gaps = [(later - earlier, text) for earlier, (later, text) in zip(times, lines)]
    longest = max(gaps)
    assert longest[0] <= MAX_SILENCE_S, f"silent for {longest[0]:.1f} s before: {longest[1]}"


def _timed_lines(command: list[str], **kwargs) -> tuple[list[tuple[float, str]], int]:
    """Each line of stdout and stderr together, with the seconds since the start it arrived at."""
    started = time.monotonic()
    lines = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.monotonic() - started, line.rstrip("\n")))
    return lines, proc.returncode
