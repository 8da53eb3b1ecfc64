"""docs/install.md's git-URL install works: the documented command, with the placeholder URL
replaced by a file:// clone of this checkout (no tags; its main is the commit under test),
installs this version."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import candle_port
from tests.test_precommit import main_clone

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_pip_install_from_a_git_url_at_main(tmp_path):
    """About 20 s: git clone, build of the wheel (no build isolation: setuptools is a test extra)."""
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    command = re.search(r'^pip install "candle-port @ git\+(\S+)@(\S+)"$', text, flags=re.M)
    assert command, "docs/install.md lacks the git-URL install line"
    url, ref = command.groups()
    assert "<owner>" in url, "the URL is a placeholder that the page calls out"
    assert ref == "main", "the documented ref must exist in every clone of main (a branch, not a tag)"
    clone = main_clone(tmp_path / "candle-port")
    target = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), f"candle-port @ git+{clone.as_uri()}@{ref}"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    installed = subprocess.run(
        [sys.executable, "-c", "import candle_port, sys; print(candle_port.__version__, candle_port.__file__)"],
        capture_output=True, text=True, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
    )
    version, where = installed.stdout.split()
    assert version == candle_port.__version__ and where.startswith(str(target)), installed.stdout + installed.stderr
