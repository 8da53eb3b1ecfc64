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


def test_a_huge_jobs_number_is_capped(tmp_path):
    for i in range(60):
        (tmp_path / f"m{i:02}.py").write_text(BILINEAR)
    report = check_paths([str(tmp_path)], Config(), jobs=10**20)
    assert len(report.findings) == 60 and not report.errors
