"""The op tables of other candle releases (``candle_ops-<version>.json``, written by
scripts/measure_candle_versions.sh) against the pinned one (``candle_ops.json``), without
rebuilding candle: the same format, every op of the pinned table, the release named in the file
name and in the table; and the generator's handling of a release that contradicts the notes or
does not build (pure Python, no cargo)."""

from __future__ import annotations

import importlib.util
import json
import sys
from importlib import resources
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The releases the issue asks for besides the pinned 0.11.0 (0.9 is the line moshi builds on).
VERSIONS = ("0.9.2", "0.10.0", "0.11.1")
VERDICTS = {"backward", "forward-only", "no-op", "silent-cut", "wrong-gradient", "no-gradient"}


def _table(name: str) -> dict:
    return json.loads(resources.files("candle_port.verify").joinpath(name).read_text(encoding="utf-8"))


def _generator():
    spec = importlib.util.spec_from_file_location("gen_optable", ROOT / "scripts" / "gen_optable.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_optable"] = module
    spec.loader.exec_module(module)
    return module


PINNED = _table("candle_ops.json")


def test_every_release_has_a_table_and_no_table_is_unasked():
    names = sorted(p.name for p in resources.files("candle_port.verify").iterdir()
                   if p.name.startswith("candle_ops-") and p.name.endswith(".json"))
    assert names == sorted(f"candle_ops-{v}.json" for v in VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_release_table_has_the_pinned_format_and_every_pinned_op(version):
    table = _table(f"candle_ops-{version}.json")
    assert table.keys() == PINNED.keys()
    assert table["candle"].keys() == PINNED["candle"].keys()
    assert table["candle"]["version"] == version != PINNED["candle"]["version"]
    assert table["candle"]["repo"] == PINNED["candle"]["repo"]
    assert len(table["candle"]["commit"]) == 40 and table["candle"]["commit"] != PINNED["candle"]["commit"]
    assert table["classes"] == PINNED["classes"]
    missing = sorted(set(PINNED["ops"]) - set(table["ops"]))
    assert not missing, f"candle {version} lacks ops of the pinned table: {missing[:10]}"
    for op, entry in table["ops"].items():
        assert entry["class"] in table["classes"], op
        assert entry["measured"] and {m["verdict"] for m in entry["measured"]} <= VERDICTS, op
        if entry["class"] == "conditional":
            assert entry["condition"] == PINNED["ops"][op]["condition"], op
        if entry["class"] == "not-in-table":  # a contradiction of the notes, or an unbuilt release
            assert entry["warning"], op


def test_generator_records_contradictions_per_op_for_another_release(tmp_path):
    gen = _generator()
    notes = json.loads(gen.NOTES.read_text(encoding="utf-8"))
    absent = next(op for op, note in notes["ops"].items() if note.get("absent"))
    src = tmp_path / "candle-core" / "src"
    src.mkdir(parents=True)
    # this "release" has a function the notes say candle lacks, and no probe ran at all
    (src / "lib.rs").write_text(f"pub fn {notes['ops'][absent]['absent'][0]}() {{}}\n", encoding="utf-8")
    measurements = {"format": "candle-port-op-measurements", "version": 1, "candle": "9.9.9", "records": []}
    sources = {"candle-core 9.9.9": src}
    with pytest.raises(gen.TableError):
        gen.generate(measurements, notes, sources)
    table = gen.generate(measurements, notes, sources, lenient=True)
    assert table["candle"]["version"] == "9.9.9" and set(table["ops"]) == set(notes["ops"])
    entry = table["ops"][absent]
    assert entry["class"] == "not-in-table" and "noted as absent" in entry["warning"]
    probed = next(op for op, note in notes["ops"].items() if not note.get("absent") and not note.get("absent_cases"))
    assert "neither a probe nor an absence check" in table["ops"][probed]["warning"]
    # measurements of another candle than the workspace locks are refused
    with pytest.raises(gen.TableError, match="locks candle-core"):
        gen.generate(measurements | {"candle": "0.11.0"}, notes, sources, lenient=True)


def test_generator_writes_an_unbuilt_release_as_unknown_with_cargos_error():
    gen = _generator()
    log = ("   Compiling candle-port-ops v0.2.0\nerror[E0599]: no method named `eps` found\n"
           "   --> crates/candle-port-ops/src/norm/layer.rs:160:24\n")
    table = gen.unbuilt("0.8.0", PINNED, log, {})
    assert set(table["ops"]) == set(PINNED["ops"]) and table["candle"]["version"] == "0.8.0"
    entry = table["ops"]["upsample_bilinear2d"]
    assert entry["class"] == "not-in-table"
    assert "error[E0599]: no method named `eps` found (--> crates/candle-port-ops/src/norm/layer.rs:160:24)" in (
        entry["warning"])


def test_docs_table_is_the_committed_tables():
    gen = _generator()
    docs = (ROOT / "docs" / "candle-measured.md").read_text(encoding="utf-8")
    table = gen.releases_markdown(gen.release_tables())
    assert list(gen.release_tables()) == ["0.9.2", "0.10.0", "0.11.0", "0.11.1"]
    assert table in docs, "run python scripts/gen_optable.py --releases-table and paste it into docs/candle-measured.md"
