"""CP202: candle-nn's fused layer and RMS norms (the ops, and the LayerNorm/RmsNorm layers that
take them), whose kernels have no backward."""

from __future__ import annotations

from candle_port.pipeline.findings import Severity
from candle_port.rust.sites import literal, struct_fields
from candle_port.rust_rules.base import RustHit, RustRule

_OPS = {"ops_layer_norm": "layer_norm_slow", "ops_rms_norm": "rms_norm_slow"}


class FusedNorm(RustRule):
    """`candle_nn::ops::layer_norm`/`rms_norm` are applied with `apply_op3_no_bwd`/`apply_op2_no_bwd`.
    The layers do the same on contiguous input: `LayerNorm::forward` takes the fused op when the
    norm removes the mean and has a bias (what `candle_nn::layer_norm(size, eps, vb)` and
    `LayerNorm::new` build), `RmsNorm::forward` always. The layer is reported where it is built:
    every `xs.apply(&ln)` of it cuts the gradient."""

    code = "CP202"
    name = "fused-norm"
    summary = "candle-nn's fused layer_norm/rms_norm (the ops, or a LayerNorm/RmsNorm layer built to use them): no backward, the gradient stops without an error"
    why = (
        "candle_nn::ops::layer_norm and rms_norm apply their kernel with apply_op*_no_bwd, and LayerNorm::forward "
        "(remove_mean with a bias) and RmsNorm::forward call them for contiguous input: no gradient reaches the "
        "weights, the bias or anything before the norm"
    )
    source = "candle-nn 0.11.0 src/ops.rs:674-684 and 932-944, src/layer_norm.rs:116-121 and 196-202"
    default_severity = Severity.WARNING
    fix_hint = (
        "candle_nn::ops::layer_norm_slow / rms_norm_slow (same arguments) for the ops; candle_port_ops::norm's "
        "LayerNorm / RmsNorm (same constructors) for the layers; port-fix does both"
    )
    VALID = (
        "fn f(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {\n    candle_nn::ops::layer_norm_slow(x, w, b, 1e-5)\n}\n",
        # no bias: LayerNorm::forward takes the composed (differentiable) path
        "fn f(vb: candle_nn::VarBuilder) -> candle::Result<candle_nn::LayerNorm> {\n    candle_nn::layer_norm_no_bias(768, 1e-6, vb)\n}\n",
        "use candle_nn::{layer_norm, LayerNormConfig};\nfn f(vb: VarBuilder) -> Result<LayerNorm> {\n"
        "    layer_norm(768, LayerNormConfig { eps: 1e-6, remove_mean: true, affine: false }, vb)\n}\n",
        "fn layer_norm(size: usize, eps: f64, vb: VarBuilder) -> Result<LayerNorm> {\n    todo!()\n}\n"
        "fn g(vb: VarBuilder) -> Result<LayerNorm> {\n    layer_norm(768, 1e-6, vb)\n}\n",
    )
    INVALID = (
        "use candle_nn::ops;\nfn f(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {\n    ops::layer_norm(x, w, b, 1e-5)\n}\n",
        "fn f(x: &Tensor, w: &Tensor) -> Result<Tensor> {\n    candle_nn::ops::rms_norm(x, w, 1e-6)\n}\n",
        "use candle_nn::{layer_norm, LayerNorm, Module, VarBuilder};\nfn f(xs: &Tensor, vb: VarBuilder) -> Result<Tensor> {\n"
        "    let ln: LayerNorm = layer_norm(768, 1e-6, vb.pp(\"norm\"))?;\n    xs.apply(&ln)\n}\n",
        "fn f(vb: candle_nn::VarBuilder) -> candle::Result<candle_nn::RmsNorm> {\n    candle_nn::rms_norm(4096, 1e-5, vb)\n}\n",
        "use candle_nn::LayerNorm;\nfn f(w: Tensor, b: Tensor) -> LayerNorm {\n    LayerNorm::new(w, b, 1e-5)\n}\n",
        "fn f(w: Tensor) -> candle_nn::RmsNorm {\n    candle_nn::RmsNorm::new(w, 1e-6)\n}\n",
    )

    def check(self, site, version: str):
        api = site.api
        if api in _OPS:
            yield RustHit(f"{site.shown}: fused norm without backward, the gradient stops here without an error (candle_nn::ops::{_OPS[api]} differentiates)")
        elif api in ("rms_norm_ctor", "rms_norm_new"):
            yield RustHit(f"{site.shown}: builds an RmsNorm whose forward takes the fused rms_norm without backward; the gradient stops at every use, without an error")
        elif api == "layer_norm_new" or (api == "layer_norm_ctor" and _fused_config(site.arg(1))):
            yield RustHit(f"{site.shown}: builds a LayerNorm (with bias) whose forward takes the fused layer_norm without backward; the gradient stops at every use, without an error")


def _fused_config(node) -> bool:
    """Whether `candle_nn::layer_norm`'s config leads to the fused path: any value but a struct
    literal that turns off the bias or the mean removal (an f64 eps means both on)."""
    fields = struct_fields(node)
    if fields is None:
        return True
    values, _base = fields
    for key in ("affine", "remove_mean"):
        if key in values and literal(values[key]) is False:
            return False
    return True
