"""candle_port.runtime.pooling equals torch's pooling in value, indices, gradient and layout.

The reference is torch's native kernel. Max pools and their indices must match bitwise (ties and
NaN included); average pools to float rounding. Gradients are compared with torch's autograd in
float64, and gradcheck runs on every op.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from candle_port.runtime import pooling as P
from candle_port.runtime import pooling_modules as M

AVG_TOL_F32 = 1e-6  # inputs in [-1, 1]
AVG_TOL_F64 = 1e-12
GRAD_TOL_F64 = 1e-10
HALF_TOL = {torch.float16: 1e-3, torch.bfloat16: 8e-3}  # one ulp of the output near 1

MAX2D = [
    pytest.param((3, 2, 1), {}, id="k3s2p1-resnet-stem"),
    pytest.param((2,), {}, id="k2-default-stride"),
    pytest.param((3, 1, 1), {}, id="k3s1p1-overlap"),
    pytest.param((1, 2, 0), {}, id="k1s2-fpn-lastlevel"),
    pytest.param((3, 2, 1, 2), {}, id="dilation2"),
    pytest.param(((2, 3), (1, 2), (1, 1), (2, 1)), dict(ceil_mode=True), id="rect-ceil"),
    pytest.param((3, 3, 1), dict(ceil_mode=True), id="ceil-last-window-in-pad"),
    pytest.param((2, 2), dict(ceil_mode=True), id="k2s2-ceil"),
    pytest.param((5,), dict(stride=[], padding=2), id="stride-empty-list"),
]
AVG2D = [
    pytest.param((3, 2, 1), {}, id="k3s2p1"),
    pytest.param((2,), {}, id="k2"),
    pytest.param((3, 1, 1), dict(count_include_pad=False), id="k3s1p1-no-pad-count"),
    pytest.param((3, 2, 1), dict(ceil_mode=True), id="ceil-include-pad"),
    pytest.param((3, 2, 1), dict(ceil_mode=True, count_include_pad=False), id="ceil-exclude-pad"),
    pytest.param(((2, 3), (1, 2), (1, 1)), dict(divisor_override=5), id="rect-divisor-override"),
    pytest.param((4, 3, 2), dict(ceil_mode=True), id="ceil-window-past-pad"),
]
MAX1D = [
    pytest.param((3, 2, 1), {}, id="k3s2p1"),
    pytest.param((2,), {}, id="k2"),
    pytest.param((4, 3, 2, 2), dict(ceil_mode=True), id="dilation-ceil"),
]
AVG1D = [
    pytest.param((3, 2, 1), {}, id="k3s2p1"),
    pytest.param((4, 3, 2), dict(ceil_mode=True, count_include_pad=False), id="ceil-exclude-pad"),
]
ADAPTIVE2D = [
    pytest.param(1, id="global"),
    pytest.param(3, id="3-uneven"),
    pytest.param((5, None), id="none-keeps-w"),
    pytest.param((4, 7), id="rect"),
    pytest.param(20, id="upsample"),
]
ADAPTIVE1D = [pytest.param(s, id=f"out{s}") for s in (1, 3, 5, 30)]
LAYOUTS = [
    pytest.param("contiguous", id="nchw"),
    pytest.param("channels_last", id="channels-last"),
    pytest.param("unbatched", id="unbatched"),
]


def _distinct(shape, dtype=torch.float64, seed=0) -> torch.Tensor:
    """Values in [-1, 1] without ties (a permutation), so max-pool gradients are unambiguous."""
    g = torch.Generator().manual_seed(seed)
    n = 1
    for s in shape:
        n *= s
    return (torch.randperm(n, generator=g).to(dtype) / max(n - 1, 1) * 2 - 1).reshape(shape)


def _layout(x: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "channels_last":
        return x.contiguous(memory_format=torch.channels_last)
    if layout == "unbatched":
        return x[0]
    return x


def _strides(t: torch.Tensor) -> list:
    """Strides of the dims longer than 1 (a size-1 dim's stride means nothing)."""
    return [s for s, n in zip(t.stride(), t.shape) if n > 1]


def _run(fn, x: torch.Tensor, args, kwargs, grad_out_seed=1):
    xr = x.detach().clone().requires_grad_()
    out = fn(xr, *args, **kwargs)
    values = out[0] if isinstance(out, tuple) else out
    g = _distinct(values.shape, values.dtype, grad_out_seed)
    values.backward(g)
    return out, xr.grad


def _compare(ours_fn, torch_fn, x, args, kwargs, exact: bool, tol: float, grad_tol: float = GRAD_TOL_F64):
    ours, ours_grad = _run(ours_fn, x, args, kwargs)
    want, want_grad = _run(torch_fn, x, args, kwargs)
    if isinstance(want, tuple):
        assert torch.equal(ours[1], want[1]), "indices differ"
        assert _strides(ours[1]) == _strides(want[1])
        ours, want = ours[0], want[0]
    assert ours.shape == want.shape and ours.dtype == want.dtype
    assert _strides(ours) == _strides(want), "memory format differs"
    if exact:
        assert torch.equal(ours, want)
    else:
        assert (ours - want).abs().max().item() <= tol
    if x.dtype == torch.float64:
        assert (ours_grad - want_grad).abs().max().item() <= grad_tol
    return ours, want


# ---------------------------------------------------------------------------------------------
# Forward and backward parity.


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize(("args", "kwargs"), MAX2D)
def test_max_pool2d_matches_torch(args, kwargs, dtype, layout):
    x = _layout(_distinct((2, 3, 11, 13), dtype), layout)
    _compare(P.max_pool2d, F.max_pool2d, x, args, dict(kwargs, return_indices=True), exact=True, tol=0)
    _compare(P.max_pool2d, F.max_pool2d, x, args, kwargs, exact=True, tol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize(("args", "kwargs"), AVG2D)
def test_avg_pool2d_matches_torch(args, kwargs, dtype, layout):
    x = _layout(_distinct((2, 3, 11, 13), dtype), layout)
    tol = AVG_TOL_F64 if dtype == torch.float64 else AVG_TOL_F32
    _compare(P.avg_pool2d, F.avg_pool2d, x, args, kwargs, exact=False, tol=tol)


@pytest.mark.parametrize("unbatched", [False, True], ids=["batched", "unbatched"])
@pytest.mark.parametrize(("args", "kwargs"), MAX1D)
def test_max_pool1d_matches_torch(args, kwargs, unbatched):
    x = _distinct((2, 3, 17))
    x = x[0] if unbatched else x
    _compare(P.max_pool1d, F.max_pool1d, x, args, dict(kwargs, return_indices=True), exact=True, tol=0)
    _compare(P.max_pool1d_with_indices, F.max_pool1d_with_indices, x, args, kwargs, exact=True, tol=0)


@pytest.mark.parametrize("unbatched", [False, True], ids=["batched", "unbatched"])
@pytest.mark.parametrize(("args", "kwargs"), AVG1D)
def test_avg_pool1d_matches_torch(args, kwargs, unbatched):
    x = _distinct((2, 3, 17))
    x = x[0] if unbatched else x
    _compare(P.avg_pool1d, F.avg_pool1d, x, args, kwargs, exact=False, tol=AVG_TOL_F64)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("size", ADAPTIVE2D)
def test_adaptive_pool2d_matches_torch(size, dtype, layout):
    x = _layout(_distinct((2, 3, 11, 13), dtype), layout)
    tol = AVG_TOL_F64 if dtype == torch.float64 else AVG_TOL_F32
    _compare(P.adaptive_avg_pool2d, F.adaptive_avg_pool2d, x, (size,), {}, exact=False, tol=tol)
    _compare(P.adaptive_max_pool2d, F.adaptive_max_pool2d, x, (size, True), {}, exact=True, tol=0)
    _compare(P.adaptive_max_pool2d_with_indices, F.adaptive_max_pool2d_with_indices, x, (size,), {}, exact=True, tol=0)


@pytest.mark.parametrize("unbatched", [False, True], ids=["batched", "unbatched"])
@pytest.mark.parametrize("size", ADAPTIVE1D)
def test_adaptive_pool1d_matches_torch(size, unbatched):
    x = _distinct((2, 3, 17))
    x = x[0] if unbatched else x
    _compare(P.adaptive_avg_pool1d, F.adaptive_avg_pool1d, x, (size,), {}, exact=False, tol=AVG_TOL_F64)
    _compare(P.adaptive_max_pool1d, F.adaptive_max_pool1d, x, (size, True), {}, exact=True, tol=0)
    _compare(P.adaptive_max_pool1d_with_indices, F.adaptive_max_pool1d_with_indices, x, (size,), {}, exact=True, tol=0)


HALF_CASES = [
    pytest.param(P.max_pool2d, F.max_pool2d, (3, 2, 1), True, id="max"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, (3, 2, 1), False, id="avg"),
    pytest.param(P.adaptive_avg_pool2d, F.adaptive_avg_pool2d, (5,), False, id="adaptive-avg"),
    pytest.param(P.adaptive_max_pool2d, F.adaptive_max_pool2d, (5,), True, id="adaptive-max"),
]


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize(("ours", "theirs", "args", "exact"), HALF_CASES)
def test_half_precision_matches_torch(ours, theirs, args, exact, dtype, channels_last):
    x = torch.rand(2, 3, 11, 13, generator=torch.Generator().manual_seed(0)).to(dtype) * 2 - 1
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    got, want = ours(x, *args), theirs(x, *args)
    assert got.dtype == dtype and _strides(got) == _strides(want)
    if exact:
        assert torch.equal(got, want)
    else:
        assert (got.float() - want.float()).abs().max().item() <= HALF_TOL[dtype]


# ---------------------------------------------------------------------------------------------
# Ties and NaN: which element wins decides the gradient and the indices.


TIE_CASES = [
    pytest.param(P.max_pool2d, F.max_pool2d, (3, 2, 1), id="max-k3s2p1"),
    pytest.param(P.max_pool2d, F.max_pool2d, (2,), id="max-k2"),
    pytest.param(P.max_pool2d, F.max_pool2d, (3, 1, 1, 2), id="max-dilated"),
    pytest.param(P.adaptive_max_pool2d, F.adaptive_max_pool2d, (3,), id="adaptive-max"),
]


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
@pytest.mark.parametrize(("ours", "theirs", "args"), TIE_CASES)
def test_ties_after_relu_give_torchs_gradient_and_indices(ours, theirs, args, channels_last):
    g = torch.Generator().manual_seed(3)
    x = torch.relu(torch.randn(2, 3, 10, 9, generator=g, dtype=torch.float64)).round()  # many 0s and 1s
    x[0, 0] = 0.0  # whole windows of equal zeros
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    (got, got_i), got_grad = _run(ours, x, args, dict(return_indices=True))
    (want, want_i), want_grad = _run(theirs, x, args, dict(return_indices=True))
    assert torch.equal(got, want) and torch.equal(got_i, want_i)
    assert torch.equal(got_grad, want_grad)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
@pytest.mark.parametrize(("ours", "theirs", "args"), TIE_CASES)
def test_nan_windows_pick_torchs_element(ours, theirs, args, channels_last):
    x = _distinct((1, 2, 10, 9))
    x[0, 0, 1, 1] = x[0, 0, 2, 2] = x[0, 0, 0, 2] = x[0, 1, 5, 5] = float("nan")
    x[0, 1, 6, 4] = float("-inf")
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    (got, got_i), got_grad = _run(ours, x, args, dict(return_indices=True))
    (want, want_i), want_grad = _run(theirs, x, args, dict(return_indices=True))
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(got.nan_to_num(), want.nan_to_num())
    assert torch.equal(got_i, want_i)
    assert torch.equal(got_grad, want_grad)


def test_all_minus_inf_window_picks_the_first_element():
    x = torch.full((1, 1, 4, 4), float("-inf"))
    got, want = P.max_pool2d(x, 3, 2, 1, return_indices=True), F.max_pool2d(x, 3, 2, 1, return_indices=True)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


# ---------------------------------------------------------------------------------------------
# gradcheck in float64 (no ties).


GRADCHECK = [
    pytest.param(lambda x: P.max_pool2d(x, 3, 2, 1), (1, 2, 6, 7), id="max_pool2d"),
    pytest.param(lambda x: P.max_pool2d(x, 2, 1, 1, 2, True), (1, 2, 6, 7), id="max_pool2d-dilated-ceil"),
    pytest.param(lambda x: P.max_pool1d(x, 3, 2, 1), (1, 2, 9), id="max_pool1d"),
    pytest.param(lambda x: P.avg_pool2d(x, 3, 2, 1, True, False), (1, 2, 6, 7), id="avg_pool2d"),
    pytest.param(lambda x: P.avg_pool2d(x, 2, divisor_override=3), (1, 2, 6, 7), id="avg_pool2d-override"),
    pytest.param(lambda x: P.avg_pool1d(x, 3, 2, 1), (1, 2, 9), id="avg_pool1d"),
    pytest.param(lambda x: P.adaptive_avg_pool2d(x, (3, 4)), (1, 2, 7, 6), id="adaptive_avg_pool2d"),
    pytest.param(lambda x: P.adaptive_avg_pool1d(x, 4), (1, 2, 7), id="adaptive_avg_pool1d"),
    pytest.param(lambda x: P.adaptive_max_pool2d(x, (3, 4)), (1, 2, 7, 6), id="adaptive_max_pool2d"),
    pytest.param(lambda x: P.adaptive_max_pool1d(x, 4), (1, 2, 7), id="adaptive_max_pool1d"),
    pytest.param(
        lambda x: P.max_pool2d(x.contiguous(memory_format=torch.channels_last), 3, 2, 1),
        (2, 3, 6, 7),
        id="max_pool2d-channels-last",
    ),
    pytest.param(
        lambda x: P.avg_pool2d(x.contiguous(memory_format=torch.channels_last), 3, 2, 1),
        (2, 3, 6, 7),
        id="avg_pool2d-channels-last",
    ),
]


@pytest.mark.parametrize(("fn", "shape"), GRADCHECK)
def test_gradcheck(fn, shape):
    x = _distinct(shape).requires_grad_()
    assert torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# Edges: empty batch, invalid arguments, what is left to torch.


EMPTY = [
    pytest.param(P.max_pool2d, F.max_pool2d, (3, 2, 1), id="max"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, (3, 2, 1), id="avg"),
    pytest.param(P.adaptive_avg_pool2d, F.adaptive_avg_pool2d, (3,), id="adaptive-avg"),
    pytest.param(P.adaptive_max_pool2d, F.adaptive_max_pool2d, (3,), id="adaptive-max"),
]


@pytest.mark.parametrize(("ours", "theirs", "args"), EMPTY)
def test_empty_batch_as_torch(ours, theirs, args):
    x = torch.rand(0, 3, 8, 8, requires_grad=True)
    got, want = ours(x, *args), theirs(x, *args)
    assert got.shape == want.shape
    got.sum().backward()
    assert x.grad.shape == x.shape


INVALID = [
    pytest.param(P.max_pool2d, F.max_pool2d, (torch.rand(1, 1, 5, 5), 3, 2, 2), id="max2d-pad-too-big"),
    pytest.param(P.max_pool2d, F.max_pool2d, (torch.rand(1, 1, 5, 5), 7), id="max2d-output-too-small"),
    pytest.param(P.max_pool2d, F.max_pool2d, (torch.rand(1, 1, 5, 5), (1, 2, 3)), id="max2d-kernel-3-ints"),
    pytest.param(P.max_pool2d, F.max_pool2d, (torch.rand(1, 1, 5, 5), 2, 0), id="max2d-stride-zero"),
    pytest.param(P.max_pool2d, F.max_pool2d, (torch.rand(5, 5), 2), id="max2d-2d-input"),
    pytest.param(P.max_pool1d, F.max_pool1d, (torch.rand(1, 1, 5), 0), id="max1d-kernel-zero"),
    pytest.param(P.max_pool1d, F.max_pool1d, (torch.rand(1, 1, 5), 3, 1, 2), id="max1d-pad-too-big"),
    pytest.param(
        P.avg_pool2d, F.avg_pool2d, (torch.rand(1, 1, 5, 5), 2, 2, 0, False, True, 0), id="avg2d-divisor-zero"
    ),
    pytest.param(P.avg_pool2d, F.avg_pool2d, (torch.rand(1, 1, 5, 5), 7), id="avg2d-output-too-small"),
    pytest.param(P.avg_pool1d, F.avg_pool1d, (torch.rand(1, 1, 5), 3, 1, 2), id="avg1d-pad-too-big"),
    pytest.param(P.adaptive_avg_pool2d, F.adaptive_avg_pool2d, (torch.rand(5, 5), 2), id="aavg2d-2d-input"),
    pytest.param(P.adaptive_avg_pool2d, F.adaptive_avg_pool2d, (torch.rand(1, 1, 5, 5), -1), id="aavg2d-negative"),
    pytest.param(P.adaptive_max_pool2d, F.adaptive_max_pool2d, (torch.rand(5, 5), 2), id="amax2d-2d-input"),
    pytest.param(P.adaptive_max_pool2d, F.adaptive_max_pool2d, (torch.rand(1, 0, 5, 5), 2), id="amax2d-empty-channels"),
    pytest.param(P.adaptive_max_pool1d, F.adaptive_max_pool1d, (torch.rand(1, 1, 5), (2, 2)), id="amax1d-two-sizes"),
]


@pytest.mark.parametrize(("ours", "theirs", "args"), INVALID)
def test_invalid_arguments_raise_torchs_error(ours, theirs, args):
    with pytest.raises(Exception) as want:
        theirs(*args)
    with pytest.raises(want.type) as got:
        ours(*args)
    assert str(got.value) == str(want.value)


FALLBACK = [
    pytest.param(P.max_pool2d, F.max_pool2d, torch.arange(50).reshape(1, 2, 5, 5), (3, 2, 1), id="max-int64"),
    pytest.param(
        P.adaptive_max_pool2d, F.adaptive_max_pool2d, torch.arange(50).reshape(1, 2, 5, 5), (2,), id="amax-int64"
    ),
]


@pytest.mark.parametrize(("ours", "theirs", "x", "args"), FALLBACK)
def test_what_is_not_composed_is_torchs_own_result(ours, theirs, x, args):
    try:
        want = theirs(x, *args)
    except Exception as error:  # torch may not implement the dtype: then ours raises the same
        with pytest.raises(type(error)):
            ours(x, *args)
        return
    assert torch.equal(ours(x, *args), want)


def test_window_without_inbound_element_is_left_to_torch():
    # H = 2, k = 2, dilation 3, padding 1: the only window reads rows -1 and 2, both outside.
    x = torch.rand(1, 1, 2, 4)
    got = P.max_pool2d(x, 2, 1, 1, 3, return_indices=True)
    want = F.max_pool2d(x, 2, 1, 1, 3, return_indices=True)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


# ---------------------------------------------------------------------------------------------
# Modules.


MODULES = [
    pytest.param(M.MaxPool2d, nn.MaxPool2d, (3, 2, 1), dict(return_indices=True), (2, 3, 9, 9), id="MaxPool2d"),
    pytest.param(M.MaxPool1d, nn.MaxPool1d, (3, 2, 1, 2), dict(ceil_mode=True), (2, 3, 11), id="MaxPool1d"),
    pytest.param(M.AvgPool2d, nn.AvgPool2d, (3, 2, 1), dict(divisor_override=4), (2, 3, 9, 9), id="AvgPool2d"),
    pytest.param(M.AvgPool1d, nn.AvgPool1d, (3, 2, 1, True, False), {}, (2, 3, 11), id="AvgPool1d"),
    pytest.param(M.AdaptiveAvgPool2d, nn.AdaptiveAvgPool2d, ((3, None),), {}, (2, 3, 9, 8), id="AdaptiveAvgPool2d"),
    pytest.param(M.AdaptiveAvgPool1d, nn.AdaptiveAvgPool1d, (4,), {}, (2, 3, 11), id="AdaptiveAvgPool1d"),
    pytest.param(M.AdaptiveMaxPool2d, nn.AdaptiveMaxPool2d, (4, True), {}, (2, 3, 9, 8), id="AdaptiveMaxPool2d"),
    pytest.param(M.AdaptiveMaxPool1d, nn.AdaptiveMaxPool1d, (4,), {}, (2, 3, 11), id="AdaptiveMaxPool1d"),
]


@pytest.mark.parametrize(("ours", "theirs", "args", "kwargs", "shape"), MODULES)
def test_module_is_torchs_module_with_our_forward(ours, theirs, args, kwargs, shape):
    a, b = ours(*args, **kwargs), theirs(*args, **kwargs)
    assert isinstance(a, theirs)
    assert repr(a) == repr(b) and a.extra_repr() == b.extra_repr()
    assert a.state_dict() == {} and vars(a).keys() == vars(b).keys()
    x = _distinct(shape)
    got, want = a(x), b(x)
    if isinstance(want, tuple):
        assert torch.equal(got[1], want[1])
        got, want = got[0], want[0]
    assert (got - want).abs().max().item() <= AVG_TOL_F64


def test_module_forward_is_not_torchs():
    """The swap matters: the module's forward does not dispatch to torch's pooling kernels."""
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(M.MaxPool2d(3, 2, 1))(torch.rand(1, 2, 8, 8))
    assert not any("pool" in str(n.target) for n in gm.graph.nodes)


# ---------------------------------------------------------------------------------------------
# A slow, obviously correct reference of ATen's CPU loops, on tiny inputs.


def _out_size(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    return o - 1 if ceil and (o - 1) * s >= n + p else o


def _reference_max_pool2d(x: torch.Tensor, k: int, s: int, p: int, d: int, ceil: bool):
    """ATen's loop: in-bound elements row-major, ``val > maxval or isnan(val)`` replaces."""
    n, c, h, w = x.shape
    ho, wo = _out_size(h, k, s, p, d, ceil), _out_size(w, k, s, p, d, ceil)
    out = torch.empty(n, c, ho, wo, dtype=x.dtype)
    idx = torch.empty(n, c, ho, wo, dtype=torch.int64)
    for b in range(n):
        for ch in range(c):
            for i in range(ho):
                for j in range(wo):
                    best, where = float("-inf"), None
                    for a in range(k):
                        for e in range(k):
                            r, q = i * s - p + a * d, j * s - p + e * d
                            if not (0 <= r < h and 0 <= q < w):
                                continue
                            where = r * w + q if where is None else where
                            v = float(x[b, ch, r, q])
                            if v > best or v != v:
                                best, where = v, r * w + q
                    out[b, ch, i, j], idx[b, ch, i, j] = best, where
    return out, idx


def _reference_avg_pool2d(x: torch.Tensor, k: int, s: int, p: int, ceil: bool, include_pad: bool):
    n, c, h, w = x.shape
    ho, wo = _out_size(h, k, s, p, 1, ceil), _out_size(w, k, s, p, 1, ceil)
    out = torch.empty(n, c, ho, wo, dtype=x.dtype)
    for i in range(ho):
        for j in range(wo):
            hs, ws = i * s - p, j * s - p
            he, we = min(hs + k, h + p), min(ws + k, w + p)
            size = (he - hs) * (we - ws)
            hs, ws, he, we = max(hs, 0), max(ws, 0), min(he, h), min(we, w)
            divisor = size if include_pad else (he - hs) * (we - ws)
            out[:, :, i, j] = x[:, :, hs:he, ws:we].sum((2, 3)) / divisor
    return out


REFERENCE = [
    pytest.param(3, 2, 1, 1, False, id="k3s2p1"),
    pytest.param(3, 3, 1, 1, True, id="k3s3p1-ceil"),
    pytest.param(2, 2, 1, 2, True, id="k2s2p1-dilated-ceil"),
    pytest.param(4, 3, 2, 1, True, id="k4s3p2-ceil"),
]


@pytest.mark.parametrize(("k", "s", "p", "d", "ceil"), REFERENCE)
def test_max_pool2d_equals_the_reference_loop(k, s, p, d, ceil):
    g = torch.Generator().manual_seed(5)
    x = torch.randint(-2, 3, (1, 2, 7, 8), generator=g).double()  # many ties
    x[0, 1, 2, 3] = x[0, 1, 3, 3] = float("nan")
    want, want_i = _reference_max_pool2d(x, k, s, p, d, ceil)
    got, got_i = P.max_pool2d(x, k, s, p, d, ceil, return_indices=True)
    assert torch.equal(got.nan_to_num(), want.nan_to_num()) and torch.equal(got_i, want_i)
    torch_out, torch_i = F.max_pool2d(x, k, s, p, d, ceil, return_indices=True)  # the reference is ATen's
    assert torch.equal(torch_out.nan_to_num(), want.nan_to_num()) and torch.equal(torch_i, want_i)


REFERENCE_AVG = [
    pytest.param(3, 2, 1, False, id="k3s2p1"),
    pytest.param(3, 3, 1, True, id="k3s3p1-ceil"),
    pytest.param(4, 3, 2, True, id="k4s3p2-ceil-window-past-pad"),
    pytest.param(2, 2, 0, True, id="k2s2-ceil-partial"),
]


@pytest.mark.parametrize("include_pad", [True, False], ids=["include-pad", "exclude-pad"])
@pytest.mark.parametrize(("k", "s", "p", "ceil"), REFERENCE_AVG)
def test_avg_pool2d_equals_the_reference_loop(k, s, p, ceil, include_pad):
    x = _distinct((1, 2, 7, 8))
    want = _reference_avg_pool2d(x, k, s, p, ceil, include_pad)
    assert (P.avg_pool2d(x, k, s, p, ceil, include_pad) - want).abs().max().item() <= AVG_TOL_F64
    assert (F.avg_pool2d(x, k, s, p, ceil, include_pad) - want).abs().max().item() <= AVG_TOL_F64


def test_clear_pooling_cache_keeps_results():
    x = _distinct((1, 2, 7, 8))
    before = P.max_pool2d(x, 3, 2, 1), P.avg_pool2d(x, 3, 2, 1), P.adaptive_max_pool2d(x, 3)
    P.clear_pooling_cache()
    after = P.max_pool2d(x, 3, 2, 1), P.avg_pool2d(x, 3, 2, 1), P.adaptive_max_pool2d(x, 3)
    assert all(torch.equal(a, b) for a, b in zip(before, after))


# ---------------------------------------------------------------------------------------------
# Speed paths: tiled channels_last average windows, and the max pools' chunked choice.

TILED = [
    pytest.param(P.adaptive_avg_pool2d, F.adaptive_avg_pool2d, (7,), (2, 5, 14, 14), id="adaptive-14-to-7"),
    pytest.param(P.adaptive_avg_pool2d, F.adaptive_avg_pool2d, ((2, 1),), (2, 5, 6, 9), id="adaptive-large-tile-w"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, (2,), (2, 5, 9, 11), id="avg-k2-drops-last-row"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, (3, 3, 0, False, True, 5), (2, 5, 12, 12), id="avg-k3-divisor"),
    # stride 1 (without a gradient: adds of shifted views of the zero-padded input)
    pytest.param(P.avg_pool2d, F.avg_pool2d, (3, 1, 1), (2, 5, 9, 11), id="avg-k3s1p1"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, ((3, 5), 1, (1, 2), False, False), (2, 5, 9, 11), id="avg-s1-exclude-pad"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, ((2, 1), 1, (1, 0)), (2, 5, 9, 11), id="avg-k2s1p1"),
]


@pytest.mark.parametrize("grad", [False, True], ids=["no-grad", "grad"])
@pytest.mark.parametrize(("ours", "theirs", "args", "shape"), TILED)
def test_channels_last_avg_view_sums_match_torch_with_inf_and_nan(ours, theirs, args, shape, grad):
    """Windows that tile both axes of a channels_last input are summed by adds (no gradient
    needed) or ``sum`` over the split axis; stride-1 windows by adds of shifted views (no
    gradient needed): values, inf / NaN masks, gradient and strides as torch's, with no
    finiteness test."""
    x = _distinct(shape).contiguous(memory_format=torch.channels_last)
    x[0, 1, 2, 3], x[1, 2, 4, 4], x[1, 3, 5, 5] = float("inf"), float("nan"), -float("inf")
    x.requires_grad_(grad)
    with torch.set_grad_enabled(grad):
        got, want = ours(x, *args), theirs(x, *args)
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.isinf(), want.isinf())
    finite = want.isfinite()
    assert (got[finite] - want[finite]).abs().max().item() <= AVG_TOL_F64
    assert got.stride() == want.stride()
    if grad:
        g = _distinct(want.shape, seed=2)
        (g_ours,) = torch.autograd.grad(got, x, g)
        (g_want,) = torch.autograd.grad(want, x, g)
        assert (g_ours - g_want).abs().max().item() <= GRAD_TOL_F64


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
def test_max_choice_in_small_chunks_equals_one_chunk(monkeypatch, channels_last):
    """The choice runs in chunks of window rows / batches; tiny chunks (several per batch, a
    window row range at a time) give torch's values, indices (ties, NaN) and gradient."""
    monkeypatch.setattr(P, "_POOL_MAX_CHUNK", 40)
    x = torch.round(_distinct((3, 4, 13, 12), seed=3) * 4) / 4  # ties
    x[0, 1, 2, 2] = x[0, 1, 2, 3] = x[2, 3, 7, 7] = float("nan")
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    cases = [(P.max_pool2d, F.max_pool2d, a) for a in ((3, 2, 1), (2,), (3, 1, 1, 2))]
    cases.append((P.adaptive_max_pool2d, F.adaptive_max_pool2d, (5,)))
    for ours, theirs, args in cases:
        (v_ours, i_ours), g_ours = _run(ours, x, args, dict(return_indices=True))
        (v_want, i_want), g_want = _run(theirs, x, args, dict(return_indices=True))
        assert torch.equal(i_ours, i_want) and i_ours.stride() == i_want.stride()
        assert torch.allclose(v_ours, v_want, rtol=0, atol=0, equal_nan=True)
        assert torch.equal(g_ours, g_want)
