"""README.md and the documentation site (docs/) stay true: every rule has its page, every flag they
name exists and is tested, and the Rust example is the crate's doctest. Their console examples are
run by tests/test_docs.py."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from candle_port.rules import all_rules

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The README and every page of the site, generated rule pages included.
DOCS_TEXT = "\n".join(p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))])
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]+)")


@functools.lru_cache(maxsize=1)
def _help_text() -> str:
    from candle_port.cli.main import app

    runner = CliRunner()
    texts = []
    for command in ("check", "fix", "verify", "rules", "reference", "compare"):
        result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
        texts.append(result.output)
    return "\n".join(texts)


def test_the_rules_index_lists_every_rule_code():
    index = (ROOT / "docs" / "rules" / "index.md").read_text(encoding="utf-8")
    for rule in all_rules():
        assert f"| [{rule.code}]({rule.code}.md) |" in index, f"docs/rules/index.md lacks {rule.code}"


def _readme_cli_flags() -> set[str]:
    # Flags of our commands only: skip pip's, pytest's, mkdocs's and cargo's, which the docs also show.
    foreign = {"--diff-filter", "--upgrade", "--quiet-pip", "--no-deps", "--only-binary", "--index-url", "--all-files", "--files",
               "--strict", "--no-verify", "--dry-run", "--check", "--no-isolation", "--test"}
    flags = set(FLAG.findall(DOCS_TEXT)) - foreign
    return {f for f in flags if not f.startswith("--cov")}


def _bench_flags() -> str:
    """The sources of the benchmark and maintenance scripts (bench/, scripts/), whose flags the docs name."""
    return "\n".join(p.read_text(encoding="utf-8") for d in ("bench", "scripts") for p in (ROOT / d).glob("*.py"))


@pytest.mark.parametrize("flag", sorted(_readme_cli_flags()))
def test_every_readme_flag_exists_and_is_exercised_by_a_test(flag):
    if f'"{flag}"' in _bench_flags():
        return  # a flag of a benchmark or maintenance script (README "Speed", gen_optable.py): it exists there
    run_main = (ROOT / "crates" / "candle-port-run" / "src" / "main.rs").read_text(encoding="utf-8")
    in_run = f'"{flag}"' in run_main  # a flag of the Rust executor, candle-port-run
    assert in_run or flag in _help_text(), f"{flag} is in the README but no command accepts it"
    tests = _test_sources()
    docs_tested = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert flag in tests or flag in docs_tested, f"{flag} is documented but no test uses it"


def test_check_flag_of_port_fix_is_documented_and_tested():
    # `--check` is also scripts/gen_docs.py's flag (left out above); port-fix's is tested here.
    assert "--check" in _help_text() and '"--check"' in _test_sources()


@functools.lru_cache(maxsize=1)
def _test_sources() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py") if p.name != "test_readme.py")


def _rust_blocks(text: str) -> list[str]:
    return re.findall(r"```rust\n(.*?)```", text, flags=re.S)


def test_readme_rust_example_is_the_crate_doctest():
    """The crate's README is compiled and run by `cargo test` (a doctest in lib.rs); the Rust
    examples of README.md and docs/candle.md must be that same code, so they cannot go stale."""
    crate_readme = (ROOT / "crates" / "candle-port-ops" / "README.md").read_text(encoding="utf-8")
    crate_blocks = _rust_blocks(crate_readme)
    assert crate_blocks, "the crate README has no Rust example"
    for page in (ROOT / "README.md", ROOT / "docs" / "candle.md"):
        blocks = _rust_blocks(page.read_text(encoding="utf-8"))
        assert blocks, f"{page.name} has no Rust example"
        for block in blocks:
            assert block in crate_blocks, f"a Rust example in {page.name} differs from crates/candle-port-ops/README.md"
    lib = (ROOT / "crates" / "candle-port-ops" / "src" / "lib.rs").read_text(encoding="utf-8")
    assert 'include_str!("../README.md")' in lib
