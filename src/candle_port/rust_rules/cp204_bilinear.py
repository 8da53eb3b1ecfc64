"""CP204: Tensor::upsample_bilinear2d(_with_scale), whose backward bails."""

from __future__ import annotations

from candle_port.rust_rules.base import RustHit, RustRule, measured


class Bilinear(RustRule):
    """candle's backward has no arm for UpsampleBilinear2D: `loss.backward()` stops with
    "backward not supported for upsample_bilinear2d"."""

    code = "CP204"
    name = "upsample-bilinear"
    summary = "Tensor::upsample_bilinear2d / upsample_bilinear2d_with_scale: backward() fails"
    why = "candle-core's backprop has no gradient for UpsampleBilinear2D: backward() returns 'backward not supported for upsample_bilinear2d'"
    source = "candle-core 0.11.0 src/backprop.rs (Op::UpsampleBilinear2D); measured: docs/candle-measured.md, op upsample_bilinear2d"
    fix_hint = "candle_port_ops::interpolate(&xs, &Interpolate::size(&[h, w], Mode::Bilinear)) (crates/candle-port-ops: built from ops with a backward)"
    VALID = (
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    candle_port_ops::interpolate(xs, &Interpolate::size(&[64, 64], Mode::Bilinear))\n}\n",
        # a method of that name in a file that does not use candle is someone else's
        "fn f(img: &Image) -> Image {\n    img.upsample_bilinear2d(64, 64, false)\n}\n",
    )
    INVALID = (
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.upsample_bilinear2d(64, 64, false)\n}\n",
        "use candle_core::Tensor;\nfn f(xs: &Tensor) -> candle_core::Result<Tensor> {\n    Tensor::upsample_bilinear2d_with_scale(xs, 2.0, 2.0, true)\n}\n",
    )

    def check(self, site, version: str):
        if site.api not in ("upsample_bilinear2d", "upsample_bilinear2d_with_scale"):
            return
        fires, judgement = measured(version, "upsample_bilinear2d", "upsample_bilinear2d")
        if fires:
            yield RustHit(f"{site.shown}: backward() fails ('backward not supported for upsample_bilinear2d')", judgement=judgement)
