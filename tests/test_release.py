"""A release is one version everywhere, and what would be published builds and passes its checks:
the Python sdist and wheel (`python -m build`, `twine check --strict`) and the candle-port-ops
crate (`cargo package --no-verify`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import candle_port

ROOT = Path(__file__).resolve().parents[1]


def _version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def test_package_and_crates_share_one_version():
    version = _version()
    assert candle_port.__version__ == version
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))
    assert workspace["workspace"]["package"]["version"] == version
    for manifest in [*(ROOT / "crates").glob("*/Cargo.toml"), *(ROOT / "examples").glob("*/Cargo.toml")]:
        package = tomllib.loads(manifest.read_text(encoding="utf-8"))["package"]
        assert package["version"] == {"workspace": True}, manifest
    lock = tomllib.loads((ROOT / "Cargo.lock").read_text(encoding="utf-8"))
    ours = {p["name"]: p["version"] for p in lock["package"] if "source" not in p}
    assert ours == {name: version for name in ("candle-port-ops", "candle-port-parity", "candle-port-run", "parity-ports", "unet-candle")}


def test_changelog_has_this_version_and_the_snippets_install_from_main():
    """Tags do not travel with what lands on main, so the snippets a user copies name `main` (true
    in every clone of it); a release tag is only offered as an alternative in the prose."""
    version = _version()
    assert f"\n## {version}\n" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for path in (ROOT / ".pre-commit-hooks.yaml", ROOT / "docs" / "pre-commit.md"):
        revs = re.findall(r"^\s*#?\s*rev: (\S+)", path.read_text(encoding="utf-8"), flags=re.M)
        assert revs and set(revs) == {"main"}, (path, revs)
    for path in (ROOT / "docs" / "ci.md", ROOT / "docs" / "install.md", ROOT / "action.yml"):
        refs = set(re.findall(r"candle-port@(\S+?)[\"\s]", path.read_text(encoding="utf-8")))
        assert refs == {"main"}, (path, refs)


@pytest.mark.slow
def test_sdist_and_wheel_build_and_pass_twine_check(tmp_path):
    """About 15 s: setuptools without build isolation (the test extras install it), so no download."""
    out = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    version = _version()
    wheel = out / f"candle_port-{version}-py3-none-any.whl"
    sdist = out / f"candle_port-{version}.tar.gz"
    assert wheel.is_file() and sdist.is_file(), sorted(p.name for p in out.iterdir())
    names = zipfile.ZipFile(wheel).namelist()
    # The op table and the output schemas are package data that verify and --output-format need.
    assert "candle_port/verify/candle_ops.json" in names
    assert "candle_port/py.typed" in names
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        capture_output=True, text=True, timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_crate_packages():
    cargo = shutil.which("cargo")
    if cargo is None:
        if os.environ.get("CANDLE_PORT_REQUIRE_CARGO"):
            pytest.fail("cargo not found")
        pytest.skip("cargo not found (install Rust with https://rustup.rs)")
    done = subprocess.run(
        [cargo, "package", "--no-verify", "--allow-dirty", "--locked", "-p", "candle-port-ops"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"Packaging candle-port-ops v{_version()}" in done.stderr
