"""Fixtures the verify tests share."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def binary() -> Path:
    """candle-port-run as `cargo test` built it (dev profile: no release build in CI). Without
    cargo the test skips, except where CANDLE_PORT_REQUIRE_CARGO is set (CI): there it fails."""
    from candle_port.verify.candle_run import CandleRunError, find_binary

    if not (shutil.which("cargo") or os.environ.get("CANDLE_PORT_RUN")):
        reason = "cargo not found: the candle side needs Rust (https://rustup.rs)"
        if os.environ.get("CANDLE_PORT_REQUIRE_CARGO"):
            pytest.fail(f"{reason}, and CANDLE_PORT_REQUIRE_CARGO is set")
        pytest.skip(reason)
    try:
        return find_binary(profile="dev")
    except CandleRunError as exc:
        pytest.fail(str(exc))
