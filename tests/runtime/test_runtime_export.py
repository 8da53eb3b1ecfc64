"""Every runtime op traces under torch.export (non-strict), as verify traces a rewritten model.

A size-only constant whose builder tests a value (nearest's integer-upscale factor) was built
from export's fake tensors, so `bool(...)` stopped the trace ("Could not guard on data-dependent
expression"): every nearest upscale's graph fell back to make_fx, where an in-place add on the
result (transformers' MaskFormer FPN: `down = interpolate(...); down += left`) became an
`as_strided` candle has no op for, and verify FAILed a correct rewrite. Each op is exported with
cold and with warm caches (verify runs the model eagerly before it traces it), and the exported
program must give the eager numbers.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import candle_port.runtime as rt  # noqa: E402
from candle_port.runtime.bilinear import clear_cache  # noqa: E402
from candle_port.runtime.pooling import clear_pooling_cache  # noqa: E402

from test_runtime_grad_layout import OPS  # noqa: E402  (the op kinds every runtime-wide test runs)

EXTRA = {
    "nearest x2 by size (FPN)": (2, lambda f, x: f.interpolate(x, size=(x.shape[2] * 2, x.shape[3] * 2), mode="nearest")),
    "nearest x2": (2, lambda f, x: f.interpolate(x, scale_factor=2, mode="nearest")),
    "nearest-exact x3": (2, lambda f, x: f.interpolate(x, scale_factor=3, mode="nearest-exact")),
    "nearest x2 3-D": (3, lambda f, x: f.interpolate(x, scale_factor=2, mode="nearest")),
}
ALL = {**OPS, **EXTRA}


class _Op(torch.nn.Module):
    """The op on a parameter-scaled input, then an in-place add on its result (as MaskFormer's FPN)."""

    def __init__(self, op):
        super().__init__()
        self.op = op
        self.scale = torch.nn.Parameter(torch.ones(1))

    def forward(self, x):
        y = self.op(rt, x * self.scale)
        y += 1.0
        return y


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
@pytest.mark.parametrize("name", sorted(ALL))
def test_every_runtime_op_exports(name, warm):
    nd, op = ALL[name]
    model = _Op(op)
    x = torch.randn((2, 4) + (6,) * nd, generator=torch.Generator().manual_seed(0))
    clear_cache()
    clear_pooling_cache()
    if warm:
        model(x)
    program = torch.export.export(model, (x,), strict=False)
    torch.testing.assert_close(program.module()(x), model(x), rtol=0, atol=0)
    ops = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert not any("as_strided" in op for op in ops), sorted(ops)
    assert not any("kron" in op for op in ops), sorted(ops)  # a size-only constant, not an op candle lacks
