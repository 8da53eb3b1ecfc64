"""A real 3-D model the checks never saw while they were written: nnU-Net's PlainConvUNet from
dynamic-network-architectures 0.4.4 (installed by scripts/setup.sh, pinned, without its
dependencies: the U-Nets need only torch and numpy).

Its layers are built from classes its helpers return (`return nn.Conv3d`), so no call names a
3-D API. port-check reports the helpers' returns (site kind "value"), port-fix swaps them for the
runtime's classes, and the rewritten U-Net matches the original and trains in real candle.
"""

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from candle_port.cli.verify import verify_command

dna = pytest.importorskip("dynamic_network_architectures")  # scripts/setup.sh installs it: never skipped in CI
PACKAGE = Path(dna.__file__).resolve().parent
DRIVER = Path(__file__).resolve().parents[2] / "fixtures" / "verify" / "nnunet_3d.py"


def test_port_check_finds_the_classes_the_helpers_return():
    from candle_port.api import check_source

    helper = PACKAGE / "building_blocks" / "helper.py"
    text = helper.read_text(encoding="utf-8")
    found = {(d.code, text.splitlines()[d.line - 1].strip()) for d in check_source(text, str(helper))}
    assert ("CP110", "return nn.Conv3d") in found
    assert ("CP110", "return nn.ConvTranspose3d") in found
    assert ("CP110", "return nn.MaxPool3d") in found
    assert ("CP108", "return nn.ConvTranspose1d") in found
    # the 2-D classes it returns are not sites whatever their arguments: not reported as values
    assert not any("Conv2d" in line or "MaxPool2d" in line for _, line in found)


def test_plain_conv_unet_3d_is_rewritten_and_trains_in_candle(binary, monkeypatch):
    monkeypatch.setenv("CANDLE_PORT_RUN", str(binary))
    app = typer.Typer()
    app.command()(verify_command)
    args = [f"{DRIVER}:build", "--input-shape", "1,1,16,16,16", "--source-root", str(PACKAGE),
            "--dtype", "float64", "--candle", "--output-format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["verdict"] == "pass" and data["rewrite"]["changed"]
    assert {r["name"] for r in data["graphs"]["original"]["lacking"]} == {"conv3d", "conv_transpose3d"}
    assert data["graphs"]["rewritten"]["lacking"] == [] and data["graphs"]["rewritten"]["wrong"] == []
    candle = data["candle"]
    assert not candle["native"]["ok"]  # the original: candle has no 3-D convolution
    assert candle["port"]["ok"]  # the original with candle-port-ops' twins
    assert candle["rewritten"]["native"]["ok"], candle["rewritten"]["native"]
    assert candle["rewritten"]["native"]["worst_rel_to_scale"] <= 1e-9
