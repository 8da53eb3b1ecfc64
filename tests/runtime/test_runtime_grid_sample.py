"""grid_sample (2-D, every mode / padding / align_corners) and affine_grid equal torch's in value and
in the input and grid gradients, with inf / NaN too, pass gradcheck, and trace to ops candle
differentiates."""

from __future__ import annotations

import itertools
import warnings

import pytest
import torch
import torch.nn.functional as F
from newops_check import candle_graph, nonfinite, parity

from candle_port import runtime

MODES = ["bilinear", "nearest", "bicubic"]
PADS = ["zeros", "border", "reflection"]
DTYPES = [pytest.param(torch.float32, id="f32"), pytest.param(torch.float64, id="f64")]
COMBOS = [pytest.param(m, p, a, id=f"{m}-{p}-ac{int(a)}") for m, p, a in itertools.product(MODES, PADS, [False, True])]


def _tol(mode, dtype):
    if dtype == torch.float32 and mode == "bicubic":  # the grid gradient sums 16 cubic terms
        return dict(rtol=1e-4, atol=1e-4)
    return None


def _inputs(dtype, seed=0, h=5, w=7):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, h, w, dtype=dtype, generator=gen).requires_grad_()
    g = torch.rand(2, 4, 6, 2, dtype=dtype, generator=gen) * 3 - 1.5  # inside and outside [-1, 1]
    # exact borders and pixel centres too (gradients at the clipping / reflection edges)
    g[0, 0, :, 0] = torch.tensor([-1.0, 1.0, -1.5, 0.0, 1.0 - 1.0 / w, 3.0], dtype=dtype)
    g[0, 0, :, 1] = torch.tensor([1.0, -1.0, 0.0, 1.0 + 2.0 / h, -1.0 + 1.0 / h, -3.25], dtype=dtype)
    return x, g.requires_grad_()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("mode", "pad", "ac"), COMBOS)
def test_grid_sample_parity(mode, pad, ac, dtype):
    x, g = _inputs(dtype)
    parity(
        lambda x, g: runtime.grid_sample(x, g, mode, pad, ac),
        lambda x, g: F.grid_sample(x, g, mode, pad, ac),
        [x, g],
        tol=_tol(mode, dtype),
    )


