"""port-fix --strategy runtime over a copy of the real corpus (../shared/corpus/fetch.sh).

Asserts: every ground-truth site of kind call/partial marked `yes` or `dynamic` (grid_sample
excluded) is rewritten, antialias=True sites included (the runtime reproduces torch's antialiased
bilinear), and no such site is refused; every rewritten file compiles; port-check reports no
CP101/CP102 there except at the refused sites; a second run changes nothing; and the
rewritten packages still import (timm and segmentation_models_pytorch need torchvision, which is
skipped with the reason when it is not importable).

Cost: one libcst parse per file that may hold a site (~300 files), so this is the slowest test of
the suite; the second run and the re-check cover only the files the first run rewrote (a file the
first run left unchanged is, by construction, the same input again).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRUTH = ROOT.parent / "shared" / "corpus" / "truth"
CORPUS = Path(os.environ.get("CANDLE_PORT_CORPUS") or ROOT / ".corpus")
PACKAGES = ("timm", "diffusers", "kornia", "segmentation_models_pytorch")
ANTIALIAS_NOTE = "antialias=`True`"  # ground-truth note of the antialiased calls

pytestmark = [pytest.mark.corpus, pytest.mark.slow]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    return found or name


def _truth_rows() -> list[dict]:
    rows = []
    for path in sorted(TRUTH.glob("*.jsonl")):
        if path.name.endswith(".wrappers.jsonl"):
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if (
                row["kind"] in ("call", "partial")
                and row["bilinear_verdict"] in ("yes", "dynamic")
                and row["api"] != "grid_sample"
            ):
                rows.append(row)
    return rows


@pytest.fixture(scope="module")
def fixed_corpus(tmp_path_factory):
    if not all((CORPUS / p).is_dir() for p in PACKAGES):
        pytest.skip(f"corpus not found at {CORPUS} (bash ../shared/corpus/fetch.sh .corpus)")
    dest = tmp_path_factory.mktemp("corpus")
    for package in PACKAGES:
        shutil.copytree(CORPUS / package, dest / package, ignore=shutil.ignore_patterns("__pycache__"))
    out = subprocess.run(
        [_tool("port-fix"), "--strategy", "runtime", "--output-format", "json", "-j", "2", *PACKAGES],
        cwd=dest, capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return dest, json.loads(out.stdout)


def test_every_truth_site_is_rewritten(fixed_corpus):
    _, report = fixed_corpus
    fixed = {(f["path"], f["line"]) for f in report["fixed"]}
    refused = {(r["path"], r["line"]): r["reason"] for r in report["refused"]}
    rows = _truth_rows()
    assert len(rows) > 100
    def key(row):
        return (f"{row['package']}/{row['path']}", row["line"])

    missing = [(key(row), row["api"], row["mode"], refused.get(key(row))) for row in rows if key(row) not in fixed]
    assert not missing
    assert not [k for k in map(key, rows) if k in refused]  # no yes/dynamic site is refused
    antialias = {key(row) for row in rows if ANTIALIAS_NOTE in row["notes"]}
    assert len(antialias) == 5, antialias  # refused before the runtime had antialias, now rewritten
    assert antialias <= fixed
    assert report["errors"] == []


def test_rewritten_files_compile_recheck_clean_and_idempotent(fixed_corpus):
    dest, report = fixed_corpus
    changed = report["files_changed"]
    assert len(changed) > 50
    for path in changed:
        compile((dest / path).read_bytes(), path, "exec", dont_inherit=True)
    check = subprocess.run(
        [_tool("port-check"), "--output-format", "json", "--select", "CP101,CP102", "--no-cache", *changed],
        cwd=dest, capture_output=True, text=True, timeout=600,
    )
    remaining = {(f["path"], f["line"]) for f in json.loads(check.stdout)}
    refused = {(r["path"], r["line"]) for r in report["refused"]}
    assert remaining <= refused
    again = subprocess.run(
        [_tool("port-fix"), "--check", "--strategy", "runtime", "-j", "2", *changed],
        cwd=dest, capture_output=True, text=True, timeout=600,
    )
    assert again.returncode == 0, again.stderr[-3000:]


def _import(module: str, path: Path) -> tuple[bool, str]:
    """Import `module` with the rewritten copies first on sys.path; (ok, its __file__ or the error)."""
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", f"import {module}; print({module}.__file__)"],
        cwd=path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(str(path / p) for p in PACKAGES)},
    )
    if out.returncode != 0:
        return False, (out.stderr.strip().splitlines() or [""])[-1]
    return True, out.stdout.strip()


@pytest.mark.parametrize("package", PACKAGES)
def test_rewritten_package_imports(fixed_corpus, package):
    dest, _ = fixed_corpus
    if package in ("timm", "segmentation_models_pytorch"):
        ok, why = _import("torchvision", dest)
        if not ok:
            pytest.skip(
                f"{package} needs torchvision, not importable here ({why}); the PyPI torchvision "
                "wheel is built against the CUDA torch and fails on torch==2.13.0+cpu"
            )
    ok, where = _import(package, dest)
    assert ok, where
    assert where.startswith(str(dest))  # the rewritten copy, not an installed one
