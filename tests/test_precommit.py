"""The real pre-commit, with docs/pre-commit.md's configuration, against a plain clone of this
checkout (no tags, as a clone of main has none; its `main` is the commit under test): a bilinear
model is refused, then fixed, a Rust file in the same commit goes through the same port-check
hook, and `pre-commit autoupdate` pins `rev` to that commit."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
MODEL = "import torch.nn.functional as F\n\n\ndef head(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
# A warning (CP201): shown in the refused commit's output, and not failing the accepted one.
RUST = "use candle_nn::ops::softmax_last_dim;\n\nfn attention(xs: &Tensor) -> Result<Tensor> {\n    softmax_last_dim(xs)\n}\n"


def _git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def _documented_config() -> tuple[str, str, str]:
    """docs/pre-commit.md's .pre-commit-config.yaml block, its repo URL (a placeholder) and rev."""
    text = (ROOT / "docs" / "pre-commit.md").read_text(encoding="utf-8")
    block = text.split("```yaml\n# .pre-commit-config.yaml\n", 1)[1].split("```", 1)[0]
    repo = re.search(r"- repo: (\S+)", block).group(1)
    rev = re.search(r"rev: (\S+)", block).group(1)
    return block, repo, rev


def main_clone(dest: Path) -> Path:
    """A clone of this checkout's HEAD whose `main` branch is that commit (a branch checkout under
    test is what main will be once merged), with no tags: the docs must work without them."""
    done = subprocess.run(["git", "clone", "-q", "--no-hardlinks", "--no-tags", str(ROOT), str(dest)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _git("update-ref", "refs/heads/main", "HEAD", cwd=dest).returncode == 0
    assert _git("tag", cwd=dest).stdout == "", "the clone has tags"
    return dest


@pytest.mark.slow
def test_precommit_refuses_then_accepts_after_port_fix(tmp_path, tmp_path_factory):
    if shutil.which("git") is None:
        pytest.fail("git is required")
    head = _git("rev-parse", "HEAD", cwd=ROOT).stdout.strip()
    if _git("cat-file", "-e", f"{head}:.pre-commit-hooks.yaml", cwd=ROOT).returncode != 0:
        pytest.fail(".pre-commit-hooks.yaml is not committed at HEAD")
    block, placeholder, rev = _documented_config()
    assert rev == "main", "the documented rev must exist in every clone of main (a branch, not a tag)"
    clone = main_clone(tmp_path / "candle-port")
    repo = tmp_path / "project"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    _git("config", "user.email", "t@example.com", cwd=repo)
    _git("config", "user.name", "t", cwd=repo)
    # The documented configuration as is, the placeholder URL replaced by the clone.
    (repo / ".pre-commit-config.yaml").write_text(block.replace(placeholder, str(clone)))
    (repo / "model.py").write_text(MODEL)
    (repo / "attention.rs").write_text(RUST)
    _git("add", ".", cwd=repo)
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path_factory.getbasetemp() / "pre-commit-home"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, env=env, check=True, capture_output=True)

    # port-check refuses the model; the port-fix hook rewrites it and also fails the run because it
    # changed files (like other fixers).
    refused = subprocess.run(["git", "commit", "-qm", "add model"], cwd=repo, env=env, capture_output=True, text=True)
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0, out
    assert "CP101" in out and "files were modified by this hook" in out, out
    assert "attention.rs:4:5: CP201" in out, out  # the Rust file reached port-check
    assert "candle_port" in (repo / "model.py").read_text()

    _git("add", ".", cwd=repo)
    accepted = subprocess.run(["git", "commit", "-qm", "add model"], cwd=repo, env=env, capture_output=True, text=True)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr

    # The page's next step: autoupdate replaces the branch name with the commit (no tags to pick).
    updated = subprocess.run([sys.executable, "-m", "pre_commit", "autoupdate"], cwd=repo, env=env,
                             capture_output=True, text=True)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    pinned = re.search(r"rev: (\S+)", (repo / ".pre-commit-config.yaml").read_text()).group(1)
    assert pinned == _git("rev-parse", "HEAD", cwd=clone).stdout.strip()
