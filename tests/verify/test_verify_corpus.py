"""verify end to end on real models from the corpus (../shared/corpus/fetch.sh -> .corpus/).

Each model upsamples bilinearly; the runtime strategy must pass: outputs and every gradient
within tolerance, and nothing left without a candle backward. Needs the corpus packages' pure
Python dependencies (see the README, "Verify"); skips only when the corpus cannot be fetched (and fails instead in CI).
"""

import json
import os
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from candle_port.cli.verify import verify_command

CORPUS = Path(os.environ.get("CANDLE_PORT_CORPUS", Path(__file__).resolve().parents[2] / ".corpus"))
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.slow,
    # Fetches the corpus when it is missing; skips only where it cannot be fetched (fails in CI).
    pytest.mark.usefixtures("corpus_dir"),
]

K = CORPUS / "kornia" / "kornia"
MODELS = [
    pytest.param("kornia.feature.loftr.backbone.resnet_fpn:ResNetFPN_8_2", "1,1,64,64",
                 {"config": {"initial_dim": 8, "block_dims": [8, 16, 24]}}, None, True, id="kornia-loftr-resnetfpn-8-2"),
    pytest.param("kornia.feature.loftr.backbone.resnet_fpn:ResNetFPN_16_4", "1,1,64,64",
                 {"config": {"initial_dim": 8, "block_dims": [8, 16, 24, 32]}}, None, True, id="kornia-loftr-resnetfpn-16-4"),
    pytest.param("kornia.feature.disk._unets.unet:Unet", "1,3,32,32",
                 {"in_features": 3, "down": [8, 8, 16], "up": [8, 8], "size": 3}, K / "feature" / "disk" / "_unets", True,
                 id="kornia-disk-unet"),
    pytest.param("kornia.feature.keynet:KeyNet", "1,1,32,32",
                 {"pretrained": False, "keynet_conf": {"num_filters": 8, "num_levels": 3, "kernel_size": 5}}, None, True,
                 id="kornia-keynet"),
    pytest.param("kornia.feature.xfeat:XFeatModel", "1,1,64,64", {}, None, True, id="kornia-xfeat"),
    pytest.param("diffusers.models.unets.unet_stable_cascade:UpDownBlock2d", "1,4,16,16",
                 {"in_channels": 4, "out_channels": 8, "mode": "down"}, None, True, id="diffusers-stable-cascade-down"),
    pytest.param("diffusers.models.unets.unet_stable_cascade:UpDownBlock2d", "1,4,16,16",
                 {"in_channels": 4, "out_channels": 8, "mode": "up"}, None, False, id="diffusers-stable-cascade-up"),
]


@pytest.fixture(autouse=True)
def corpus_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(CORPUS / "diffusers"))
    monkeypatch.syspath_prepend(str(CORPUS / "kornia"))


@pytest.mark.parametrize("model, shape, kwargs, source_root, bilinear_on_grad_path", MODELS)
def test_runtime_rewrite_passes(model, shape, kwargs, source_root, bilinear_on_grad_path):
    app = typer.Typer()
    app.command()(verify_command)
    args = [model, "--input-shape", shape, "--init-kwargs", json.dumps(kwargs), "--output-format", "json"]
    if source_root is not None:
        args += ["--source-root", str(source_root)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["verdict"] == "pass" and data["rewrite"]["changed"]
    assert data["graphs"]["rewritten"]["lacking"] == []
    original = {r["name"] for r in data["graphs"]["original"]["lacking"]}
    # up-mode Stable Cascade resizes its input before any parameter: candle needs no backward there
    assert original == ({"upsample_bilinear2d"} if bilinear_on_grad_path else set())
    assert all(row["ok"] for row in data["comparisons"])
    assert str(CORPUS) not in data["module_files"]["rewritten"]
