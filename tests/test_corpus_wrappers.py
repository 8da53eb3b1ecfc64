"""The project index against ../shared/corpus/truth/*.wrappers.jsonl and *.wrapper_calls.jsonl.

Every wrapper the truth lists (a function or method passing a parameter through to the mode of
interpolate/grid_sample) is in the index, and every call of a wrapper that passes a literal mode is
reported at the call, with that mode. A call whose mode is bilinear (passed or the wrapper's default)
is CP101 (CP105 for grid_sample); no call whose truth verdict is `no` is CP101.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from candle_port.config import Config
from candle_port.pipeline.engine import check_paths

from tests.conftest import shared_dir

pytestmark = pytest.mark.corpus


def _rows(suffix: str) -> list[dict]:
    shared = shared_dir()
    if shared is None:
        pytest.fail("../shared/corpus/truth is not beside this checkout")
    rows = []
    for path in sorted((shared / "corpus" / "truth").glob(f"*.{suffix}.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


@pytest.fixture(scope="module")
def corpus_report(corpus_dir: Path):
    report = check_paths([str(corpus_dir)], Config(), cache_dir=None)
    assert report.index is not None
    return report


def _relative(corpus_dir: Path, path: str) -> str:
    return str(Path(*Path(path).relative_to(corpus_dir).parts[1:]))


def test_every_listed_wrapper_is_in_the_index(corpus_report, corpus_dir: Path):
    rows = _rows("wrappers")
    assert len({(r["path"], r["def_line"], r["param"]) for r in rows}) >= 12  # 13 rows: one wrapper has two sites
    found = {(_relative(corpus_dir, w.path), w.line, w.param) for w in corpus_report.index.wrappers.values()}
    missing = [f"{r['path']}:{r['def_line']} {r['function']}({r['param']})" for r in rows if (r["path"], r["def_line"], r["param"]) not in found]
    assert not missing


def test_every_wrapper_call_with_a_literal_mode_is_reported_with_that_mode(corpus_report, corpus_dir: Path):
    rows = [r for r in _rows("wrapper_calls") if r["mode"] not in ("DEFAULT", "DYNAMIC")]
    assert len(rows) >= 8
    by_site: dict[tuple[str, int], list] = {}
    for finding in corpus_report.findings:
        if finding.wrapper:
            by_site.setdefault((_relative(corpus_dir, finding.path), finding.line), []).append(finding)
    missed = []
    for row in rows:
        findings = by_site.get((row["path"], row["line"]), [])
        if not any(f"mode='{row['mode']}'" in f.message for f in findings) and row["mode"] != "nearest":
            missed.append(f"{row['path']}:{row['line']} {row['mode']}")
        if row["mode"] == "bilinear" and not any(f.code in ("CP101", "CP105") for f in findings):
            missed.append(f"{row['path']}:{row['line']} bilinear, not CP101/CP105")
    assert not missed


def test_wrapper_calls_whose_default_is_bilinear_are_cp101(corpus_report, corpus_dir: Path):
    rows = [r for r in _rows("wrapper_calls") if r["mode"] == "DEFAULT" and r["bilinear_verdict"] == "yes"]
    reported = {(_relative(corpus_dir, f.path), f.line) for f in corpus_report.findings if f.wrapper and f.code in ("CP101", "CP105")}
    found = [r for r in rows if (r["path"], r["line"]) in reported]
    assert len(found) >= len(rows) - 1, [r["path"] + ":" + str(r["line"]) for r in rows if r not in found]


def test_no_wrapper_call_whose_verdict_is_no_is_cp101(corpus_report, corpus_dir: Path):
    no = {(r["path"], r["line"]) for r in _rows("wrapper_calls") if r["bilinear_verdict"] == "no"}
    flagged = [
        f"{_relative(corpus_dir, f.path)}:{f.line}"
        for f in corpus_report.findings
        if f.code in ("CP101", "CP102") and (_relative(corpus_dir, f.path), f.line) in no
    ]
    assert not flagged
