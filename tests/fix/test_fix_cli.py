"""port-fix wiring: exit codes, streams, --diff/--check/stdin, bad files, permissions, config."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from candle_port.cli.entry import single_command_app
from candle_port.cli.fix import fix_command

SITE = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
FIXED = (  # F's only use was the site: its import goes too (issue 36)
    "import candle_port.runtime as candle_runtime\n"
    "y = candle_runtime.interpolate(x, scale_factor=2, mode='bilinear')\n"
)
APP = single_command_app(fix_command, "port-fix")


def run(*args, input=None):
    return CliRunner().invoke(APP, list(args), input=input)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "good.py").write_text(SITE)
    (tmp_path / "clean.py").write_text("import torch\n")
    return tmp_path


def test_fixes_in_place_and_summarizes(tree: Path):
    os.chmod(tree / "good.py", 0o750)
    result = run(str(tree))
    assert result.exit_code == 0, result.output
    assert (tree / "good.py").read_text() == FIXED
    assert stat.S_IMODE((tree / "good.py").stat().st_mode) == 0o750
    assert "1 site fixed in 1 file, 0 refused, 0 skipped" in result.stderr
    assert run(str(tree)).exit_code == 0
    assert (tree / "good.py").read_text() == FIXED


def test_diff_writes_nothing(tree: Path):
    result = run("--diff", str(tree))
    assert result.exit_code == 0
    assert "+import candle_port.runtime as candle_runtime" in result.stdout
    assert (tree / "good.py").read_text() == SITE


def test_check_exits_1_when_something_would_change(tree: Path):
    assert run("--check", str(tree)).exit_code == 1
    assert (tree / "good.py").read_text() == SITE
    run(str(tree))
    assert run("--check", str(tree)).exit_code == 0


def test_bad_files_exit_3_and_others_still_fixed(tree: Path):
    (tree / "syntax.py").write_text("def f(:\n    interpolate\n")
    (tree / "latin.py").write_bytes(b"x = '\xff' # interpolate\n")
    (tree / "binary.py").write_bytes(b"\x00\x01interpolate")
    result = run(str(tree), str(tree / "missing.py"))
    assert result.exit_code == 3
    for name in ("syntax.py", "latin.py", "binary.py", "missing.py"):
        assert name in result.stderr
    assert (tree / "good.py").read_text() == FIXED


def test_stdin_to_stdout_keeps_crlf():
    result = run("-", "--stdin-filename", "m.py", input=SITE.replace("\n", "\r\n"))
    assert result.exit_code == 0
    assert result.stdout_bytes == FIXED.replace("\n", "\r\n").encode()


def test_stdin_refusal_is_reported_not_failed():
    src = "import torch.nn.functional as F\ny = F.interpolate(x, size=(3, 3), mode='bilinear')\n"
    result = run("--strategy", "nearest", "-", input=src)
    assert result.exit_code == 0
    assert result.stdout == src
    assert "refused CP101" in result.stderr and "size=" in result.stderr


def test_select_ignore_and_json_summary(tree: Path):
    result = run("--ignore", "CP101", "--output-format", "json", str(tree))
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["fixed"] == [] and data["skipped"][0]["code"] == "CP101"
    assert (tree / "good.py").read_text() == SITE


def test_strategy_from_config(tree: Path):
    (tree / "pyproject.toml").write_text('[tool.candle-port]\nstrategy = "nearest"\n')
    result = run(str(tree))
    assert result.exit_code == 0
    assert "mode='nearest'" in (tree / "good.py").read_text()
    assert "numerics change" in result.stderr


def test_usage_errors_exit_2(tree: Path):
    assert run("--strategy", "bicubic", str(tree)).exit_code == 2
    assert run("-", str(tree)).exit_code == 2


def test_stdin_syntax_error_passes_bytes_through_and_exits_3():
    result = run("-", input="def f(:\n  interpolate\n")
    assert result.exit_code == 3
    assert result.stdout_bytes == b"def f(:\n  interpolate\n"
    assert "<stdin>" in result.stderr


def test_sites_no_strategy_fixes_are_counted_and_listed(tree: Path):
    (tree / "pool.py").write_text(
        "import torch.nn.functional as F\nfrom torch import nn\n"
        # APIs the runtime has no drop-in for (it has one for ConvTranspose1d, grid_sample, conv3d, ...).
        "m = nn.LazyConvTranspose1d(4, 2)\ny = F.lp_pool3d(x, 2, 2)\nz = F.max_unpool3d(x, i, 2)\n"
    )
    result = run(str(tree))
    assert result.exit_code == 0, result.output
    assert "; 3 sites with no automatic fix (CP108 1, CP110 2): see port-check." in result.stderr
    data = json.loads(run("--output-format", "json", str(tree)).stdout)
    assert [(u["code"], u["line"]) for u in data["unfixable"]] == [("CP108", 3), ("CP110", 4), ("CP110", 5)]
    assert all(u["reason"].startswith("no automatic fix; ") for u in data["unfixable"])
