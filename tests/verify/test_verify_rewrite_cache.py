"""The rewritten copy: a mirror of links in which only rewritten files are real (the user's files
are never written through a link), and port-fix's answers cached by content so a second verify of
the same package rewrites nothing again. Also the coverage summary of a classified graph."""

from __future__ import annotations

import os
from pathlib import Path

from candle_port.verify.report import coverage
from candle_port.verify.spec import parse_model_spec, resolve_source_root
from candle_port.verify.workspace import make_rewritten_copy

BILINEAR = "import torch.nn.functional as F\n\n\ndef up(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"


def _package(root: Path, n_plain: int) -> Path:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(BILINEAR)
    (pkg / "data.json").write_text("{}")
    for i in range(n_plain):
        (pkg / f"plain{i}.py").write_text(f"X = {i}\n")
    (pkg / "sub").mkdir()
    (pkg / "sub" / "__init__.py").write_text("Y = 1\n")
    return pkg


def test_second_rewrite_comes_from_the_cache_and_never_touches_the_originals(tmp_path, monkeypatch):
    monkeypatch.setenv("CANDLE_PORT_VERIFY_CACHE", str(tmp_path / "cache"))
    pkg = _package(tmp_path, 20)
    before = {p: p.read_bytes() for p in pkg.rglob("*") if p.is_file()}
    source = resolve_source_root(parse_model_spec(f"{pkg / 'model.py'}:up"), pkg)
    first = make_rewritten_copy(source, tmp_path / "one", "runtime")
    second = make_rewritten_copy(source, tmp_path / "two", "runtime")
    assert (first.changed, first.sites_fixed, first.from_cache) == (["model.py"], 1, 0)
    assert (second.changed, second.sites_fixed, second.from_cache) == (["model.py"], 1, 1)
    assert second.to_json()["from_cache"] == 1 and second.to_json()["seconds"] >= 0
    for copy in (tmp_path / "one" / "pkg", tmp_path / "two" / "pkg"):
        rewritten = copy / "model.py"
        assert not rewritten.is_symlink() and "candle_runtime.interpolate" in rewritten.read_text()
        assert (copy / "plain3.py").is_symlink() and (copy / "data.json").is_symlink()
        assert (copy / "sub").is_symlink()  # a directory without a rewritten file is one link
        assert os.path.realpath(copy / "plain3.py") == str((pkg / "plain3.py").resolve())
    assert {p: p.read_bytes() for p in pkg.rglob("*") if p.is_file()} == before
    assert (tmp_path / "one" / "pkg" / "model.py").read_text() == (tmp_path / "two" / "pkg" / "model.py").read_text()


def test_the_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("CANDLE_PORT_VERIFY_CACHE", "off")
    pkg = _package(tmp_path, 1)
    source = resolve_source_root(parse_model_spec(f"{pkg / 'model.py'}:up"), pkg)
    for name in ("one", "two"):
        assert make_rewritten_copy(source, tmp_path / name, "runtime").from_cache == 0


def test_the_rewrite_cache_is_pruned_like_port_checks(tmp_path, monkeypatch):
    """An entry unused for 30 days goes at the next day's verify; one a verify reads is marked used."""
    import time

    from candle_port.pipeline.cache import DAY_SECONDS, PRUNE_MARKER, UNUSED_DAYS

    cache = tmp_path / "cache"
    monkeypatch.setenv("CANDLE_PORT_VERIFY_CACHE", str(cache))
    pkg = _package(tmp_path, 1)
    source = resolve_source_root(parse_model_spec(f"{pkg / 'model.py'}:up"), pkg)
    make_rewritten_copy(source, tmp_path / "one", "runtime")
    [used] = cache.rglob("*.json")
    unused = used.with_name("ff" + used.name[2:])
    unused.write_text(used.read_text())
    month_ago, two_days_ago = time.time() - (UNUSED_DAYS + 1) * DAY_SECONDS, time.time() - 2 * DAY_SECONDS
    for path in (used, unused):
        os.utime(path, (month_ago, month_ago))
    os.utime(cache / PRUNE_MARKER, (two_days_ago, two_days_ago))
    assert make_rewritten_copy(source, tmp_path / "two", "runtime").from_cache == 1
    assert used.exists() and not unused.exists()


def _row(name, cls, count, ok=True, on_path=True, wrong="", where=()):
    return {"name": name, "class": cls, "count": count, "ok": ok, "on_grad_path": on_path, "wrong": wrong,
            "reason": "", "warning": "", "where": list(where)}


def test_coverage_counts_traced_ops_and_groups_the_lacking_by_op_with_the_first_location():
    graph = {"summary": [
        _row("upsample_bilinear2d", "forward-only", 2, ok=False, where=["m.py:33", "m.py:35"]),
        _row("max_pool2d", "conditional", 2, wrong="1/4 of the gradient", where=["m.py:31"]),
        _row("grid_sampler_2d", "no-op", 1, on_path=False, where=["m.py:9"]),
        _row("convolution", "conditional", 10),
        _row("relu", "backward", 5),
    ]}
    cov = coverage(graph)
    assert (cov["with_backward"], cov["total"], cov["percent"]) == (15, 20, 75.0)
    assert [(op["op"], op["count"], op["class"], op["first"]) for op in cov["by_op"]] == [
        ("max_pool2d", 2, "wrong gradient", "m.py:31"),
        ("upsample_bilinear2d", 2, "forward-only", "m.py:33"),
        ("grid_sampler_2d", 1, "no-op", "m.py:9"),
    ]
    assert coverage(None)["percent"] == 100.0
