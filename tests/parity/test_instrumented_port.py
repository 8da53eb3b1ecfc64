"""`port-fix --instrument` on a port nobody wrote `record` calls into: candle-transformers 0.11.0's
beit.rs, copied as published, instrumented, built against this checkout's candle-port-parity and
compared with timm's BEiT (tests/parity/originals.py). As published, every recorded module agrees
with torch; with a planted forward defect (attention scaled by 1/d instead of 1/sqrt(d)),
`compare` names the attention of the first block, not only the output.

Bounded for CI: a 2-block, width-32 BEiT, one torch side for both ports, a crate of two files
built in the workspace's target directory (about 20 s on 2 cores once candle is built).
"""

from __future__ import annotations

import json
import shutil
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

SCALE = "let scale = 1. / ((dim / num_heads) as f64).sqrt();"
DEFECT = "let scale = 1. / ((dim / num_heads) as f64);"  # a plausible slip: 1/d, not 1/sqrt(d)
MAIN = """mod beit;
mod beit_defect;

use candle::Module;
use candle_port_parity::Parity;

fn main() -> candle::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let parity = Parity::open(&args[2])?;
    if args[1] == "defect" {
        let model = parity.build(|vb| beit_defect::BeitVisionTransformer::new(vb, 2, 32, 2))?;
        parity.check(|xs| model.forward(&xs[0]))?;
    } else {
        let model = parity.build(|vb| beit::BeitVisionTransformer::new(vb, 2, 32, 2))?;
        parity.check(|xs| model.forward(&xs[0]))?;
    }
    Ok(())
}
"""
@pytest.fixture(scope="module")
def instrumented(tmp_path_factory, rust_corpus) -> tuple[Path, str]:  # noqa: F811
    """The binary of the instrumented crate, and port-fix's summary."""
    _cargo_or_skip()
    published = (rust_corpus / "candle-transformers-0.11.0" / "src" / "models" / "beit.rs").read_text()
    assert published.count(SCALE) == 1
    sources = {"beit.rs": published, "beit_defect.rs": published.replace(SCALE, DEFECT), "main.rs": MAIN}
    return build_instrumented(tmp_path_factory.mktemp("instrumented") / "beit", "instrumented-beit", sources)


@pytest.fixture(scope="module")
def torch_side(tmp_path_factory) -> Path:
    renames = [f"--rename={r}" for r in originals.RENAMES["beit_tiny"]]
    return write_reference(tmp_path_factory.mktemp("beit-torch") / "dir", "tests/parity/originals.py:beit_tiny",
                           "--input-shape", "1,3,384,384", "--eval", *renames)


def _compare(binary: Path, variant: str, torch_side: Path, copy_to: Path) -> tuple[dict, str]:
    shutil.copytree(torch_side, copy_to)
    done = subprocess.run([str(binary), variant, str(copy_to)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    json_run = candle_port("compare", str(copy_to), "--output-format", "json")
    text_run = candle_port("compare", str(copy_to))
    return json.loads(json_run.stdout), text_run.stdout


def test_instrument_rewrites_every_forward_of_beit(instrumented):
    _, summary = instrumented
    # Attention, LayerScale, Mlp, Block, PatchEmbed and the model, in each of the two files.
    assert "port-fix (instrument): 12 sites fixed" in summary, summary


def test_the_published_port_agrees_at_every_recorded_module(instrumented, torch_side, tmp_path):
    result, _ = _compare(instrumented[0], "published", torch_side, tmp_path / "published")
    recorded = {m["name"] for m in result["modules"]}
    assert {"patch_embed", "blocks.0", "blocks.0.attn", "blocks.0.mlp", "blocks.1", "blocks.1.attn"} <= recorded
    assert all(m["status"] == "match" for m in result["modules"]), result["modules"]
    assert result["first_divergence"] is None


def test_a_planted_defect_is_named_at_its_module(instrumented, torch_side, tmp_path):
    result, text = _compare(instrumented[0], "defect", torch_side, tmp_path / "defect")
    assert result["first_divergence"]["module"] == "blocks.0.attn", text
    assert [m["status"] for m in result["modules"] if m["name"] == "patch_embed"] == ["match"]
    assert "blocks.0.attn" in text
