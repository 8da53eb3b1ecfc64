"""Forward and gradient parity of the runtime op with torch's own F.interpolate."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from candle_port.runtime import interpolate, upsample_bilinear2d, upsample_linear1d

FWD_ATOL_F32 = 1e-6  # inputs in [-1, 1]
FWD_ATOL_F64 = 1e-12
GRAD_ATOL_F64 = 1e-10
MAX_EXAMPLES = 40

# every composition must be exact on its own, not only the one the size heuristic picks
METHODS = [
    None,
    ("matmul", "matmul"),
    ("band", "gather"),
    ("index", "index"),
    ("band", "band"),
    ("periodic", "periodic"),
]
METHOD_IDS = ["auto", "dense", "band-gather", "index", "band-band", "periodic"]

_scalar = st.one_of(
    st.integers(1, 4).map(float),
    st.sampled_from([0.5, 1.5, 2.5, 0.75, 1.0 / 3.0, 1.1, 0.9]),
    st.floats(0.25, 4.0, allow_nan=False),
)
_scale = st.one_of(
    st.integers(1, 4), _scalar, st.tuples(_scalar, _scalar), st.lists(_scalar, min_size=2, max_size=2)
)
_size = st.one_of(st.integers(1, 40), st.tuples(st.integers(1, 40), st.integers(1, 40)))


@st.composite
def bilinear_cases(draw):
    n = draw(st.integers(0, 2))
    c = draw(st.integers(1, 3))
    h = draw(st.integers(1, 24))
    w = draw(st.integers(1, 24))
    align = draw(st.sampled_from([None, False, True]))
    if draw(st.booleans()):
        kw = dict(size=draw(_size), recompute_scale_factor=draw(st.sampled_from([None, False])))
    else:
        sf = draw(_scale)
        pair = sf if isinstance(sf, (tuple, list)) else (sf, sf)
        if any(math.floor(d * s) < 1 for d, s in zip((h, w), pair)):
            sf = [max(s, 1.0) for s in pair]
        kw = dict(scale_factor=sf, recompute_scale_factor=draw(st.sampled_from([None, False, True])))
    channels_last = draw(st.booleans())
    return (n, c, h, w), align, kw, channels_last


def _input(shape, dtype, channels_last, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, dtype=torch.float64, generator=g).mul(2).sub(1).to(dtype)
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)


@SETTINGS
@given(case=bilinear_cases(), seed=st.integers(0, 2**16))
def test_forward_parity_float32_and_float64(case, seed):
    shape, align, kw, cl = case
    for dtype, atol in ((torch.float32, FWD_ATOL_F32), (torch.float64, FWD_ATOL_F64)):
        x = _input(shape, dtype, cl, seed)
        ref = F.interpolate(x, mode="bilinear", align_corners=align, **kw)
        for methods in METHODS:
            out = upsample_bilinear2d(x, align_corners=align, _methods=methods, **kw)
            assert out.shape == ref.shape and out.dtype == ref.dtype
            if ref.numel():
                err = (out - ref).abs().max().item()
                assert err <= atol, (dtype, methods, err)
                for fmt in (torch.contiguous_format, torch.channels_last):
                    assert out.is_contiguous(memory_format=fmt) == ref.is_contiguous(memory_format=fmt)
        # the drop-in wrapper takes the same path as the default selection
        auto = upsample_bilinear2d(x, align_corners=align, **kw)
        torch.testing.assert_close(
            interpolate(x, mode="bilinear", align_corners=align, **kw), auto, rtol=0, atol=0
        )


@SETTINGS
@given(case=bilinear_cases(), seed=st.integers(0, 2**16))
def test_gradient_parity_float64(case, seed):
    shape, align, kw, cl = case
    x = _input(shape, torch.float64, cl, seed).requires_grad_(True)
    ref = F.interpolate(x, mode="bilinear", align_corners=align, **kw)
    g = torch.rand(ref.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1))
    (ref_grad,) = torch.autograd.grad(ref, x, g)
    for methods in METHODS:
        out = upsample_bilinear2d(x, align_corners=align, _methods=methods, **kw)
        (grad,) = torch.autograd.grad(out, x, g, allow_unused=True)
        if grad is None:  # only when the output is empty
            assert ref.numel() == 0
            continue
        err = (grad - ref_grad).abs().max().item() if grad.numel() else 0.0
        assert err <= GRAD_ATOL_F64, (methods, err)


@SETTINGS
@given(
    n=st.integers(0, 2),
    w=st.integers(1, 40),
    align=st.sampled_from([None, False, True]),
    kw=st.one_of(
        st.builds(lambda s: dict(size=s), st.integers(1, 60)),
        st.builds(
            lambda s, r: dict(scale_factor=s, recompute_scale_factor=r),
            st.floats(1.0, 4.0),
            st.sampled_from([None, False, True]),
        ),
    ),
)
def test_linear1d_parity(n, w, align, kw):
    for dtype, atol in ((torch.float32, FWD_ATOL_F32), (torch.float64, FWD_ATOL_F64)):
        x = _input((n, 2, w), dtype, False, w).requires_grad_(dtype == torch.float64)
        ref = F.interpolate(x, mode="linear", align_corners=align, **kw)
        out = interpolate(x, mode="linear", align_corners=align, **kw)
        assert out.shape == ref.shape
        if ref.numel():
            assert (out - ref).abs().max().item() <= atol
        if dtype == torch.float64 and ref.numel():
            g = torch.rand_like(ref)
            (a,) = torch.autograd.grad(out, x, g)
            (b,) = torch.autograd.grad(ref, x, g)
            assert (a - b).abs().max().item() <= GRAD_ATOL_F64
    assert upsample_linear1d(x.detach(), align_corners=align, **kw).shape == ref.shape


# Long axes take the banded-matmul (H) and gather (W) paths in the default selection.
LONG_CASES = [
    pytest.param((1, 2, 150, 260), dict(scale_factor=2), id="x2"),
    pytest.param((1, 1, 300, 140), dict(size=(97, 333)), id="size-mixed"),
    pytest.param((1, 2, 200, 131), dict(scale_factor=(0.3, 1.7)), id="down-up"),
    pytest.param((1, 1, 129, 129), dict(scale_factor=1.0 / 3.0), id="third"),
    pytest.param((1, 1, 257, 200), dict(scale_factor=2.5, recompute_scale_factor=True), id="recompute"),
    # upscales of long axes: the last by the block-permuted band, the other by the band
    # left-multiply (blocks of 25 and 30 tile 1500 and 390; 997 is prime, so padded and cut)
    pytest.param((1, 3, 300, 260), dict(size=(1500, 390)), id="mask-like"),
    pytest.param((2, 2, 150, 133), dict(size=(997, 997)), id="prime-out"),
]


@pytest.mark.parametrize(("shape", "kw"), LONG_CASES)
@pytest.mark.parametrize("align", [False, True], ids=["ac-false", "ac-true"])
@pytest.mark.parametrize("cl", [False, True], ids=["nchw", "nhwc"])
def test_long_axes_parity(shape, kw, align, cl):
    x = _input(shape, torch.float64, cl, 0).requires_grad_(True)
    ref = F.interpolate(x, mode="bilinear", align_corners=align, **kw)
    out = upsample_bilinear2d(x, align_corners=align, **kw)
    assert (out - ref).abs().max().item() <= FWD_ATOL_F64
    g = torch.rand_like(ref)
    (a,) = torch.autograd.grad(out, x, g)
    (b,) = torch.autograd.grad(ref, x, g)
    assert (a - b).abs().max().item() <= GRAD_ATOL_F64
    x32 = x.detach().float()
    ref32 = F.interpolate(x32, mode="bilinear", align_corners=align, **kw)
    assert (upsample_bilinear2d(x32, align_corners=align, **kw) - ref32).abs().max().item() <= FWD_ATOL_F32


GRADCHECK_CASES = [
    pytest.param((2, 2, 4, 5), dict(scale_factor=2), id="x2"),
    pytest.param((1, 2, 5, 3), dict(size=(3, 7)), id="down-up"),
    pytest.param((1, 1, 1, 4), dict(size=(3, 1)), id="size-1"),
    pytest.param((1, 2, 4, 4), dict(scale_factor=1.7), id="x1.7"),
]


@pytest.mark.parametrize(("shape", "kw"), GRADCHECK_CASES)
@pytest.mark.parametrize("align", [False, True], ids=["ac-false", "ac-true"])
@pytest.mark.parametrize("methods", METHODS, ids=METHOD_IDS)
def test_gradcheck_and_gradgradcheck(shape, kw, align, methods):
    x = torch.rand(shape, dtype=torch.float64, requires_grad=True)

    def f(t):
        return upsample_bilinear2d(t, align_corners=align, _methods=methods, **kw)

    assert torch.autograd.gradcheck(f, (x,), fast_mode=True)
    assert torch.autograd.gradgradcheck(f, (x,), fast_mode=True)


# Integer upscales whose weights repeat (x2, x4, x8 with align_corners=False) take one
# index_select of windows plus one GEMM with a fixed matrix per axis (bilinear._Periodic); the
# sizes cover every block size (8/4/2/1 inputs per block) and the clamped borders.
PERIODIC_CASES = [
    pytest.param((1, 3, 256, 256), dict(size=(1024, 1024)), id="sam-x4"),
    pytest.param((2, 5, 12, 20), dict(scale_factor=2), id="x2"),
    pytest.param((1, 2, 7, 6), dict(scale_factor=8), id="x8-odd"),
    pytest.param((1, 2, 9, 10), dict(scale_factor=(4, 2)), id="x4x2"),
    pytest.param((1, 2, 10, 7), dict(size=(20, 11)), id="x2-and-other"),
]


@pytest.mark.parametrize(("shape", "kw"), PERIODIC_CASES)
@pytest.mark.parametrize("cl", [False, True], ids=["nchw", "nhwc"])
def test_periodic_upscale_parity(shape, kw, cl):
    x = _input(shape, torch.float64, cl, 1).requires_grad_(True)
    ref = F.interpolate(x, mode="bilinear", **kw)
    out = upsample_bilinear2d(x, **kw)
    assert out.stride() == ref.stride()
    assert (out - ref).abs().max().item() <= FWD_ATOL_F64
    g = torch.rand_like(ref)
    (a,) = torch.autograd.grad(out, x, g)
    (b,) = torch.autograd.grad(ref, x, g)
    assert (a - b).abs().max().item() <= GRAD_ATOL_F64
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        xd = x.detach().to(dtype)
        got, want = upsample_bilinear2d(xd, **kw), F.interpolate(xd, mode="bilinear", **kw)
        tol = FWD_ATOL_F32 if dtype == torch.float32 else 1e-2
        assert (got.double() - want.double()).abs().max().item() <= tol, dtype


def test_periodic_form_only_where_exact():
    from candle_port.runtime.bilinear import _periodic

    cpu = torch.device("cpu")
    assert _periodic(64, 256, False, None, torch.float32, cpu, 4) is not None  # x4
    assert _periodic(64, 256, False, 4.0, torch.float64, cpu, 8) is not None
    assert _periodic(64, 128, True, None, torch.float32, cpu, 4) is None  # align_corners
    assert _periodic(64, 192, False, None, torch.float32, cpu, 4) is None  # x3: ATen's 1/3 rounds
    assert _periodic(64, 100, False, None, torch.float32, cpu, 4) is None  # not an integer factor
    assert _periodic(6, 24, False, None, torch.float32, cpu, 4) is None  # block does not divide
