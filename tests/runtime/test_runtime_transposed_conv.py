"""conv_transpose1d / conv_transpose2d (groups, output_padding, dilation) and their modules equal
torch's in value and gradients (input, weight, bias), with inf / NaN too, pass gradcheck, and trace
to ops candle differentiates."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from newops_check import candle_graph, nonfinite, parity, path_runs
from torch import nn

from candle_port import runtime
from candle_port.runtime import transposed_conv as T

# (groups, stride, padding, output_padding, dilation)
CASES_2D = [
    pytest.param(1, 1, 0, 0, 1, id="plain"),
    pytest.param(2, 2, 1, 1, 1, id="groups-outpad"),
    pytest.param(3, (2, 3), (1, 0), (1, 2), (1, 2), id="groups3-aniso"),
    pytest.param(1, 3, 2, 0, 2, id="dilated"),
    pytest.param(2, 2, 3, 1, 1, id="pad-crops"),
    pytest.param(6, 2, 1, 1, 1, id="depthwise"),
    pytest.param(3, (3, 2), 0, 0, 1, id="kernel-eq-stride-matmul"),
]
CASES_1D = [
    pytest.param(1, 1, 0, 0, 1, id="plain"),
    pytest.param(2, 2, 1, 1, 1, id="groups-outpad"),
    pytest.param(3, 3, 2, 2, 2, id="dilated-outpad"),
    pytest.param(1, 4, 5, 0, 1, id="pad-crops"),
    pytest.param(2, 3, 0, 0, 1, id="kernel-eq-stride-matmul"),
]
DTYPES = [pytest.param(torch.float32, id="f32"), pytest.param(torch.float64, id="f64")]


def _tensors(shape_x, shape_w, cout, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape_x, dtype=dtype, generator=gen).requires_grad_()
    w = torch.randn(shape_w, dtype=dtype, generator=gen).requires_grad_()
    b = torch.randn(cout, dtype=dtype, generator=gen).requires_grad_()
    return x, w, b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("g", "s", "p", "op", "d"), CASES_2D)
def test_conv_transpose2d_parity(g, s, p, op, d, dtype):
    x, w, b = _tensors((2, 6, 5, 4), (6, 2, 3, 2), 2 * g, dtype)
    parity(
        lambda x, w, b: runtime.conv_transpose2d(x, w, b, s, p, op, g, d),
        lambda x, w, b: F.conv_transpose2d(x, w, b, s, p, op, g, d),
        [x, w, b],
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("g", "s", "p", "op", "d"), CASES_1D)
def test_conv_transpose1d_parity(g, s, p, op, d, dtype):
    x, w, b = _tensors((2, 6, 7), (6, 2, 3), 2 * g, dtype)
    parity(
        lambda x, w, b: runtime.conv_transpose1d(x, w, b, s, p, op, g, d),
        lambda x, w, b: F.conv_transpose1d(x, w, b, s, p, op, g, d),
        [x, w, b],
    )


def test_unbatched_and_no_bias():
    x, w, _ = _tensors((4, 5, 6), (4, 3, 3, 3), 6, torch.float64)
    parity(lambda x, w: runtime.conv_transpose2d(x, w, None, 2, 1, 1, 2), lambda x, w: F.conv_transpose2d(x, w, None, 2, 1, 1, 2), [x, w])
    x1, w1, _ = _tensors((4, 6), (4, 3, 3), 6, torch.float64)
    parity(lambda x, w: runtime.conv_transpose1d(x, w, stride=2), lambda x, w: F.conv_transpose1d(x, w, stride=2), [x1, w1])


def test_gradcheck():
    x, w, b = _tensors((1, 4, 3, 3), (4, 1, 2, 3), 2, torch.float64)
    fn = lambda x, w, b: runtime.conv_transpose2d(x, w, b, (2, 1), 1, (1, 0), 2, (1, 2))  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x, w, b), fast_mode=True)
    x, w, b = _tensors((1, 4, 4), (4, 1, 3), 2, torch.float64)
    fn = lambda x, w, b: runtime.conv_transpose1d(x, w, b, 2, 1, 1, 2, 2)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x, w, b), fast_mode=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonfinite_input(dtype):
    x, w, b = _tensors((1, 4, 6, 6), (4, 2, 3, 3), 4, dtype)
    with torch.no_grad():
        x[0, 0, 2, 3] = float("inf")
        x[0, 1, 4, 1] = float("nan")
        x[0, 3, 0, 0] = -float("inf")
    bad = nonfinite(
        lambda x, w, b: runtime.conv_transpose2d(x, w, b, 2, 1, 1, 2),
        lambda x, w, b: F.conv_transpose2d(x, w, b, 2, 1, 1, 2),
        [x, w, b],
    )
    assert 0 < bad < 100  # a few windows (matching torch), not the 576 outputs of the planes
    x2, w2, b2 = _tensors((1, 4, 5, 5), (4, 2, 2, 2), 4, dtype)
    with torch.no_grad():
        x2[0, 1, 2, 3] = float("inf")
        x2[0, 2, 0, 4] = float("nan")
    bad = nonfinite(  # kernel == stride: the matmul path
        lambda x, w, b: runtime.conv_transpose2d(x, w, b, 2, 0, 0, 2), lambda x, w, b: F.conv_transpose2d(x, w, b, 2, 0, 0, 2), [x2, w2, b2]
    )
    assert 0 < bad <= 16
    x1, w1, b1 = _tensors((1, 2, 9), (2, 2, 3), 2, dtype)
    with torch.no_grad():
        x1[0, 0, 4] = float("inf")
    nonfinite(lambda x, w, b: runtime.conv_transpose1d(x, w, b, 2, 1), lambda x, w, b: F.conv_transpose1d(x, w, b, 2, 1), [x1, w1, b1])


def test_modules_state_dict_and_output_size():
    torch.manual_seed(0)
    ref = nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, groups=2, dilation=(2, 1))
    ours = runtime.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, groups=2, dilation=(2, 1))
    ours.load_state_dict(ref.state_dict())
    assert list(ours.state_dict()) == ["weight", "bias"] and isinstance(ours, nn.ConvTranspose2d)
    x = torch.randn(2, 4, 5, 5)
    torch.testing.assert_close(ours(x, output_size=[12, 8]), ref(x, output_size=[12, 8]))
    torch.testing.assert_close(ours(x), ref(x))
    ref1 = nn.ConvTranspose1d(4, 2, 3, stride=3, output_padding=1, bias=False)
    ours1 = runtime.ConvTranspose1d(4, 2, 3, stride=3, output_padding=1, bias=False)
    ours1.load_state_dict(ref1.state_dict())
    assert list(ours1.state_dict()) == ["weight"]
    x1 = torch.randn(2, 4, 7)
    torch.testing.assert_close(ours1(x1), ref1(x1))


def test_rejected_arguments_raise_torchs_error():
    x, w = torch.randn(1, 4, 5, 5), torch.randn(4, 1, 3, 3)
    with pytest.raises(RuntimeError):
        runtime.conv_transpose2d(x, w, None, 2, 0, 2)  # output_padding >= stride
    with pytest.raises(RuntimeError):
        runtime.conv_transpose2d(x, w, None, groups=3)


@pytest.mark.parametrize(
    "fn, shapes",
    [
        pytest.param(lambda x, w: T.conv_transpose2d(x, w, None, 2, 1, 1, 2), ((1, 4, 5, 6), (4, 2, 3, 3)), id="2d-groups"),
        pytest.param(lambda x, w: T.conv_transpose2d(x, w, None, (2, 3), 0, (1, 2), 1, (1, 2)), ((1, 2, 5, 6), (2, 2, 3, 3)), id="2d-aniso"),
        pytest.param(lambda x, w: T.conv_transpose1d(x, w, None, 2, 1, 1, 2), ((1, 4, 5), (4, 1, 3)), id="1d"),
        pytest.param(lambda x, w: T.conv_transpose2d(x, w, None, 2, 0, 0, 2), ((1, 4, 5, 6), (4, 2, 2, 2)), id="2d-matmul"),
        pytest.param(lambda x, w: T.conv_transpose2d(x, w, None, 2, 1, 1, 2), ((1, 4, 5, 6), (4, 2, 3, 3)), id="2d-polyphase"),
        pytest.param(lambda x, w: T.conv_transpose1d(x, w, None, 3, 2, 1), ((1, 4, 5), (4, 2, 5)), id="1d-polyphase"),
        # batch > 1 with > 1 input channel: candle's conv1d weight gradient is wrong there, so the
        # 1-D forms run as 2-D convolutions of height 1 (demucs, DAC and EnCodec decoders)
        pytest.param(lambda x, w: T.conv_transpose1d(x, w, None, 2, 1, 1, 1, 2), ((2, 4, 5), (4, 2, 3)), id="1d-batch-dilated"),
        pytest.param(lambda x, w: T.conv_transpose1d(x, w, None, 4, 2), ((3, 4, 5), (4, 3, 8)), id="1d-batch-polyphase"),
        pytest.param(lambda x, w: T.conv_transpose1d(x, w, None, 2), ((2, 4, 5), (4, 3, 2)), id="1d-batch-matmul"),
        pytest.param(lambda x, w: T._tc_conv2d(x, w, None, (2, 2), ((1, 1), (1, 1)), (1, 1), 1), ((1, 2, 7, 8), (2, 2, 3, 3)), id="conv2d-residuals"),
        pytest.param(lambda x, w: T._tc_conv2d(x, w, None, (2, 1), ((1, 1), (0, 0)), (1, 1), 1), ((1, 2, 7, 8), (2, 2, 3, 3)), id="conv2d-aniso-stride"),
    ],
)
def test_graph_is_candle_differentiable(fn, shapes):
    x, w = (torch.randn(s, requires_grad=True) for s in shapes)
    names = candle_graph(fn, [x, w], forbidden=("conv_transpose",))
    assert "convolution" in names or "bmm" in names or "mm" in names


def test_random_configurations_1d_2d_3d():
    """Seeded random (rank, kernel, stride, padding, output_padding, dilation, groups, size):
    the matmul and zero-dilation paths equal torch's in value and gradients, and
    what torch rejects raises here too."""
    import random

    rng = random.Random(0)
    fns = {1: (runtime.conv_transpose1d, F.conv_transpose1d), 2: (runtime.conv_transpose2d, F.conv_transpose2d),
           3: (runtime.conv_transpose3d, F.conv_transpose3d)}
    checked = 0
    for _ in range(40):
        nd, g = rng.choice([1, 2, 3]), rng.choice([1, 2])
        k = [rng.randint(1, 4) for _ in range(nd)]
        s = [rng.randint(1, 4) for _ in range(nd)]
        d = [1] * nd if rng.random() < 0.8 else [rng.randint(1, 2) for _ in range(nd)]
        p = [rng.randint(0, 3) for _ in range(nd)]
        op = [rng.randint(0, max(a, b) - 1) for a, b in zip(s, d)]
        x, w, b = _tensors([1, 2 * g] + [rng.randint(1, 4) for _ in range(nd)], [2 * g, 2] + k, 2 * g, torch.float64, rng.randint(0, 99))
        ours, theirs = fns[nd]
        try:
            theirs(x, w, b, s, p, op, g, d)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                ours(x, w, b, s, p, op, g, d)
            continue
        parity(lambda x, w, b: ours(x, w, b, s, p, op, g, d), lambda x, w, b: theirs(x, w, b, s, p, op, g, d), [x, w, b])
        checked += 1
    assert checked > 20
    # an axis whose outputs no kernel tap reaches (k=1, s=4, p=1, output_padding=3): bias only
    x, w, b = _tensors((1, 2, 1), (2, 1, 1), 1, torch.float64)
    parity(lambda x, w, b: runtime.conv_transpose1d(x, w, b, 4, 1, 3), lambda x, w, b: F.conv_transpose1d(x, w, b, 4, 1, 3), [x, w, b])


POLYPHASE = [
    pytest.param(2, (3, 3), 2, 1, 1, id="k3s2p1-outpad-decoder"),
    pytest.param(6, (4, 4), 2, 1, 0, id="depthwise-k4s2p1"),
    pytest.param(3, (3, 5), (2, 3), (0, 2), (1, 2), id="aniso-stride-and-kernel"),
    pytest.param(1, (5, 2), (3, 1), (3, 0), (2, 0), id="stride-one-axis-pad-crops"),
    pytest.param(2, (2, 3), 2, 0, 1, id="kernel-eq-stride-one-axis"),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("g", "k", "s", "p", "op"), POLYPHASE)
def test_strided_transposed_conv_is_one_plain_conv_per_output_phase(monkeypatch, g, k, s, p, op, dtype):
    """With dilation 1 and a stride above 1, the transposed convolution runs as prod(stride)
    stride-1 convolutions with the taps of each output residue (no inserted zeros), stacked and
    cut to size: value and input / weight / bias gradients as torch's."""
    calls = path_runs(monkeypatch, T, "_tc_polyphase")
    x, w, b = _tensors((2, 6, 5, 4), (6, 2) + k, 2 * g, dtype)
    parity(
        lambda x, w, b: runtime.conv_transpose2d(x, w, b, s, p, op, g),
        lambda x, w, b: F.conv_transpose2d(x, w, b, s, p, op, g),
        [x, w, b],
    )
    assert calls == [True], "the polyphase path did not run"


