"""The pooling paths that read windows as strided views equal torch's kernels.

channels_last max pools take the maximum as ``maximum`` of the window positions' views; without
a gradient that is the result unless an output is zero or NaN, else (and with a gradient, and
for ``return_indices``) the first element equal to it is located by per-position ``eq`` + ``lerp``
and gathered. Each case runs with and without a gradient and must equal torch bitwise (value,
sign of zero, NaN positions, indices, gradient, strides); the two modes must agree with each
other. A contiguous NCHW max pool runs the same path on its channel planes, as (N * C, 1, H, W)
channels_last images of one channel, and is checked the same way. Average pools: tiled windows add ``unbind``'s parts, stride-1 windows without a gradient
add shifts in place, windows with a gradient are a depthwise ``conv2d`` where the convolution
has torch's output size; to float rounding, with inf / NaN where torch has them.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from candle_port.runtime import pooling as P

CL = torch.channels_last

MAX_ARGS = [
    pytest.param((3, 2, 1), {}, id="k3s2p1-stem"),
    pytest.param((2,), {}, id="k2-tiles"),
    pytest.param((3, 1, 1), {}, id="k3s1p1"),
    pytest.param((3, 2, 1, 2), {}, id="dilation2"),
    pytest.param(((2, 3), (1, 2), (1, 1)), dict(ceil_mode=True), id="rect-ceil"),
    pytest.param((3, 3, 1), dict(ceil_mode=True), id="ceil-last-window-in-pad"),
    pytest.param((2, 2), dict(ceil_mode=True), id="k2s2-ceil-odd"),
    pytest.param((5, 1, 2), {}, id="k5-every-position-partial"),
]
DATA = ["distinct", "ties", "signed-zeros", "nan", "inf"]


def _data(kind: str, shape, dtype=torch.float32, seed=0, layout=CL) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if kind == "distinct":
        n = 1
        for s in shape:
            n *= s
        x = torch.randperm(n, generator=g).to(dtype).reshape(shape) / n * 2 - 1
    elif kind == "ties":
        x = torch.randint(-2, 3, shape, generator=g).to(dtype)
    elif kind == "signed-zeros":  # +0 and -0 in the same windows, and windows of zeros only
        sign = torch.where(torch.rand(shape, generator=g) > 0.5, 1.0, -1.0).to(dtype)
        x = torch.zeros(shape, dtype=dtype) * sign
        x = torch.where(torch.rand(shape, generator=g) > 0.85, -torch.rand(shape, generator=g).to(dtype), x)
    else:
        x = torch.rand(shape, generator=g).to(dtype) * 2 - 1
        if kind == "nan":
            x[x > 0.7] = float("nan")
        else:
            x[x > 0.7] = float("inf")
            x[x < -0.7] = -float("inf")
    return x.contiguous(memory_format=layout)


def _same(a: torch.Tensor, b: torch.Tensor) -> None:
    """Bitwise up to NaN payload: equal values, equal NaN mask, equal sign of zero, strides."""
    assert a.shape == b.shape and a.dtype == b.dtype
    assert torch.equal(a.isnan(), b.isnan())
    assert torch.equal(torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0))
    assert torch.equal(torch.signbit(a) & ~a.isnan(), torch.signbit(b) & ~b.isnan())
    assert [s for s, n in zip(a.stride(), a.shape) if n > 1] == [s for s, n in zip(b.stride(), b.shape) if n > 1]


def _max_both(fn, torch_fn, x, args, kwargs):
    """Ours with and without a gradient, and torch's, including indices and gradients."""
    want_x = x.detach().requires_grad_()  # detach keeps x's strides (clone would make it dense)
    want, want_idx = torch_fn(want_x, *args, return_indices=True, **kwargs)
    g = torch.rand(want.shape, generator=torch.Generator().manual_seed(1), dtype=x.dtype)
    g = g.contiguous(memory_format=CL)
    want.backward(g)
    ours_x = x.detach().requires_grad_()
    assert ours_x.stride() == x.stride()
    ours, ours_idx = fn(ours_x, *args, return_indices=True, **kwargs)
    ours.backward(g)
    _same(ours, want)
    assert torch.equal(ours_idx, want_idx)
    _same(ours_x.grad, want_x.grad)
    plain = fn(ours_x, *args, **kwargs)  # grad path without indices
    _same(plain, want)
    with torch.no_grad():  # the forward-only path: maximum of views
        _same(fn(ours_x, *args, **kwargs), want)
    _same(fn(x.detach(), *args, **kwargs), want)  # input not requiring grad


