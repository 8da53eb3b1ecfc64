"""docs/install.md's git-URL install works: the documented command, with the placeholder URL
replaced by a file:// clone of this checkout tagged as the docs say, installs this version."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import candle_port
from tests.test_precommit import tagged_clone

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_pip_install_from_a_git_url_at_the_tag(tmp_path):
    """About 20 s: git clone, build of the wheel (no build isolation: setuptools is a test extra)."""
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    command = re.search(r'^pip install "candle-port @ git\+(\S+)@(v[\d.]+)"$', text, flags=re.M)
    assert command, "docs/install.md lacks the git-URL install line"
    url, tag = command.groups()
    assert "<owner>" in url, "the URL is a placeholder that the page calls out"
    assert tag == f"v{candle_port.__version__}"
    clone = tagged_clone(tmp_path / "candle-port", tag)
    target = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), f"candle-port @ git+{clone.as_uri()}@{tag}"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    installed = subprocess.run(
        [sys.executable, "-c", "import candle_port, sys; print(candle_port.__version__, candle_port.__file__)"],
        capture_output=True, text=True, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
    )
    version, where = installed.stdout.split()
    assert version == candle_port.__version__ and where.startswith(str(target)), installed.stdout + installed.stderr
