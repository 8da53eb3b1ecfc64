"""The results cache: hits when nothing changed, re-checks when file, path or config changed."""

from __future__ import annotations

from candle_port.pipeline.cache import ResultCache
from candle_port.config import Config
from candle_port.pipeline.engine import check_paths

BILINEAR = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"


def _codes(report):
    return [(f.path.rsplit("/", 1)[-1], f.code) for f in report.findings]


def test_warm_run_reads_the_cache_and_changes_are_rechecked(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text(BILINEAR)
    cache = tmp_path / "cache"
    assert _codes(check_paths([str(tmp_path / "m.py")], Config(), cache_dir=str(cache))) == [("m.py", "CP101")]
    entries = list(cache.rglob("*.json"))
    assert len(entries) == 1

    # A warm run answers from the cache: prove it by making the checker unusable.
    import candle_port.pipeline.checker as checker

    monkeypatch.setattr(checker, "check_text", lambda *a, **k: (_ for _ in ()).throw(AssertionError("parsed")))
    assert _codes(check_paths([str(tmp_path / "m.py")], Config(), cache_dir=str(cache))) == [("m.py", "CP101")]
    monkeypatch.undo()

    # A changed file is re-checked.
    (tmp_path / "m.py").write_text(BILINEAR.replace("bilinear", "nearest"))
    assert _codes(check_paths([str(tmp_path / "m.py")], Config(), cache_dir=str(cache))) == []
    # A changed configuration is a different key.
    (tmp_path / "m.py").write_text(BILINEAR)
    config = Config(ignore=("CP101",))
    assert _codes(check_paths([str(tmp_path / "m.py")], config, cache_dir=str(cache))) == []
    assert _codes(check_paths([str(tmp_path / "m.py")], Config(), cache_dir=str(cache))) == [("m.py", "CP101")]


def test_key_depends_on_content_path_version_and_config():
    a = ResultCache("c", Config().fingerprint())
    b = ResultCache("c", Config(select=("CP101",)).fingerprint())
    assert a.key("m.py", b"x") != a.key("m.py", b"y")
    assert a.key("m.py", b"x") != a.key("n.py", b"x")
    assert a.key("m.py", b"x") != b.key("m.py", b"x")
    import candle_port.pipeline.cache as cache_module

    original = cache_module.__version__
    try:
        cache_module.__version__ = "9.9.9"
        assert ResultCache("c", Config().fingerprint()).key("m.py", b"x") != a.key("m.py", b"x")
    finally:
        cache_module.__version__ = original


def test_corrupt_entry_is_a_miss(tmp_path):
    (tmp_path / "m.py").write_text(BILINEAR)
    cache = tmp_path / "cache"
    check_paths([str(tmp_path / "m.py")], Config(), cache_dir=str(cache))
    for entry in cache.rglob("*.json"):
        entry.write_text("{not json")
    assert _codes(check_paths([str(tmp_path / "m.py")], Config(), cache_dir=str(cache))) == [("m.py", "CP101")]


def test_concurrent_runs_share_the_cache(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    for i in range(40):
        (tmp_path / f"m{i}.py").write_text(BILINEAR + f"# {i}\n")
    cache = str(tmp_path / "cache")
    with ThreadPoolExecutor(4) as pool:
        reports = list(pool.map(lambda _: check_paths([str(tmp_path)], Config(), cache_dir=cache, jobs=1), range(4)))
    assert all(len(r.findings) == 40 for r in reports)
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def test_key_depends_on_the_checker_source(monkeypatch):
    """An editable install updated in place keeps its version; changed rules must not hit old entries."""
    import candle_port.pipeline.cache as cache_module

    before = ResultCache("c", Config().fingerprint()).key("m.py", b"x")
    assert ResultCache("c", Config().fingerprint()).key("m.py", b"x") == before
    monkeypatch.setattr(cache_module, "checker_fingerprint", lambda: "rules edited")
    assert ResultCache("c", Config().fingerprint()).key("m.py", b"x") != before


def test_checker_fingerprint_covers_the_rules_but_not_the_runtime(tmp_path, monkeypatch):
    import candle_port.pipeline.cache as cache_module

    package = tmp_path / "candle_port"
    (package / "rules").mkdir(parents=True)
    (package / "runtime").mkdir()
    (package / "pipeline").mkdir()
    (package / "pipeline" / "cache.py").write_text("")
    (package / "rules" / "cp1.py").write_text("a")
    (package / "runtime" / "op.py").write_text("a")
    monkeypatch.setattr(cache_module, "__file__", str(package / "pipeline" / "cache.py"))
    first = cache_module.checker_fingerprint()
    (package / "runtime" / "op.py").write_text("changed")
    assert cache_module.checker_fingerprint() == first
    (package / "rules" / "cp1.py").write_text("changed")
    assert cache_module.checker_fingerprint() != first


def test_key_depends_on_the_entry_layout(monkeypatch):
    """An entry written before findings kept their training condition (cache.SCHEMA) is never
    read: it would hold a verdict made with an older project index."""
    import candle_port.pipeline.cache as cache_module

    before = ResultCache("c", Config().fingerprint()).key("m.py", b"x")
    monkeypatch.setattr(cache_module, "SCHEMA", cache_module.SCHEMA - 1)
    assert ResultCache("c", Config().fingerprint()).key("m.py", b"x") != before


def test_a_malformed_training_condition_is_a_miss(tmp_path):
    import json

    (tmp_path / "m.py").write_text(
        "import torch.nn.functional as F\nfrom base import Base\n\n\n"
        "class P(Base):\n    def run(self, x):\n        return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    )
    cache = tmp_path / "cache"
    first = _codes(check_paths([str(tmp_path)], Config(), cache_dir=str(cache)))
    entries = [e for e in cache.rglob("*.json") if json.loads(e.read_text())["untrained_if"]]
    assert len(entries) == 1
    for bad in ([[5, "why", [], []]], [[0, "why", "Base", []]], [[True, "why", [], []]], "x", [[0, "why", [], [1]]]):
        raw = json.loads(entries[0].read_text())
        raw["untrained_if"] = bad
        entries[0].write_text(json.dumps(raw))
        assert ResultCache(cache, Config().fingerprint()).get(entries[0].stem) is None
    assert _codes(check_paths([str(tmp_path)], Config(), cache_dir=str(cache))) == first
