"""`port-fix --instrument` on functional ports: candle-transformers 0.11.0's resnet.rs and
mobilenetv4.rs build their modules as `Func::new(move |xs| ..)` closures in functions that take
a VarBuilder, so each closure records under that VarBuilder's prefix.

ResNet-18 as published: every recorded module agrees with torchvision's in the forward; the
backward stops at candle's max pool (kernel 3, stride 2). MobileNetV4 (timm): its `pw_exp` and
`dw_mid` leave the activation to the block (timm's ConvNormAct applies it inside), so they differ
inside blocks that agree, and torch's output is relu of candle's there: compare calls them
boundaries, not divergences, and locates the backward's divergence at the `dw_mid` BatchNorm
(candle's ReLU passes the gradient at exactly 0; docs/candle-measured.md). Bounded for CI: 64x64 inputs.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.parity.conftest import build_instrumented, candle_port, write_reference
from tests.test_rust_corpus import rust_corpus  # noqa: F401 - the fixture
from tests.test_train_both import _cargo_or_skip

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

MAIN = """mod {module};

use candle::Module;
use candle_port_parity::Parity;

fn main() -> candle::Result<()> {{
    let args: Vec<String> = std::env::args().collect();
    let parity = Parity::open(&args[1])?;
    let model = parity.build(|vb| {build})?;
    parity.check(|xs| model.forward(&xs[0]))?;
    Ok(())
}}
"""
PORTS = {
    "resnet18": ("resnet", "resnet::resnet18(10, vb)"),
    "mobilenetv4_small": ("mobilenetv4", "mobilenetv4::mobilenetv4(&mobilenetv4::Config::small(), 10, vb)"),
}


def _compared(name: str, tmp_path, rust_corpus) -> tuple[dict, str]:  # noqa: F811
    _cargo_or_skip()
    module, build = PORTS[name]
    published = (rust_corpus / "candle-transformers-0.11.0" / "src" / "models" / f"{module}.rs").read_text()
    binary, summary = build_instrumented(tmp_path / "crate", f"instrumented-{module}",
                                         {f"{module}.rs": published, "main.rs": MAIN.format(module=module, build=build)})
    side = write_reference(tmp_path / name, f"tests/parity/originals.py:{name}", "--input-shape", "1,3,64,64", "--eval")
    done = subprocess.run([str(binary), str(side)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(candle_port("compare", str(side), "--output-format", "json").stdout), summary


def test_resnet18_agrees_at_every_recorded_module_and_its_backward_stops_at_the_max_pool(tmp_path, rust_corpus):  # noqa: F811
    result, summary = _compared("resnet18", tmp_path, rust_corpus)
    assert "7 sites fixed" in summary, summary  # every Func but downsample's identity (not `move`)
    names = {m["name"] for m in result["modules"]}
    assert {"layer1", "layer1.0", "layer2.0.downsample", "layer4.1"} <= names, sorted(names)
    assert all(m["status"] == "match" for m in result["modules"])
    assert result["first_divergence"] is None
    assert "maxpool2d" in (result["backward_error"] or "")


def test_mobilenetv4_modules_that_end_before_their_activation_are_boundaries(tmp_path, rust_corpus):  # noqa: F811
    result, _ = _compared("mobilenetv4_small", tmp_path, rust_corpus)
    assert result["first_divergence"] is None, result["first_divergence"]
    after = {b["module"]: b["activation_after"] for b in result["boundaries"]}
    assert after["blocks.2.0.pw_exp"] == "relu" and after["blocks.2.0.dw_mid"] == "relu"
    rows = {m["name"]: m["status"] for m in result["modules"]}
    assert rows["blocks.2.0.pw_exp"] == "boundary" and rows["blocks.2.0"] == "match"
    # The forward agrees, so the backward is located: candle's ReLU at 0 (docs/candle-measured.md).
    assert result["backward_divergence"]["module"].endswith("dw_mid.bn"), result["backward_divergence"]
