"""The convtranspose strategy's target: exactly bilinear at init, learnable, differentiable.

Reference: torch's own F.interpolate(mode='bilinear', align_corners=False) in float64.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from candle_port.runtime.convtranspose import (
    ConvTransposeUpsample,
    bilinear_kernel,
    upsample_bilinear_convtranspose,
)

EXACT_FLOAT64 = 1e-12
FLOAT32 = 1e-5
SHAPES = [(1, 1, 1, 1), (2, 3, 5, 7), (1, 2, 4, 3), (3, 1, 2, 9)]


@pytest.mark.parametrize("scale", [1, 2, 3, 4, 5, 8], ids=lambda s: f"s{s}")
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_functional_equals_bilinear_including_borders(scale, shape):
    x = torch.randn(*shape, dtype=torch.float64)
    want = F.interpolate(x, scale_factor=scale, mode="bilinear", align_corners=False)
    got = upsample_bilinear_convtranspose(x, scale_factor=scale, mode="bilinear")
    assert got.shape == want.shape
    assert (got - want).abs().max().item() <= EXACT_FLOAT64


@pytest.mark.parametrize("scale", [2, 3, 4])
def test_module_starts_exactly_bilinear_and_matches_gradient(scale):
    x = torch.randn(2, 3, 6, 5, dtype=torch.float64, requires_grad=True)
    module = ConvTransposeUpsample(scale_factor=scale, mode="bilinear").double()
    module.weight.data = bilinear_kernel(scale, torch.float64)
    ref = nn.Upsample(scale_factor=scale, mode="bilinear")
    g = torch.randn(2, 3, 6 * scale, 5 * scale, dtype=torch.float64)
    (gx,) = torch.autograd.grad((module(x) * g).sum(), x)
    (rx,) = torch.autograd.grad((ref(x) * g).sum(), x)
    assert (module(x) - ref(x)).abs().max().item() <= EXACT_FLOAT64
    assert (gx - rx).abs().max().item() <= EXACT_FLOAT64


def test_module_float32_default_dtype_close():
    x = torch.randn(1, 2, 7, 7)
    module = ConvTransposeUpsample(None, 3, "bilinear")
    assert torch.allclose(module(x), F.interpolate(x, scale_factor=3, mode="bilinear"), atol=FLOAT32)


def test_module_is_learnable_and_gradchecks():
    module = ConvTransposeUpsample(scale_factor=2).double()
    x = torch.randn(1, 2, 3, 4, dtype=torch.float64, requires_grad=True)
    module(x).sum().backward()
    assert module.weight.grad is not None and module.weight.grad.abs().sum() > 0
    assert torch.autograd.gradcheck(lambda a, w: upsample_bilinear_convtranspose(a, scale_factor=2) * 1 + 0 * w.sum(), (x, module.weight.detach().requires_grad_()))
    assert torch.autograd.gradcheck(lambda a: module(a), (x,))


def test_state_dict_key_and_pretrained_checkpoints():
    class Old(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 2, 1)
            self.up = nn.Upsample(scale_factor=2, mode="bilinear")

    class New(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 2, 1)
            self.up = ConvTransposeUpsample(scale_factor=2, mode="bilinear")

    new = New()
    assert set(new.state_dict()) == {"conv.weight", "conv.bias", "up.weight"}
    assert new.state_dict()["up.weight"].shape == (1, 1, 4, 4)
    with pytest.raises(RuntimeError, match="up.weight"):
        new.load_state_dict(Old().state_dict())
    missing = new.load_state_dict(Old().state_dict(), strict=False).missing_keys
    assert missing == ["up.weight"]
    assert torch.equal(new.up.weight.detach(), bilinear_kernel(2))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(scale_factor=2, align_corners=True), "align_corners=True"),
        (dict(size=(4, 4)), "size"),
        (dict(scale_factor=1.5), "integer"),
        (dict(scale_factor=(2, 3)), "integer"),
        (dict(scale_factor=2, mode="nearest"), "bilinear"),
    ],
    ids=["align_corners", "size", "non_integer", "non_uniform", "mode"],
)
def test_refuses_what_cannot_be_exact(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ConvTransposeUpsample(**kwargs)
    with pytest.raises(ValueError, match=message):
        upsample_bilinear_convtranspose(torch.zeros(1, 1, 2, 2), **kwargs)


def test_uses_no_grouped_conv():
    """candle's conv_transpose2d has no groups: the kernel is one shared 1->1 kernel."""
    module = ConvTransposeUpsample(scale_factor=2)
    assert module.weight.shape[:2] == (1, 1)