@pytest.mark.parametrize("kind", DATA)
@pytest.mark.parametrize(("args", "kwargs"), MAX_ARGS)
def test_channels_last_max_pool2d_views_equal_torch(args, kwargs, kind):
    x = _data(kind, (2, 5, 11, 10))
    _max_both(P.max_pool2d, F.max_pool2d, x, args, kwargs)


@pytest.mark.parametrize("kind", DATA)
@pytest.mark.parametrize(("args", "kwargs"), MAX_ARGS)
def test_nchw_max_pool2d_planes_equal_torch(args, kwargs, kind):
    x = _data(kind, (2, 5, 11, 10), layout=torch.contiguous_format)
    _max_both(P.max_pool2d, F.max_pool2d, x, args, kwargs)


def test_nchw_input_takes_the_planes_view_path():
    x = torch.rand(2, 5, 11, 10)
    meta = F.max_pool2d(x.to("meta"), 3, 2, 1)
    plan = P._pool_max_view_plan(x, meta, 2, ((3, 3), (2, 2), (1, 1), (1, 1)))
    assert plan is not None and plan.planes
    strided = x[:, :, :, ::2]  # neither contiguous nor channels_last: the table path
    assert P._pool_max_view_plan(strided, F.max_pool2d(strided.to("meta"), 3, 2, 1), 2, ((3, 3), (2, 2), (1, 1), (1, 1))) is None


@pytest.mark.parametrize("kind", ["distinct", "ties", "nan"])
def test_channels_last_max_pool2d_views_float64(kind):
    _max_both(P.max_pool2d, F.max_pool2d, _data(kind, (2, 3, 9, 8), torch.float64), (3, 2, 1), {})


def _adaptive(x, size, return_indices=False):
    return P.adaptive_max_pool2d(x, size, return_indices)


def _adaptive_torch(x, size, return_indices=False):
    return F.adaptive_max_pool2d(x, size, return_indices)


@pytest.mark.parametrize("kind", DATA)
@pytest.mark.parametrize("size", [7, (4, 2), 3], ids=["tiled-14-7", "tiled-rect", "uneven-table-path"])
def test_channels_last_adaptive_max_pool2d_equals_torch(size, kind):
    x = _data(kind, (2, 6, 14, 8) if size == (4, 2) else (2, 6, 14, 14))
    _max_both(_adaptive, _adaptive_torch, x, (size,), {})


@pytest.mark.parametrize("kind", DATA)
@pytest.mark.parametrize("size", [7, (4, 2)], ids=["tiled-14-7", "tiled-rect"])
def test_nchw_adaptive_max_pool2d_planes_equal_torch(size, kind):
    x = _data(kind, (2, 6, 14, 8) if size == (4, 2) else (2, 6, 14, 14), layout=torch.contiguous_format)
    _max_both(_adaptive, _adaptive_torch, x, (size,), {})


def test_zero_output_takes_the_first_zero_of_its_window_like_aten():
    """A window holding -0.0 before +0.0 gives -0.0 (ATen's first maximum), also without a
    gradient, where ``maximum`` alone may return either zero."""
    x = torch.zeros(1, 16, 4, 4)
    x[:, :, 0, 0] = -0.0
    x[:, :8, 0, 1] = -1.0
    x = x.contiguous(memory_format=CL)
    with torch.no_grad():
        ours, want = P.max_pool2d(x, 2), F.max_pool2d(x, 2)
    _same(ours, want)
    assert torch.signbit(want[:, :, 0, 0]).all()


def test_view_plan_none_when_no_position_covers_every_output():
    """With dilation, windows may share no position that every output reads inside the input:
    the table path runs, and still equals torch."""
    assert P._pool_view_plan((5, 5), (3, 3), 2, (2, 2), (2, 2), (1, 1), (3, 3), torch.device("cpu")) is None
    x = _data("distinct", (1, 2, 5, 5))
    _max_both(P.max_pool2d, F.max_pool2d, x, (2, 2, 1, 3), {})


