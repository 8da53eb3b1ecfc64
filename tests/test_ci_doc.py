"""Run the exact commands of docs/ci.md against a small project with a bilinear site."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _doc_commands() -> list[str]:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    block = text.split("# test:begin\n", 1)[1].split("# test:end", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_ci_doc_commands_run_as_documented(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text(
        "import torch.nn.functional as F\n\ndef head(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    )
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    script = "set -e\n" + "\n".join(_doc_commands()) + "\n"
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflow_uses_the_documented_formats():
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert "--output-format github" in text and "--output-format sarif" in text and "upload-sarif" in text
    if not _doc_commands():
        pytest.fail("docs/ci.md has no test block")
