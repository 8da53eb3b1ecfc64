"""antialias=True: parity of the runtime op with torch's ``_upsample_bilinear2d_aa``.

Same tolerances as the plain op (tests/runtime/test_runtime_parity.py); the per-axis matrices are
also compared with the weights ATen uses, read back through one-hot inputs.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from candle_port.runtime import interpolate, upsample_bilinear2d
from candle_port.runtime._coords import aa_matrix

FWD_ATOL_F32 = 1e-6  # inputs in [-1, 1]
FWD_ATOL_F64 = 1e-12
GRAD_ATOL_F64 = 1e-10
REF_ATOL_F64 = 1e-12
MAX_EXAMPLES = 40

SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)

_scalar = st.one_of(
    st.sampled_from([0.5, 0.25, 1.0 / 3.0, 0.3, 0.75, 1.5, 2.0, 2.5, 0.1]),
    st.floats(0.1, 3.0, allow_nan=False),
)
_scale = st.one_of(_scalar, st.tuples(_scalar, _scalar))
_size = st.one_of(st.integers(1, 40), st.tuples(st.integers(1, 40), st.integers(1, 40)))


@st.composite
def aa_cases(draw):
    """Mostly downsampling (what antialias is for), non-square, size or scale_factor."""
    n = draw(st.integers(0, 2))
    c = draw(st.integers(1, 3))
    h = draw(st.integers(1, 48))
    w = draw(st.integers(1, 48))
    align = draw(st.sampled_from([None, False, True]))
    if draw(st.booleans()):
        kw = dict(size=draw(_size), recompute_scale_factor=draw(st.sampled_from([None, False])))
    else:
        sf = draw(_scale)
        pair = sf if isinstance(sf, tuple) else (sf, sf)
        if any(math.floor(d * s) < 1 for d, s in zip((h, w), pair)):
            sf = tuple(max(s, 1.0) for s in pair)
        kw = dict(scale_factor=sf, recompute_scale_factor=draw(st.sampled_from([None, False, True])))
    channels_last = draw(st.booleans())
    return (n, c, h, w), align, kw, channels_last


def _input(shape, dtype, channels_last, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, dtype=torch.float64, generator=g).mul(2).sub(1).to(dtype)
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


@SETTINGS
@given(case=aa_cases(), seed=st.integers(0, 2**16))
def test_forward_parity_float32_and_float64(case, seed):
    shape, align, kw, cl = case
    for dtype, atol in ((torch.float32, FWD_ATOL_F32), (torch.float64, FWD_ATOL_F64)):
        x = _input(shape, dtype, cl, seed)
        ref = F.interpolate(x, mode="bilinear", align_corners=align, antialias=True, **kw)
        out = interpolate(x, mode="bilinear", align_corners=align, antialias=True, **kw)
        assert out.shape == ref.shape and out.dtype == ref.dtype
        for fmt in (torch.contiguous_format, torch.channels_last):
            assert out.is_contiguous(memory_format=fmt) == ref.is_contiguous(memory_format=fmt)
        if ref.numel():
            err = (out - ref).abs().max().item()
            assert err <= atol, (dtype, err)
        op = upsample_bilinear2d(x, align_corners=align, antialias=True, **kw)
        torch.testing.assert_close(op, out, rtol=0, atol=0)


@SETTINGS
@given(case=aa_cases(), seed=st.integers(0, 2**16))
def test_gradient_parity_float64(case, seed):
    shape, align, kw, cl = case
    x = _input(shape, torch.float64, cl, seed).requires_grad_(True)
    ref = F.interpolate(x, mode="bilinear", align_corners=align, antialias=True, **kw)
    out = interpolate(x, mode="bilinear", align_corners=align, antialias=True, **kw)
    if ref.numel() == 0:
        return
    g = torch.rand(ref.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1))
    (ref_grad,) = torch.autograd.grad(ref, x, g)
    (grad,) = torch.autograd.grad(out, x, g)
    assert (grad - ref_grad).abs().max().item() <= GRAD_ATOL_F64


def _torch_axis_matrix(n_in, n_out, align, dtype, scale_factor=None, recompute=None):
    """ATen's (out, in) weights along W, read back exactly through one-hot rows."""
    eye = torch.eye(n_in, dtype=dtype).reshape(n_in, 1, 1, n_in)
    if scale_factor is None:
        kw = dict(size=(1, n_out))
    else:
        kw = dict(scale_factor=(1.0, scale_factor), recompute_scale_factor=recompute)
    y = F.interpolate(eye, mode="bilinear", align_corners=align, antialias=True, **kw)
    return y.reshape(n_in, -1).t()


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    n_in=st.integers(1, 80),
    n_out=st.integers(1, 80),
    align=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_axis_matrix_equals_atens_weights_bitwise(n_in, n_out, align, dtype):
    ref = _torch_axis_matrix(n_in, n_out, align, dtype)
    ours = aa_matrix(n_in, n_out, align, None, dtype, torch.device("cpu"))
    assert torch.equal(ours, ref)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    n_in=st.integers(1, 80),
    sf=st.one_of(st.floats(0.05, 4.0), st.sampled_from([0.5, 1.0 / 3.0, 0.3, 1.5, 2.0])),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_axis_matrix_with_scale_factor_bitwise(n_in, sf, dtype):
    n_out = math.floor(n_in * sf)
    if n_out < 1:
        return
    ref = _torch_axis_matrix(n_in, n_out, False, dtype, scale_factor=sf)
    ours = aa_matrix(n_in, n_out, False, sf, dtype, torch.device("cpu"))
    assert torch.equal(ours, ref)


