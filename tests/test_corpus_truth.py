"""port-check against hand-checked ground truth on real projects (../shared/corpus)."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import pytest

from candle_port.pipeline.checker import check_text
from candle_port.config import Config
from candle_port.pipeline.engine import check_paths
from candle_port.pipeline.prefilter import may_hold_sites

pytestmark = pytest.mark.corpus
REJECTED_SAMPLE = 150


@pytest.fixture(scope="session")
def corpus_findings(corpus_dir: Path) -> dict[tuple[str, int], set[str]]:
    report = check_paths([str(corpus_dir)], Config(), cache_dir=None)
    assert not report.errors, [e.describe() for e in report.errors]
    by_site: dict[tuple[str, int], set[str]] = defaultdict(set)
    for finding in report.findings:
        if finding.wrapper:
            continue  # a call of a project wrapper: tests/test_corpus_wrappers.py checks those
        relative = Path(finding.path).relative_to(corpus_dir)
        by_site[(str(Path(*relative.parts[1:])), finding.line)].add(finding.code)
    return by_site


def _site_rows(rows):
    return [r for r in rows if r["kind"] in ("call", "partial")]


def test_every_bilinear_site_is_cp101(truth_rows, corpus_findings):
    rows = [r for r in _site_rows(truth_rows) if r["bilinear_verdict"] == "yes" and r["api"] != "grid_sample"]
    missed = [f"{r['path']}:{r['line']}" for r in rows if "CP101" not in corpus_findings.get((r["path"], r["line"]), set())]
    assert len(rows) > 80
    assert not missed, f"recall {1 - len(missed) / len(rows):.1%}; missed {missed}"


def test_no_non_bilinear_site_is_cp101_or_cp102(truth_rows, corpus_findings):
    rows = [r for r in _site_rows(truth_rows) if r["bilinear_verdict"] == "no"]
    wrong = [
        f"{r['path']}:{r['line']} {sorted(codes)}"
        for r in rows
        if (codes := corpus_findings.get((r["path"], r["line"]), set()) & {"CP101", "CP102"})
    ]
    assert len(rows) > 100
    assert not wrong


def test_every_dynamic_site_is_cp102_or_cp101(truth_rows, corpus_findings):
    rows = [r for r in _site_rows(truth_rows) if r["bilinear_verdict"] == "dynamic" and r["api"] != "grid_sample"]
    missed = [
        f"{r['path']}:{r['line']}" for r in rows if not corpus_findings.get((r["path"], r["line"]), set()) & {"CP101", "CP102"}
    ]
    assert len(rows) > 25
    assert not missed


def test_every_grid_sample_site_is_cp105(truth_rows, corpus_findings):
    rows = [r for r in _site_rows(truth_rows) if r["api"] == "grid_sample"]
    missed = [f"{r['path']}:{r['line']}" for r in rows if "CP105" not in corpus_findings.get((r["path"], r["line"]), set())]
    assert len(rows) >= 16
    assert not missed


def test_every_cp101_or_cp102_is_a_truth_row(truth_rows, corpus_findings):
    """Precision: nothing outside the hand-checked sites is reported as bilinear or dynamic."""
    known = {(r["path"], r["line"]) for r in truth_rows}
    extra = [f"{p}:{line} {sorted(c)}" for (p, line), c in corpus_findings.items() if c & {"CP101", "CP102"} and (p, line) not in known]
    assert not extra


def test_prefilter_loses_no_finding(corpus_dir: Path, corpus_findings):
    """Files the prefilter rejects hold no site: check a fixed sample of them without the prefilter."""
    files = sorted(corpus_dir.rglob("*.py"))
    rejected = [p for p in files if not may_hold_sites(p.read_text(encoding="utf-8", errors="replace"))]
    assert len(rejected) > len(files) // 2
    from candle_port.pipeline.checker import check_module, parse

    for path in random.Random(0).sample(rejected, min(REJECTED_SAMPLE, len(rejected))):
        text = path.read_text(encoding="utf-8")
        module = parse(text, str(path))
        assert check_module(module, text, str(path), Config()) == [], path


def test_left_out_bodies_lose_no_finding(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch):
    """port-check parses only the bodies a site may need (analysis/relevance.py): on the whole
    corpus it reports exactly what parsing every body whole reports, and finds the same wrappers."""
    import candle_port.pipeline.checker as checker

    partial = check_paths([str(corpus_dir)], Config(), cache_dir=None)
    monkeypatch.setattr(checker, "_scan_needed_bodies", lambda *args: None)
    whole = check_paths([str(corpus_dir)], Config(), cache_dir=None)
    assert [f.to_dict() for f in partial.findings] == [f.to_dict() for f in whole.findings]
    assert len(whole.findings) > 600
    assert sorted(map(repr, partial.index.wrappers.values())) == sorted(map(repr, whole.index.wrappers.values()))


def test_check_text_equals_check_paths_on_a_sample(corpus_dir: Path, corpus_findings):
    """The engine's parallel path and the plain function agree."""
    for path in sorted(corpus_dir.glob("segmentation_models_pytorch/segmentation_models_pytorch/decoders/*/decoder.py")):
        result = check_text(path.read_text(encoding="utf-8"), str(path), Config())
        relative = str(Path(*path.relative_to(corpus_dir).parts[1:]))
        expected = {line for (p, line) in corpus_findings if p == relative}
        assert {f.line for f in result.findings if not f.wrapper} == expected
