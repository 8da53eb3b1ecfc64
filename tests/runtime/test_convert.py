"""candle_port.runtime.convert(model) and routed(): the model-level fix for layers source rewriting cannot see."""

from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.functional import interpolate as up

import candle_port.runtime as R

# The aten ops the runtime replaces (no candle backward, or a wrong one).
NATIVE = ("upsample_bilinear2d", "upsample_nearest2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
          "adaptive_max_pool2d", "_adaptive_avg_pool2d", "max_pool1d", "avg_pool1d")


def _aten_ops(fn, *inputs) -> set[str]:
    graph = make_fx(fn)(*inputs).graph
    return {str(n.target).split(".")[1] for n in graph.nodes if n.op == "call_function" and str(n.target).startswith("aten.")}


class MyPool(nn.MaxPool2d):
    """A user subclass with its own forward that calls super()."""

    def forward(self, x):
        return super().forward(x) * 2


POOLS = {"max": nn.MaxPool2d, "avg": nn.AvgPool2d, "adaptive": nn.AdaptiveAvgPool2d}


def _factory(kind: str, **kwargs) -> nn.Module:
    return POOLS[kind](**kwargs)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.stem = _factory("max", kernel_size=3, stride=2, padding=1)  # built by a registry
        self.down = MyPool(2)
        self.pool = _factory("avg", kernel_size=2, ceil_mode=True, count_include_pad=False)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.up2 = nn.UpsamplingBilinear2d(scale_factor=2)
        self.head = nn.Sequential(_factory("adaptive", output_size=3), nn.Flatten(), nn.Linear(36, 2))
        self.pool1d = nn.AdaptiveMaxPool1d(4)

    def forward(self, x):
        y = self.conv(x)
        y = self.up2(self.up(self.pool(self.down(self.stem(y)))))
        return self.head(y) + self.pool1d(y.flatten(2)).sum()


def _run(model, x):
    x = x.clone().requires_grad_(True)
    model.zero_grad(set_to_none=True)
    out = model(x)
    out.square().sum().backward()
    return out.detach(), x.grad, {n: p.grad.clone() for n, p in model.named_parameters()}