def reference_aa(x: torch.Tensor, out_h: int, out_w: int, align_corners: bool) -> torch.Tensor:
    """Slow and obvious (float64, loops): PIL's triangle filter, separable, W then H.

    Scale is in/out ((in-1)/(out-1) with align_corners); the filter half-width is max(scale, 1);
    each output averages the inputs whose centres fall within it, weighted by the triangle.
    """

    def axis_weights(n_in, n_out):
        if n_in == n_out:
            return [[(i, 1.0)] for i in range(n_in)]
        if align_corners:
            scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            scale = n_in / n_out
        support = max(scale, 1.0)
        rows = []
        for j in range(n_out):
            center = scale * (j + 0.5)
            lo = max(int(center - support + 0.5), 0)
            hi = min(int(center + support + 0.5), n_in)
            taps = [(i, max(0.0, 1.0 - abs((i - center + 0.5) / support))) for i in range(lo, hi)]
            total = sum(w for _, w in taps)
            rows.append([(i, w / total) for i, w in taps] if total else taps)
        return rows

    n, c, h, w = x.shape
    ww, wh = axis_weights(w, out_w), axis_weights(h, out_h)
    tmp = torch.zeros(n, c, h, out_w, dtype=torch.float64)
    for j, row in enumerate(ww):
        for i, wt in row:
            tmp[..., j] += wt * x[..., i].double()
    out = torch.zeros(n, c, out_h, out_w, dtype=torch.float64)
    for j, row in enumerate(wh):
        for i, wt in row:
            out[..., j, :] += wt * tmp[..., i, :]
    return out


REF_CASES = [
    pytest.param((1, 2, 12, 15), (5, 4), id="down"),
    pytest.param((1, 1, 7, 9), (13, 20), id="up"),
    pytest.param((2, 1, 17, 6), (4, 11), id="down-up"),
    pytest.param((1, 1, 9, 9), (1, 1), id="to-1x1"),
    pytest.param((1, 1, 10, 31), (10, 7), id="one-axis"),
]


@pytest.mark.parametrize(("shape", "out"), REF_CASES)
@pytest.mark.parametrize("align", [False, True], ids=["ac-false", "ac-true"])
def test_reference_matches_op_and_torch(shape, out, align):
    x = torch.rand(shape, dtype=torch.float64)
    ref = reference_aa(x, *out, align)
    ours = interpolate(x, size=out, mode="bilinear", align_corners=align, antialias=True)
    theirs = F.interpolate(x, size=out, mode="bilinear", align_corners=align, antialias=True)
    assert (ours - ref).abs().max().item() <= REF_ATOL_F64
    assert (theirs - ref).abs().max().item() <= REF_ATOL_F64


GRADCHECK_CASES = [
    pytest.param((2, 2, 9, 8), dict(scale_factor=0.5), id="x0.5"),
    pytest.param((1, 2, 11, 5), dict(size=(3, 9)), id="down-up"),
    pytest.param((1, 1, 7, 7), dict(scale_factor=0.3), id="x0.3"),
    pytest.param((1, 2, 4, 4), dict(scale_factor=1.7), id="x1.7"),
]


@pytest.mark.parametrize(("shape", "kw"), GRADCHECK_CASES)
@pytest.mark.parametrize("align", [False, True], ids=["ac-false", "ac-true"])
def test_gradcheck_and_gradgradcheck(shape, kw, align):
    x = torch.rand(shape, dtype=torch.float64, requires_grad=True)

    def f(t):
        return upsample_bilinear2d(t, align_corners=align, antialias=True, **kw)

    assert torch.autograd.gradcheck(f, (x,), fast_mode=True)
    assert torch.autograd.gradgradcheck(f, (x,), fast_mode=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_half_types_raise_like_torch(dtype):
    x = torch.rand(1, 2, 8, 8, dtype=dtype)
    kw = dict(scale_factor=0.5, mode="bilinear", antialias=True)
    with pytest.raises(RuntimeError) as theirs:
        F.interpolate(x, **kw)
    with pytest.raises(RuntimeError) as ours:
        interpolate(x, **kw)
    assert str(ours.value) == str(theirs.value)


def test_unchanged_size_is_a_copy():
    x = torch.rand(1, 2, 6, 7).contiguous(memory_format=torch.channels_last)
    out = interpolate(x, size=(6, 7), mode="bilinear", antialias=True)
    ref = F.interpolate(x, size=(6, 7), mode="bilinear", antialias=True)
    assert torch.equal(out, ref) and out.data_ptr() != x.data_ptr()
    assert out.is_contiguous(memory_format=torch.channels_last)
