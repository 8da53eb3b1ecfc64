"""The cache does not grow without end: every edit and every upgrade adds entries, so once a day a
run removes the entries no run used for 30 days, and temporary entries a killed run left."""

from __future__ import annotations

import os
import time

from candle_port.pipeline import cache as cache_module
from candle_port.pipeline.cache import DAY_SECONDS, PRUNE_MARKER, UNUSED_DAYS, prune
from candle_port.config import Config
from candle_port.pipeline.engine import check_paths

BILINEAR = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"


def _aged(path, days: float):
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text("{}")
    when = time.time() - days * DAY_SECONDS
    os.utime(path, (when, when))
    return path


def test_unused_entries_and_abandoned_temporaries_are_removed_once_a_day(tmp_path):
    old = _aged(tmp_path / "ab" / "ab01.json", UNUSED_DAYS + 1)
    recent = _aged(tmp_path / "ab" / "ab02.json", UNUSED_DAYS - 3)
    abandoned = _aged(tmp_path / "cd" / "cd01.json.123.0.tmp", 0.1)  # 2.4 hours
    in_flight = _aged(tmp_path / "cd" / "cd02.json.456.0.tmp", 0.001)  # another run writing it now
    not_ours = _aged(tmp_path / "notes" / "old.json", UNUSED_DAYS + 1)  # not a two-letter shard
    assert prune(tmp_path) == 2
    assert [p.exists() for p in (old, recent, abandoned, in_flight, not_ours)] == [False, True, False, True, True]
    assert (tmp_path / PRUNE_MARKER).exists()
    # Within a day of that, a run does not walk the directory again.
    older = _aged(tmp_path / "ab" / "ab03.json", UNUSED_DAYS + 5)
    assert prune(tmp_path) == 0 and older.exists()
    # A day later the walk runs again: the older entry goes, and by then the other run's temporary.
    assert prune(tmp_path, now=time.time() + DAY_SECONDS + 60) == 2
    assert [p.exists() for p in (older, recent, in_flight)] == [False, True, False]


def test_a_hit_marks_its_entry_used_so_a_used_entry_survives(tmp_path):
    (tmp_path / "m.py").write_text(BILINEAR)
    cache = tmp_path / "cache"
    check_paths([str(tmp_path / "m.py")], Config(), cache_dir=str(cache))
    [entry] = cache.rglob("*.json")
    _aged(entry, UNUSED_DAYS + 1)
    _aged(cache / PRUNE_MARKER, 2)  # the last prune was two days ago
    report = check_paths([str(tmp_path / "m.py")], Config(), cache_dir=str(cache))  # a hit, then the run's prune
    assert [f.code for f in report.findings] == ["CP101"] and entry.exists()
    assert time.time() - entry.stat().st_mtime < 60
    # Unused for 30 days: the next day's run removes it (and checks the file again).
    _aged(entry, UNUSED_DAYS + 1)
    _aged(cache / PRUNE_MARKER, 2)
    (tmp_path / "other.py").write_text("x = 1\n")
    check_paths([str(tmp_path / "other.py")], Config(), cache_dir=str(cache))
    assert not entry.exists()


def test_a_missing_or_unreadable_cache_directory_is_no_error(tmp_path, monkeypatch):
    assert prune(tmp_path / "missing") == 0 and not (tmp_path / "missing").exists()
    monkeypatch.setattr(cache_module.os, "scandir", lambda *a: (_ for _ in ()).throw(PermissionError("denied")))
    assert prune(tmp_path) == 0
