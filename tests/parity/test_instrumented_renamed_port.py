"""`port-fix --instrument` on ports whose module names differ from torch's (both read through
`--rename` rules), ViT and SegFormer. candle-transformers 0.11.0's vit.rs reads transformers 4's names (`vit.encoder.layer.0`), transformers 5's ViT has
`vit.layers.0`. The port records under its own VarBuilder prefixes; `Parity::check` maps them
through the directory's `--rename` rules (tests/parity/originals.py RENAMES["vit"], the rules that
serve the weights), so `compare` judges each encoder layer by torch's name. As published, ViT's
forward agrees at every layer (its fused LayerNorm only cuts the backward).

SegFormer's blocks also keep another layout than transformers' (see its test).

The copies are as published, except that candle-transformers' `with_tracing` wrappers (spans
around candle-nn's `linear`/`conv2d`, in a module that needs the quantized models) are replaced
by candle-nn's own, which compute the same. Bounded for CI: 2 layers, width 32, one crate of one
model built in the workspace's target directory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parity.conftest import build_instrumented, candle_port, write_reference
from tests.test_rust_corpus import rust_corpus  # noqa: F401 - the fixture
from tests.test_train_both import _cargo_or_skip

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

sys.path.insert(0, str(Path(__file__).parent))
import originals  # noqa: E402

TRACING = "use crate::models::with_tracing::"  # the same names as candle-nn's, wrapped in spans
PLAIN = "use candle_nn::"
SEGFORMER_MAIN = """mod segformer;

use candle::Module;
use candle_port_parity::Parity;

fn main() -> candle::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let parity = Parity::open(&args[1])?;
    let config: segformer::Config = serde_json::from_str(&args[2]).map_err(candle::Error::wrap)?;
    let model = parity.build(|vb| segformer::ImageClassificationModel::new(&config, 10, vb))?;
    parity.check(|xs| model.forward(&xs[0]))?;
    Ok(())
}
"""
MAIN = """mod vit;

use candle::Module;
use candle_port_parity::Parity;

fn main() -> candle::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let parity = Parity::open(&args[1])?;
    let config: vit::Config = serde_json::from_str(&args[2]).map_err(candle::Error::wrap)?;
    let model = parity.build(|vb| vit::Model::new(&config, 10, vb))?;
    parity.check(|xs| model.forward(&xs[0]))?;
    Ok(())
}
"""
@pytest.fixture(scope="module")
def instrumented_vit(tmp_path_factory, rust_corpus) -> Path:  # noqa: F811
    _cargo_or_skip()
    published = (rust_corpus / "candle-transformers-0.11.0" / "src" / "models" / "vit.rs").read_text()
    assert published.count(TRACING) == 1
    crate = tmp_path_factory.mktemp("instrumented") / "vit"
    return build_instrumented(crate, "instrumented-vit", {"vit.rs": published.replace(TRACING, PLAIN), "main.rs": MAIN})[0]


def _compared(binary, name: str, tmp_path) -> dict:
    renames = [f"--rename={r}" for r in originals.RENAMES[name]]
    side = write_reference(tmp_path / name, f"tests/parity/originals.py:{name}", "--input-shape", "1,3,32,32",
                           "--eval", *renames)
    done = subprocess.run([str(binary), str(side), originals.candle_config(name)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(candle_port("compare", str(side), "--output-format", "json").stdout)


def test_renamed_layers_are_compared_under_torchs_names(instrumented_vit, tmp_path):
    result = _compared(instrumented_vit, "vit", tmp_path)
    modules = {m["name"]: m["status"] for m in result["modules"]}
    # The port recorded vit.encoder.layer.{0,1} (and its parts); torch knows them as vit.layers.{0,1}.
    assert {"vit.layers.0", "vit.layers.1"} <= set(modules), sorted(modules)
    assert not any(name.startswith("vit.encoder.layer.") for name in modules), sorted(modules)
    assert all(status == "match" for status in modules.values()), modules
    assert result["first_divergence"] is None


def test_segformer_diverges_first_at_its_patch_embedding_layer_norm(tmp_path, rust_corpus):  # noqa: F811
    """SegFormer's blocks return (B, C, H, W) where transformers' return (B, H*W, C): compare reads
    them in the order that agrees. The first divergence is then the first patch embedding, whose
    LayerNorm candle builds with the config's eps (1e-6) where transformers keeps 1e-5."""
    _cargo_or_skip()
    published = (rust_corpus / "candle-transformers-0.11.0" / "src" / "models" / "segformer.rs").read_text()
    assert published.count(TRACING) == 1
    binary, _ = build_instrumented(tmp_path / "crate", "instrumented-segformer",
                                   {"segformer.rs": published.replace(TRACING, PLAIN), "main.rs": SEGFORMER_MAIN})
    result = _compared(binary, "segformer", tmp_path)
    first = result["first_divergence"]
    assert first["module"] == "segformer.stages.0.patch_embeddings", first
    rows = {m["name"]: m for m in result["modules"]}
    assert rows["segformer.stages.0.patch_embeddings"]["layout"] == "(0, 2, 3, 1)"
    assert rows["segformer.stages.0.blocks.0.mlp.dwconv"]["status"] == "match"  # read in its layout