def test_convert_swaps_every_replaced_module_and_keeps_state():
    torch.manual_seed(0)
    model = Net().double()
    model.eval()
    calls = []
    model.stem.register_forward_hook(lambda m, i, o: calls.append(o.shape))
    keys, params = list(model.state_dict()), [id(p) for p in model.parameters()]
    x = torch.randn(2, 3, 17, 17, dtype=torch.float64)
    before = _run(model, x)
    assert R.convert(model) is model
    assert type(model.stem) is R.MaxPool2d and type(model.pool) is R.AvgPool2d
    assert type(model.up) is R.Upsample and type(model.up2) is R.UpsamplingBilinear2d
    assert type(model.head[0]) is R.AdaptiveAvgPool2d and type(model.pool1d) is R.AdaptiveMaxPool1d
    assert type(model.conv) is nn.Conv2d and type(model.head[2]) is nn.Linear  # not the runtime's business
    # The subclass keeps its own forward and name, over the runtime's MaxPool2d.
    assert isinstance(model.down, MyPool) and isinstance(model.down, R.MaxPool2d) and type(model.down).__name__ == "MyPool"
    assert list(model.state_dict()) == keys and [id(p) for p in model.parameters()] == params
    assert not model.training and len(model.stem._forward_hooks) == 1
    after = _run(model, x)
    assert len(calls) == 2  # the hook ran before and after
    torch.testing.assert_close(after[0], before[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(after[1], before[1], rtol=1e-12, atol=1e-12)
    for name in before[2]:
        torch.testing.assert_close(after[2][name], before[2][name], rtol=1e-12, atol=1e-12)
    ops = _aten_ops(model, x)
    assert not ops & set(NATIVE), ops & set(NATIVE)
    # Idempotent: a second convert changes nothing.
    classes = [type(m) for m in model.modules()]
    R.convert(model)
    assert [type(m) for m in model.modules()] == classes


def test_convert_keeps_training_flag_and_converts_the_root():
    pool = nn.MaxPool2d(2).train()
    assert R.convert(pool) is pool and type(pool) is R.MaxPool2d and pool.training
    with pytest.raises(TypeError):
        R.convert(lambda x: x)


def test_unconverted_model_has_the_native_ops():
    model = Net().double()
    assert _aten_ops(model, torch.randn(1, 3, 17, 17, dtype=torch.float64)) & set(NATIVE)


def _functional(x):
    y = up(x, scale_factor=2, mode="bilinear")  # imported under another name before routed() existed
    y = F.max_pool2d(y, 3, 2, 1) + torch.max_pool2d(y, 3, 2, 1)
    y = F.avg_pool2d(y, 2) + F.adaptive_avg_pool2d(y, (y.shape[-2] // 2, y.shape[-1] // 2)) * 0.5
    values, indices = F.adaptive_max_pool2d(y, 3, return_indices=True)
    return values.sum() + F.upsample_nearest(y, scale_factor=2).mean() + F.max_pool1d(y.flatten(2), 2).sum()


@pytest.mark.filterwarnings("ignore:.*upsample_nearest.*is deprecated")
def test_routed_routes_functional_calls_and_restores():
    x = torch.randn(2, 3, 9, 11, dtype=torch.float64, requires_grad=True)
    expected = _functional(x)
    (gx,) = torch.autograd.grad(expected, x)
    with R.routed():
        got = _functional(x)
        ops = _aten_ops(_functional, x.detach())
    (rx,) = torch.autograd.grad(got, x)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(rx, gx, rtol=1e-12, atol=1e-12)
    assert not ops & set(NATIVE), ops & set(NATIVE)
    assert _aten_ops(_functional, x.detach()) & set(NATIVE)  # restored on exit


def test_routed_is_per_thread():
    x = torch.randn(1, 1, 4, 4)
    seen = {}

    def other():
        seen["ops"] = _aten_ops(lambda t: F.interpolate(t, scale_factor=2, mode="bilinear"), x)

    with R.routed():
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        here = _aten_ops(lambda t: F.interpolate(t, scale_factor=2, mode="bilinear"), x)
    assert "upsample_bilinear2d" in seen["ops"]  # the other thread still runs torch's
    assert "upsample_bilinear2d" not in here


def test_routed_leaves_other_calls_alone_and_nests():
    x = torch.randn(1, 2, 5, 5)
    with R.routed(), R.routed():
        y = F.conv2d(x, torch.ones(2, 2, 1, 1)) + F.relu(x)
        z = F.interpolate(x, size=(7, 3), mode="bicubic", align_corners=True)
    torch.testing.assert_close(y, F.conv2d(x, torch.ones(2, 2, 1, 1)) + F.relu(x))
    torch.testing.assert_close(z, F.interpolate(x, size=(7, 3), mode="bicubic", align_corners=True))


class Volume(nn.Module):
    """Transposed, grouped and 3-D layers, one built through a registry, plus functional calls."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 4, 3, padding=1)
        self.pool = {"max": nn.MaxPool3d, "avg": nn.AvgPool3d}["max"](kernel_size=(1, 2, 2))
        self.head = nn.AdaptiveAvgPool3d(1)
        self.up = nn.ConvTranspose3d(4, 4, (1, 2, 2), stride=(1, 2, 2))
        self.depthwise = nn.ConvTranspose2d(4, 4, 4, 2, 1, groups=4)
        self.plain = nn.ConvTranspose2d(4, 4, 2, stride=2)  # candle trains it natively: left as is
        self.up1d = nn.ConvTranspose1d(4, 4, 3, stride=2)
        self.conv1d = nn.Conv1d(4, 6, 3, padding=1)  # CP111: candle trains its weight wrong

    def forward(self, x, theta):
        y = self.up(self.pool(self.conv(x)))
        frame = y[:, :, 0]
        grid = F.affine_grid(theta, list(frame.shape), align_corners=False)
        frame = F.grid_sample(self.plain(self.depthwise(frame)), grid, align_corners=False)
        line = self.up1d(frame.mean(-1))
        return (self.head(y).flatten(1), frame, self.conv1d(line), F.conv1d(line, self.conv1d.weight, stride=2),
                F.avg_pool3d(y, 2))


def test_convert_and_routed_cover_transposed_grid_sample_and_3d():
    torch.manual_seed(0)
    model = Volume().double()
    x = torch.randn(1, 2, 3, 6, 6, dtype=torch.float64)
    theta = torch.tensor([[[0.9, 0.1, 0.0], [-0.2, 1.1, 0.1]]], dtype=torch.float64)

    def run():
        leaf = x.clone().requires_grad_(True)
        model.zero_grad(set_to_none=True)
        outs = model(leaf, theta)
        sum(o.square().sum() for o in outs).backward()
        return [o.detach() for o in outs] + [leaf.grad] + [p.grad.clone() for p in model.parameters()]

    before = run()
    R.convert(model)
    assert type(model.conv) is R.Conv3d and type(model.pool) is R.MaxPool3d and type(model.head) is R.AdaptiveAvgPool3d
    assert type(model.up) is R.ConvTranspose3d and type(model.depthwise) is R.ConvTranspose2d
    assert type(model.up1d) is R.ConvTranspose1d and type(model.plain) is nn.ConvTranspose2d
    assert type(model.conv1d) is R.Conv1d
    with R.routed():
        after = run()
        ops = _aten_ops(lambda t: model(t, theta), x)
    for a, b in zip(before, after):
        torch.testing.assert_close(b, a, rtol=1e-10, atol=1e-10)
    native = {"convolution", "max_pool3d_with_indices", "avg_pool3d", "_adaptive_avg_pool3d", "grid_sampler_2d",
              "affine_grid_generator", "mean"} & ops
    # The only native convolution left is the plain transposed conv candle trains: no 3-D one, no grouped one.
    assert native <= {"convolution", "mean"}
    with R.routed():
        graph = make_fx(lambda t: model(t, theta))(x).graph
    convs = [n for n in graph.nodes if str(n.target) == "aten.convolution.default"]
    assert all(len(n.args[1].meta["val"].shape) == 4 for n in convs)  # no 3-D kernel, no 1-D one
    assert all(n.args[8] == 1 for n in convs if n.args[6])  # transposed ones: groups 1 only
