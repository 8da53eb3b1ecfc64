"""Each defect planted in the small port (examples/parity-ports/src/small.rs) is named by
`candle-port compare` at its module; the correct port matches in float64 within 1e-9 of scale
and in float32 within torch's own measured noise."""

from __future__ import annotations

import json

import pytest

from tests.parity.conftest import candle_port, port_side


def _compare(directory, *args):
    done = candle_port("compare", str(directory), "--output-format", "json", *args)
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout)
    assert result["exit_code"] == done.returncode
    return result


def test_the_correct_port_matches_in_float64_within_1e9_and_follows_the_loss_curve(parity_ports, small_f64, tmp_path):
    result = _compare(port_side(parity_ports, "small", small_f64, tmp_path / "d", "none"))
    assert result["verdict"] == "match"
    assert all(r["rel"] <= 1e-9 for r in result["outputs"] + result["modules"] + result["gradients"])
    assert len(result["modules"]) == 8 and len(result["gradients"]) == 10
    assert result["losses"]["follows"] and len(result["losses"]["steps"]) == 3


def test_the_correct_port_matches_in_float32_within_torchs_noise(parity_ports, small_f32, tmp_path):
    result = _compare(port_side(parity_ports, "small", small_f32, tmp_path / "d", "none"))
    assert result["verdict"] == "match", result
    assert result["tolerance"]["method"] == "float64"


@pytest.mark.parametrize("defect, module", [
    ("batchnorm-eps", "bn"),
    ("dropped-residual", "block"),
    ("align-corners", "up"),
    ("transposed-linear", "head"),
])
def test_a_forward_defect_is_the_first_divergence_at_its_module(parity_ports, small_f64, tmp_path, defect, module):
    result = _compare(port_side(parity_ports, "small", small_f64, tmp_path / "d", defect))
    assert result["verdict"] == "DIVERGES"
    assert result["first_divergence"]["module"] == module
    # every module torch ran before it still agrees
    before = [r for r in result["modules"] if r["name"] != module][: [r["name"] for r in result["modules"]].index(module)]
    assert all(r["status"] == "match" for r in before)


def test_a_transposed_linear_weight_is_named_as_such(parity_ports, small_f64, tmp_path):
    result = _compare(port_side(parity_ports, "small", small_f64, tmp_path / "d", "transposed-linear"))
    [mismatch] = result["shape_mismatches"]
    assert mismatch["name"] == "head.weight" and mismatch["looks"] == "transposed"
    assert mismatch["port_shape"] == [8, 5] and mismatch["torch_shape"] == [5, 8]


def test_candles_max_pool_gradient_is_located_between_the_modules_it_sits_between(parity_ports, small_f64, tmp_path):
    result = _compare(port_side(parity_ports, "small", small_f64, tmp_path / "d", "candle-max-pool"))
    assert result["first_divergence"] is None  # the forward agrees
    located = result["backward_divergence"]
    assert located["module"] == "block.conv" and "pool (MaxPool2d)" in located["then"]
    assert not result["losses"]["follows"] and result["losses"]["steps"][0]["ok"]


def test_a_fused_layer_norm_cuts_the_gradient_and_is_named(parity_ports, small_f32, tmp_path):
    result = _compare(port_side(parity_ports, "small", small_f32, tmp_path / "d", "fused-layernorm"))
    assert result["first_divergence"] is None
    assert result["backward_divergence"]["module"] == "norm"
    assert set(result["without_gradient"]) == {"stem.weight", "stem.bias", "bn.weight", "bn.bias", "block.conv.weight",
                                               "block.conv.bias", "norm.weight", "norm.bias"}
    assert "layer_norm_slow" in result["gradient_hint"]


def test_candles_fused_layer_norm_does_not_run_in_float64(parity_ports, small_f64, tmp_path):
    result = _compare(port_side(parity_ports, "small", small_f64, tmp_path / "d", "fused-layernorm"))
    assert "unsupported dtype" in result["forward_error"]
    assert result["verdict"] == "DIVERGES"


def test_the_text_report_fits_80_columns_and_leads_with_the_divergence(parity_ports, small_f64, tmp_path):
    directory = port_side(parity_ports, "small", small_f64, tmp_path / "d", "align-corners")
    done = candle_port("compare", str(directory))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[4] == "DIVERGES" and lines[5].startswith("  first divergence: up (Upsample)")
    assert all(len(line) <= 80 for line in lines if " " in line.strip()), [line for line in lines if len(line) > 80]
    assert all(line == line.rstrip() for line in lines)


def test_a_missing_candle_side_is_a_one_line_error_naming_the_file(small_f64, tmp_path):
    import shutil

    shutil.copytree(small_f64, tmp_path / "d")
    done = candle_port("compare", str(tmp_path / "d"))
    assert done.returncode == 2
    assert "candle.json: missing" in done.stderr and "Parity::check" in done.stderr
