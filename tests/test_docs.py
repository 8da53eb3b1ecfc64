"""The documentation site builds strictly, its rule pages are the generated ones, and every
`console` example in README.md and docs/ is run: each `$ command` line is executed (in a copy of
examples/) and what it prints must be the lines that follow it. A line `...` stands for any
number of lines."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BIN = Path(sys.executable).parent


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_mkdocs_build_strict(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / "site" / "rules" / "CP101" / "index.html").is_file()


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS.rglob("*.md"):
        assert page.relative_to(DOCS).as_posix() in nav, f"{page} is not in mkdocs.yml's nav"


def test_rule_pages_are_the_generated_ones():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_docs
    finally:
        sys.path.pop(0)
    wanted = gen_docs.pages()
    for path, text in wanted.items():
        assert path.is_file(), f"{path} missing: run python scripts/gen_docs.py"
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run python scripts/gen_docs.py"
    assert set((DOCS / "rules").glob("*.md")) == set(wanted), "docs/rules/ has pages of no rule"


def test_no_absolute_path_of_one_machine_in_the_repository():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    offending = []
    for name in tracked:
        path = ROOT / name
        if path.suffix in {".safetensors", ".lock"} or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for marker in ("/work/", "/check/"):
            if marker in text and name != "tests/test_docs.py":
                offending.append(f"{name}: {marker}")
    assert offending == []


# ---- the console examples ----------------------------------------------------------------------

_BLOCK = re.compile(r"^```console\n(.*?)^```", re.S | re.M)


def _console_blocks() -> list[tuple[str, str, str]]:
    """(id, command, expected output) for every `$ command` of every console block."""
    found = []
    for path in _doc_files():
        for n, block in enumerate(_BLOCK.findall(path.read_text(encoding="utf-8"))):
            parts = re.split(r"^\$ ", block, flags=re.M)
            for k, part in enumerate(p for p in parts if p.strip()):
                command, _, expected = part.partition("\n")
                found.append((f"{path.relative_to(ROOT)}#{n}.{k}", command, expected))
    return found


def _matches(expected: str, actual: str) -> bool:
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line.strip() == "..." else re.escape(line.rstrip()) + r"[ \t]*\n"
        for line in expected.rstrip("\n").split("\n")
    )
    return re.fullmatch(pattern, "\n".join(line.rstrip() for line in actual.rstrip("\n").split("\n")) + "\n") is not None


@functools.lru_cache(maxsize=None)
def _run(command: str, workdir: str) -> str:
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT / "src"),
        "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "80",
    }
    done = subprocess.run(["bash", "-c", command], cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    # Piped, verify says on stderr which stage it is in (`candle-port verify: ...` lines); a terminal
    # shows a transient spinner instead, so the docs' sessions do not show them.
    progress = re.compile(r"^candle-port verify: .*(\.\.\.|\(\d+ s\))$")
    return done.stdout + "".join(line for line in done.stderr.splitlines(keepends=True) if not progress.match(line.rstrip("\n")))


@pytest.fixture(scope="module")
def examples_copy(tmp_path_factory) -> str:
    """A copy of examples/ (the commands may rewrite it), as the working directory."""
    work = tmp_path_factory.mktemp("docs-examples")
    shutil.copytree(ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("target", "unet-candle"))
    return str(work)


_SLOW = ("candle-port verify",)


@pytest.mark.parametrize(
    "where,command,expected",
    [pytest.param(*b, id=b[0], marks=[pytest.mark.slow] if b[1].startswith(_SLOW) else []) for b in _console_blocks()],
)
def test_console_example_prints_what_the_docs_show(where, command, expected, examples_copy):
    actual = _run(command, examples_copy)
    assert _matches(expected, actual), f"{where}: `{command}` printed:\n{actual}"


def test_there_are_console_examples_for_check_fix_and_verify():
    commands = {c.split()[0] + (" " + c.split()[1] if c.startswith("candle-port") else "") for _, c, _ in _console_blocks()}
    assert {"port-check", "port-fix", "candle-port verify"} <= commands


def test_help_texts_say_what_the_docs_say():
    """rich must not eat `[tool.candle-port]` as markup; port-fix rewrites more than bilinear."""
    from typer.testing import CliRunner

    from candle_port.cli.main import app

    env = {"COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"}
    check = " ".join(CliRunner().invoke(app, ["check", "--help"], env=env).output.split())
    assert "A pyproject.toml (its [tool.candle-port] table)" in check
    fix = " ".join(CliRunner().invoke(app, ["fix", "--help"], env=env).output.split())
    assert "(interpolate, pooling, grid_sample, transposed and 3-D convolutions)" in fix and "bilinear upsampling so" not in fix
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert "Rewrite bilinear upsampling" not in hooks