# ---------------------------------------------------------------------------------------------
# Average pools.

AVG_CASES = [
    pytest.param(P.adaptive_avg_pool2d, F.adaptive_avg_pool2d, (7,), (2, 6, 14, 14), id="adaptive-tiled-k2"),
    pytest.param(P.adaptive_avg_pool2d, F.adaptive_avg_pool2d, (1,), (2, 6, 9, 9), id="adaptive-global-k9-sum"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, (2,), (2, 6, 9, 8), id="avg-k2-odd-narrow"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, (3, 1, 1), (2, 6, 9, 8), id="avg-k3s1p1-shifts"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, (3, 1, 0), (2, 6, 9, 8), id="avg-k3s1p0-shrinks"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, ((3, 5), 1, (1, 2), False, False), (2, 6, 9, 8), id="avg-rect-exclude-pad"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, (3, 1, 1, False, True, 2), (2, 6, 9, 8), id="avg-divisor-override"),
]


@pytest.mark.parametrize("kind", ["distinct", "nan", "inf"])
@pytest.mark.parametrize(("ours", "theirs", "args", "shape"), AVG_CASES)
def test_channels_last_avg_pools_equal_torch_with_and_without_grad(ours, theirs, args, shape, kind):
    x = _data(kind, shape, torch.float64)
    want_x = x.clone().requires_grad_()
    want = theirs(want_x, *args)
    g = torch.rand(want.shape, generator=torch.Generator().manual_seed(2), dtype=x.dtype).contiguous(memory_format=CL)
    want.backward(g)
    ours_x = x.clone().requires_grad_()
    got = ours(ours_x, *args)
    got.backward(g)
    with torch.no_grad():
        got_nograd = ours(ours_x, *args)
    for y in (got, got_nograd):
        assert torch.equal(y.isnan(), want.isnan()) and torch.equal(y.isinf(), want.isinf())
        fin = want.isfinite()
        assert (y[fin] - want[fin]).abs().max().item() <= 1e-12 if fin.any() else True
        assert y.stride() == want.stride()
    grad_fin = want_x.grad.isfinite()
    assert torch.equal(ours_x.grad.isfinite(), grad_fin)
    assert (ours_x.grad[grad_fin] - want_x.grad[grad_fin]).abs().max().item() <= 1e-12 if grad_fin.any() else True
    assert ours_x.grad.stride() == want_x.grad.stride()
    _same(ours_x.detach(), x)  # the in-place adds and division never touch the input


# ---------------------------------------------------------------------------------------------
# Per-signature plans.


def test_plans_are_per_sizes_strides_and_arguments():
    """Alternating layouts, sizes and arguments reuse no plan of another call."""
    base = _data("distinct", (2, 3, 12, 10)).contiguous()
    calls = [
        (base, (3, 2, 1)),
        (base.contiguous(memory_format=CL), (3, 2, 1)),
        (base.contiguous(memory_format=CL), (2,)),
        (base[:, :, :11].contiguous(memory_format=CL), (2,)),
        (base[:1], (3, 2, 1)),
    ]
    for _ in range(2):
        for x, args in calls:
            _same(P.max_pool2d(x, *args), F.max_pool2d(x, *args))
            got, want = P.avg_pool2d(x, *args), F.avg_pool2d(x, *args)
            assert (got - want).abs().max().item() <= 1e-6 and got.stride() == want.stride()
    assert P._POOL_PLANS
    P.clear_pooling_cache()
    assert not P._POOL_PLANS and not P._POOL_META_CACHE


def test_rejected_arguments_still_raise_torchs_error_after_a_cached_call():
    x = _data("distinct", (1, 2, 6, 6))
    P.max_pool2d(x, 2)
    with pytest.raises(RuntimeError):
        P.max_pool2d(x, 8)
    with pytest.raises(RuntimeError):
        P.max_pool2d(x, 8)


