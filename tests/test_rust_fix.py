"""port-fix on Rust: the rewrites of the fused candle-nn calls to their differentiable twins
(candle_port.rust.fixer), what it leaves alone, its invariants (idempotent, re-check clean,
untouched bytes kept, rustfmt-clean) and the command's wiring (diff, write, BOM, bad files)."""

from __future__ import annotations

import codecs
import shutil
import subprocess

import pytest

from candle_port.config import Config
from candle_port.rust.cargo import CrateContext
from candle_port.rust.checker import check_rust_source
from candle_port.rust.fixer import fix_rust_text
from tests.conftest import run_tool

CONTEXT = CrateContext("0.11.0", "--candle-version")


def fix(text: str, renames=()):
    """The splice alone (rustfmt's pass has its own test below)."""
    from unittest import mock

    from candle_port.rust import fixer

    with mock.patch.object(fixer, "_formatted", lambda original, new, path: new):
        return fix_rust_text(text, "model.rs", Config(), CrateContext("0.11.0", "--candle-version", tuple(renames)))


REWRITTEN = [
    pytest.param(
        "fn f(xs: &candle::Tensor) -> candle::Result<candle::Tensor> {\n    candle_nn::ops::softmax_last_dim(xs)\n}\n",
        "fn f(xs: &candle::Tensor) -> candle::Result<candle::Tensor> {\n    candle_nn::ops::softmax(xs, candle::D::Minus1)\n}\n",
        (),
        id="softmax-path",
    ),
    pytest.param(
        "use candle_core::Tensor;\nuse candle_nn::ops::softmax_last_dim;\n\nfn f(xs: &Tensor) -> candle_core::Result<Tensor> {\n    softmax_last_dim(xs)\n}\n",
        "use candle_core::Tensor;\n\nfn f(xs: &Tensor) -> candle_core::Result<Tensor> {\n    candle_nn::ops::softmax(xs, candle_core::D::Minus1)\n}\n",
        (),
        id="softmax-bare-import-removed",
    ),
    pytest.param(
        "fn f(xs: &Tensor) -> Result<Tensor> {\n    nn::ops::softmax_last_dim(xs)\n}\n",
        "fn f(xs: &Tensor) -> Result<Tensor> {\n    nn::ops::softmax(xs, cc::D::Minus1)\n}\n",
        (("cc", "candle_core"), ("nn", "candle_nn")),
        id="softmax-renamed-crates",
    ),
    pytest.param(
        "fn f(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {\n    candle_nn::ops::layer_norm(x, w, b, 1e-5)\n}\n",
        "fn f(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {\n    candle_nn::ops::layer_norm_slow(x, w, b, 1e-5)\n}\n",
        (),
        id="layer-norm-op",
    ),
    pytest.param(
        "use candle_nn::ops;\nfn f(x: &Tensor, w: &Tensor) -> Result<Tensor> {\n    ops::rms_norm(x, w, 1e-6)\n}\n",
        "use candle_nn::ops;\nfn f(x: &Tensor, w: &Tensor) -> Result<Tensor> {\n    candle_nn::ops::rms_norm_slow(x, w, 1e-6)\n}\n",
        (),
        id="rms-norm-op-module-import-kept",
    ),
    pytest.param(
        "fn f(q: &Tensor, c: &Tensor, s: &Tensor) -> Result<Tensor> {\n    candle_nn::rotary_emb::rope(q, c, s)\n}\n",
        "fn f(q: &Tensor, c: &Tensor, s: &Tensor) -> Result<Tensor> {\n    candle_nn::rotary_emb::rope_slow(q, c, s)\n}\n",
        (),
        id="rope",
    ),
    pytest.param(
        "use candle_nn::rotary_emb::rope_i;\nfn f(q: &Tensor, c: &Tensor, s: &Tensor) -> Result<Tensor> {\n    let a = rope_i(q, c, s)?;\n    rope_i(&a, c, s)\n}\n",
        "fn f(q: &Tensor, c: &Tensor, s: &Tensor) -> Result<Tensor> {\n    let a = candle_nn::rotary_emb::rope_i_slow(q, c, s)?;\n    candle_nn::rotary_emb::rope_i_slow(&a, c, s)\n}\n",
        (),
        id="rope-i-twice-import-removed",
    ),
]


