"""The README stays true: every rule is listed, and every flag it names exists and is tested."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from candle_port.rules import all_rules

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]+)")


@functools.lru_cache(maxsize=1)
def _help_text() -> str:
    from candle_port.cli.main import app

    runner = CliRunner()
    texts = []
    for command in ("check", "fix", "verify", "rules"):
        result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
        texts.append(result.output)
    return "\n".join(texts)


def test_readme_lists_every_rule_code():
    for rule in all_rules():
        assert f"| {rule.code} |" in README, f"README's rule table lacks {rule.code}"


def _readme_cli_flags() -> set[str]:
    # Flags of our commands only: skip pip's and pytest's, which the README also shows.
    foreign = {"--diff-filter", "--upgrade", "--quiet-pip", "--no-deps"}
    flags = set(FLAG.findall(README)) - foreign
    return {f for f in flags if not f.startswith("--cov")}


def _bench_flags() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "bench").glob("*.py"))


@pytest.mark.parametrize("flag", sorted(_readme_cli_flags()))
def test_every_readme_flag_exists_and_is_exercised_by_a_test(flag):
    if f'"{flag}"' in _bench_flags():
        return  # a flag of a benchmark script (README "Speed"): it exists there
    assert flag in _help_text(), f"{flag} is in the README but no command accepts it"
    tests = _test_sources()
    docs_tested = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert flag in tests or flag in docs_tested, f"{flag} is documented but no test uses it"


@functools.lru_cache(maxsize=1)
def _test_sources() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py") if p.name != "test_readme.py")


def test_readme_port_check_example_is_the_real_output():
    """The `$ port-check examples/unet.py` block is what port-check prints on the bundled example."""
    import subprocess
    import sys

    block = README.split("$ port-check examples/unet.py\n", 1)[1].split("```", 1)[0]
    result = subprocess.run(
        [sys.executable, "-m", "candle_port", "check", "examples/unet.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 1  # errors found
    assert (result.stdout + result.stderr).strip() == block.strip()


def _rust_blocks(text: str) -> list[str]:
    return re.findall(r"```rust\n(.*?)```", text, flags=re.S)


def test_readme_rust_example_is_the_crate_doctest():
    """The crate's README is compiled and run by `cargo test` (a doctest in lib.rs); the main
    README's Rust example must be that same code, so it cannot go stale unnoticed."""
    crate_readme = (ROOT / "crates" / "candle-port-ops" / "README.md").read_text(encoding="utf-8")
    crate_blocks = _rust_blocks(crate_readme)
    assert crate_blocks, "the crate README has no Rust example"
    for block in _rust_blocks(README):
        assert block in crate_blocks, "a Rust example in README.md differs from crates/candle-port-ops/README.md"
    lib = (ROOT / "crates" / "candle-port-ops" / "src" / "lib.rs").read_text(encoding="utf-8")
    assert 'include_str!("../README.md")' in lib
