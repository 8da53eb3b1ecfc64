"""`port-fix --instrument` on a port whose module names differ from torch's: candle-transformers
0.11.0's vit.rs reads transformers 4's names (`vit.encoder.layer.0`), transformers 5's ViT has
`vit.layers.0`. The port records under its own VarBuilder prefixes; `Parity::check` maps them
through the directory's `--rename` rules (tests/parity/originals.py RENAMES["vit"], the rules that
serve the weights), so `compare` judges each encoder layer by torch's name. As published, ViT's
forward agrees at every layer (its fused LayerNorm only cuts the backward).

The copy is vit.rs as published, except that candle-transformers' `with_tracing` wrappers (spans
around candle-nn's `linear`/`conv2d`, in a module that needs the quantized models) are replaced
by candle-nn's own, which compute the same. Bounded for CI: 2 layers, width 32, one crate of one
model built in the workspace's target directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parity.conftest import ROOT, candle_port, write_reference
from tests.test_rust_corpus import rust_corpus  # noqa: F401 - the fixture
from tests.test_train_both import _cargo_or_skip

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

sys.path.insert(0, str(Path(__file__).parent))
import originals  # noqa: E402

TRACING = "use crate::models::with_tracing::{conv2d, linear, linear_no_bias, Conv2d, Linear};"
PLAIN = "use candle_nn::{conv2d, linear, linear_no_bias, Conv2d, Linear};"
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
MANIFEST = """[package]
name = "instrumented-vit"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
candle = { package = "candle-core", version = "=0.11.0" }
candle-nn = "=0.11.0"
serde = { version = "1", features = ["derive"] }
serde_json = "1"

[workspace]
"""


@pytest.fixture(scope="module")
def instrumented_vit(tmp_path_factory, rust_corpus) -> Path:  # noqa: F811
    _cargo_or_skip()
    crate = tmp_path_factory.mktemp("instrumented") / "vit"
    (crate / "src").mkdir(parents=True)
    published = (rust_corpus / "candle-transformers-0.11.0" / "src" / "models" / "vit.rs").read_text()
    assert published.count(TRACING) == 1
    (crate / "src" / "vit.rs").write_text(published.replace(TRACING, PLAIN))
    (crate / "src" / "main.rs").write_text(MAIN)
    (crate / "Cargo.toml").write_text(MANIFEST)
    shutil.copy(ROOT / "Cargo.lock", crate / "Cargo.lock")
    fixed = candle_port("fix", "--instrument", "--parity-crate", str(ROOT / "crates" / "candle-port-parity"), str(crate))
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    build = subprocess.run([cargo, "build", "--offline", "--message-format=short"], cwd=crate, capture_output=True,
                           text=True, env={**os.environ, "CARGO_TARGET_DIR": str(target)})
    assert build.returncode == 0, build.stderr[-3000:]
    return target / "debug" / "instrumented-vit"


def test_renamed_layers_are_compared_under_torchs_names(instrumented_vit, tmp_path):
    renames = [f"--rename={r}" for r in originals.RENAMES["vit"]]
    side = write_reference(tmp_path / "vit", "tests/parity/originals.py:vit", "--input-shape", "1,3,32,32",
                           "--eval", *renames)
    done = subprocess.run([str(instrumented_vit), str(side), originals.candle_config("vit")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    compared = candle_port("compare", str(side), "--output-format", "json")
    result = json.loads(compared.stdout)
    modules = {m["name"]: m["status"] for m in result["modules"]}
    # The port recorded vit.encoder.layer.{0,1} (and its parts); torch knows them as vit.layers.{0,1}.
    assert {"vit.layers.0", "vit.layers.1"} <= set(modules), sorted(modules)
    assert not any(name.startswith("vit.encoder.layer.") for name in modules), sorted(modules)
    assert all(status == "match" for status in modules.values()), modules
    assert result["first_divergence"] is None
