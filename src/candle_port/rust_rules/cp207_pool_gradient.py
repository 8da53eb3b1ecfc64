"""CP207: pooling whose candle backward runs but computes a wrong gradient."""

from __future__ import annotations

from candle_port.pipeline.findings import Severity
from candle_port.rust.sites import literal
from candle_port.rust_rules.base import RustHit, RustRule, measured
from candle_port.rust_rules.cp206_pool_stride import pair

_MAX = ("max_pool2d", "max_pool2d, kernel == stride, divisible")
_AVG = ("avg_pool2d", "avg_pool2d, kernel == stride, not divisible")


class PoolGradient(RustRule):
    """With kernel == stride candle's pooling backward runs, and was measured wrong: max pooling
    always (the maximum gets a fraction of its gradient), average pooling when the input's height
    or width is not a multiple of the kernel (a runtime size: a warning)."""

    code = "CP207"
    name = "pool-gradient"
    summary = "Tensor::max_pool2d (kernel == stride): a silently wrong gradient; avg_pool2d: wrong when H or W is not a multiple of the kernel"
    why = "candle's MaxPool2D backward spreads the gradient wrongly (measured 75% off), and AvgPool2D's is wrong for a size the kernel does not divide"
    source = "candle-core 0.11.0 src/backprop.rs:343-377; measured: docs/candle-measured.md, ops max_pool2d and avg_pool2d"
    severity_note = "a warning for avg_pool2d, whose gradient is wrong only for sizes the kernel does not divide"
    fix_hint = "candle_port_ops::max_pool2d / avg_pool2d(&xs, &Pool::new(&[k, k])) (exact backward)"
    VALID = (
        # kernel 1 is the identity, measured right
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.max_pool2d(1)\n}\n",
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.max_pool2d_with_stride(3, 2)\n}\n",
    )
    INVALID = (
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.max_pool2d(2)\n}\n",
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.max_pool2d_with_stride((2, 2), (2, 2))\n}\n",
        "use candle::Tensor;\nfn f(xs: &Tensor, k: usize) -> candle::Result<Tensor> {\n    xs.avg_pool2d(k)\n}\n",
    )

    def check(self, site, version: str):
        if site.api not in ("max_pool2d", "max_pool2d_with_stride", "avg_pool2d", "avg_pool2d_with_stride"):
            return
        kernel = pair(literal(site.arg(0)))
        if site.api.endswith("_with_stride"):
            stride = pair(literal(site.arg(1)))
            if kernel is None or stride is None or kernel != stride:
                return  # kernel != stride is CP206's; unknown: one of the two, said by neither
        if kernel == (1, 1):
            return
        is_max = site.api.startswith("max")
        fires, judgement = measured(version, *(_MAX if is_max else _AVG))
        if not fires:
            return
        if is_max:
            yield RustHit(f"{site.shown}: candle's max_pool2d backward runs but its gradient is wrong (no error)", judgement=judgement)
        else:
            yield RustHit(
                f"{site.shown}: candle's avg_pool2d gradient is wrong (no error) when the input's height or width is not a multiple of the kernel",
                severity=Severity.WARNING,
                judgement=judgement,
            )
