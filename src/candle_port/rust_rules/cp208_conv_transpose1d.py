"""CP208: conv_transpose1d (the Tensor op and candle-nn's ConvTranspose1d), whose backward bails."""

from __future__ import annotations

from candle_port.rust_rules.base import RustHit, RustRule, measured


class ConvTranspose1d(RustRule):
    """candle's backward has no arm for ConvTranspose1D ("backward is not supported for
    conv-transpose1d"); candle-nn's ConvTranspose1d layer calls it in its forward, so the layer
    is reported where it is built."""

    code = "CP208"
    name = "conv-transpose1d"
    summary = "Tensor::conv_transpose1d, or a candle_nn::ConvTranspose1d layer: backward() fails"
    why = "candle-core's backprop returns 'backward is not supported for conv-transpose1d'"
    source = "candle-core 0.11.0 src/backprop.rs:314; measured: docs/candle-measured.md, op conv_transpose1d"
    fix_hint = "candle_port_ops::conv_transpose1d(&xs, &w, bias, &Conv::new().stride(..).padding(..)) (built from ops with a backward)"
    VALID = (
        "use candle::Tensor;\nfn f(xs: &Tensor, w: &Tensor) -> candle::Result<Tensor> {\n    xs.conv1d(w, 0, 1, 1, 1)\n}\n",
    )
    INVALID = (
        "use candle::Tensor;\nfn f(xs: &Tensor, w: &Tensor) -> candle::Result<Tensor> {\n    xs.conv_transpose1d(w, 0, 0, 2, 1, 1)\n}\n",
        "use candle_nn::{conv_transpose1d, ConvTranspose1dConfig, VarBuilder};\nfn f(vb: VarBuilder) -> candle::Result<candle_nn::ConvTranspose1d> {\n"
        "    conv_transpose1d(64, 32, 4, ConvTranspose1dConfig::default(), vb)\n}\n",
    )

    def check(self, site, version: str):
        if site.api not in ("conv_transpose1d", "nn_conv_transpose1d"):
            return
        fires, judgement = measured(version, "conv_transpose1d", "conv_transpose1d")
        if fires:
            layer = "builds a ConvTranspose1d layer whose forward is conv_transpose1d: " if site.api.startswith("nn_") else ""
            yield RustHit(f"{site.shown}: {layer}backward() fails ('backward is not supported for conv-transpose1d')", judgement=judgement)
