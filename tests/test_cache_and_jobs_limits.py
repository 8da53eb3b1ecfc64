"""Hostile state and settings: a cache entry of the wrong shape is a miss; a huge -j is capped."""

from __future__ import annotations

import json

import pytest

from candle_port.config import Config
from candle_port.pipeline.engine import check_paths

BILINEAR = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param([], id="a-list"),
        pytest.param({}, id="empty-object"),
        pytest.param({"path": "m.py", "findings": [{"code": "CP101"}]}, id="finding-missing-fields"),
        pytest.param({"path": "m.py", "findings": 3}, id="findings-not-a-list"),
        pytest.param({"path": "m.py", "findings": [], "error": {"nope": 1}}, id="bad-error"),
        pytest.param(None, id="null"),
        pytest.param("text", id="a-string"),
    ],
)
def test_wrong_shape_entry_is_a_miss_and_rewritten(tmp_path, payload):
    (tmp_path / "m.py").write_text(BILINEAR)
    cache = tmp_path / "cache"
    check_paths([str(tmp_path / "m.py")], Config(), cache_dir=str(cache))
    entries = list(cache.rglob("*.json"))
    assert entries
    for entry in entries:
        entry.write_text(json.dumps(payload))
    report = check_paths([str(tmp_path / "m.py")], Config(), cache_dir=str(cache))
    assert [f.code for f in report.findings] == ["CP101"] and not report.errors
    assert all(json.loads(e.read_text()) != payload for e in cache.rglob("*.json"))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("line", "NaN", id="line-a-string"),
        pytest.param("line", float("nan"), id="line-nan"),
        pytest.param("line", True, id="line-a-boolean"),
        pytest.param("line", -3, id="line-negative"),
        pytest.param("column", 1.5, id="column-a-float"),
        pytest.param("message", 3, id="message-a-number"),
        pytest.param("fixes", [1, 2], id="fixes-numbers"),
        pytest.param("end_line", "2", id="end-line-a-string"),
    ],
)
def test_a_tampered_finding_is_a_miss_and_rewritten(tmp_path, field, value):
    """An entry of the right shape whose values are wrong is a miss too (SARIF got "startLine": "NaN")."""
    (tmp_path / "m.py").write_text(BILINEAR)
    cache = tmp_path / "cache"
    check_paths([str(tmp_path / "m.py")], Config(), cache_dir=str(cache))
    (entry,) = [e for e in cache.rglob("*.json") if json.loads(e.read_text()).get("findings")]
    payload = json.loads(entry.read_text())
    payload["findings"][0][field] = value
    entry.write_text(json.dumps(payload))
    report = check_paths([str(tmp_path / "m.py")], Config(), cache_dir=str(cache))
    assert [(f.code, f.line, f.column) for f in report.findings] == [("CP101", 2, 5)] and not report.errors
    assert isinstance(report.findings[0].message, str) and report.findings[0].fixes
    assert json.loads(entry.read_text())["findings"][0].get(field) != value


def test_a_huge_jobs_number_is_capped(tmp_path):
    for i in range(60):
        (tmp_path / f"m{i:02}.py").write_text(BILINEAR)
    report = check_paths([str(tmp_path)], Config(), jobs=10**20)
    assert len(report.findings) == 60 and not report.errors
