"""candle-transformers 0.11.0's vision ports, as published, checked against their PyTorch
originals (tests/parity/originals.py) by `candle-port reference`, examples/parity-ports and
`candle-port compare`: random init, float32, eval mode. Each test pins what the run found in
candle-transformers (docs/parity.md has the table): when a port changes, its test says so.

Bounded for CI: small configs where the port takes one, small inputs otherwise (about a
minute a model on 2 cores, most of it torch's float64 noise run).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.parity.conftest import candle_port, write_reference

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

sys.path.insert(0, str(Path(__file__).parent))
import originals  # noqa: E402


def _run(parity_ports, tmp_path, name: str, shape: str) -> dict:
    import subprocess

    renames = [f"--rename={r}" for r in originals.RENAMES.get(name, [])]
    directory = write_reference(tmp_path / name, f"tests/parity/originals.py:{name}", "--input-shape", shape,
                                "--eval", *renames)
    config = [originals.candle_config(name)] if name in ("vit", "segformer") else []
    done = subprocess.run([str(parity_ports), name, str(directory), *config], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    compared = candle_port("compare", str(directory), "--output-format", "json")
    result = json.loads(compared.stdout)
    assert result["exit_code"] == compared.returncode
    return result


def _forward_agrees(result: dict) -> bool:
    return all(r["status"] == "match" for r in result["outputs"])


def test_vit_trains_its_classifier_only(parity_ports, tmp_path):
    """Fused LayerNorm (and softmax_last_dim) cut the graph: 38 of 40 parameters get no gradient."""
    result = _run(parity_ports, tmp_path, "vit", "1,3,32,32")
    assert _forward_agrees(result) and not result["never_loaded"] and not result["unknown_to_torch"]
    assert len(result["without_gradient"]) == 38 and len(result["gradients"]) == 40
    assert result["backward_divergence"]["module"] == "vit.layernorm"
    assert [g["name"] for g in result["gradients"] if g["status"] == "match"] == ["classifier.weight", "classifier.bias"]


def test_segformer_leaves_queries_keys_and_one_norm_a_block_without_gradient(parity_ports, tmp_path):
    result = _run(parity_ports, tmp_path, "segformer", "1,3,32,32")
    assert _forward_agrees(result)
    missing = result["without_gradient"]
    assert len(missing) == 12
    assert {m.rsplit(".", 2)[-2] for m in missing} == {"q_proj", "k_proj", "layernorm_after"}


def test_resnet18_backward_bails_at_the_stem_max_pool(parity_ports, tmp_path):
    result = _run(parity_ports, tmp_path, "resnet18", "1,3,64,64")
    assert _forward_agrees(result)
    assert "backward not supported for maxpool2d if ksize (3, 3) != stride (2, 2)" in result["backward_error"]
    assert "candle_port_ops::pooling::max_pool2d" in result["backward_error"]


def test_repvgg_matches_in_forward_and_every_gradient(parity_ports, tmp_path):
    """candle re-parameterises RepVGG's three branches into one conv at load time; the gradients
    still reach each branch's own weights, equal to torch's."""
    result = _run(parity_ports, tmp_path, "repvgg_a0", "1,3,64,64")
    assert result["verdict"] == "match", json.dumps(result)[:2000]
    assert len(result["gradients"]) == 168


def test_convnext_v2_trains_its_classifier_only(parity_ports, tmp_path):
    """candle's convnext.rs tries each block's layer scale `gamma` and ConvNeXt V2's `mlp.grn`,
    going on without what the checkpoint lacks: against V2 it builds without gamma, its forward
    agrees, and the fused LayerNorms leave all but the head without a gradient."""
    result = _run(parity_ports, tmp_path, "convnext_atto", "1,3,64,64")
    assert _forward_agrees(result) and not result["unknown_to_torch"]
    assert len(result["gradients"]) == 140 and len(result["without_gradient"]) == 138
    assert result["backward_divergence"]["module"] == "head.norm"


def test_dinov2_resizes_its_position_embedding_with_nearest_and_trains_its_head_only(parity_ports, tmp_path):
    """At 28x28 (2x2 patches) the port resizes the 37x37 position embedding with nearest where
    DINOv2 uses bicubic: the forward differs; and 174 of 176 parameters get no gradient."""
    result = _run(parity_ports, tmp_path, "dinov2_small", "1,3,28,28")
    assert not result["never_loaded"] and not result["unknown_to_torch"]
    assert [r["status"] for r in result["outputs"]] == ["DIFFERS"] and result["outputs"][0]["rel"] > 1e-3
    assert len(result["without_gradient"]) == 174 and len(result["gradients"]) == 176


def test_beit_agrees_forward_and_trains_its_head_only(parity_ports, tmp_path):
    result = _run(parity_ports, tmp_path, "beit_tiny", "1,3,384,384")
    assert _forward_agrees(result) and not result["never_loaded"] and not result["unknown_to_torch"]
    assert len(result["without_gradient"]) == 35 and len(result["gradients"]) == 37
    assert result["backward_divergence"]["module"] == "fc_norm"
