"""verify builds transformers models from a config object (`--config-class`, `--config-kwargs`):
DPT, Segformer and Whisper's encoder with tiny configs, random weights, no download. transformers 5.25.0 is a test
extra (pyproject.toml). Each run takes 30-80 s on 2 cores."""

from __future__ import annotations

import json

import pytest

from tests.verify.test_verify_cli import run

pytest.importorskip("transformers")

DPT = ("transformers.models.dpt.modeling_dpt:DPTForDepthEstimation",
       "transformers.models.dpt.configuration_dpt:DPTConfig",
       {"hidden_size": 32, "num_hidden_layers": 4, "num_attention_heads": 2, "intermediate_size": 64,
        "image_size": 32, "patch_size": 8, "backbone_out_indices": [0, 1, 2, 3],
        "neck_hidden_sizes": [8, 16, 32, 32], "fusion_hidden_size": 16, "is_hybrid": False},
       "1,3,48,48", "modeling_dpt.py")
SEGFORMER = ("transformers.models.segformer.modeling_segformer:SegformerForSemanticSegmentation",
             "transformers.models.segformer.configuration_segformer:SegformerConfig",
             {"depths": [1, 1, 1, 1], "hidden_sizes": [8, 16, 16, 16], "num_attention_heads": [1, 1, 1, 1],
              "mlp_ratios": [2, 2, 2, 2], "decoder_hidden_size": 16, "num_labels": 2},
             "1,3,32,32", "modeling_segformer.py")


@pytest.mark.slow
@pytest.mark.parametrize("model, config, kwargs, shape, file", [
    pytest.param(*DPT, id="dpt"), pytest.param(*SEGFORMER, id="segformer")])
def test_a_transformers_model_built_from_its_config_passes(model, config, kwargs, shape, file):
    result = run(model, "--config-class", config, "--config-kwargs", json.dumps(kwargs),
                 "--input-shape", shape, "--output-format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["verdict"] == "pass"
    # The default source root is the model's own file: its bilinear resizes are rewritten.
    assert data["rewrite"]["changed"] == [file] and data["rewrite"]["sites_fixed"] >= 2
    original, rewritten = data["coverage"]["original"], data["coverage"]["rewritten"]
    lacking = {op["op"]: op for op in original["by_op"]}
    assert "upsample_bilinear2d" in lacking and lacking["upsample_bilinear2d"]["on_grad_path"]
    assert f"{file}:" in lacking["upsample_bilinear2d"]["first"]  # the interpolate's own line
    assert original["with_backward"] < original["total"]
    assert rewritten["percent"] == 100.0 and rewritten["by_op"] == []


WHISPER = ("transformers.models.whisper.modeling_whisper:WhisperEncoder",
           "transformers.models.whisper.configuration_whisper:WhisperConfig",
           {"num_mel_bins": 8, "d_model": 16, "encoder_layers": 1, "encoder_attention_heads": 2, "encoder_ffn_dim": 32,
            "max_source_positions": 15, "decoder_layers": 1, "decoder_attention_heads": 2, "decoder_ffn_dim": 32})


@pytest.mark.slow
def test_whispers_conv1d_stem_is_found_and_fixed():
    """Whisper's encoder starts with two nn.Conv1d: at batch 2 candle trains their weights wrong
    (CP111); the rewritten file runs them as height-1 conv2d and verify passes."""
    model, config, kwargs = WHISPER
    result = run(model, "--config-class", config, "--config-kwargs", json.dumps(kwargs),
                 "--input-shape", "2,8,30", "--output-format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["verdict"] == "pass" and data["rewrite"]["changed"] == ["modeling_whisper.py"]
    lacking = {op["op"]: op for op in data["coverage"]["original"]["by_op"]}
    assert "conv1d" in lacking and "modeling_whisper.py:" in lacking["conv1d"]["first"]
    assert data["coverage"]["rewritten"]["by_op"] == []
