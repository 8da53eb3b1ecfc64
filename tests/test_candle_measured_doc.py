"""docs/candle-measured.md and the Rust tests it cites name the same measurements.

The page tells users which claim each test of crates/candle-port-ops/tests/candle_native.rs
confirms or corrects; a renamed, removed or unlisted test would leave the page wrong.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "candle-measured.md"
TESTS = ROOT / "crates" / "candle-port-ops" / "tests" / "candle_native.rs"


def _rust_tests() -> set[str]:
    return set(re.findall(r"#\[test\]\s*\n\s*fn (\w+)\(", TESTS.read_text(encoding="utf-8")))


def _cited_tests() -> set[str]:
    rows = [line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    cited: set[str] = set()
    for row in rows[1:]:  # past the header (the |---| rule does not start with "| ")
        last_cell = row.rstrip(" |").rsplit("|", 1)[-1]
        cited.update(re.findall(r"`(\w+)`", last_cell))
    return cited


def test_every_cited_test_exists():
    assert _cited_tests() - _rust_tests() == set()


def test_every_measurement_is_in_the_table():
    assert _rust_tests() - _cited_tests() == set()
