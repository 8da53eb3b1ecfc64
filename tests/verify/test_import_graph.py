"""verify rewrites only the source root's files that the model imports (import_graph.py), and
names a directory reached through a symbolic link inside the root instead of skipping it silently."""

from __future__ import annotations

import os
from pathlib import Path

from candle_port.verify.import_graph import entry_files, imported_files
from candle_port.verify.spec import parse_model_spec, resolve_source_root
from candle_port.verify.workspace import make_rewritten_copy

BILINEAR = "import torch.nn.functional as F\n\n\ndef up(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _package(root: Path) -> Path:
    """pkg/models/net.py imports its layers three ways; pkg/other/ has sites nobody imports."""
    pkg = root / "pkg"
    _write(pkg / "__init__.py", "")
    _write(pkg / "models" / "__init__.py", "")
    _write(pkg / "models" / "net.py", "from ..layers import up\nfrom . import blocks\nimport pkg.util.helpers\n"
                                      "def net(x):\n    return up(x)\n")
    _write(pkg / "models" / "blocks.py", BILINEAR)
    _write(pkg / "layers" / "__init__.py", "from .upsample import up\n")
    _write(pkg / "layers" / "upsample.py", BILINEAR)
    _write(pkg / "util" / "__init__.py", "")
    _write(pkg / "util" / "helpers.py", "def lazy():\n    from pkg.util import late\n")
    _write(pkg / "util" / "late.py", BILINEAR)
    for i in range(5):
        _write(pkg / "other" / f"m{i}.py", BILINEAR)
    _write(pkg / "other" / "__init__.py", "")
    return pkg


def test_the_walk_follows_absolute_relative_and_nested_imports(tmp_path):
    pkg = _package(tmp_path)
    source = resolve_source_root(parse_model_spec(f"{pkg / 'models' / 'net.py'}:net"), pkg)
    found = {p.relative_to(pkg.resolve()).as_posix() for p in imported_files(source, [pkg / "models" / "net.py"])}
    assert found == {"__init__.py", "models/__init__.py", "models/net.py", "models/blocks.py", "layers/__init__.py",
                     "layers/upsample.py", "util/__init__.py", "util/helpers.py", "util/late.py"}


def test_only_imported_files_are_rewritten_and_the_rest_counted(tmp_path, monkeypatch):
    monkeypatch.setenv("CANDLE_PORT_VERIFY_CACHE", "off")
    pkg = _package(tmp_path)
    spec = parse_model_spec(f"{pkg / 'models' / 'net.py'}:net")
    source = resolve_source_root(spec, pkg)
    summary = make_rewritten_copy(source, tmp_path / "copy", "runtime", entries=entry_files(source, spec.module_file, None))
    assert sorted(summary.changed) == ["layers/upsample.py", "models/blocks.py", "util/late.py"]
    assert summary.not_imported == 6 and summary.to_json()["not_imported"] == 6
    everything = make_rewritten_copy(source, tmp_path / "all", "runtime")
    assert len(everything.changed) == 8 and everything.not_imported is None


def test_a_linked_package_inside_the_root_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("CANDLE_PORT_VERIFY_CACHE", "off")
    pkg = _package(tmp_path)
    _write(tmp_path / "elsewhere" / "__init__.py", "")
    _write(tmp_path / "elsewhere" / "ops.py", BILINEAR)
    os.symlink(tmp_path / "elsewhere", pkg / "linked")
    source = resolve_source_root(parse_model_spec(f"{pkg / 'models' / 'net.py'}:net"), pkg)
    summary = make_rewritten_copy(source, tmp_path / "copy", "runtime")
    assert [e for e in summary.errors if e.startswith("linked: a symbolic link to ")] == [
        f"linked: a symbolic link to {(tmp_path / 'elsewhere').resolve()}, not followed: nothing under it is rewritten "
        "(give that directory as --source-root to rewrite it)"]


def test_a_driver_outside_the_root_and_rewrite_all_rewrite_every_file(tmp_path):
    """A script outside the root reaches it through the package's __init__, which may import by
    string (transformers' lazy modules): the walk would miss the model, so nothing is left out."""
    from candle_port.verify.runner import VerifyOptions, rewrite_entries

    pkg = _package(tmp_path)
    _write(tmp_path / "driver.py", "def build():\n    from pkg.models.net import net\n    return net\n")
    driver = parse_model_spec(f"{tmp_path / 'driver.py'}:build")
    assert rewrite_entries(VerifyOptions(model="", input_shapes=[]), driver, resolve_source_root(driver, pkg)) is None
    inside = parse_model_spec(f"{pkg / 'models' / 'net.py'}:net")
    source = resolve_source_root(inside, pkg)
    assert rewrite_entries(VerifyOptions(model="", input_shapes=[]), inside, source) == [inside.module_file]
    assert rewrite_entries(VerifyOptions(model="", input_shapes=[], rewrite_all=True), inside, source) is None


def test_imports_for_type_checkers_only_are_not_followed(tmp_path):
    """transformers' models/__init__.py imports all of its models under `if TYPE_CHECKING:`."""
    pkg = _package(tmp_path)
    _write(pkg / "models" / "net.py", "from typing import TYPE_CHECKING\nimport typing\nif TYPE_CHECKING:\n"
                                      "    from pkg.other import m0\nelse:\n    from . import blocks\n"
                                      "if typing.TYPE_CHECKING:\n    from pkg.other import m1\n")
    source = resolve_source_root(parse_model_spec(f"{pkg / 'models' / 'net.py'}:net"), pkg)
    found = {p.relative_to(pkg.resolve()).as_posix() for p in imported_files(source, [pkg / "models" / "net.py"])}
    assert found == {"__init__.py", "models/__init__.py", "models/net.py", "models/blocks.py"}
