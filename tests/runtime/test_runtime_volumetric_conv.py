"""conv3d / conv_transpose3d and Conv3d / ConvTranspose3d equal torch's in value and gradients
(input, weight, bias), with inf / NaN too, pass gradcheck, and trace to 2-D ops candle
differentiates (no 3-D convolution in the graph)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from newops_check import candle_graph, nonfinite, parity, path_runs
from torch import nn

from candle_port import runtime

DTYPES = [pytest.param(torch.float32, id="f32"), pytest.param(torch.float64, id="f64")]
# (groups, stride, padding, dilation)
CASES_3D = [
    pytest.param(1, 1, 0, 1, id="plain"),
    pytest.param(2, 2, 1, 1, id="groups-stride"),
    pytest.param(3, (2, 1, 3), (1, 0, 2), (1, 2, 1), id="aniso"),
    pytest.param(1, 1, "same", (2, 1, 1), id="same"),
    pytest.param(2, 1, "valid", 1, id="valid"),
    pytest.param(6, 2, (2, 1, 1), 2, id="depthwise-dilated"),
]
# (groups, stride, padding, output_padding, dilation)
CASES_T3D = [
    pytest.param(1, 1, 0, 0, 1, id="plain"),
    pytest.param(2, 2, 1, 1, 1, id="groups-outpad"),
    pytest.param(3, (2, 1, 3), (1, 0, 2), (1, 0, 2), (1, 2, 1), id="aniso"),
    pytest.param(2, (3, 2, 3), 0, 0, 1, id="kernel-eq-stride-matmul"),
]


def _tensors(shape_x, shape_w, cout, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape_x, dtype=dtype, generator=gen).requires_grad_()
    w = torch.randn(shape_w, dtype=dtype, generator=gen).requires_grad_()
    b = torch.randn(cout, dtype=dtype, generator=gen).requires_grad_()
    return x, w, b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("g", "s", "p", "d"), CASES_3D)
def test_conv3d_parity(g, s, p, d, dtype):
    x, w, b = _tensors((1, 6, 6, 5, 7), (6, 6 // g, 3, 2, 3), 6, dtype)
    parity(lambda x, w, b: runtime.conv3d(x, w, b, s, p, d, g), lambda x, w, b: F.conv3d(x, w, b, s, p, d, g), [x, w, b])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("g", "s", "p", "op", "d"), CASES_T3D)
def test_conv_transpose3d_parity(g, s, p, op, d, dtype):
    x, w, b = _tensors((2, 6, 4, 3, 5), (6, 2, 3, 2, 3), 2 * g, dtype)
    parity(
        lambda x, w, b: runtime.conv_transpose3d(x, w, b, s, p, op, g, d),
        lambda x, w, b: F.conv_transpose3d(x, w, b, s, p, op, g, d),
        [x, w, b],
    )


def test_unbatched_and_gradcheck():
    x, w, b = _tensors((2, 3, 4, 3), (4, 1, 2, 2, 2), 4, torch.float64)
    parity(lambda x, w: runtime.conv3d(x, w, None, 1, 1, 1, 2), lambda x, w: F.conv3d(x, w, None, 1, 1, 1, 2), [x, w])
    parity(lambda x, w: runtime.conv_transpose3d(x, w, None, 2), lambda x, w: F.conv_transpose3d(x, w, None, 2), [x, w.detach()[:2].requires_grad_()])
    x, w, b = _tensors((1, 2, 3, 3, 3), (2, 1, 2, 2, 2), 2, torch.float64)
    assert torch.autograd.gradcheck(lambda x, w, b: runtime.conv3d(x, w, b, (2, 1, 1), 1, 1, 2), (x, w, b), fast_mode=True)
    assert torch.autograd.gradcheck(lambda x, w, b: runtime.conv_transpose3d(x, w, b, 2, 1, 1, 2), (x, w, b), fast_mode=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonfinite_input(dtype):
    x, w, b = _tensors((1, 2, 6, 6, 6), (4, 2, 3, 3, 3), 4, dtype)
    with torch.no_grad():
        x[0, 0, 1, 2, 3] = float("inf")
        x[0, 1, 4, 4, 0] = float("nan")
    bad = nonfinite(lambda x, w, b: runtime.conv3d(x, w, b, 1, 1), lambda x, w, b: F.conv3d(x, w, b, 1, 1), [x, w, b])
    assert 0 < bad < 250  # 2 x 27 windows per output channel, of 864 outputs
    xt, wt, bt = _tensors((1, 2, 3, 3, 3), (2, 2, 3, 3, 3), 2, dtype)
    with torch.no_grad():
        xt[0, 0, 1, 1, 1] = -float("inf")
    nonfinite(
        lambda x, w, b: runtime.conv_transpose3d(x, w, b, 2, 1, 1),
        lambda x, w, b: F.conv_transpose3d(x, w, b, 2, 1, 1),
        [xt, wt, bt],
    )


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_module(mode):
    torch.manual_seed(0)
    ref = nn.Conv3d(4, 6, (3, 2, 3), stride=(1, 2, 1), padding=(1, 1, 2), groups=2, padding_mode=mode)
    ours = runtime.Conv3d(4, 6, (3, 2, 3), stride=(1, 2, 1), padding=(1, 1, 2), groups=2, padding_mode=mode)
    ours.load_state_dict(ref.state_dict())
    assert list(ours.state_dict()) == ["weight", "bias"] and isinstance(ours, nn.Conv3d)
    x = torch.randn(2, 4, 5, 6, 5, dtype=torch.float64, requires_grad=True)
    parity(ours.double(), ref.double(), [x])
    gw = [torch.autograd.grad(m(x).square().sum(), m.weight)[0] for m in (ours, ref)]
    torch.testing.assert_close(gw[0], gw[1])


def test_conv_transpose3d_module_output_size():
    torch.manual_seed(0)
    ref = nn.ConvTranspose3d(4, 2, 3, stride=2, padding=1, groups=2, bias=False)
    ours = runtime.ConvTranspose3d(4, 2, 3, stride=2, padding=1, groups=2, bias=False)
    ours.load_state_dict(ref.state_dict())
    assert list(ours.state_dict()) == ["weight"]
    x = torch.randn(1, 4, 3, 4, 3)
    torch.testing.assert_close(ours(x, output_size=[6, 8, 5]), ref(x, output_size=[6, 8, 5]))


def test_rejected_arguments_raise():
    x, w = torch.randn(1, 4, 5, 5, 5), torch.randn(2, 4, 3, 3, 3)
    for bad in (dict(groups=3), dict(stride=2, padding="same"), dict(padding="full")):
        with pytest.raises((RuntimeError, ValueError)):
            runtime.conv3d(x, w, **bad)
    with pytest.raises(RuntimeError):
        runtime.conv_transpose3d(x, torch.randn(4, 1, 3, 3, 3), None, 2, 0, 2)


@pytest.mark.parametrize(
    "fn, shapes",
    [
        pytest.param(lambda x, w: runtime.conv3d(x, w, None, 2, 1, 1, 2), ((1, 4, 5, 7, 8), (2, 2, 3, 3, 3)), id="conv3d"),
        pytest.param(lambda x, w: runtime.conv3d(x, w, None, (1, 2, 1), (0, 1, 2), (2, 1, 2)), ((1, 2, 5, 6, 7), (2, 2, 2, 3, 3)), id="conv3d-aniso"),
        pytest.param(lambda x, w: runtime.conv_transpose3d(x, w, None, 2, 1, 1, 2), ((1, 4, 3, 3, 4), (4, 1, 3, 3, 3)), id="conv-transpose3d"),
        pytest.param(runtime.Conv3d(2, 2, 3, padding=1, padding_mode="reflect"), ((1, 2, 4, 4, 4),), id="module-reflect"),
        pytest.param(lambda x, w: runtime.conv_transpose3d(x, w, None, 2), ((1, 4, 3, 3, 4), (4, 2, 2, 2, 2)), id="conv-transpose3d-matmul"),
    ],
)
def test_graph_is_candle_differentiable(fn, shapes):
    tensors = [torch.randn(s, requires_grad=True) for s in shapes]
    names = candle_graph(fn, tensors, forbidden=("conv3d", "conv_transpose", "pad3d"))
    assert "convolution" in names or "bmm" in names


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("g", "s", "p", "op"), [pytest.param(2, 2, 1, 1, id="decoder-k3s2p1"), pytest.param(1, (2, 3, 1), (1, 2, 0), (1, 0, 0), id="aniso")])
def test_strided_conv_transpose3d_runs_one_conv3d_per_output_phase(monkeypatch, g, s, p, op, dtype):
    """Dilation 1 and a stride above 1: one stride-1 conv3d composition per output residue,
    interleaved; value and gradients as torch's."""
    from candle_port.runtime import volumetric_conv as V

    ran = path_runs(monkeypatch, V, "_tc_polyphase")
    x, w, b = _tensors((2, 4, 3, 4, 5), (4, 3, 3, 3, 2), 3 * g, dtype)
    parity(
        lambda x, w, b: runtime.conv_transpose3d(x, w, b, s, p, op, g),
        lambda x, w, b: F.conv_transpose3d(x, w, b, s, p, op, g),
        [x, w, b],
    )
    assert ran == [True]


