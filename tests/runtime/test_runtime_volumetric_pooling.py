"""3-D max / average / adaptive pooling and their modules equal torch's in value, indices (bitwise),
gradient and memory format, with ties, inf and NaN too, pass gradcheck, and trace to ops candle
differentiates (gather, index_select, sum, div; argmax only off the gradient path)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from newops_check import candle_graph, nonfinite, parity, path_runs
from torch import nn

from candle_port import runtime

DTYPES = [pytest.param(torch.float32, id="f32"), pytest.param(torch.float64, id="f64")]
MAX_ARGS = [
    pytest.param((3, 2, 1, 1, False), id="k3s2p1"),
    pytest.param((2, None, 0, 1, True), id="k2-ceil"),
    pytest.param(((3, 2, 2), (1, 2, 3), (1, 1, 0), (2, 1, 1), True), id="aniso-dilated-ceil"),
    pytest.param((3, 3, 1, 1, True), id="k3s3p1-ceil"),
]
AVG_ARGS = [
    pytest.param((3, 2, 1, False, True, None), id="k3s2p1"),
    pytest.param((3, 2, 1, True, False, None), id="ceil-exclude-pad"),
    pytest.param(((2, 3, 2), (2, 1, 3), (1, 1, 0), True, True, None), id="aniso-ceil"),
    pytest.param((2, None, 0, False, True, 3), id="divisor-override"),
]
ADAPTIVE = [pytest.param(s, id=str(s)) for s in [(2, 3, 4), 1, (None, 4, 5), (4, 4, 4)]]


def _x(dtype, shape=(2, 3, 7, 6, 9), seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=dtype, generator=gen).requires_grad_()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args", MAX_ARGS)
def test_max_pool3d_parity(args, dtype):
    x = _x(dtype)
    torch.testing.assert_close(
        runtime.max_pool3d(x, *args, return_indices=True)[1], F.max_pool3d(x, *args, return_indices=True)[1], rtol=0, atol=0
    )
    parity(lambda x: runtime.max_pool3d(x, *args), lambda x: F.max_pool3d(x, *args), [x], tol=dict(rtol=0, atol=0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args", AVG_ARGS)
def test_avg_pool3d_parity(args, dtype):
    x = _x(dtype)
    parity(lambda x: runtime.avg_pool3d(x, *args), lambda x: F.avg_pool3d(x, *args), [x])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", ADAPTIVE)
def test_adaptive_pool3d_parity(size, dtype):
    x = _x(dtype)
    parity(lambda x: runtime.adaptive_avg_pool3d(x, size), lambda x: F.adaptive_avg_pool3d(x, size), [x])
    ours, ref = runtime.adaptive_max_pool3d(x, size, True), F.adaptive_max_pool3d(x, size, True)
    assert torch.equal(ours[1], ref[1])
    parity(lambda x: runtime.adaptive_max_pool3d(x, size), lambda x: F.adaptive_max_pool3d(x, size), [x], tol=dict(rtol=0, atol=0))


def test_ties_nan_inf_max():
    x = torch.zeros(1, 2, 4, 4, 4, dtype=torch.float64)  # all ties: the first element wins
    x[0, 1, 1, 1, 1] = float("nan")
    x[0, 1, 1, 2, 1] = float("nan")  # last NaN of a window wins
    x[0, 0, 3, 3, 3] = float("inf")
    x[0, 0, 0, 0, 1] = -float("inf")
    x.requires_grad_()
    for fn, ref in (
        (lambda t: runtime.max_pool3d(t, 3, 1, 1, return_indices=True), lambda t: F.max_pool3d(t, 3, 1, 1, return_indices=True)),
        (lambda t: runtime.adaptive_max_pool3d(t, 3, True), lambda t: F.adaptive_max_pool3d(t, 3, True)),
    ):
        assert torch.equal(fn(x)[1], ref(x)[1])
        nonfinite(lambda t: fn(t)[0], lambda t: ref(t)[0], [x])


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonfinite_avg(dtype):
    x = _x(dtype, (1, 2, 6, 6, 6))
    with torch.no_grad():
        x[0, 0, 1, 2, 3] = float("inf")
        x[0, 1, 4, 4, 0] = float("nan")
        x[0, 1, 0, 5, 5] = -float("inf")
    for fn, ref in (
        (lambda t: runtime.avg_pool3d(t, 3, 2, 1), lambda t: F.avg_pool3d(t, 3, 2, 1)),
        (lambda t: runtime.adaptive_avg_pool3d(t, (4, 3, 5)), lambda t: F.adaptive_avg_pool3d(t, (4, 3, 5))),
    ):
        bad = nonfinite(fn, ref, [x])
        assert 0 < bad < 20  # the windows that hold them, not the 2 planes


def test_unbatched_channels_last_bf16():
    x = _x(torch.float64, (3, 5, 6, 7))
    parity(lambda t: runtime.max_pool3d(t, 2, 2), lambda t: F.max_pool3d(t, 2, 2), [x])
    parity(lambda t: runtime.avg_pool3d(t, 2, 1, 1), lambda t: F.avg_pool3d(t, 2, 1, 1), [x])
    xc = _x(torch.float32).detach().contiguous(memory_format=torch.channels_last_3d)
    for fn, ref in (
        (lambda t: runtime.max_pool3d(t, 3, 2, 1), lambda t: F.max_pool3d(t, 3, 2, 1)),
        (lambda t: runtime.avg_pool3d(t, 3, 2, 1), lambda t: F.avg_pool3d(t, 3, 2, 1)),
        (lambda t: runtime.adaptive_avg_pool3d(t, 2), lambda t: F.adaptive_avg_pool3d(t, 2)),
    ):
        o, r = fn(xc), ref(xc)
        torch.testing.assert_close(o, r)
        assert o.is_contiguous(memory_format=torch.channels_last_3d) == r.is_contiguous(memory_format=torch.channels_last_3d)
    # bf16: summed in float32 and rounded once (torch's CPU avg_pool3d has no bf16 kernel, its
    # adaptive_avg_pool3d accumulates in bf16)
    xh = torch.randn(1, 2, 4, 5, 6).bfloat16()
    torch.testing.assert_close(runtime.adaptive_avg_pool3d(xh, 3), F.adaptive_avg_pool3d(xh.float(), 3).bfloat16())
    torch.testing.assert_close(runtime.avg_pool3d(xh, 2), F.avg_pool3d(xh.float(), 2).bfloat16())


def test_gradcheck():
    x = torch.randperm(2 * 4 * 4 * 5).reshape(1, 2, 4, 4, 5).double().div(7).requires_grad_()  # distinct values
    gc = torch.autograd.gradcheck
    assert gc(lambda t: runtime.max_pool3d(t, 2, 1, 1), (x,), fast_mode=True)
    assert gc(lambda t: runtime.adaptive_max_pool3d(t, (3, 2, 2)), (x,), fast_mode=True)
    assert gc(lambda t: runtime.avg_pool3d(t, 3, 2, 1, True, False), (x,), fast_mode=True)
    assert gc(lambda t: runtime.adaptive_avg_pool3d(t, (3, 2, 3)), (x,), fast_mode=True)


def test_modules():
    x = _x(torch.float64, (2, 3, 5, 6, 7))
    pairs = [
        (runtime.MaxPool3d(3, 2, 1, ceil_mode=True), nn.MaxPool3d(3, 2, 1, ceil_mode=True)),
        (runtime.AvgPool3d(3, 2, 1, count_include_pad=False), nn.AvgPool3d(3, 2, 1, count_include_pad=False)),
        (runtime.AdaptiveAvgPool3d((2, None, 3)), nn.AdaptiveAvgPool3d((2, None, 3))),
        (runtime.AdaptiveMaxPool3d(2), nn.AdaptiveMaxPool3d(2)),
    ]
    for ours, ref in pairs:
        assert isinstance(ours, type(ref)) and repr(ours) == repr(ref) and not ours.state_dict()
        parity(ours, ref, [x])
    assert torch.equal(runtime.MaxPool3d(2, return_indices=True)(x)[1], nn.MaxPool3d(2, return_indices=True)(x)[1])


def test_rejected_arguments_raise():
    x = torch.randn(1, 2, 4, 4, 4)
    with pytest.raises(RuntimeError):
        runtime.max_pool3d(x, 2, 2, 2)  # padding more than half the kernel
    with pytest.raises(RuntimeError):
        runtime.avg_pool3d(x, 5)
    with pytest.raises((RuntimeError, ValueError, TypeError)):
        runtime.adaptive_avg_pool3d(x, (1, 2))


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda t: runtime.max_pool3d(t, 3, 2, 1, return_indices=True)[0], id="max"),
        pytest.param(lambda t: runtime.adaptive_max_pool3d(t, (2, 3, 2)), id="adaptive-max"),
        pytest.param(lambda t: runtime.avg_pool3d(t, 3, 2, 1, True, False), id="avg"),
        pytest.param(lambda t: runtime.adaptive_avg_pool3d(t, (2, 3, 2)), id="adaptive-avg"),
        pytest.param(runtime.MaxPool3d(2), id="module-MaxPool3d"),
    ],
)
def test_graph_is_candle_differentiable(fn):
    x = torch.randn(1, 2, 5, 6, 4, requires_grad=True)
    # amax runs only on the detached windows (the maximum the choice compares with)
    candle_graph(fn, [x], forbidden=("pool", "maximum", "scatter"))


SLICE_ARGS = [
    pytest.param((3, 2, 1), id="k3s2p1"),
    pytest.param((2,), id="k2-tiles"),
    pytest.param(((3, 2, 3), (1, 2, 2), (1, 0, 1), (2, 1, 1), True), id="dilated-depth-ceil"),
]


@pytest.mark.parametrize("kind", ["ties", "signed-zeros", "nan", "inf"])
@pytest.mark.parametrize("args", SLICE_ARGS)
def test_contiguous_max_pool3d_by_depth_slices_equals_torch(monkeypatch, args, kind):
    """Contiguous input: a 2-D pool of every depth slice, then the depth windows (kept slice
    replaced when larger or NaN), then one gather. Values bitwise (sign of zero, NaN positions),
    indices and gradient as torch's, with and without a gradient; the path ran (a spy)."""
    from candle_port.runtime import volumetric_pooling as V

    ran = path_runs(monkeypatch, V, "max_by_slices")
    gen = torch.Generator().manual_seed(3)
    shape = (2, 3, 6, 7, 8)
    if kind == "ties":
        x = torch.randint(-2, 3, shape, generator=gen).double()
    elif kind == "signed-zeros":
        x = torch.zeros(shape, dtype=torch.float64) * torch.where(torch.rand(shape, generator=gen) > 0.5, 1.0, -1.0).double()
    else:
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
        x[torch.rand(shape, generator=gen) > 0.8] = float("nan") if kind == "nan" else float("inf")
    want_x, got_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    want, want_i = F.max_pool3d(want_x, *args, return_indices=True)
    got, got_i = runtime.max_pool3d(got_x, *args, return_indices=True)
    with torch.no_grad():
        plain = runtime.max_pool3d(x, *args)
    assert ran == [True, True]
    g = torch.randn(want.shape, generator=gen, dtype=torch.float64)
    (gw,) = torch.autograd.grad(want, want_x, g)
    (gg,) = torch.autograd.grad(got, got_x, g)
    for a, b in ((got, want), (plain, want), (gg, gw)):
        assert torch.equal(a.isnan(), b.isnan())
        assert torch.equal(a.nan_to_num(), b.nan_to_num()) and torch.equal(a.signbit() & ~a.isnan(), b.signbit() & ~b.isnan())
    assert torch.equal(got_i, want_i) and got.stride() == want.stride()


def test_depth_slices_not_used_for_channels_last_3d_adaptive_or_a_trace(monkeypatch):
    """channels_last_3d input and adaptive pools keep pooling.py's path (measured faster there),
    and so does a make_fx trace (the graph candle runs)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from candle_port.runtime import volumetric_pooling as V

    ran = path_runs(monkeypatch, V, "max_by_slices")
    x = torch.randn(1, 2, 4, 5, 6)
    cl = x.contiguous(memory_format=torch.channels_last_3d)
    assert torch.equal(runtime.max_pool3d(cl, 2), F.max_pool3d(cl, 2))
    assert torch.equal(runtime.adaptive_max_pool3d(x, 2), F.adaptive_max_pool3d(x, 2))
    graph = make_fx(lambda t: runtime.max_pool3d(t, 3, 2, 1))(x)
    assert ran == [False, False]  # asked for the channels_last input and under the trace: declined
    assert not any("max_pool" in str(n.target) for n in graph.graph.nodes)