def test_polyphase_phases_of_one_axis():
    """Each output residue reads the taps torch's transposed convolution gives it: rebuilding
    every output from the phases' taps and pads reproduces torch's 1-D result; a kernel shorter
    than the stride leaves a residue without a tap (None: the zero-dilation path runs)."""
    gen = torch.Generator().manual_seed(1)
    for n, k, s, p, op in [(5, 3, 2, 1, 1), (4, 5, 3, 2, 0), (3, 4, 2, 3, 1), (6, 2, 2, 0, 0)]:
        x, w = torch.randn(n, dtype=torch.float64, generator=gen), torch.randn(k, dtype=torch.float64, generator=gen)
        want = F.conv_transpose1d(x.reshape(1, 1, n), w.reshape(1, 1, k), None, s, p, op).flatten()
        out = (n - 1) * s - 2 * p + k + op
        q_len, phases = T._tc_phases(n, k, s, p, out)
        got = torch.zeros(q_len * s, dtype=torch.float64)
        for rho, ph in enumerate(phases):
            for q in range(q_len):
                for m in range(ph.taps):  # y[s*q + rho] += x[q + c - m] * w[r + s*m]
                    i = q + ph.taps - 1 - ph.left - m
                    if 0 <= i < n:
                        got[s * q + rho] += x[i] * w[ph.first + s * m]
        torch.testing.assert_close(got[:out], want)
    assert T._tc_phases(3, 1, 2, 0, 5) is None


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize(("k", "p", "op"), [pytest.param(3, 1, 1, id="even-output"), pytest.param(3, 1, 0, id="odd-output-cut")])
def test_polyphase_output_is_dense_in_torchs_layout(layout, k, p, op):
    """The interleaved result has torch's strides (channels_last in, channels_last out), also when
    it is cut to an output size that is not a multiple of the stride: a ``.view`` after the
    layer keeps working on contiguous output."""
    x, w, b = _tensors((2, 4, 5, 6), (4, 3, k, k), 3, torch.float32)
    if layout == "channels_last":
        x = x.detach().contiguous(memory_format=torch.channels_last).requires_grad_()
    got, want = runtime.conv_transpose2d(x, w, b, 2, p, op), F.conv_transpose2d(x, w, b, 2, p, op)
    assert got.stride() == want.stride()
    if layout == "contiguous":
        got.view(2, -1)
    torch.testing.assert_close(got, want, **{"rtol": 1e-5, "atol": 2e-5})