OPS = "candle_port_ops"
NORM = "candle_port_ops::norm"
REWRITTEN += [
    pytest.param(
        "use candle_nn::rotary_emb;\nfn f(q: &Tensor, c: &Tensor, s: &Tensor) -> Result<Tensor> {\n    rotary_emb::rope_thd(q, c, s)\n}\n",
        "use candle_nn::rotary_emb;\nfn f(q: &Tensor, c: &Tensor, s: &Tensor) -> Result<Tensor> {\n    candle_port_ops::rope::rope_thd(q, c, s)\n}\n",
        (),
        id="rope-thd-to-candle-port-ops",
    ),
    pytest.param(
        "use candle_nn::{layer_norm, linear, LayerNorm, VarBuilder};\n\npub struct B {\n    ln: LayerNorm,\n}\n\n"
        "pub fn b(vb: VarBuilder) -> candle::Result<B> {\n    Ok(B { ln: layer_norm(8, 1e-6, vb)? })\n}\n",
        f"use candle_nn::{{linear, VarBuilder}};\nuse {NORM}::{{LayerNorm, layer_norm}};\n\npub struct B {{\n    ln: LayerNorm,\n}}\n\n"
        "pub fn b(vb: VarBuilder) -> candle::Result<B> {\n    Ok(B { ln: layer_norm(8, 1e-6, vb)? })\n}\n",
        (),
        id="norm-layer-use-list",
    ),
    pytest.param(
        "pub struct B {\n    ln: candle_nn::LayerNorm,\n    rms: Option<candle_nn::RmsNorm>,\n}\n\n"
        "pub fn b(w: Tensor, b: Tensor, vb: candle_nn::VarBuilder) -> candle::Result<B> {\n"
        "    Ok(B { ln: candle_nn::LayerNorm::new(w, b, 1e-5), rms: Some(candle_nn::rms_norm(8, 1e-6, vb)?) })\n}\n",
        f"pub struct B {{\n    ln: {NORM}::LayerNorm,\n    rms: Option<{NORM}::RmsNorm>,\n}}\n\n"
        "pub fn b(w: Tensor, b: Tensor, vb: candle_nn::VarBuilder) -> candle::Result<B> {\n"
        f"    Ok(B {{ ln: {NORM}::LayerNorm::new(w, b, 1e-5), rms: Some({NORM}::rms_norm(8, 1e-6, vb)?) }})\n}}\n",
        (),
        id="norm-layer-full-paths-and-types",
    ),
    pytest.param(
        "use candle_nn::layer_norm;\nuse candle_nn::LayerNorm as Ln;\n\npub struct B {\n    a: layer_norm::LayerNorm,\n    b: Ln,\n}\n",
        f"use {NORM}::layer_norm;\nuse {NORM}::LayerNorm as Ln;\n\npub struct B {{\n    a: {NORM}::LayerNorm,\n    b: Ln,\n}}\n",
        (),
        id="norm-layer-module-path-and-alias",
    ),

    pytest.param(
        "use candle_nn::{linear, ops::softmax_last_dim, Linear};\nfn f(xs: &Tensor) -> Result<Tensor> {\n    softmax_last_dim(xs)\n}\n",
        "use candle_nn::{linear, Linear};\nfn f(xs: &Tensor) -> Result<Tensor> {\n    candle_nn::ops::softmax(xs, candle_core::D::Minus1)\n}\n",
        (),
        id="use-list-item-removed",
    ),
    pytest.param(
        "use candle_nn::{\n    linear,\n    rotary_emb::{rope},\n    ops::softmax_last_dim,\n};\nfn f(xs: &Tensor) -> Result<Tensor> {\n    softmax_last_dim(xs)\n}\n",
        "use candle_nn::{\n    linear,\n    rotary_emb::{rope},\n};\nfn f(xs: &Tensor) -> Result<Tensor> {\n    candle_nn::ops::softmax(xs, candle_core::D::Minus1)\n}\n",
        (),
        id="use-list-last-item-removed",
    ),
    pytest.param(
        "use candle_nn::{ops::softmax_last_dim};\nfn f(xs: &Tensor) -> Result<Tensor> {\n    softmax_last_dim(xs)\n}\n",
        "fn f(xs: &Tensor) -> Result<Tensor> {\n    candle_nn::ops::softmax(xs, candle_core::D::Minus1)\n}\n",
        (),
        id="use-list-emptied-line-removed",
    ),
    pytest.param(
        "use candle_nn::{ops::softmax_last_dim, linear};\nfn f(xs: &Tensor) -> Result<Tensor> {\n    let g = softmax_last_dim;\n    softmax_last_dim(xs)\n}\n",
        "use candle_nn::{ops::softmax_last_dim, linear};\nfn f(xs: &Tensor) -> Result<Tensor> {\n    let g = softmax_last_dim;\n    candle_nn::ops::softmax(xs, candle_core::D::Minus1)\n}\n",
        (),
        id="use-kept-while-the-name-is-used",
    ),

    pytest.param(
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.max_pool2d_with_stride(3, 2)\n}\n",
        f"use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {{\n    {OPS}::max_pool2d(&xs, &{OPS}::Pool::new(&[3, 3]).stride(&[2, 2]))\n}}\n",
        (),
        id="max-pool-with-stride",
    ),
    pytest.param(
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    Tensor::avg_pool2d(xs, (2, 3))\n}\n",
        f"use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {{\n    {OPS}::avg_pool2d(xs, &{OPS}::Pool::new(&[2, 3]))\n}}\n",
        (),
        id="avg-pool-path-form",
    ),
    pytest.param(
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.upsample_bilinear2d(8, 8, true)\n}\n",
        f"use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {{\n    {OPS}::interpolate(&xs, &{OPS}::Interpolate::size(&[8, 8], {OPS}::Mode::Bilinear).align_corners(true))\n}}\n",
        (),
        id="bilinear",
    ),
    pytest.param(
        "use candle::Tensor;\nfn f(xs: &Tensor, w: &Tensor) -> candle::Result<Tensor> {\n    xs.max_pool2d(2)?.interpolate2d(4, 4)\n}\n",
        f"use candle::Tensor;\nfn f(xs: &Tensor, w: &Tensor) -> candle::Result<Tensor> {{\n    {OPS}::interpolate(&{OPS}::max_pool2d(&xs, &{OPS}::Pool::new(&[2, 2]))?, &{OPS}::Interpolate::size(&[4, 4], {OPS}::Mode::Nearest))\n}}\n",
        (),
        id="chain-inner-first",
    ),
    pytest.param(
        "use candle::Tensor;\nfn f(xs: &Tensor, w: &Tensor, s: usize) -> candle::Result<Tensor> {\n    xs.conv_transpose1d(w, 1, 0, s, 1, 1)\n}\n",
        f"use candle::Tensor;\nfn f(xs: &Tensor, w: &Tensor, s: usize) -> candle::Result<Tensor> {{\n    {OPS}::conv_transpose1d(&xs, w, None, &{OPS}::Conv::new().padding(&[1]).output_padding(&[0]).stride(&[s]).dilation(&[1]).groups(1))\n}}\n",
        (),
        id="conv-transpose1d",
    ),
]


