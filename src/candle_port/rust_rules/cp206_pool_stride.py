"""CP206: max/avg pooling with a stride other than its kernel, whose backward bails."""

from __future__ import annotations

from candle_port.rust.sites import literal
from candle_port.rust_rules.base import RustHit, RustRule, measured

_PROBES = {"max": ("max_pool2d", "max_pool2d, kernel 3 != stride 2"), "avg": ("avg_pool2d", "avg_pool2d, kernel 3 != stride 2")}


def pair(value):
    """An int or a 2-tuple of ints (candle's ToUsize2) as a pair; None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return value
    return None


class PoolStride(RustRule):
    """candle's MaxPool2D and AvgPool2D backward arms bail unless kernel == stride ("backward not
    supported for maxpool2d if ksize (3, 3) != stride (2, 2)"). Judged from literal arguments."""

    code = "CP206"
    name = "pool-stride"
    summary = "Tensor::max_pool2d_with_stride / avg_pool2d_with_stride with stride != kernel: backward() fails"
    why = "candle's pooling backward bails with 'backward not supported for maxpool2d (avgpool2d) if ksize != stride'"
    source = "candle-core 0.11.0 src/backprop.rs:343-377; measured: docs/candle-measured.md, ops max_pool2d and avg_pool2d"
    fix_hint = "candle_port_ops::max_pool2d / avg_pool2d(&xs, &Pool::new(&[k, k]).stride(&[s, s])) (any kernel, stride and padding, full backward)"
    VALID = (
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.max_pool2d_with_stride(2, 2)\n}\n",
        "use candle::Tensor;\nfn f(xs: &Tensor, k: usize, s: usize) -> candle::Result<Tensor> {\n    xs.avg_pool2d_with_stride(k, s)\n}\n",
    )
    INVALID = (
        "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.max_pool2d_with_stride(3, 2)\n}\n",
        "use candle_core::Tensor;\nfn f(xs: &Tensor) -> candle_core::Result<Tensor> {\n    Tensor::avg_pool2d_with_stride(xs, (3, 3), (1, 1))\n}\n",
    )

    def check(self, site, version: str):
        if site.api not in ("max_pool2d_with_stride", "avg_pool2d_with_stride"):
            return
        kernel, stride = pair(literal(site.arg(0))), pair(literal(site.arg(1)))
        if kernel is None or stride is None or kernel == stride:
            return
        kind = site.api[:3]
        fires, judgement = measured(version, *_PROBES[kind])
        if fires:
            yield RustHit(
                f"{site.shown}(kernel {kernel}, stride {stride}): backward() fails ('backward not supported for {kind}pool2d if ksize != stride')",
                judgement=judgement,
            )