@pytest.mark.parametrize("groups", [1, 2])
def test_kernel_eq_stride_up_convolution_keeps_channels_last(groups):
    """The U-Net / FPN up-convolution (kernel == stride, one matmul) returns channels_last for
    channels_last input, as torch does, with equal values and gradients."""
    x, w, b = _tensors((2, 4, 5, 6), (4, 3, 2, 2), 3 * groups, torch.float64)
    x = x.detach().contiguous(memory_format=torch.channels_last).requires_grad_()
    got, want = runtime.conv_transpose2d(x, w, b, 2, groups=groups), F.conv_transpose2d(x, w, b, 2, groups=groups)
    assert got.stride() == want.stride()
    parity(lambda x, w, b: runtime.conv_transpose2d(x, w, b, 2, groups=groups),
           lambda x, w, b: F.conv_transpose2d(x, w, b, 2, groups=groups), [x, w, b])


def test_channels_last_output_is_dense_when_a_size_one_axis_lets_reshape_return_a_view():
    """A height of 1 with a stride of 1 along W: the interleave's reshape can return a view with
    other strides instead of a copy; the output is still torch's channels_last, dense."""
    x, w, b = _tensors((2, 2, 1, 5), (2, 1, 4, 3), 1, torch.float64)
    x = x.detach().contiguous(memory_format=torch.channels_last).requires_grad_()
    got = runtime.conv_transpose2d(x, w, b, (3, 1), (1, 0), (1, 0))
    want = F.conv_transpose2d(x, w, b, (3, 1), (1, 0), (1, 0))
    assert got.stride() == want.stride()
    parity(lambda x, w, b: runtime.conv_transpose2d(x, w, b, (3, 1), (1, 0), (1, 0)),
           lambda x, w, b: F.conv_transpose2d(x, w, b, (3, 1), (1, 0), (1, 0)), [x, w, b])