@pytest.mark.parametrize(("before", "after", "renames"), REWRITTEN)
def test_rewritten(before, after, renames):
    result = fix(before, renames)
    assert result.text == after
    assert fix(result.text, renames).text == result.text  # idempotent
    fixed_codes = {f.code for f in result.fixed}
    config_context = CrateContext("0.11.0", "--candle-version", tuple(renames))
    from candle_port.rust.checker import check_rust_bytes

    again = check_rust_bytes(result.text.encode(), "model.rs", Config(), config_context)
    assert not fixed_codes & {f.code for f in again.findings}


LEFT_ALONE = [
    pytest.param("use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    candle_nn::conv_transpose1d(4, 4, 3, Default::default(), vb)\n}\n", "unfixable", id="conv-transpose1d-layer"),
    pytest.param("use candle::Tensor;\nfn f(xs: &Tensor, k: usize) -> candle::Result<Tensor> {\n    xs.max_pool2d(k)\n}\n", "refused", id="pool-size-not-literal"),
    pytest.param("use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.upsample_bilinear2d_with_scale(2.0, 2.0, false)\n}\n", "unfixable", id="bilinear-with-scale"),
    pytest.param("fn f(xs: &Tensor) -> Result<Tensor> {\n    candle_nn::ops::softmax_last_dim(xs, 1)\n}\n", "refused", id="wrong-arity"),
    pytest.param("fn f(xs: &Tensor) -> Result<Tensor> {\n    candle_nn::ops::softmax_last_dim(xs) // port: ignore[CP201]\n}\n", "none", id="suppressed"),
]


