"""MODEL specs, source roots and the rewritten copy (no torch, no subprocess)."""

import hashlib
from pathlib import Path

import pytest

from candle_port.verify.spec import SpecError, parse_model_spec, resolve_source_root
from candle_port.verify.workspace import make_rewritten_copy

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"


def test_file_spec_outside_a_package():
    spec = parse_model_spec(f"{FIXTURES}/unet_bilinear.py:SmallUNet")
    assert (spec.module, spec.attr, spec.import_root) == ("unet_bilinear", "SmallUNet", FIXTURES)


def test_file_spec_inside_a_package():
    spec = parse_model_spec(f"{FIXTURES}/twofile_pkg/model.py:TwoFileNet")
    assert spec.module == "twofile_pkg.model" and spec.import_root == FIXTURES


def test_module_spec_found_on_the_search_path(monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURES))
    spec = parse_model_spec("twofile_pkg.model:TwoFileNet", cwd=Path("/"))
    assert spec.module_file == FIXTURES / "twofile_pkg" / "model.py"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("no_colon", id="no-colon"),
        pytest.param("x.py:", id="no-name"),
        pytest.param("missing/file.py:Net", id="missing-file"),
        pytest.param("not a module:Net", id="bad-module"),
        pytest.param("surely_not_installed_pkg.mod:Net", id="unknown-module"),
        pytest.param(f"{FIXTURES}/unet_bilinear.py:1bad", id="bad-attr"),
    ],
)
def test_bad_specs(text):
    with pytest.raises(SpecError):
        parse_model_spec(text)


def test_default_source_root_is_the_models_file():
    spec = parse_model_spec(f"{FIXTURES}/twofile_pkg/model.py:TwoFileNet")
    root = resolve_source_root(spec, None)
    assert root.path == FIXTURES / "twofile_pkg" / "model.py"
    assert root.modules == {"twofile_pkg.model": "model.py"}


def test_package_source_root():
    spec = parse_model_spec(f"{FIXTURES}/twofile_pkg/model.py:TwoFileNet")
    root = resolve_source_root(spec, FIXTURES / "twofile_pkg")
    assert root.modules == {"twofile_pkg": "twofile_pkg"}


def test_a_package_root_outside_the_models_file_makes_it_a_driver():
    spec = parse_model_spec(f"{FIXTURES}/unet_bilinear.py:SmallUNet")
    assert resolve_source_root(spec, FIXTURES / "twofile_pkg").driver
    assert not resolve_source_root(spec, None).driver


def test_a_plain_directory_root_must_hold_the_model(tmp_path):
    (tmp_path / "other.py").write_text("x = 1\n")
    spec = parse_model_spec(f"{FIXTURES}/unet_bilinear.py:SmallUNet")
    with pytest.raises(SpecError):
        resolve_source_root(spec, tmp_path)


def _digest(root: Path) -> dict:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.py"))}


def test_rewrite_touches_only_the_copy(tmp_path):
    spec = parse_model_spec(f"{FIXTURES}/twofile_pkg/model.py:TwoFileNet")
    root = resolve_source_root(spec, FIXTURES / "twofile_pkg")
    before = _digest(FIXTURES / "twofile_pkg")
    seen = []

    def rewrite(text, strategy, path):
        seen.append(Path(path).name)
        return text.replace("F.interpolate(", "F.interpolate( "), True

    summary = make_rewritten_copy(root, tmp_path, "runtime", rewrite)
    assert _digest(FIXTURES / "twofile_pkg") == before
    assert seen == ["blocks.py"]  # the prefilter skips files that cannot hold a site
    assert summary.changed == ["blocks.py"] and summary.scanned == 3
    assert "F.interpolate( " in (tmp_path / "twofile_pkg" / "blocks.py").read_text()
    assert summary.modules == {"twofile_pkg": str(tmp_path / "twofile_pkg")}


def test_a_failing_rewrite_is_reported_not_raised(tmp_path):
    spec = parse_model_spec(f"{FIXTURES}/unet_bilinear.py:SmallUNet")
    root = resolve_source_root(spec, None)

    def rewrite(text, strategy, path):
        raise RuntimeError("boom")

    summary = make_rewritten_copy(root, tmp_path, "runtime", rewrite)
    assert summary.changed == [] and "boom" in summary.errors[0]
