"""inf and NaN in the input: every runtime op gives torch's non-finite pattern, forward and backward.

The dense-matrix compositions would spread one inf or NaN over the whole plane (0 * inf = NaN);
with a non-finite input they read only torch's taps (runtime/_taps.py). Forward: the NaN and inf
masks equal torch's, finite values agree to rounding, and the strides are torch's. Backward with a
finite upstream gradient (torch's backward is finite there): the input gradients agree, NaN
masks included.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import candle_port.runtime as R

INF, NAN = float("inf"), float("nan")

# (id, shape, f(module, x)) where module is torch.nn.functional or candle_port.runtime
CASES = [
    ("bilinear-up", (2, 3, 5, 6), lambda m, x: m.interpolate(x, size=(9, 13), mode="bilinear")),
    ("bilinear-down", (2, 3, 9, 8), lambda m, x: m.interpolate(x, size=(4, 3), mode="bilinear")),
    ("bilinear-one-axis", (2, 3, 5, 6), lambda m, x: m.interpolate(x, size=(9, 6), mode="bilinear")),
    ("bilinear-same-size", (2, 3, 5, 6), lambda m, x: m.interpolate(x, size=(5, 6), mode="bilinear")),
    (
        "bilinear-ac",
        (2, 3, 5, 6),
        lambda m, x: m.interpolate(x, scale_factor=2.5, mode="bilinear", align_corners=True),
    ),
    ("bilinear-aa", (2, 3, 9, 8), lambda m, x: m.interpolate(x, size=(3, 5), mode="bilinear", antialias=True)),
    ("bilinear-aa-one-axis", (2, 3, 9, 8), lambda m, x: m.interpolate(x, size=(9, 3), mode="bilinear", antialias=True)),
    ("bilinear-long", (1, 2, 150, 140), lambda m, x: m.interpolate(x, size=(300, 290), mode="bilinear")),
    ("linear", (2, 3, 7), lambda m, x: m.interpolate(x, size=12, mode="linear")),
    ("trilinear", (1, 2, 3, 4, 5), lambda m, x: m.interpolate(x, size=(5, 4, 7), mode="trilinear")),
    ("bicubic", (2, 3, 5, 6), lambda m, x: m.interpolate(x, size=(9, 4), mode="bicubic")),
    ("bicubic-same-size", (2, 3, 5, 6), lambda m, x: m.interpolate(x, size=(5, 6), mode="bicubic")),
    ("bicubic-aa", (2, 3, 9, 8), lambda m, x: m.interpolate(x, size=(3, 5), mode="bicubic", antialias=True)),
    ("area-2d", (2, 3, 9, 8), lambda m, x: m.interpolate(x, size=(4, 3), mode="area")),
    ("area-1d", (2, 3, 9), lambda m, x: m.interpolate(x, size=4, mode="area")),
    ("area-3d", (1, 2, 5, 9, 8), lambda m, x: m.interpolate(x, size=(3, 4, 3), mode="area")),
    ("nearest", (2, 3, 5, 6), lambda m, x: m.interpolate(x, size=(9, 4), mode="nearest")),
    ("avg-pool", (2, 3, 9, 8), lambda m, x: m.avg_pool2d(x, 3, 2, 1)),
    ("avg-pool-exclude-pad", (2, 3, 9, 8), lambda m, x: m.avg_pool2d(x, 3, 2, 1, True, False)),
    ("avg-pool-1d", (2, 3, 9), lambda m, x: m.avg_pool1d(x, 3, 2, 1)),
    ("adaptive-avg", (2, 3, 9, 8), lambda m, x: m.adaptive_avg_pool2d(x, (4, 3))),
    ("adaptive-avg-global", (2, 3, 9, 8), lambda m, x: m.adaptive_avg_pool2d(x, 1)),
    ("adaptive-avg-1d", (2, 3, 9), lambda m, x: m.adaptive_avg_pool1d(x, 4)),
    ("max-pool", (2, 3, 9, 8), lambda m, x: m.max_pool2d(x, 3, 2, 1)),
    ("adaptive-max", (2, 3, 9, 8), lambda m, x: m.adaptive_max_pool2d(x, (4, 3))),
]


def _input(shape, value, channels_last, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1
    flat = x.view(-1)
    flat[7] = value
    flat[-3] = -value if value == value else 0.5  # an opposite inf elsewhere (NaN: one only)
    if value == value:
        flat[min(8, flat.numel() - 1)] = -value  # +inf next to -inf: inf - inf = NaN in torch
    if channels_last and x.dim() == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    return x


def _same_nonfinite(a: torch.Tensor, b: torch.Tensor) -> None:
    assert torch.equal(a.isnan(), b.isnan()), f"NaN: torch {int(a.isnan().sum())}, ours {int(b.isnan().sum())}"
    assert torch.equal(a.isposinf(), b.isposinf()) and torch.equal(a.isneginf(), b.isneginf())
    fin = a.isfinite()
    torch.testing.assert_close(b[fin], a[fin], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels-last"])
@pytest.mark.parametrize("value", [INF, -INF, NAN], ids=["inf", "-inf", "nan"])
@pytest.mark.parametrize(("name", "shape", "fn"), CASES, ids=[c[0] for c in CASES])
def test_nonfinite_forward_and_backward(name, shape, fn, value, channels_last):
    x = _input(shape, value, channels_last)
    xa = x.clone().requires_grad_()
    xb = x.clone().requires_grad_()
    a, b = fn(F, xa), fn(R, xb)
    _same_nonfinite(a, b)
    assert a.stride() == b.stride()
    g = torch.rand(a.shape, generator=torch.Generator().manual_seed(1), dtype=a.dtype)
    a.backward(g)
    b.backward(g)
    _same_nonfinite(xa.grad, xb.grad)


def test_one_inf_stays_local_in_a_large_bilinear_upscale():
    """The reported case: one inf in a mask upscale no longer fills the plane with NaN."""
    x = torch.rand(1, 1, 4, 4, dtype=torch.float64)
    x[0, 0, 1, 2] = INF
    a = F.interpolate(x, size=(16, 20), mode="bilinear")
    b = R.interpolate(x, size=(16, 20), mode="bilinear")
    assert 0 < int((~a.isfinite()).sum()) < a.numel() // 2
    _same_nonfinite(a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_nonfinite_half_and_float(dtype):
    x = torch.rand(2, 3, 6, 7).to(dtype)
    x[0, 1, 2, 3] = NAN
    x[1, 2, 4, 4] = INF
    for fn in (
        lambda m, t: m.interpolate(t, scale_factor=2, mode="bilinear"),
        lambda m, t: m.interpolate(t, size=(3, 4), mode="area"),
        lambda m, t: m.avg_pool2d(t, 2),
    ):
        a, b = fn(F, x), fn(R, x)
        assert torch.equal(a.isnan(), b.isnan()) and torch.equal(a.isinf(), b.isinf())
