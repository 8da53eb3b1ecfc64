"""CP205: Tensor::upsample_nearest2d / interpolate2d, whose backward bails or is wrong unless
the sizes and the graph around it allow."""

from __future__ import annotations

from candle_port.pipeline.findings import Severity
from candle_port.rust_rules.base import RustHit, RustRule, measured

_BAILS = "upsample_nearest2d 3 -> 5 (non-integer)"
_WRONG = "upsample_nearest2d x2 beside another consumer of its input"


class Nearest(RustRule):
    """candle's nearest backward works for integer, uniform factors only (else it bails), and
    was measured wrong when the upsampled tensor also feeds another op. The sizes are runtime
    values in Rust (`xs.dims4()`), so the site is a warning to look at, not a proven failure."""

    code = "CP205"
    name = "upsample-nearest"
    summary = "Tensor::upsample_nearest2d / interpolate2d: backward fails for a non-integer or non-uniform factor, and was measured wrong when the input feeds another op too"
    why = (
        "candle's UpsampleNearest2D backward bails for non-integer or non-uniform upscaling factors, and its gradient "
        "was measured wrong beside another consumer of the same input"
    )
    source = "candle-core 0.11.0 src/backprop.rs (Op::UpsampleNearest2D); measured: docs/candle-measured.md, op upsample_nearest2d"
    default_severity = Severity.WARNING
    fix_hint = "candle_port_ops::interpolate(&xs, &Interpolate::size(&[h, w], Mode::Nearest)) (a gather, exact backward)"
    VALID = (
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    candle_port_ops::interpolate(xs, &Interpolate::size(&[64, 64], Mode::Nearest))\n}\n",
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.upsample_nearest1d(64)\n}\n",
    )
    INVALID = (
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    let (_, _, h, w) = xs.dims4()?;\n    xs.upsample_nearest2d(h * 2, w * 2)\n}\n",
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.interpolate2d(37, 50)\n}\n",
    )

    def check(self, site, version: str):
        if site.api not in ("upsample_nearest2d", "interpolate2d"):
            return
        bails, judgement = measured(version, "upsample_nearest2d", _BAILS)
        wrong, wrong_judgement = measured(version, "upsample_nearest2d", _WRONG)
        if not (bails or wrong):
            return
        parts = []
        if bails:
            parts.append("backward() fails unless the output size is an integer, uniform multiple of the input's")
        if wrong:
            parts.append("the gradient was measured wrong when its input also feeds another op")
        yield RustHit(f"{site.shown}: {'; '.join(parts)}", judgement=judgement or wrong_judgement)
