"""CP201: candle_nn::ops::softmax_last_dim, a fused kernel with no backward: the gradient stops."""

from __future__ import annotations

from candle_port.rust_rules.base import RustHit, RustRule, measured
from candle_port.pipeline.findings import Severity


class SoftmaxLastDim(RustRule):
    """candle-nn applies the fused softmax with `apply_op1_no_bwd`: the result has no backward
    op, so every parameter before it silently gets no gradient (fine-tuning a candle ViT trains
    its head only)."""

    code = "CP201"
    name = "softmax-last-dim"
    summary = "candle_nn::ops::softmax_last_dim: a fused kernel without backward; the gradient stops there without an error"
    why = "softmax_last_dim is applied with apply_op1_no_bwd: backward() returns no gradient for its input and everything before it"
    source = "candle-nn 0.11.0 src/ops.rs:437-438 (measured: docs/candle-measured.md, op softmax, probe softmax_last_dim (fused))"
    default_severity = Severity.WARNING
    fix_hint = "candle_nn::ops::softmax(&xs, D::Minus1) computes the same and differentiates"
    VALID = (
        "use candle::{Tensor, D};\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    candle_nn::ops::softmax(xs, D::Minus1)\n}\n",
        # a function of the crate's own with the same name is not candle's
        "fn softmax_last_dim(xs: &Tensor) -> Result<Tensor> {\n    Ok(xs.clone())\n}\nfn g(xs: &Tensor) -> Result<Tensor> {\n    softmax_last_dim(xs)\n}\n",
        "use candle_nn::ops::*;\nfn softmax_last_dim(xs: &Tensor) -> Result<Tensor> {\n    Ok(xs.clone())\n}\nfn g(xs: &Tensor) -> Result<Tensor> {\n    softmax_last_dim(xs)\n}\n",
        "// candle_nn::ops::softmax_last_dim(&xs) in a comment\nfn f() {}\n",
    )
    INVALID = (
        "fn f(xs: &candle::Tensor) -> candle::Result<candle::Tensor> {\n    candle_nn::ops::softmax_last_dim(xs)\n}\n",
        "use candle_nn::ops::softmax_last_dim;\nfn f(xs: &Tensor) -> Result<Tensor> {\n    softmax_last_dim(xs)\n}\n",
        "use candle_nn::ops;\nfn f(xs: &Tensor) -> Result<Tensor> {\n    ops::softmax_last_dim(&xs.contiguous()?)\n}\n",
        "use candle_nn::ops::*;\nfn f(xs: &Tensor) -> Result<Tensor> {\n    softmax_last_dim(xs)\n}\n",
        "use candle_nn as nn;\nfn f(xs: &Tensor) -> Result<Tensor> {\n    nn::ops::softmax_last_dim(xs)\n}\n",
        "use candle_nn::ops::softmax_last_dim as fast_softmax;\nfn f(xs: &Tensor) -> Result<Tensor> {\n    fast_softmax(xs)\n}\n",
    )

    def check(self, site, version: str):
        if site.api != "softmax_last_dim":
            return
        fires, judgement = measured(version, "softmax", "candle_nn::ops::softmax_last_dim (fused)")
        if fires:
            yield RustHit(f"{site.shown}: fused softmax without backward, the gradient stops here without an error", judgement=judgement)
