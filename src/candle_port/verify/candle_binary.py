"""Find the ``candle-port-run`` binary that ``verify --candle`` runs, or build it.

In order: ``$CANDLE_PORT_RUN``; the scripts folder of the running Python, where
``pip install`` puts the companion wheel's binary (``crates/candle-port-run`` built by maturin,
docs/install.md), found even when the environment is not activated; ``PATH``; and in a source
checkout, ``cargo build`` of the workspace's crate. The build streams cargo's own progress to
stderr: a first release build of candle takes minutes and must not look like a hang.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections import deque
from pathlib import Path

BINARY = "candle-port-run"
INSTALL_HINT = (f"install its wheel (pip install ./crates/{BINARY} from a clone of candle-port, see "
                "docs/install.md) or set CANDLE_PORT_RUN to a built binary")
ERROR_TAIL_LINES = 20  # cargo's last lines kept for the error when a build fails


class CandleRunError(RuntimeError):
    """The candle side could not be run at all (not installed, no cargo, build failed, binary crashed)."""


def _workspace_root() -> Path | None:
    """The source checkout this package runs from, when it has the crate (not an installed wheel)."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "crates" / BINARY / "Cargo.toml").exists():
            return parent
    return None


def installed_binary() -> Path | None:
    """The binary pip installed next to this Python (the companion wheel), else the one on PATH."""
    name = BINARY + (sysconfig.get_config_var("EXE") or "")
    for folder in dict.fromkeys([sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]):
        if folder and (Path(folder) / name).is_file():
            return Path(folder) / name
    on_path = shutil.which(BINARY)
    return Path(on_path) if on_path else None


def _cargo_build(cargo: str, root: Path, profile: str, first: bool, stream) -> None:
    """``cargo build`` with cargo's progress passed through to ``stream`` (stderr), keeping the
    tail for the error message. An up-to-date build says nothing."""
    command = [cargo, "build", "--profile", profile, "--locked", "-p", BINARY]
    if first:
        print(f"{BINARY}: not built yet, building it with cargo ({profile} profile; the first build of "
              f"candle takes several minutes on 2 cores): {' '.join(command[1:])}", file=stream, flush=True)
    tail: deque[str] = deque(maxlen=ERROR_TAIL_LINES)
    with subprocess.Popen(command, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, errors="replace", bufsize=1) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            tail.append(line.rstrip())
            if line.lstrip().startswith("Finished") and len(tail) == 1:
                continue  # nothing was compiled
            stream.write(line)
            stream.flush()
    if proc.returncode != 0:
        errors = [line for line in tail if line.startswith("error")] or list(tail)[-1:] or ["no output"]
        raise CandleRunError(f"cargo build of {BINARY} failed: {errors[0]}")


def find_binary(build: bool = True, profile: str = "release", stream=None) -> Path:
    """``$CANDLE_PORT_RUN``, the installed binary, or ``cargo build`` in this source checkout
    (release for users; the tests use the dev profile that ``cargo test`` has already built)."""
    if os.environ.get("CANDLE_PORT_RUN"):
        return Path(os.environ["CANDLE_PORT_RUN"])
    installed = installed_binary()
    if installed is not None:
        return installed
    root = _workspace_root()
    if root is None:
        raise CandleRunError(f"{BINARY} is not installed: {INSTALL_HINT}")
    cargo = shutil.which("cargo")
    if cargo is None:
        raise CandleRunError(f"{BINARY} is not installed and building it from this checkout needs cargo "
                                f"(https://rustup.rs): {INSTALL_HINT}")
    target = Path(os.environ.get("CARGO_TARGET_DIR", root / "target"))
    binary = target / ("debug" if profile == "dev" else profile) / BINARY
    if build:
        _cargo_build(cargo, root, profile, not binary.exists(), stream or sys.stderr)
    if not binary.exists():
        raise CandleRunError(f"{binary} was not built")
    return binary