@pytest.mark.parametrize(("before", "why"), LEFT_ALONE)
def test_left_alone(before, why):
    result = fix(before)
    assert result.text == before
    assert bool(result.unfixable) is (why == "unfixable")
    assert bool(result.refused) is (why == "refused")


@pytest.mark.parametrize(
    "before",
    [
        pytest.param("use candle_nn::*;\nfn f(vb: VarBuilder) -> Result<LayerNorm> {\n    candle_nn::layer_norm(8, 1e-5, vb)\n}\n", id="glob-import"),
        pytest.param("use candle_nn::{linear, layer_norm::{LayerNorm}};\nfn f(vb: VarBuilder) -> Result<LayerNorm> {\n    candle_nn::layer_norm(8, 1e-5, vb)\n}\n", id="nested-use-list"),
    ],
)
def test_norm_layers_not_moved_when_the_names_cannot_be_followed(before):
    result = fix(before)
    assert result.text == before and [r.code for r in result.refused] == ["CP202"]


def test_a_crate_s_own_layer_norm_is_not_moved():
    before = "pub struct LayerNorm;\nfn layer_norm(n: usize) -> LayerNorm {\n    LayerNorm\n}\nfn g() -> LayerNorm {\n    layer_norm(8)\n}\n"
    assert fix(before).text == before


def test_the_ops_rewrites_ask_for_the_dependency():
    assert fix(REWRITTEN[-1].values[0]).needs_ops_crate
    assert not fix(REWRITTEN[0].values[0]).needs_ops_crate


def test_untouched_bytes_and_crlf_are_kept():
    before = "// caf\u00e9 \u00e0 la carte\r\nfn f(xs: &Tensor) -> Result<Tensor> {\r\n    candle_nn::ops::softmax_last_dim(xs) /* fused */\r\n}\r\n"
    result = fix(before)
    assert result.text == before.replace("softmax_last_dim(xs)", "softmax(xs, candle_core::D::Minus1)")


@pytest.mark.skipif(shutil.which("rustfmt") is None, reason="rustfmt comes with cargo (rustup)")
def test_a_lengthened_line_is_formatted_when_the_file_was_rustfmt_clean(tmp_path):
    before = (
        "fn f(w: &Tensor, v: &Tensor) -> Result<Tensor> {\n"
        "    let attn_weights =\n"
        "        candle_nn::ops::softmax_last_dim(&attn_weights_long_name)?.to_dtype(v.dtype())?;\n"
        "    Ok(attn_weights)\n}\n"
    )
    path = tmp_path / "m.rs"
    assert subprocess.run(["rustfmt", "--check", "--edition", "2021"], input=before, text=True, capture_output=True).returncode == 0
    result = fix_rust_text(before, str(path), Config(), CONTEXT)
    assert "softmax(&attn_weights_long_name, candle_core::D::Minus1)" in result.text
    assert subprocess.run(["rustfmt", "--check", "--edition", "2021"], input=result.text, text=True, capture_output=True).returncode == 0