@pytest.mark.parametrize(
    "view",
    [
        pytest.param(lambda t: t[:, :, ::2], id="every-other-row"),
        pytest.param(lambda t: t[:, 1:5], id="channel-slice"),
        pytest.param(lambda t: t[..., 2:15], id="column-slice"),
    ],
)
@pytest.mark.parametrize("args", [(3, 2, 1), (2,)], ids=["k3s2p1", "k2"])
def test_channels_last_max_pool2d_of_a_strided_view(view, args):
    """A view of a channels_last tensor (not dense): the windows are read through its own
    strides, the gather from a contiguous copy; indices and gradient as torch's."""
    x = view(_data("ties", (2, 6, 20, 18)))
    _max_both(P.max_pool2d, F.max_pool2d, x, args, {})


CONV_CASES = [
    pytest.param(P.avg_pool2d, F.avg_pool2d, (3, 1, 1), True, id="k3s1p1-one-divisor"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, (3, 2, 1, False, False), False, id="exclude-pad-divided-after"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, ((3, 5), (2, 1), (1, 2)), True, id="rect-kernel-stride-padding"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, (3, 1, 1, False, True, 4), True, id="divisor-override"),
    pytest.param(P.adaptive_avg_pool2d, F.adaptive_avg_pool2d, ((3, 11),), True, id="adaptive-tiles-3x1"),
    pytest.param(P.avg_pool2d, F.avg_pool2d, (2,), True, id="k2-drops-last-row"),
]


@pytest.mark.parametrize("kind", ["distinct", "nan", "inf"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("ours", "theirs", "args", "one_divisor"), CONV_CASES)
def test_channels_last_avg_pool_with_grad_is_one_depthwise_conv(monkeypatch, ours, theirs, args, one_divisor, kind, dtype):
    """With a gradient, a channels_last average pool whose windows a convolution reproduces runs
    as one depthwise ``conv2d`` (taps 1, or 1 / divisor when every window has the same one):
    value, inf / NaN masks, gradient and strides as torch's."""
    calls = []
    real = P._pool_sum_conv
    monkeypatch.setattr(P, "_pool_sum_conv", lambda x, conv: calls.append(conv) or real(x, conv))
    P.clear_pooling_cache()
    x = _data(kind, (2, 5, 9, 11), dtype)
    want_x, ours_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    want, got = theirs(want_x, *args), ours(ours_x, *args)
    assert len(calls) == 1 and (calls[0].divisor is not None) == one_divisor
    g = _data("distinct", want.shape, dtype, seed=3)
    want.backward(g)
    got.backward(g)
    tol = {torch.float64: 1e-12, torch.float32: 1e-6, torch.bfloat16: 1e-2}[dtype]
    for a, b in ((got, want), (ours_x.grad, want_x.grad)):
        assert a.dtype == b.dtype and a.stride() == b.stride()
        assert torch.equal(a.isnan(), b.isnan()) and torch.equal(a.isinf(), b.isinf())
        fin = b.isfinite()
        assert (a[fin].double() - b[fin].double()).abs().max().item() <= tol
    with torch.no_grad():
        ours(ours_x, *args)  # without a gradient the view adds or matrices run, not the conv
    assert len(calls) == 1


def test_avg_pool_conv_is_not_used_where_ceil_mode_adds_a_window_or_under_a_tracer(monkeypatch):
    """ceil_mode's extra window (the convolution would not have it) and a make_fx trace keep the
    matrices: the traced graph is the one candle runs (candle's grouped conv2d is one conv per
    channel)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    calls = []
    real = P._pool_sum_conv
    monkeypatch.setattr(P, "_pool_sum_conv", lambda x, conv: calls.append(conv) or real(x, conv))
    P.clear_pooling_cache()
    x = _data("distinct", (2, 5, 9, 9), torch.float64).requires_grad_()
    got, want = P.avg_pool2d(x, 2, 2, 0, True), F.avg_pool2d(x, 2, 2, 0, True)
    assert got.shape == want.shape and (got - want).abs().max().item() <= 1e-12
    assert calls == []

    def step(t):
        return torch.autograd.grad(P.avg_pool2d(t, 3, 1, 1).sum(), t)[0]

    graph = make_fx(step)(x)
    assert calls == []
    assert not any("convolution" in str(n.target) for n in graph.graph.nodes)
