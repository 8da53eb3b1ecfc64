"""The real pre-commit, against this repository's hooks: a bilinear model is refused, then fixed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL = "import torch.nn.functional as F\n\n\ndef head(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"


def _git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.slow
def test_precommit_refuses_then_accepts_after_port_fix(tmp_path, tmp_path_factory):
    if shutil.which("git") is None:
        pytest.fail("git is required")
    head = _git("rev-parse", "HEAD", cwd=ROOT).stdout.strip()
    if _git("cat-file", "-e", f"{head}:.pre-commit-hooks.yaml", cwd=ROOT).returncode != 0:
        pytest.fail(".pre-commit-hooks.yaml is not committed at HEAD")
    repo = tmp_path / "project"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    _git("config", "user.email", "t@example.com", cwd=repo)
    _git("config", "user.name", "t", cwd=repo)
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {ROOT}\n    rev: {head}\n    hooks:\n      - id: port-check\n"
    )
    (repo / "model.py").write_text(MODEL)
    _git("add", ".", cwd=repo)
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path_factory.getbasetemp() / "pre-commit-home"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, env=env, check=True, capture_output=True)

    refused = subprocess.run(["git", "commit", "-qm", "add model"], cwd=repo, env=env, capture_output=True, text=True)
    assert refused.returncode != 0
    assert "CP101" in refused.stdout + refused.stderr

    # The port-fix hook rewrites the file and fails the run because it changed files (like other fixers).
    fixed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "port-fix", "--files", "model.py"],
        cwd=repo, env=env, capture_output=True, text=True,
    )
    assert fixed.returncode != 0, fixed.stdout
    assert "files were modified by this hook" in fixed.stdout
    assert "candle_port" in (repo / "model.py").read_text()

    _git("add", ".", cwd=repo)
    accepted = subprocess.run(["git", "commit", "-qm", "add model"], cwd=repo, env=env, capture_output=True, text=True)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