@pytest.mark.parametrize(
    ("dtype", "s", "op", "d", "torch_keeps_cl"),
    [
        pytest.param(torch.float32, 2, 1, 1, True, id="f32-strided"),
        pytest.param(torch.float32, 1, 0, 2, True, id="f32-dilated"),
        pytest.param(torch.float32, 1, 1, 2, False, id="f32-outpad-reaches-stride"),
        pytest.param(torch.float32, 2, 0, 1, True, id="f32-kernel-eq-stride"),
        pytest.param(torch.float64, 2, 1, 1, False, id="f64-strided"),
        pytest.param(torch.float64, 1, 0, 2, False, id="f64-dilated"),
    ],
)
def test_conv_transpose3d_output_layout_is_torchs(dtype, s, op, d, torch_keeps_cl):
    """channels_last_3d in: torch keeps the layout on its mkldnn path only (float32 / bfloat16,
    output_padding below the stride), else returns contiguous output; every path here (polyphase,
    matmul, zero-dilated) returns what torch does, so a ``.view()`` that works after torch's layer
    works after ours."""
    k = (2, 2, 2) if s == 2 and op == 0 else (3, 2, 3)  # kernel == stride: the matmul path
    x, w, b = _tensors((2, 4, 3, 4, 5), (4, 3) + k, 3, dtype)
    x = x.detach().contiguous(memory_format=torch.channels_last_3d).requires_grad_()
    pad = 0 if k == (2, 2, 2) else 1
    want = F.conv_transpose3d(x, w, b, s, pad, op, 1, d)
    assert want.is_contiguous(memory_format=torch.channels_last_3d) == torch_keeps_cl
    got = runtime.conv_transpose3d(x, w, b, s, pad, op, 1, d)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=2e-5)