@pytest.fixture()
def crate(tmp_path):
    root = tmp_path / "demo"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ncandle = { package = "candle-core", version = "0.11.0" }\ncandle-nn = "0.11.0"\n')
    (root / "src" / "lib.rs").write_bytes(codecs.BOM_UTF8 + b"use candle::Tensor;\n\npub fn f(xs: &Tensor) -> candle::Result<Tensor> {\n    candle_nn::ops::softmax_last_dim(xs)\n}\n")
    return root


def test_port_fix_diff_then_write_keeps_the_bom(crate):
    lib = crate / "src" / "lib.rs"
    before = lib.read_bytes()
    diff = run_tool("--diff", str(crate), tool="fix")
    assert diff.returncode == 0, diff.stderr
    assert "+    candle_nn::ops::softmax(xs, candle::D::Minus1)" in diff.stdout.decode()
    assert lib.read_bytes() == before
    done = run_tool(str(crate), tool="fix")
    assert done.returncode == 0 and "1 site fixed in 1 file" in done.stderr.decode()
    assert lib.read_bytes() == before.replace(b"softmax_last_dim(xs)", b"softmax(xs, candle::D::Minus1)")
    assert run_tool(str(crate), "--no-cache").returncode == 0 and "CP201" not in run_tool(str(crate), "--no-cache").stdout.decode()


def test_the_manifest_gets_candle_port_ops_once(crate, tmp_path):
    (crate / "src" / "pool.rs").write_text("use candle::Tensor;\npub fn p(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.max_pool2d(2)\n}\n")
    manifest = crate / "Cargo.toml"
    before = manifest.read_text()
    ops = tmp_path / "ops"
    ops.mkdir()
    diff = run_tool("--diff", "--ops-crate", str(ops), str(crate), tool="fix")
    assert '+candle-port-ops = { path = "../ops" }' in diff.stdout.decode() and manifest.read_text() == before
    assert run_tool("--ops-crate", str(ops), str(crate), tool="fix").returncode == 0
    after = manifest.read_text()
    assert after == before.replace('candle-nn = "0.11.0"\n', 'candle-nn = "0.11.0"\ncandle-port-ops = { path = "../ops" }\n')
    assert run_tool("--ops-crate", "0.2.0", str(crate), tool="fix").returncode == 0 and manifest.read_text() == after  # once


def test_a_manifest_without_dependencies_gets_the_table():
    from candle_port.rust.ops_dependency import with_dependency

    assert with_dependency('[package]\nname = "x"\n', 'candle-port-ops = "0.2.0"') == '[package]\nname = "x"\n\n[dependencies]\ncandle-port-ops = "0.2.0"\n'
    assert with_dependency('[dependencies]\na = "1"\n\n[dev-dependencies]\nb = "1"\n', 'c = "2"') == '[dependencies]\na = "1"\nc = "2"\n\n[dev-dependencies]\nb = "1"\n'


def test_port_fix_check_and_a_bad_file(crate):
    (crate / "src" / "bad.rs").write_bytes(b"// \xff\nfn f() {}\n")
    done = run_tool("--check", str(crate), tool="fix")
    err = done.stderr.decode()
    assert done.returncode == 3, err  # a bad file wins over "would change" (1)
    assert f"{crate / 'src' / 'bad.rs'}: not valid utf-8" in err and "1 site would be fixed" in err


def test_stdin_with_a_rust_filename():
    text = b"fn f(xs: &Tensor) -> Result<Tensor> {\n    candle_nn::rotary_emb::rope(xs, c, s)\n}\n"
    done = run_tool("-", "--stdin-filename", "m.rs", stdin=text, tool="fix")
    assert done.returncode == 0 and done.stdout == text.replace(b"rope(", b"rope_slow(")


def test_check_rust_source_helper_sees_the_fixed_result_clean():
    result = fix(REWRITTEN[0].values[0])
    assert [f.code for f in check_rust_source(result.text).findings] == []
