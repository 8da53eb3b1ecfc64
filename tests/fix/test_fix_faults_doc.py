"""docs/reliability.md lists exactly what the suite checks: every test it names exists, and every
fault-injection test is on it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reliability.md"
FAULT_FILES = ["tests/fix/test_fix_faults.py", "tests/fix/test_fix_nothing_lost.py", "tests/fix/test_fix_isolation.py",
               "tests/fix/test_fix_interrupt.py", "tests/fix/test_fix_journal.py", "tests/test_worker_isolation.py", "tests/test_cache_and_jobs_limits.py",
               "tests/fix/test_fix_write_window.py", "tests/fix/test_fix_bad_inputs.py", "tests/fix/test_fix_exact_type.py",
               "tests/fix/test_fix_unused_imports.py"]


NAMED = r"`(test_\w+)(?:\[[^\]`]*\])?`"


def _defined(paths) -> set[str]:
    return {name for path in paths for name in re.findall(r"^def (test_\w+)", path.read_text(), re.M)}


def test_every_test_the_page_names_exists():
    named = set(re.findall(NAMED, DOC.read_text()))
    assert named, "the page names no test"
    assert sorted(named - _defined(ROOT.glob("tests/**/test_*.py"))) == []


def test_every_fault_injection_test_is_on_the_page():
    named = set(re.findall(NAMED, DOC.read_text()))
    assert sorted(_defined(ROOT / f for f in FAULT_FILES) - named) == []
