"""Where verify --candle finds candle-port-run: the installed wheel's binary beside python, PATH, or
a cargo build of this checkout whose progress reaches the user; a clear error when none exists."""

from __future__ import annotations

import io
import stat
from pathlib import Path

import pytest

from candle_port.verify import candle_binary
from candle_port.verify.candle_binary import CandleRunError, find_binary


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def no_binary(monkeypatch, tmp_path):
    """No CANDLE_PORT_RUN, an empty scripts folder and PATH, cargo absent."""
    monkeypatch.delenv("CANDLE_PORT_RUN", raising=False)
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    monkeypatch.setattr(candle_binary.sysconfig, "get_path", lambda name: str(scripts))
    monkeypatch.setattr(candle_binary.sys, "executable", str(scripts / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    return scripts


def test_the_wheels_binary_beside_python_is_found_without_path(no_binary):
    binary = _executable(no_binary / "candle-port-run", "#!/bin/sh\n")
    assert find_binary(build=False) == binary


def test_an_install_without_binary_or_source_says_how_to_get_it(no_binary, monkeypatch):
    monkeypatch.setattr(candle_binary, "_workspace_root", lambda: None)
    with pytest.raises(CandleRunError, match=r"not installed: install its wheel \(pip install ./crates/candle-port-run"):
        find_binary()


def test_a_checkout_without_cargo_names_both_ways(no_binary, monkeypatch, tmp_path):
    monkeypatch.setattr(candle_binary, "_workspace_root", lambda: tmp_path)
    with pytest.raises(CandleRunError, match=r"needs cargo \(https://rustup.rs\): install its wheel"):
        find_binary()


def _fake_cargo(tmp_path: Path, body: str) -> Path:
    return _executable(tmp_path / "bin" / "cargo", f"#!/bin/sh\n{body}\n")


def test_the_first_build_announces_itself_and_streams_cargos_progress(no_binary, monkeypatch, tmp_path):
    cargo = _fake_cargo(tmp_path, 'echo "   Compiling candle-core v0.11.0" >&2\n'
                                  'mkdir -p "$CARGO_TARGET_DIR/release" && touch "$CARGO_TARGET_DIR/release/candle-port-run"\n'
                                  'echo "    Finished release profile" >&2')
    monkeypatch.setenv("PATH", f"{cargo.parent}:/usr/bin:/bin")
    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path / "target"))
    monkeypatch.setattr(candle_binary, "_workspace_root", lambda: tmp_path)
    stream = io.StringIO()
    assert find_binary(stream=stream) == tmp_path / "target" / "release" / "candle-port-run"
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("candle-port-run: not built yet, building it with cargo (release profile")
    assert lines[1:] == ["   Compiling candle-core v0.11.0", "    Finished release profile"]


def test_an_up_to_date_build_prints_nothing(no_binary, monkeypatch, tmp_path):
    cargo = _fake_cargo(tmp_path, 'echo "    Finished release profile in 0.1s" >&2')
    _executable(tmp_path / "target" / "release" / "candle-port-run", "#!/bin/sh\n")
    monkeypatch.setenv("PATH", f"{cargo.parent}:/usr/bin:/bin")
    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path / "target"))
    monkeypatch.setattr(candle_binary, "_workspace_root", lambda: tmp_path)
    stream = io.StringIO()
    find_binary(stream=stream)
    assert stream.getvalue() == ""


def test_a_failed_build_names_cargos_error(no_binary, monkeypatch, tmp_path):
    cargo = _fake_cargo(tmp_path, 'echo "   Compiling x" >&2\necho "error: linker cc not found" >&2\n'
                                  'echo "warning: build failed" >&2\nexit 101')
    monkeypatch.setenv("PATH", f"{cargo.parent}:/usr/bin:/bin")
    monkeypatch.setattr(candle_binary, "_workspace_root", lambda: tmp_path)
    with pytest.raises(CandleRunError, match="cargo build of candle-port-run failed: error: linker cc not found"):
        find_binary(stream=io.StringIO())
