"""action.yml's scripts, run as GitHub Actions runs a composite action: each step's `run:` with
its `env:` evaluated from the inputs (defaults or given) and the `github` context. The install
step installs from `github.action_path`, here this checkout's HEAD unpacked without `.git` as the
runner unpacks an action at the ref in `uses:` (into pip's target directory instead of the
runner's Python, so the test's own environment is untouched)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import candle_port

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
MODEL = "import torch.nn.functional as F\n\n\ndef head(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
RUST = "use candle::Tensor;\n\nfn up(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.upsample_bilinear2d(64, 64, false)\n}\n"


def _evaluate(value: str, inputs: dict, github: dict) -> str:
    def one(match: re.Match) -> str:
        scope, _, name = match.group(1).strip().partition(".")
        return {"inputs": inputs, "github": github}[scope][name]

    return re.sub(r"\$\{\{(.*?)\}\}", one, str(value))


def _run_step(step: dict, inputs: dict, github: dict, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    given = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    given.update(inputs)
    step_env = {k: _evaluate(v, given, github) for k, v in step.get("env", {}).items()}
    assert step["shell"] == "bash"
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env={**env, **step_env},
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The install step, run once; returns the environment later steps run in."""
    work = tmp_path_factory.mktemp("action")
    # The version is the ref in `uses:`: no input names another one, and nothing reads
    # github.action_repository (empty in composite actions, actions/runner#2525).
    assert "version" not in ACTION["inputs"]
    assert "github.action_repository }}" not in (ROOT / "action.yml").read_text(encoding="utf-8")
    clone = work / "candle-port"
    clone.mkdir()
    archive = subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(clone)], input=archive, check=True)
    target = work / "site"
    env = {
        **os.environ,
        "PATH": f"{target / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(target),
        # pip reads its options from PIP_* variables: into a target directory, dependencies (and the
        # build backend) from the test's environment.
        "PIP_TARGET": str(target), "PIP_NO_DEPS": "1", "PIP_NO_BUILD_ISOLATION": "0",
    }
    github = {"action_path": str(clone), "workspace": str(work)}
    install = ACTION["runs"]["steps"][0]
    done = _run_step(install, {}, github, work, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"candle-port {candle_port.__version__}" in done.stdout
    assert (target / "candle_port" / "__init__.py").is_file()
    project = work / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "model.py").write_text(MODEL)
    rust = project / "crate"
    (rust / "src").mkdir(parents=True)
    (rust / "Cargo.toml").write_text('[package]\nname = "demo"\nversion = "0.1.0"\n\n[dependencies]\ncandle-core = "0.11.0"\n')
    (rust / "src" / "lib.rs").write_text(RUST)
    return env, github, project


def _check(installed, inputs: dict, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    env, github, project = installed
    output = tmp_path / "github_output"
    output.touch()
    step = ACTION["runs"]["steps"][1]
    return _run_step(step, inputs, github, project, {**env, "GITHUB_OUTPUT": str(output)}), output


@pytest.mark.slow
def test_github_annotations_fail_the_step_on_an_error(installed, tmp_path):
    done, _ = _check(installed, {"paths": "src/"}, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("::error title=candle-port (CP101),file=src/model.py,line=5,")


@pytest.mark.slow
def test_a_rust_crate_is_annotated_too(installed, tmp_path):
    done, _ = _check(installed, {"paths": "crate/"}, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("::error title=candle-port (CP204),file=crate/src/lib.rs,line=4,col=8,"), done.stdout
    assert "candle 0.11.0 (Cargo.toml)" in done.stdout


@pytest.mark.slow
def test_select_and_ignore_reach_port_check(installed, tmp_path):
    done, _ = _check(installed, {"paths": "src/", "ignore": "CP101"}, tmp_path)
    assert done.returncode == 0 and "::error" not in done.stdout, done.stdout + done.stderr
    done, _ = _check(installed, {"paths": "src/", "select": "CP107"}, tmp_path)
    assert done.returncode == 0 and "::error" not in done.stdout, done.stdout + done.stderr


@pytest.mark.slow
def test_sarif_is_written_for_the_upload_step(installed, tmp_path):
    done, output = _check(installed, {"paths": "src/", "output-format": "sarif"}, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert output.read_text() == "sarif-file=candle-port.sarif\n"
    log = json.loads((installed[2] / "candle-port.sarif").read_text())
    assert log["version"] == "2.1.0" and log["runs"][0]["results"][0]["ruleId"] == "CP101"


@pytest.mark.slow
def test_an_unknown_format_is_an_error(installed, tmp_path):
    done, _ = _check(installed, {"paths": "src/", "output-format": "text"}, tmp_path)
    assert done.returncode == 2 and "output-format must be github or sarif" in done.stdout
