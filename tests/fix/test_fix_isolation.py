"""One file never stops the run: deep or long code, parser limits, newer syntax and internal errors stay that file's."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import candle_port.rewriters.fixer as fixer
from candle_port.cli.entry import single_command_app
from candle_port.cli.fix import fix_command
from candle_port.pipeline.engine import check_file
from candle_port.config import Config

HEADER = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
APP = single_command_app(fix_command, "port-fix")

LONG_AND_DEEP = [
    pytest.param("z = " + "+".join(["x"] * 500) + "\n", id="sum-of-500-terms"),
    pytest.param("if a == 0:\n    pass\n" + "".join(f"elif a == {i}:\n    pass\n" for i in range(1, 500)), id="500-elifs"),
    pytest.param("s = (" + " ".join(["'a'"] * 500) + ")\n", id="500-concatenated-literals"),
    pytest.param("z = f" + "()" * 1200 + "\n", id="1200-deep-call-chain"),
    pytest.param("z = a" + ".b" * 1200 + "\n", id="1200-deep-attribute-chain"),
]


def run(*args):
    return CliRunner().invoke(APP, ["--jobs", "1", *map(str, args)])


@pytest.mark.parametrize("tail", LONG_AND_DEEP)
def test_long_and_deep_valid_code_is_fixed(tmp_path: Path, tail: str):
    (tmp_path / "deep.py").write_text(HEADER + tail)
    result = run(tmp_path)
    assert result.exit_code == 0, result.output
    text = (tmp_path / "deep.py").read_text()
    assert "candle_runtime.interpolate(x" in text
    assert text.endswith(tail)
    ast.parse(text)


@pytest.mark.parametrize("tail", LONG_AND_DEEP[:2])
def test_long_and_deep_valid_code_is_checked(tmp_path: Path, tail: str):
    (tmp_path / "deep.py").write_text(HEADER + tail)
    result = check_file(str(tmp_path / "deep.py"), Config())
    assert result.error is None
    assert [f.code for f in result.findings] == ["CP101"]


def test_what_libcst_cannot_parse_but_python_can_is_not_called_a_syntax_error(tmp_path: Path):
    (tmp_path / "huge.py").write_text(HEADER + "s = (" + " ".join(["'a'"] * 6000) + ")\n")
    (tmp_path / "good.py").write_text(HEADER)
    result = run(tmp_path)
    assert result.exit_code == 3
    assert "libcst cannot parse this file, though Python can" in result.stderr
    assert "syntax error" not in result.stderr
    assert "candle_runtime" in (tmp_path / "good.py").read_text()


def test_newer_syntax_than_the_running_python_is_named(tmp_path: Path):
    path = tmp_path / "new.py"
    path.write_text(HEADER + "type Point = tuple[float, float]\n")
    result = run(path)
    if sys.version_info >= (3, 12):
        assert result.exit_code == 0 and "candle_runtime" in path.read_text()
    else:
        assert result.exit_code == 3
        assert "cannot compile this file (newer syntax?)" in result.stderr
        assert "internal error" not in result.stderr
        assert path.read_text() == HEADER + "type Point = tuple[float, float]\n"


def test_an_internal_error_in_one_file_is_that_files_error(tmp_path: Path, monkeypatch):
    real_fix_text = fixer.fix_text

    def explode_on_bad(text, **kwargs):
        if kwargs["path"].endswith("bad.py"):
            raise OverflowError("cannot convert float infinity to integer")
        return real_fix_text(text, **kwargs)

    monkeypatch.setattr(fixer, "fix_text", explode_on_bad)
    (tmp_path / "bad.py").write_text(HEADER)
    (tmp_path / "good.py").write_text(HEADER)
    result = run(tmp_path)
    assert result.exit_code == 3
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert lines == [f"error: {tmp_path / 'bad.py'}: internal error, file left unchanged: OverflowError: cannot convert float infinity to integer"]
    assert (tmp_path / "bad.py").read_text() == HEADER
    assert "candle_runtime" in (tmp_path / "good.py").read_text()


def test_recursion_beyond_the_deep_stack_is_one_files_error(tmp_path: Path, monkeypatch):
    def always_recurse(text, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(fixer, "fix_text", always_recurse)
    (tmp_path / "m.py").write_text(HEADER)
    result = run(tmp_path)
    assert result.exit_code == 3
    assert "nested too deeply to analyse" in result.stderr
    assert sys.getrecursionlimit() < 60_000  # restored after the deep retry


@pytest.mark.parametrize("scale", ["1e400", "-1e400", "float('nan')", "(1e400, 2)"], ids=["inf", "-inf", "nan-call", "inf-tuple"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_non_finite_scale_is_input_not_a_crash(tmp_path: Path, scale: str, mode: str):
    path = tmp_path / "m.py"
    path.write_text(f"import torch.nn.functional as F\ny = F.interpolate(x, scale_factor={scale}, mode='{mode}')\n")
    assert check_file(str(path), Config()).error is None
    result = run("--strategy", "nearest", path)
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.stderr


def test_a_file_too_large_to_parse_is_reported_and_others_fixed(tmp_path: Path):
    (tmp_path / "huge.py").write_text(HEADER + "data = [\n" + "    1234567890,\n" * 300_000 + "]\n")  # about 4.8 MB
    (tmp_path / "good.py").write_text(HEADER)
    result = run(tmp_path)
    assert result.exit_code == 3
    assert f"{tmp_path / 'huge.py'}: too large to analyse (" in result.stderr
    assert "candle_runtime" in (tmp_path / "good.py").read_text()
    assert (tmp_path / "huge.py").read_text().startswith(HEADER)


def test_an_explicit_notebook_is_reported_not_parsed_as_a_dict(tmp_path: Path):
    notebook = tmp_path / "model.ipynb"
    notebook.write_text('{"cells": [{"cell_type": "code", "source": ["import torch.nn.functional as F\\n", "F.interpolate(x, scale_factor=2, mode=\'bilinear\')"]}]}')
    before = notebook.read_text()
    result = run(notebook)
    assert result.exit_code == 3
    assert "a Jupyter notebook, not Python source" in result.stderr
    assert notebook.read_text() == before
