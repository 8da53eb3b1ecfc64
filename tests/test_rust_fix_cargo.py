"""port-fix's Rust output builds and is clean: a crate of real candle code (candle-transformers 0.11.0's
bigcode, pixtral vision model and wuerstchen attention, the bundled ViT block, and a sample of
every Tensor op port-fix moves to candle-port-ops) is fixed, stays rustfmt-clean, and passes
`cargo check` against candle 0.11.0 and this checkout's crates/candle-port-ops.

The crate reuses the workspace's Cargo.lock and target directory (CARGO_TARGET_DIR, as
scripts/rust-check.sh left it), so only the new crate and candle-port-ops are checked. The whole
of candle-transformers, fixed, passes `cargo check` too (docs/rust.md); it builds its own
dependency tree, minutes of CPU, so it is measured there and not run here."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_tool
from tests.test_rust_corpus import rust_corpus  # noqa: F401 - the fixture
from tests.test_train_both import _cargo_or_skip

pytestmark = [pytest.mark.slow, pytest.mark.corpus]

MODELS = {"bigcode.rs": "src/models/bigcode.rs", "pixtral.rs": "src/models/pixtral/vision_model.rs", "wuerstchen.rs": "src/models/wuerstchen/attention_processor.rs"}
OPS_SAMPLE = '''use candle::{Result, Tensor};
use candle_nn::ops::softmax_last_dim;

pub fn stem(xs: &Tensor, conv: &candle_nn::Conv2d) -> Result<Tensor> {
    xs.apply(conv)?.relu()?.max_pool2d_with_stride(3, 2)
}

pub fn head(xs: &Tensor, w: &Tensor) -> Result<Tensor> {
    let (_, _, h, w_) = xs.dims4()?;
    let up = xs.upsample_nearest2d(h * 2, w_ * 2)?.avg_pool2d(2)?;
    let up = up.upsample_bilinear2d(h, w_, false)?.interpolate2d(h, w_)?;
    let t = Tensor::conv_transpose1d(&up.flatten_from(2)?, w, 0, 0, 2, 1, 1)?;
    let t = candle_nn::rotary_emb::rope(&t, w, w)?;
    softmax_last_dim(&t)
}
'''
MANIFEST = '''[package]
name = "fixed-models"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
candle = { package = "candle-core", version = "=0.11.0" }
candle-nn = "=0.11.0"
serde = { version = "1", features = ["derive"] }

[workspace]
'''


def _rustfmt_clean(path: Path) -> bool:
    return subprocess.run(["rustfmt", "--check", "--edition", "2021", str(path)], capture_output=True).returncode == 0


def test_fixed_real_code_passes_cargo_check(tmp_path, rust_corpus):  # noqa: F811
    _cargo_or_skip()
    crate = tmp_path / "fixed-models"
    src = crate / "src"
    src.mkdir(parents=True)
    (crate / "Cargo.toml").write_text(MANIFEST)
    shutil.copy(ROOT / "Cargo.lock", crate / "Cargo.lock")
    transformers = rust_corpus / "candle-transformers-0.11.0"
    for name, relative in MODELS.items():
        shutil.copy(transformers / relative, src / name)
    shutil.copy(ROOT / "examples" / "candle_vit_block.rs", src / "vit_block.rs")
    (src / "ops_sample.rs").write_text(OPS_SAMPLE)
    modules = sorted(p.stem for p in src.glob("*.rs"))
    (src / "lib.rs").write_text("".join(f"pub mod {m};\n" for m in modules))
    originals = {p.name: p.read_text() for p in src.glob("*.rs")}

    done = run_tool("--ops-crate", str(ROOT / "crates" / "candle-port-ops"), str(crate), tool="fix")
    assert done.returncode == 0, done.stderr.decode()
    summary = done.stderr.decode()
    changed = [p for p in src.glob("*.rs") if p.read_text() != originals[p.name]]
    assert {p.name for p in changed} == {"bigcode.rs", "pixtral.rs", "wuerstchen.rs", "vit_block.rs", "ops_sample.rs"}, summary
    assert 'candle-port-ops = { path = "' in (crate / "Cargo.toml").read_text()
    if shutil.which("rustfmt"):
        assert all(_rustfmt_clean(p) for p in changed if _rustfmt_clean_text(originals[p.name]))

    left = run_tool("--no-cache", "--select", "CP2", str(crate))
    assert left.returncode == 0 and not left.stdout.strip(), left.stdout.decode()

    env = {**os.environ, "CARGO_TARGET_DIR": os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))}
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    checked = subprocess.run([cargo, "check", "--quiet", "--lib"], cwd=crate, env=env, capture_output=True, text=True, timeout=1800)
    assert checked.returncode == 0, checked.stderr[-3000:]


def _rustfmt_clean_text(text: str) -> bool:
    return subprocess.run(["rustfmt", "--check", "--edition", "2021"], input=text, text=True, capture_output=True).returncode == 0


INSTRUMENTED = {"debertav2.rs": "src/models/debertav2.rs", "beit.rs": "src/models/beit.rs", "bigcode.rs": "src/models/bigcode.rs"}


def test_instrumented_real_code_passes_cargo_check(tmp_path, rust_corpus):  # noqa: F811
    """`port-fix --instrument` on real ports (debertav2.rs ends a forward in `todo!()`, which is not
    wrapped) builds against this checkout's candle-port-parity with no warning. All of
    candle-transformers 0.11.0, instrumented, passes too (docs/parity.md; minutes of CPU)."""
    _cargo_or_skip()
    crate = tmp_path / "instrumented-models"
    src = crate / "src"
    src.mkdir(parents=True)
    # debertav2.rs spans with `tracing` (in the workspace's Cargo.lock through candle-transformers).
    manifest = MANIFEST.replace("fixed-models", "instrumented-models").replace("[workspace]", 'tracing = "0.1"\n\n[workspace]')
    (crate / "Cargo.toml").write_text(manifest)
    shutil.copy(ROOT / "Cargo.lock", crate / "Cargo.lock")
    transformers = rust_corpus / "candle-transformers-0.11.0"
    for name, relative in INSTRUMENTED.items():
        shutil.copy(transformers / relative, src / name)
    (src / "lib.rs").write_text("".join(f"pub mod {Path(m).stem};\n" for m in sorted(INSTRUMENTED)))

    done = run_tool("--instrument", "--parity-crate", str(ROOT / "crates" / "candle-port-parity"), str(crate), tool="fix")
    assert done.returncode == 0, done.stderr.decode()
    assert "candle_port_parity::recorded(" in (src / "debertav2.rs").read_text()
    assert 'candle-port-parity = { path = "' in (crate / "Cargo.toml").read_text()

    env = {**os.environ, "CARGO_TARGET_DIR": os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))}
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    checked = subprocess.run([cargo, "check", "--lib", "--message-format", "short"], cwd=crate, env=env, capture_output=True, text=True, timeout=1800)
    assert checked.returncode == 0, checked.stderr[-3000:]
    warnings = [line for line in checked.stderr.splitlines() if line.startswith("src/") and "warning" in line]
    assert not warnings, warnings
