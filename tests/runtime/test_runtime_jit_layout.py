"""TorchScript, torch.jit.trace and output strides: the runtime behaves as torch's ops do.

* ``torch.jit.script`` of a model using the runtime's modules or ``interpolate`` compiles (the
  ``torch.jit.is_scripting()`` branch is torch's own op: a scripted model runs in torch);
* a ``torch.jit.trace`` does not bake the traced size in (torch's op is recorded while tracing);
* the output strides equal torch's for every input layout (batch-1 channels_last-strided input,
  size-1 dims, permuted and sliced inputs), so ``.view(-1)`` works where it works on torch's.
"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import candle_port.runtime as R


class _Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = R.Upsample(scale_factor=2, mode="bilinear")
        self.near = R.UpsamplingNearest2d(scale_factor=2)
        self.pool = R.MaxPool2d(3, 2, 1)
        self.avg = R.AvgPool2d(2)
        self.adaptive = R.AdaptiveAvgPool2d(3)
        self.adaptive_max = R.AdaptiveMaxPool2d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.avg(self.pool(self.near(self.up(x))))
        z = R.interpolate(x, size=[16, 16], mode="bilinear") + R.interpolate(x, size=[16, 16], mode="nearest")
        w = R.interpolate(x, scale_factor=2.0, mode="bicubic", align_corners=True)
        return self.adaptive(y).sum() + self.adaptive_max(z).sum() + y.mean() + w.mean()


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def test_script_of_runtime_modules_and_interpolate():
    model = _Model()
    scripted = _quiet(torch.jit.script, model)
    for shape in [(1, 3, 8, 8), (2, 3, 12, 10)]:
        x = torch.rand(shape)
        torch.testing.assert_close(scripted(x), model(x))


@pytest.mark.parametrize(
    "module",
    [R.MaxPool1d(3, 2, 1), R.AvgPool1d(2), R.AdaptiveAvgPool1d(3), R.AdaptiveMaxPool1d(2)],
    ids=["max1d", "avg1d", "adaptive-avg1d", "adaptive-max1d"],
)
def test_script_of_1d_pool_modules(module):
    scripted = _quiet(torch.jit.script, module)
    x = torch.rand(2, 3, 11)
    torch.testing.assert_close(scripted(x), module(x))


class _Traced(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = R.Upsample(scale_factor=2, mode="bilinear")
        self.pool = R.MaxPool2d(3, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pool(self.up(x))
        y = R.interpolate(y, scale_factor=2, mode="nearest") + 0
        return R.avg_pool2d(R.adaptive_avg_pool2d(y, 4), 2) + R.interpolate(y, scale_factor=0.5, mode="area").mean()


def test_trace_follows_the_input_size():
    model = _Traced()
    traced = _quiet(torch.jit.trace, model, torch.rand(1, 3, 8, 8))
    x = torch.rand(1, 3, 12, 10)
    y = F.max_pool2d(F.interpolate(x, scale_factor=2, mode="bilinear"), 3, 2, 1)
    y = F.interpolate(y, scale_factor=2, mode="nearest") + 0
    want = F.avg_pool2d(F.adaptive_avg_pool2d(y, 4), 2) + F.interpolate(y, scale_factor=0.5, mode="area").mean()
    got = traced(x)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want)


def _layouts(shape):
    n, c, h, w = shape
    yield "contiguous", torch.rand(shape)
    yield "channels-last", torch.rand(shape).contiguous(memory_format=torch.channels_last)
    yield "from-(N,HW,C)", torch.rand(n, h * w, c).permute(0, 2, 1).reshape(n, c, h, w)  # Segformer
    yield "transposed", torch.rand(n, w, h, c).permute(0, 3, 2, 1)
    yield "sliced", torch.rand(n, c, h, 2 * w)[..., ::2]


OPS = [
    ("bilinear", lambda m, x: m.interpolate(x, size=(7, 9), mode="bilinear")),
    ("bilinear-same-size", lambda m, x: m.interpolate(x, size=tuple(x.shape[2:]), mode="bilinear")),
    ("bilinear-aa", lambda m, x: m.interpolate(x, size=(2, 3), mode="bilinear", antialias=True)),
    ("nearest", lambda m, x: m.interpolate(x, scale_factor=2, mode="nearest")),
    ("bicubic", lambda m, x: m.interpolate(x, size=(7, 9), mode="bicubic")),
    ("area-global", lambda m, x: m.interpolate(x, size=(1, 1), mode="area")),
    ("area", lambda m, x: m.interpolate(x, size=(2, 3), mode="area")),
    ("max-pool", lambda m, x: m.max_pool2d(x, 2)),
    ("avg-pool", lambda m, x: m.avg_pool2d(x, 2)),
    ("adaptive-avg-global", lambda m, x: m.adaptive_avg_pool2d(x, 1)),
    ("adaptive-max", lambda m, x: m.adaptive_max_pool2d(x, 2)),
]
SHAPES = [(1, 8, 4, 6), (2, 8, 4, 6), (1, 1, 4, 6), (2, 3, 1, 1), (1, 8, 1, 6), (2, 1, 1, 6)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize(("name", "fn"), OPS, ids=[o[0] for o in OPS])
def test_output_strides_equal_torch(name, fn, shape):
    for layout, x in _layouts(shape):
        try:
            want = fn(F, x)
        except RuntimeError:
            continue  # torch rejects the size (e.g. a 2x2 pool of a 1x1 input): so do we
        got = fn(R, x)
        assert got.stride() == want.stride(), (layout, got.stride(), want.stride())
        if want.is_contiguous():
            got.view(-1)  # the rewritten Segformer's failure


def test_segformer_style_view_after_resize():
    """Batch-1 (N, HW, C) -> (N, C, H, W) by permute + reshape, resized, then ``.view(-1)``."""
    x = torch.rand(1, 64, 256).permute(0, 2, 1).reshape(1, 256, 8, 8)
    want = F.interpolate(x, size=(16, 16), mode="bilinear")
    got = R.interpolate(x, size=(16, 16), mode="bilinear")
    torch.testing.assert_close(got.view(-1), want.view(-1))
