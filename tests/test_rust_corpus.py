"""port-check on real crates built on candle (scripts/fetch_rust_corpus.sh): recall 100% and no
false error on the hand-checked sample (tests/rust_truth.json, how it was checked in its
`checked` field and docs/rust.md), and the headline count on all of candle-transformers 0.11.0."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import ROOT, _missing, run_tool

TRUTH = json.loads((ROOT / "tests" / "rust_truth.json").read_text(encoding="utf-8"))
CRATES = ("candle-transformers-0.11.0", "moshi-0.6.4", "candle-crf-0.8.8")
# docs/rust.md's headline: findings by code on all of candle-transformers 0.11.0.
HEADLINE = {"CP202": 195, "CP201": 109, "CP203": 73, "CP205": 14, "CP207": 3, "CP208": 3, "CP206": 2}

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def rust_corpus() -> Path:
    directory = Path(os.environ.get("CANDLE_PORT_RUST_CORPUS", ROOT / ".corpus-rust"))
    if not all((directory / c).is_dir() for c in CRATES):
        done = subprocess.run(["bash", str(ROOT / "scripts" / "fetch_rust_corpus.sh"), str(directory)], capture_output=True, text=True)
        if done.returncode != 0 or not all((directory / c).is_dir() for c in CRATES):
            _missing(f"the Rust corpus could not be fetched: {done.stderr.strip()[-300:]}")
    return directory


def _findings(rust_corpus: Path, *paths: str) -> list[dict]:
    done = run_tool("--no-cache", "--output-format", "json", *paths, cwd=rust_corpus)
    assert done.returncode in (0, 1), done.stderr.decode()
    return json.loads(done.stdout)


def test_recall_and_no_false_error_on_the_hand_checked_sample(rust_corpus):
    found = _findings(rust_corpus, *TRUTH["files"])
    reported = {(f["path"], f["line"], f["code"]) for f in found}
    truth = {(row["path"], row["line"], row["code"]) for row in TRUTH["findings"]}
    missed = sorted(truth - reported)
    assert not missed, f"recall below 100%: {missed}"
    false_errors = sorted((f["path"], f["line"], f["code"]) for f in found if f["severity"] == "error" and (f["path"], f["line"], f["code"]) not in truth)
    assert not false_errors, false_errors
    for clean in TRUTH["no_findings"]:
        assert not [f for f in found if f["path"].startswith(clean)], f"{clean} trains in candle (measured) but has findings"


def test_each_finding_names_the_version_its_lock_gives(rust_corpus):
    found = _findings(rust_corpus, "candle-transformers-0.11.0/src/models/resnet.rs", "moshi-0.6.4/src/conv.rs")
    by_crate = {f["path"].split("/")[0]: f["message"] for f in found}
    assert by_crate["candle-transformers-0.11.0"].endswith("[candle 0.11.0 (Cargo.lock)]")
    assert "[candle 0.9.1 (Cargo.lock): not measured, judged by candle " in by_crate["moshi-0.6.4"]


def test_headline_on_candle_transformers(rust_corpus):
    found = _findings(rust_corpus, "candle-transformers-0.11.0")
    assert Counter(f["code"] for f in found) == HEADLINE