@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_one_pixel_and_one_row(mode):
    for h, w in ((1, 1), (1, 4)):
        for pad, ac in itertools.product(PADS, [False, True]):
            x, g = _inputs(torch.float64, h=h, w=w)
            parity(lambda x, g: runtime.grid_sample(x, g, mode, pad, ac), lambda x, g: F.grid_sample(x, g, mode, pad, ac), [x, g])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_gradcheck(mode):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(1, 2, 4, 5, dtype=torch.float64, generator=gen, requires_grad=True)
    # away from the pixel lattice and the borders (the sampler is not differentiable there)
    g = (torch.rand(1, 3, 2, 2, dtype=torch.float64, generator=gen) * 1.6 - 0.8 + 0.013).requires_grad_()
    for pad, ac in (("zeros", False), ("border", True), ("reflection", False)):
        fn = lambda x, g: runtime.grid_sample(x, g, mode, pad, ac)  # noqa: E731
        assert torch.autograd.gradcheck(fn, (x, g), fast_mode=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_nonfinite_input(mode, dtype):
    x, g = _inputs(dtype, h=8, w=8)
    with torch.no_grad():
        x[0, 0, 3, 4] = float("inf")
        x[0, 1, 6, 2] = float("nan")
        x[1, 2, 0, 0] = -float("inf")
    for pad in PADS:
        bad = nonfinite(
            lambda x, g: runtime.grid_sample(x, g, mode, pad, False),
            lambda x, g: F.grid_sample(x, g, mode, pad, False),
            [x, g],
            tol=_tol(mode, dtype),
        )
        assert bad < 24  # of 144 outputs: only the samples that read a non-finite pixel


def test_nearest_grid_gets_zero_gradient_alone():
    """With only the grid requiring grad, the nearest output still requires grad (as torch's),
    and the grid's gradient is zeros, even with inf in the input."""
    x, g = _inputs(torch.float64)
    x = x.detach().clone()
    x[0, 0, 0, 0] = float("inf")
    out, ref = runtime.grid_sample(x, g, "nearest", "zeros", False), F.grid_sample(x, g, "nearest", "zeros", False)
    assert out.requires_grad and ref.requires_grad
    torch.testing.assert_close(out, ref)
    (gg,) = torch.autograd.grad(out.sum(), g)
    assert torch.equal(gg, torch.zeros_like(g))


@pytest.mark.parametrize("dtype", DTYPES)
def test_grid_sample_bicubic_infinite_input_grid_gradient_is_torchs(dtype):
    """Regression (vector gs_bicubic_nonfinite): an inf pixel gives torch's grid gradient +-inf,
    not NaN; the cubic weights' derivative is one product, as ATen's backward (autograd through
    the polynomial's chain of products gave inf * 0 = NaN)."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(1, 2, 4, 5, dtype=dtype, generator=gen)
    x[0, 0, 1, 2] = float("inf")
    x[0, 1, 0, 0] = float("nan")
    g = torch.rand(1, 3, 3, 2, dtype=dtype, generator=gen) * 2.4 - 1.2
    grads = []
    for fn in (runtime.grid_sample, F.grid_sample):
        xx, gg = x.clone().requires_grad_(), g.clone().requires_grad_()
        out = fn(xx, gg, "bicubic", "zeros", False)
        grads.append(torch.autograd.grad((out * torch.linspace(-1, 1, out.numel(), dtype=dtype).reshape(out.shape)).sum(), gg)[0])
    ours, theirs = grads
    assert bool(theirs.isinf().any())  # the case reaches the inf path
    torch.testing.assert_close(ours, theirs, equal_nan=True, **(_tol("bicubic", dtype) or {}))


def test_grid_sample_nonfinite_grid():
    x, g = _inputs(torch.float64)
    with torch.no_grad():
        g[0, 1, 2, 0] = float("nan")
        g[1, 2, 3, 1] = float("inf")
        g[1, 3, 0, 0] = -float("inf")
    for mode, pad in itertools.product(["bilinear", "nearest"], PADS):
        x0 = x.detach()
        ours = runtime.grid_sample(x0, g.detach(), mode, pad, False)
        ref = F.grid_sample(x0, g.detach(), mode, pad, False)
        torch.testing.assert_close(ours, ref, equal_nan=True)


def test_grid_sample_channels_last_and_fallbacks():
    x, g = _inputs(torch.float32)
    xc = x.detach().contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(runtime.grid_sample(xc, g.detach(), align_corners=False), F.grid_sample(xc, g.detach(), align_corners=False))
    with pytest.raises((ValueError, RuntimeError)):
        runtime.grid_sample(x, g, mode="trilinear")
    x5 = torch.randn(1, 2, 3, 4, 5)
    g5 = torch.rand(1, 2, 2, 2, 3) * 2 - 1
    torch.testing.assert_close(runtime.grid_sample(x5, g5, align_corners=True), F.grid_sample(x5, g5, align_corners=True))
    with warnings.catch_warnings(record=True):  # align_corners=None warns as torch does
        torch.testing.assert_close(runtime.grid_sample(x.detach(), g.detach()), F.grid_sample(x.detach(), g.detach()))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ac", [False, True])
def test_affine_grid_parity(ac, dtype):
    gen = torch.Generator().manual_seed(0)
    theta = torch.randn(3, 2, 3, dtype=dtype, generator=gen, requires_grad=True)
    for size in ([3, 2, 5, 7], [3, 1, 1, 4], [3, 1, 6, 1]):
        parity(lambda t: runtime.affine_grid(t, size, ac), lambda t: F.affine_grid(t, size, ac), [theta])
    theta3 = torch.randn(2, 3, 4, dtype=dtype, generator=gen, requires_grad=True)
    parity(lambda t: runtime.affine_grid(t, [2, 1, 3, 4, 5], ac), lambda t: F.affine_grid(t, [2, 1, 3, 4, 5], ac), [theta3])
    assert torch.autograd.gradcheck(lambda t: runtime.affine_grid(t, [3, 1, 2, 3], ac), (theta.detach().double().requires_grad_(),))


def test_affine_grid_then_grid_sample():
    """The spatial-transformer pattern, both gradients (theta through the grid)."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, 6, 6, dtype=torch.float64, generator=gen, requires_grad=True)
    theta = (torch.eye(2, 3, dtype=torch.float64) + 0.1 * torch.randn(2, 2, 3, dtype=torch.float64, generator=gen)).requires_grad_()
    parity(
        lambda x, t: runtime.grid_sample(x, runtime.affine_grid(t, [2, 3, 4, 4], False), align_corners=False),
        lambda x, t: F.grid_sample(x, F.affine_grid(t, [2, 3, 4, 4], False), align_corners=False),
        [x, theta],
    )


@pytest.mark.parametrize(
    ("mode", "pad"),
    [("bilinear", "zeros"), ("bilinear", "border"), ("bilinear", "reflection"), ("nearest", "reflection"),
     ("bicubic", "zeros"), ("bicubic", "reflection")],
)
def test_graph_is_candle_differentiable(mode, pad):
    x = torch.randn(1, 2, 4, 5, requires_grad=True)
    g = (torch.rand(1, 3, 3, 2) * 2.4 - 1.2).requires_grad_()
    candle_graph(lambda x, g: runtime.grid_sample(x, g, mode, pad, False), [x, g], forbidden=("grid_sampler",))


def test_affine_grid_graph_is_candle_differentiable():
    theta = torch.randn(2, 2, 3, requires_grad=True)
    names = candle_graph(lambda t: runtime.affine_grid(t, [2, 1, 4, 5], False), [theta], forbidden=("affine_grid",))
    assert "bmm" in names


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_bilinear_with_align_corners_is_torchs_value_bit_for_bit(padding_mode, dtype):
    """The corners' weighted sum runs left to right with a fused multiply-add per corner (nw,
    ne, sw, se), as ATen's kernel does: with align_corners=True (whose coordinates round as
    torch's) every output equals torch's exactly."""
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(2, 5, 9, 11, generator=gen, dtype=dtype)
    grid = torch.rand(2, 7, 6, 2, generator=gen, dtype=dtype) * 2.4 - 1.2
    got = runtime.grid_sample(x, grid, "bilinear", padding_mode, align_corners=True)
    assert torch.equal(got, F.grid_sample(x, grid, "bilinear", padding_mode, align_corners=True))
