"""`port-fix --instrument` finds where a port nobody here wrote goes wrong: candle-transformers
0.11.0's efficientnet.rs, as published, against torchvision's EfficientNet-B0. Without `record`
calls compare can only say the output differs; instrumented, it names the stem convolution
`features.0.0`: candle's `Conv2DSame` pads TensorFlow's way (asymmetric "same" padding), where
torchvision pads 1 on every side, so the very first module differs. The rest of the port then
differs because its input does (docs/parity.md).

The file uses `use candle_nn as nn;` and rebuilds a struct from `..self`; both are instrumented.
Bounded for CI: 64x64 input, eval mode, one crate of one model file.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.parity.conftest import build_instrumented, candle_port, write_reference
from tests.test_rust_corpus import rust_corpus  # noqa: F401 - the fixture
from tests.test_train_both import _cargo_or_skip

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

MAIN = """mod efficientnet;

use candle::Module;
use candle_port_parity::Parity;

fn main() -> candle::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let parity = Parity::open(&args[1])?;
    let model = parity.build(|vb| {
        efficientnet::EfficientNet::new(vb, efficientnet::MBConvConfig::b0(), 10)
    })?;
    parity.check(|xs| model.forward(&xs[0]))?;
    Ok(())
}
"""


def test_compare_names_the_stem_convolution(tmp_path, rust_corpus):  # noqa: F811
    _cargo_or_skip()
    published = (rust_corpus / "candle-transformers-0.11.0" / "src" / "models" / "efficientnet.rs").read_text()
    binary, _ = build_instrumented(tmp_path / "effnet", "instrumented-effnet",
                                   {"efficientnet.rs": published, "main.rs": MAIN})
    side = write_reference(tmp_path / "b0", "tests/parity/originals.py:efficientnet_b0", "--input-shape", "1,3,64,64",
                           "--eval")
    done = subprocess.run([str(binary), str(side)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    compared = candle_port("compare", str(side), "--output-format", "json")
    result = json.loads(compared.stdout)
    assert result["first_divergence"]["module"] == "features.0.0", result["first_divergence"]
    assert result["first_divergence"]["class"] == "Conv2d"
    recorded = {m["name"] for m in result["modules"]}
    assert {"features.0", "features.1.0", "features.1.0.block.1"} <= recorded  # blocks, squeeze-excitation
    assert Path(side, "candle.json").exists()
