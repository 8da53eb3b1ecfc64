"""The gradient a runtime op hands to its input must be one torch's own kernels read right.

torch 2.14's CPU batch_norm backward in eval mode misreads a gradient that is channels_last-dense
with a batch stride other than the canonical one when the batch is 1 (it reads the storage as if
it were contiguous): every gradient upstream of it is wrong. Views of a matmul's result hand on
exactly such a gradient (a size-1 batch gets the stride of the next axis), as the runtime's
kernel == stride transposed convolution did, so MONAI's VNet, a BatchNorm3d before each
ConvTranspose3d, got wrong gradients for every layer before it. Each op here runs after an
eval-mode BatchNorm (a frozen-BN fine-tune) on a batch of 1 and of 2, against torch's native op.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import candle_port.runtime as rt  # noqa: E402


def _weight(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(1))


OPS = {
    "conv_transpose2d kernel == stride": (2, lambda f, x: f.conv_transpose2d(x, _weight(4, 8, 2, 2), stride=2)),
    "conv_transpose2d grouped kernel == stride": (2, lambda f, x: f.conv_transpose2d(x, _weight(4, 4, 2, 2), stride=2, groups=2)),
    "conv_transpose2d 3, 2, 1": (2, lambda f, x: f.conv_transpose2d(x, _weight(4, 8, 3, 3), stride=2, padding=1)),
    "conv_transpose1d kernel == stride": (1, lambda f, x: f.conv_transpose1d(x, _weight(4, 8, 2), stride=2)),
    "conv_transpose3d kernel == stride": (3, lambda f, x: f.conv_transpose3d(x, _weight(4, 8, 2, 2, 2), stride=2)),
    "conv3d 3, padding 1": (3, lambda f, x: f.conv3d(x, _weight(8, 4, 3, 3, 3), padding=1)),
    "bilinear x2": (2, lambda f, x: f.interpolate(x, scale_factor=2, mode="bilinear")),
    "bicubic x2": (2, lambda f, x: f.interpolate(x, scale_factor=2, mode="bicubic")),
    "nearest x1.5": (2, lambda f, x: f.interpolate(x, scale_factor=1.5, mode="nearest")),
    "area": (2, lambda f, x: f.interpolate(x, size=(5, 5), mode="area")),
    "trilinear x2": (3, lambda f, x: f.interpolate(x, scale_factor=2, mode="trilinear")),
    "max_pool2d 3, 2, 1": (2, lambda f, x: f.max_pool2d(x, 3, 2, 1)),
    "avg_pool2d 3, 1, 1": (2, lambda f, x: f.avg_pool2d(x, 3, 1, 1)),
    "adaptive_max_pool2d 3": (2, lambda f, x: f.adaptive_max_pool2d(x, 3)),
    "adaptive_avg_pool2d 3": (2, lambda f, x: f.adaptive_avg_pool2d(x, 3)),
    "max_pool3d 2": (3, lambda f, x: f.max_pool3d(x, 2)),
    "avg_pool3d 3, 2, 1": (3, lambda f, x: f.avg_pool3d(x, 3, 2, 1)),
    "grid_sample": (2, lambda f, x: f.grid_sample(x, _weight(x.shape[0], 5, 5, 2).tanh(), align_corners=False)),
}


CASES = [
    (name, batch, channels_last)
    for name in sorted(OPS)
    for batch in (1, 2)
    for channels_last in ((False, True) if OPS[name][0] > 1 else (False,))  # channels_last: 4-D and 5-D
]


@pytest.mark.parametrize(("name", "batch", "channels_last"), CASES)
def test_an_eval_batch_norm_before_the_op_gets_torchs_gradient(name, batch, channels_last):
    """`channels_last`: the op gets the normalized activations in channels_last (a model that
    converts them), so its gradient reaches a batch norm whose input is contiguous."""
    nd, op = OPS[name]
    norm = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)[nd - 1](4).eval()
    with torch.no_grad():
        norm.running_mean.normal_(generator=torch.Generator().manual_seed(2))
        norm.running_var.uniform_(0.5, 2.0, generator=torch.Generator().manual_seed(3))
    x = torch.randn((batch, 4) + (6,) * nd, generator=torch.Generator().manual_seed(4))
    grads = []
    for module in (F, rt):
        leaf = x.clone().requires_grad_()
        normalized = norm(leaf)
        if channels_last:
            normalized = normalized.contiguous(memory_format=torch.channels_last if nd == 2 else torch.channels_last_3d)
        y = op(module, normalized)
        y.backward(torch.randn(y.shape, generator=torch.Generator().manual_seed(5)))
        grads.append(leaf.grad)
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-4, atol=1e-5)
