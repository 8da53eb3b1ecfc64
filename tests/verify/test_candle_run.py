"""Each op mapping of crates/candle-port-run against torch (outputs and parameter gradients, f32
and f64), and the bundled U-Net: native candle fails at upsample_bilinear2d's backward, named
with its source line; the candle-port-ops twins pass.

Without cargo these skip, except where CANDLE_PORT_REQUIRE_CARGO is set (CI): there they fail.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from candle_port import runtime  # noqa: E402
from candle_port.verify.candle_run import check_in_candle, summary_lines  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


class Fn(nn.Module):
    """A conv (so there is a parameter gradient to compare) followed by the op under test."""

    def __init__(self, op, cin=3, cout=4, conv=None):
        super().__init__()
        self.conv = conv or nn.Conv2d(cin, cout, 3, padding=1)
        self.op = op

    def forward(self, x):
        return self.op(self.conv(x))


class Lstm(nn.Module):
    """nn.LSTM's output and final states: make_fx traces it to addmm, unsafe_split, in-place
    sigmoid_/tanh_ on the gate chunks (nothing else reads them), mul, add_ and stack."""

    def __init__(self, **kwargs):
        super().__init__()
        self.lstm = nn.LSTM(4, 5, **kwargs)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return out, h, c


X4 = (2, 3, 9, 9)
X5 = (2, 3, 5, 6, 5)


def _zero_bn_relu() -> nn.Module:
    """timm's zero_init_last: the BatchNorm outputs exactly 0 and the ReLU sees its kink."""
    bn = nn.BatchNorm2d(4)
    nn.init.zeros_(bn.weight)
    return nn.Sequential(bn, nn.ReLU())
def _grid_sample_past_the_border(y: torch.Tensor, mode: str) -> torch.Tensor:
    """The runtime's grid_sample on a fixed grid that reaches past every border (masked taps)."""
    t = torch.linspace(-1.3, 1.2, 7, dtype=y.dtype)
    grid = torch.stack(torch.meshgrid(t, t.flip(0) * 0.9, indexing="xy"), -1).expand(y.shape[0], 7, 7, 2)
    return runtime.grid_sample(y, grid, mode, align_corners=False)


class _Conv3dStem(nn.Conv3d):
    """A 1x1x1 3-D convolution: the parameter the 3-D cases' gradients are compared on."""

    def __init__(self):
        super().__init__(3, 4, 1)


def _scale_in_place(y: torch.Tensor) -> torch.Tensor:
    y = y * 1.0
    y[:, 0, :, :] *= 0.5
    y[:, 1:3] *= 2.0
    return y


# id -> (module factory, input shape, modes expected to pass)
CASES = {
    "conv2d-stride-dilation": (lambda: Fn(lambda y: y, conv=nn.Conv2d(3, 4, 3, stride=2, padding=2, dilation=2)), X4, "both"),
    "conv2d-groups": (lambda: Fn(lambda y: y, conv=nn.Conv2d(4, 4, 3, groups=2, padding=1)), (2, 4, 7, 7), "both"),
    "conv2d-asymmetric-padding": (lambda: Fn(lambda y: y, conv=nn.Conv2d(3, 4, (3, 1), padding=(1, 0))), X4, "both"),
    # native: candle 0.11.0 conv1d weight gradient is wrong for batch > 1 with channels > 1
    "conv1d": (lambda: Fn(lambda y: y, conv=nn.Conv1d(3, 4, 3, padding=1, stride=2)), (2, 3, 11), "port"),
    "lstm": (lambda: Lstm(), (6, 2, 4), "both"),
    "lstm-2-layers-batch_first": (lambda: Lstm(num_layers=2, batch_first=True), (2, 6, 4), "both"),
    "lstm-bidirectional-2-layers": (lambda: Lstm(num_layers=2, bidirectional=True), (6, 2, 4), "both"),
    "lstm-bidirectional-batch_first": (lambda: Lstm(bidirectional=True, batch_first=True), (2, 6, 4), "both"),
    "batch_norm-train": (lambda: Fn(nn.BatchNorm2d(4)), X4, "both"),
    "group_norm": (lambda: Fn(nn.GroupNorm(2, 4)), X4, "both"),
    # native candle_nn::ops::layer_norm: no float64 kernel; in float32 no gradient at all (silent cut)
    "layer_norm": (lambda: Fn(nn.LayerNorm(9)), X4, "port"),
    "linear": (lambda: Fn(nn.Linear(9, 5)), X4, "both"),
    # EnCodec's and DAC's convolutions: torch.nn.utils.weight_norm traces to _weight_norm_interface
    "weight_norm": (lambda: Fn(lambda y: y, conv=torch.nn.utils.parametrizations.weight_norm(nn.Conv2d(3, 4, 3, padding=1))),
                    X4, "both"),
    # demucs' 1x1 rewrite convolutions: glu over the channels (and the last dim)
    "glu": (lambda: Fn(lambda y: F.glu(y, dim=1) + F.glu(y[..., :8]).mean()), X4, "both"),
    # demucs normalises its input by the mixture's std (aten.std.correction), also unbiased=False
    "std-var": (lambda: Fn(lambda y: y / y.std(dim=(1, 2), keepdim=True) + y.std(-1, correction=0)[..., None]
                           + y.var(1, keepdim=True)), X4, "both"),
    "matmul-bmm": (lambda: Fn(lambda y: torch.matmul(y, y.transpose(-1, -2))), X4, "both"),
    "arith": (lambda: Fn(lambda y: (y * 2 - 1) / (y.abs() + 1) + y ** 2 - torch.exp(-y.abs())), X4, "both"),
    "activations": (lambda: Fn(lambda y: F.silu(y) + torch.sigmoid(y) + torch.tanh(y) + F.hardswish(y)
                               + F.leaky_relu(y, 0.1) + F.relu(y)), X4, "both"),
    # native candle gelu/gelu_erf are float32-accurate only: 1.6e-7 off torch in float64
    "gelu": (lambda: Fn(lambda y: F.gelu(y) + F.gelu(y, approximate="tanh")), X4, "port-f64"),
    # native candle_nn softmax_last_dim has no backward: the parameters get no gradient (silent cut)
    "softmax-last-dim": (lambda: Fn(lambda y: F.softmax(y, -1)), X4, "port"),
    # native candle relu passes the gradient at exactly 0 (x >= 0 mask); torch's is 0 there
    "relu-at-zero": (lambda: Fn(_zero_bn_relu()), X4, "port"),
    "softmax-log_softmax-dim1": (lambda: Fn(lambda y: F.softmax(y, 1) + F.log_softmax(y, 1)), X4, "both"),
    "reductions": (lambda: Fn(lambda y: y.mean((2, 3), keepdim=True) * y.sum(1, keepdim=True) + y.amax(-1, keepdim=True)), X4, "both"),
    "views": (lambda: Fn(lambda y: torch.cat([y.permute(0, 1, 3, 2).reshape(2, 4, -1), y[:, :, ::2, 1:].flatten(2)], 2)
                         .unsqueeze(1).expand(2, 3, 4, -1)), X4, "both"),
    "pad": (lambda: Fn(lambda y: F.pad(y, (1, 2, 0, 1)) + F.pad(y, (1, 2, 0, 1), value=0.5)), X4, "both"),
    "index": (lambda: Fn(lambda y: torch.gather(y, 3, torch.zeros_like(y, dtype=torch.long))
                         + y.index_select(2, torch.tensor([8, 0, 3, 3, 1, 2, 4, 5, 6]))), X4, "both"),
    "max_pool2d-k-eq-s": (lambda: Fn(nn.MaxPool2d(2)), (2, 3, 8, 8), "port"),  # native: a quarter of the gradient
    "max_pool2d-overlapping": (lambda: Fn(nn.MaxPool2d(3, 2, padding=1)), X4, "port"),
    "avg_pool2d": (lambda: Fn(nn.AvgPool2d(2)), (2, 3, 8, 8), "both"),
    "avg_pool2d-padding": (lambda: Fn(nn.AvgPool2d(3, 2, padding=1)), X4, "port"),
    "adaptive_avg_pool2d-1": (lambda: Fn(nn.AdaptiveAvgPool2d(1)), X4, "both"),
    "upsample_bilinear2d": (lambda: Fn(nn.Upsample(scale_factor=2, mode="bilinear")), X4, "port"),
    "upsample_bilinear2d-size-align": (lambda: Fn(lambda y: F.interpolate(y, size=(13, 5), mode="bilinear", align_corners=True)), X4, "port"),
    "upsample_nearest2d-x2": (lambda: Fn(nn.Upsample(scale_factor=2, mode="nearest")), X4, "both"),
    "upsample_nearest2d-size": (lambda: Fn(lambda y: F.interpolate(y, size=(13, 5))), X4, "port"),
    "reflection-replication-pad": (lambda: Fn(lambda y: F.pad(y, (2, 1, 1, 2), mode="reflect")
                                              + F.pad(y, (2, 1, 1, 2), mode="replicate")), X4, "both"),
    "unfold": (lambda: Fn(lambda y: y.permute(0, 2, 3, 1).unfold(1, 3, 2).sum(-1)), X4, "both"),
    "prelu": (lambda: Fn(nn.PReLU(4)), X4, "both"),
    # an in-place write to a view, functionalized (basicsr's SpyNet: `flow[:, 0, :, :] *= s`)
    "select_scatter-slice_scatter": (lambda: Fn(_scale_in_place), X4, "both"),
    # spectral norm's mv, dot and linalg_vector_norm, and F.normalize
    "vector-norms": (lambda: Fn(lambda y: y / torch.linalg.vector_norm(y, dim=(1, 2), keepdim=True)
                                + torch.linalg.vector_norm(y, 1, dim=3)[..., None] + F.normalize(y, dim=1)), X4, "both"),
    # attention masks: masked_fill with a number (inf included) and with a 0-d tensor
    "masked_fill": (lambda: Fn(lambda y: y.masked_fill(y > 0.5, float("-inf")).clamp_min(-3.0)
                               + y.masked_fill(y < 0, torch.tensor(0.25)) + y.masked_fill(y.sum(1, keepdim=True) > 0, 2.0)),
                    X4, "both"),
    # torch's repeat may add leading dims (MaskFormer's queries `w.unsqueeze(0).repeat(b, 1, 1)`); a
    # stepped slice of a permuted activation (Swin's patch merging `x[:, 0::2, 1::2]`)
    "repeat-stepped-slice": (lambda: Fn(lambda y: y.repeat(2, 1, 1, 2)[..., ::3] + y.permute(0, 1, 3, 2)[:, :, 1::2, 0::2]
                                        .repeat(1, 1, 1, 1).mean()), X4, "both"),
    # candle's index_select reads only a contiguous source; a permuted activation is not one
    "index_select-strided": (lambda: Fn(lambda y: y.transpose(2, 3).index_select(2, torch.tensor([8, 0, 3, 3]))), X4, "both"),
    # x[idx] on a permuted activation (SAM's relative position lookup) reached candle's
    # index_select with a strided source, which it refuses
    "index-strided": (lambda: Fn(lambda y: y.permute(2, 0, 3, 1)[torch.tensor([8, 0, 3, 3])]), X4, "both"),
    # several index tensors (CLIP's text pooler `h[arange(b), eos]`), broadcast together, a
    # negative index, a dim taken whole in front (batch dims stay in place) or between (in front)
    "index-several": (lambda: Fn(_several_indices), X4, "both"),
    # `x[i, j] = v` and `x[i, j] += v` (index_put), on a permuted activation
    "index_put-several": (lambda: Fn(_index_puts), X4, "both"),
    # candle has no 3-D convolution and no conv_transpose1d backward: port runs the twins
    "conv3d": (lambda: Fn(lambda y: F.conv3d(y.unsqueeze(2).expand(-1, -1, 3, -1, -1), y.new_ones(2, 4, 2, 3, 3) * 0.1,
                                             padding=(0, 1, 1))), X4, "port"),
    "conv_transpose3d-grouped": (lambda: Fn(nn.ConvTranspose3d(4, 4, 3, 2, 1, output_padding=1, groups=2),
                                            conv=_Conv3dStem()), (2, 3, 5, 5, 5), "port"),
    # the runtime's conv1d is a height-1 conv2d: native candle trains it right at batch > 1, also
    # with an input the last window does not reach (cut, for conv2d's equal H/W residuals)
    "runtime-conv1d": (lambda: Fn(lambda y: y, conv=runtime.Conv1d(3, 4, 3, padding=1, stride=2)), (2, 3, 12), "both"),
    "runtime-conv1d-dilated-reflect": (lambda: Fn(lambda y: y, conv=runtime.Conv1d(3, 4, 3, padding=2, dilation=2,
                                                                                   padding_mode="reflect")), (2, 3, 11), "both"),
    "conv_transpose1d": (lambda: Fn(nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1),
                                    conv=nn.Conv1d(3, 4, 3, padding=1)), (2, 3, 11), "port"),
    # ops candle has no function for: port runs the candle-port-ops twins, native names the op
    "upsample_bicubic2d": (lambda: Fn(lambda y: F.interpolate(y, scale_factor=2, mode="bicubic", align_corners=True)), X4, "port"),
    "upsample_nearest_exact2d": (lambda: Fn(lambda y: F.interpolate(y, size=(13, 5), mode="nearest-exact")), X4, "port"),
    "upsample_linear1d": (lambda: Fn(lambda y: F.interpolate(y, size=17, mode="linear"), conv=nn.Conv1d(3, 4, 1)), (2, 3, 11), "port"),
    "upsample_trilinear3d": (lambda: Fn(lambda y: F.interpolate(y, scale_factor=2, mode="trilinear"), conv=_Conv3dStem()), X5, "port"),
    "upsample_nearest3d": (lambda: Fn(lambda y: F.interpolate(y, size=(7, 10, 3), mode="nearest"), conv=_Conv3dStem()), X5, "port"),
    "max_pool3d": (lambda: Fn(nn.MaxPool3d(3, 2, 1), conv=_Conv3dStem()), X5, "port"),
    "avg_pool3d": (lambda: Fn(nn.AvgPool3d(3, 2, 1, count_include_pad=False), conv=_Conv3dStem()), X5, "port"),
    "adaptive_max_pool2d": (lambda: Fn(nn.AdaptiveMaxPool2d((4, 3))), X4, "port"),
    "adaptive_max_pool3d": (lambda: Fn(nn.AdaptiveMaxPool3d(2), conv=_Conv3dStem()), X5, "port"),
    "adaptive_avg_pool3d": (lambda: Fn(nn.AdaptiveAvgPool3d((3, 2, 4)), conv=_Conv3dStem()), X5, "port"),
    "affine_grid": (lambda: Fn(lambda y: F.grid_sample(y, F.affine_grid(y.mean((1, 2, 3))[:, None, None].expand(-1, 2, 3) * 0.3,
                                                                          (y.shape[0], 4, 5, 5), align_corners=False),
                                                       align_corners=False)), X4, "port"),
    # torch's own grid_sample: candle has none (native names it); port runs candle-port-ops' twin
    "grid_sampler_2d": (lambda: Fn(lambda y: F.grid_sample(y, y[:, :2].permute(0, 2, 3, 1).tanh() * 1.2, "bilinear",
                                                            "reflection", align_corners=True)), X4, "port"),
    # the runtime's grid_sample on a grid that depends on the parameters (a flow): floor, masks, gathers
    "runtime-grid_sample-flow": (lambda: Fn(lambda y: runtime.grid_sample(y, (y[:, :2].permute(0, 2, 3, 1).tanh() * 1.2),
                                                                          "bilinear", align_corners=False)), X4, "both"),
    # a float32 constant meets the model's dtype (basicsr's flow_warp: a `.float()` pixel grid plus
    # the flow): torch promotes to the wider float, in arithmetic and in where
    "mixed-float-promotion": (lambda: Fn(lambda y: torch.where(y > 0, y, torch.ones(9).float()) + torch.arange(9).float() * y),
                              X4, "both"),
    # basicsr's SpyNet pads with `x.new_zeros(...)`: a tensor in x's dtype and device
    "new_zeros-ones-full": (lambda: Fn(lambda y: y + y.new_zeros(9) + y.new_ones(9) + y.new_full((1, 9), 0.5)
                                       + y.new_empty(9).zero_() + y.new_empty(9).fill_(2.0)), X4, "both"),
    # sub-pixel upsampling (TEED, Swin2SR, ESPCN): candle_nn::ops::pixel_shuffle, a reshape and permute
    "pixel_shuffle-unshuffle": (lambda: Fn(lambda y: F.pixel_unshuffle(F.pixel_shuffle(torch.cat([y, y * 2], 1), 2)[..., :8, :8], 2)),
                                X4, "both"),
    # the exporter resolves as_strided against torch's strides (channels-last mean, as in convnext)
    "as_strided": (lambda: Fn(lambda y: torch.as_strided(y.contiguous(), (2, 4, 3, 3), (324, 1, 36, 4)) * 2), X4, "both"),
    # torch's float64 hardsigmoid backward uses 1.0f/6.0f; the reference uses the exact 1/6
    "hardsigmoid": (lambda: Fn(nn.Hardsigmoid()), X4, "both"),
    # the runtime's strided transposed convolution: one conv2d per output residue, stack, permute
    "addcmul": (lambda: Fn(lambda y: torch.addcmul(y, y.transpose(-1, -2), y.mean(1, keepdim=True), value=0.5)
                           + torch.addcmul(y, y, y)), X4, "both"),
    "runtime-grid_sample-bilinear": (lambda: Fn(lambda y: _grid_sample_past_the_border(y, "bilinear")), X4, "both"),
    "runtime-grid_sample-bicubic": (lambda: Fn(lambda y: _grid_sample_past_the_border(y, "bicubic")), X4, "both"),
    "runtime-conv_transpose2d-polyphase": (lambda: Fn(runtime.ConvTranspose2d(4, 4, 3, 2, 1, output_padding=1, groups=2)), X4, "both"),
    # F.selu traces to elu(x, alpha, scale): the runner read only alpha (5% of scale off, silently)
    "selu": (lambda: Fn(nn.SELU()), X4, "both"),
    "elu-scale-input_scale": (lambda: Fn(lambda y: F.elu(y, 0.5) + torch.ops.aten.elu(y, 1.3, 0.8, 0.5)), X4, "both"),
    # measured in the op table, unmapped until diffusers' UNet1D (Mish) stopped at them
    # celu's alpha 0.5: torch's backward takes float(1 / alpha) (test_torch_celu_backward_is_float32_...)
    "mish-softplus-celu": (lambda: Fn(lambda y: F.mish(y) + F.softplus(y) + F.softplus(y, beta=2.0, threshold=1.0)
                                      + F.celu(y, 0.5)), X4, "both"),
    "erf-log1p-expm1": (lambda: Fn(lambda y: torch.erf(y) + torch.log1p(y.abs()) + torch.expm1(y) + torch.log2(y.abs() + 1)), X4, "both"),
    "flip-roll-cumsum": (lambda: Fn(lambda y: y.flip(1, 3) + y.roll(2, 3) + y.roll((1, -1), (2, 3)) + y.roll(5)
                                    + y.cumsum(2) + y.cumsum(-1, dtype=torch.float64).to(y.dtype)), X4, "both"),
    # missing from the op table: logsigmoid traces to log_sigmoid_forward, broadcast_to to expand
    "logsigmoid-hardshrink-logaddexp": (lambda: Fn(lambda y: F.logsigmoid(y) + F.hardshrink(y, 0.3)
                                                   + torch.logaddexp(y, y.mean(1, keepdim=True))
                                                   + torch.broadcast_to(y[:, :1], y.shape)), X4, "both"),
    # measured in the op table and traced by make_fx as themselves, unmapped before
    "sign-isinf-addcdiv-lerp-unsafe_split-channel_shuffle": (
        lambda: Fn(lambda y: y * torch.sign(y) + y * torch.isinf(y / (y.abs() > 1).to(y.dtype))
                   + torch.addcdiv(y, y, y.abs() + 1, value=0.5) + torch.lerp(y, y.transpose(2, 3), 0.3)
                   + torch.lerp(y, 2 * y, torch.sigmoid(y)) + torch.cat(y.unsafe_split(3, 1)[::-1], 1)
                   + F.channel_shuffle(y, 2) + y * (y > 0).cumsum(3)), X4, "both"),
    # p = 2 and 1 on up to 25 rows: _cdist_forward; more rows: torch's matmul form, _euclidean_dist
    "cdist": (lambda: Fn(lambda y: torch.cdist(y.flatten(2), y.flatten(2)[:, :2] * 0.5 + 1).sum(-1, keepdim=True)
                         + torch.cdist(y.flatten(2), y.flatten(2)[:, 1:] - 1, p=1.0).mean()
                         + torch.cdist(y.flatten(2).transpose(1, 2), y.flatten(2).transpose(1, 2)[:, :30] + 0.5).mean()),
              X4, "both"),
    # Informer's decoder input: float64 values and a float32 `torch.zeros`; torch promotes (also int
    # and float) in cat, stack, maximum, addcmul
    "cat-stack-mixed-dtypes": (lambda: Fn(lambda y: torch.cat([y, torch.zeros(2, 4, 2, 9)], 2)[:, :, 2:]
                                          + torch.cat([torch.arange(9).expand(2, 4, 1, 9), y], 2)[:, :, 1:]
                                          + torch.stack([y, torch.ones(2, 4, 9, 9)]).sum(0) + torch.maximum(y, torch.zeros(9))
                                          + torch.addcmul(y, y, torch.full((9,), 2)) + torch.addcdiv(y, y, torch.full((9,), 2.0))),
                               X4, "both"),
    # unbatched (C, L) and (C, H, W) inputs (DLinear's nn.AvgPool1d on a (B, L) tensor traces to
    # avg_pool2d of (B, 1, L)): the runner adds the batch dim and drops it from values and indices
    "pool-unbatched": (lambda: Fn(lambda y: (F.avg_pool1d(y[0], 4), F.adaptive_avg_pool1d(y[0], 1), F.avg_pool2d(y, 2),
                                             F.adaptive_avg_pool2d(y, 1)), conv=nn.Linear(9, 8)), (3, 6, 9), "both"),
    "max-adaptive-pool-unbatched": (lambda: Fn(lambda y: (F.max_pool1d(y[0], 3, 2), F.adaptive_max_pool1d(y[0], 3),
                                                          F.max_pool1d(y[0], 2, return_indices=True)[1].to(y.dtype),
                                                          F.adaptive_avg_pool1d(y[0], 3), F.max_pool2d(y, 3, 2, padding=1),
                                                          F.adaptive_max_pool2d(y, (2, 3), return_indices=True)[1].to(y.dtype),
                                                          F.max_pool3d(y[None], 2), F.avg_pool3d(y[None], 2),
                                                          F.adaptive_avg_pool3d(y[None], 2)), conv=nn.Linear(9, 8)),
                                    (3, 6, 9), "port"),
    # the op table's known gaps, mapped with the compositions its probes measure
    "max-min-dim": (lambda: Fn(_max_min), X4, "both"),
    "logsumexp-prod": (lambda: Fn(lambda y: torch.logsumexp(y, (1, 2), keepdim=True) + torch.logsumexp(y, -1)[..., None]
                                  + y.prod(1, keepdim=True) + (y[:, :2, :2, :3] * 2).prod() + (y[:1, :1, :1] * 2).prod(3)[..., None]),
                       X4, "both"),
    "scatter-scatter_add-index_add": (lambda: Fn(_scatters), X4, "both"),
    "floor_divide-remainder-fmod-frac": (lambda: Fn(_remainders), X4, "both"),
    "all-any-count_nonzero": (lambda: Fn(lambda y: y * (y > 0).all(1, keepdim=True) + y * (y > -1).any(-1, keepdim=True)
                                         + y * (y > -9).all() + y * (y > 0).any() + y * (y > 0).all(dim=(1, 2), keepdim=True)
                                         + y * torch.count_nonzero(y > 0.5, 1)[:, None] + y * torch.count_nonzero(y.relu())),
                              X4, "both"),
    "std_mean-var_mean": (lambda: Fn(_moments), X4, "both"),
    "losses": (lambda: Fn(_losses), X4, "both"),
    "nll_loss": (lambda: Fn(_nll_losses), X4, "both"),
    "sort-topk-xlogy-addmv": (lambda: Fn(lambda y: torch.sort(y, 1)[0] + torch.sort(y, dim=-1, descending=True, stable=True)[0]
                                         + torch.sort(y, 2)[1].to(y.dtype) + torch.topk(y, 3)[0].sum(-1, keepdim=True)
                                         + torch.topk(y, 2, 1, largest=False)[1].sum(1, keepdim=True).to(y.dtype)
                                         + torch.xlogy(y, y.abs() + 0.5) + torch.xlogy(y.relu(), 2.0) + torch.xlogy(2.0, y.abs() + 0.5)
                                         + torch.addmv(y[0, 0, :, 0], y[0, 0], y[1, 0, 0], beta=0.5, alpha=2.0)),
                              X4, "both"),
}


def _max_min(y: torch.Tensor) -> torch.Tensor:
    """max/min over a dim (values and indices), and of all elements; the doubled tensor ties every
    extreme: torch's index is the first, and its gradient goes there alone."""
    top, at = torch.cat([y, y], 3).max(3)
    low, low_at = torch.cat([y, y], 1).min(1, keepdim=True)
    return (y + top[..., None] + at[..., None].to(y.dtype) + low + low_at.to(y.dtype) + y.max() + y.min()
            + torch.max(y, -2)[0][:, :, None] + torch.min(y, 0)[1].to(y.dtype))


def _scatters(y: torch.Tensor) -> torch.Tensor:
    """Into tensors that need no gradient (candle's destination gradient is measured wrong), an
    index shaped like the destination for scatter_add (candle's backward needs it); torch's
    scatter backward wants src shaped like the index."""
    perm = torch.tensor([8, 0, 3, 5, 1]).expand(2, 4, 9, 5)
    dup = torch.tensor([0, 0, 1, 2, 2, 2, 8, 7, 0]).expand(2, 4, 9, 9)
    return (torch.zeros_like(y).scatter(3, perm, y[..., 2:7]) + torch.zeros_like(y).scatter(2, perm.transpose(2, 3), 0.25)
            + torch.zeros_like(y).scatter_add(3, dup, y * 2) + y.index_add(1, torch.tensor([3, 0]), y[:, :2], alpha=0.5))


def _several_indices(y: torch.Tensor) -> torch.Tensor:
    """Advanced indexing with more than one index tensor, as torch lays the result out."""
    b, rows = torch.arange(2), torch.tensor([8, -1])
    pooled = y.transpose(1, 3)[b, rows]  # (2, 9, 4): one row per batch element
    inner = y[:, torch.tensor([[0], [3]]), torch.tensor([1, 2, -2])]  # (2, 2, 3, 9): adjacent, in place
    apart = y[b[:, None], :, :, torch.tensor([0, 4, 8])]  # (2, 3, 4, 9): not adjacent, in front
    return (y + pooled.sum(-1)[:, None, :, None] + inner.sum(1)[:, :1, None, :] + apart.sum(1)[..., None]
            + y[0, 1, torch.tensor([2, 2])].sum())


def _index_puts(y: torch.Tensor) -> torch.Tensor:
    """`x[i, j] = v` (the written positions take v: x's gradient is 0 there) and `+=` (accumulate)."""
    x = y.permute(0, 2, 3, 1) * 1.0
    x[torch.tensor([1, 0]), torch.tensor([[2], [5]])] = y[:, :2, :, :4] * 3.0
    x[:, torch.tensor([0, 0, 4]), torch.tensor([7, 7, 1])] += y[:, 1, :3, :4]
    z = y.clone()
    z[torch.tensor([0]), :, torch.tensor([3])] = 0.5
    return x.permute(0, 3, 1, 2) + z


def _remainders(y: torch.Tensor) -> torch.Tensor:
    """Float and int64 operands, numbers on either side; torch has no derivative for floor_divide
    or for remainder of a number by a tensor (div with rounding_mode has a zero one)."""
    divisor = y.mean((2, 3), keepdim=True).abs() + 0.3
    at = y.argmax(1, keepdim=True)
    return (y % 0.7 + torch.fmod(y, 0.6) + torch.frac(y * 3) + torch.remainder(y, divisor) + torch.fmod(y, -divisor)
            + torch.remainder(2.0, y.detach().abs() + 0.5) + torch.div(y, 0.4, rounding_mode="floor")
            + torch.div(y, divisor, rounding_mode="trunc") + torch.floor_divide(y.detach(), divisor.detach())
            + (y.detach() // 0.3) * 0.1
            + (at // 2).to(y.dtype) + (at % 3).to(y.dtype) + torch.fmod(at - 2, 3).to(y.dtype))


def _moments(y: torch.Tensor) -> torch.Tensor:
    std, mean = torch.std_mean(y, 1, keepdim=True)
    var, _ = torch.var_mean(y, (2, 3), correction=0)
    return (y - mean) / std + var[..., None, None] + torch.var_mean(y, -1)[1][..., None] + torch.std_mean(y)[0]


def _losses(y: torch.Tensor) -> torch.Tensor:
    p, q = torch.sigmoid(y), torch.sigmoid(y.flip(1))
    return (y + F.mse_loss(y, y.flip(1)) + F.mse_loss(y, y.roll(1, 2), reduction="none")
            + F.mse_loss(y, 0.5 * y, reduction="sum") + F.smooth_l1_loss(y, y.flip(3), beta=0.5)
            + F.smooth_l1_loss(y, 0.3 * y, reduction="sum") + F.smooth_l1_loss(y, y.flip(2), reduction="none", beta=2.0)
            + F.binary_cross_entropy(p, q, reduction="none")
            + F.binary_cross_entropy(p, q.detach(), weight=torch.linspace(0.5, 1.5, 9, dtype=y.dtype), reduction="sum"))


def _nll_losses(y: torch.Tensor) -> torch.Tensor:
    """nll_loss_forward: mean, sum and none, class weights, ignore_index, a 1-D input."""
    z = y.mean((2, 3))
    t = torch.tensor([3, 1])
    w = torch.tensor([0.5, 1.0, 2.0, 1.5], dtype=y.dtype)
    return (y + F.nll_loss(F.log_softmax(z, 1), t) + F.cross_entropy(z, t, weight=w)
            + F.nll_loss(z, torch.tensor([3, -100])) + F.nll_loss(z, t, weight=w, reduction="none")[:, None, None, None]
            + F.nll_loss(z, torch.tensor([2, 0]), weight=w, ignore_index=2, reduction="sum")
            + F.nll_loss(z[0], torch.tensor(1)) + F.cross_entropy(z, t, reduction="sum", ignore_index=1))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_op_mapping_equals_torch(binary, case, dtype):
    factory, shape, passing = CASES[case]
    torch.manual_seed(0)
    model = factory().to(getattr(torch, dtype)).train()
    x = torch.randn(shape, dtype=getattr(torch, dtype))
    result = check_in_candle(model, [x], binary=binary)
    port = result["port"]
    assert port["ok"], (port.get("failing_ops"), [r for r in port.get("tensors", []) if r["status"] != "ok"])
    if passing == "port-f64":
        passing = "port" if dtype == "float64" else "both"
    if passing == "both":
        assert result["native"]["ok"], result["native"].get("failing_ops")
    else:
        assert not result["native"]["ok"], "native candle was expected to fail here (if it passes now, candle changed)"
        # a wrong (or float32-accurate: gelu, 64x) native gradient fails by far, even judged by the
        # model's own noise
        differing = [t for t in result["native"].get("tensors", []) if t["status"] == "differs"]
        assert all(t["of_allowed"] > 10 for t in differing), [(t["name"], t["of_allowed"]) for t in differing]
    assert result["tolerance"]["mode"] == "noise"
    assert result["tolerance"]["method"] == ("perturbed" if dtype == "float64" else "float64")


def test_old_style_weight_norm_trains_in_candle(binary):
    """EnCodec's and DAC's `torch.nn.utils.weight_norm` (a forward pre-hook; its model cannot be
    deep-copied, so the noise is measured by perturbation): `_weight_norm_interface` is mapped."""
    torch.manual_seed(0)
    model = Fn(lambda y: y, conv=torch.nn.utils.weight_norm(nn.Conv1d(3, 4, 3, padding=1))).double().train()
    result = check_in_candle(model, [torch.randn(2, 3, 9, dtype=torch.float64)], binary=binary)
    assert "aten._weight_norm_interface.default" in result["ops"]
    assert result["port"]["ok"], result["port"].get("failing_ops")
    assert {t["name"] for t in result["port"]["tensors"] if t["kind"] == "grad"} >= {"conv.weight_g", "conv.weight_v", "conv.bias"}


def test_unet_native_names_bilinear_backward_and_port_passes(binary):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from unet import UNet
    finally:
        sys.path.pop(0)
    torch.manual_seed(0)
    model = UNet().double().train()
    result = check_in_candle(model, [torch.randn(2, 3, 17, 17, dtype=torch.float64)], binary=binary)
    native = result["native"]
    assert not native["ok"]
    assert native["backward"]["message"] == "backward not supported for upsample_bilinear2d"
    where = sorted(op["location"].rsplit("/", 1)[-1] for op in native["failing_ops"])
    assert where == ["unet.py:33", "unet.py:35"]
    port = result["port"]
    assert port["ok"] and port["worst_rel_to_scale"] <= 1e-9
    assert {r["name"] for r in port["tensors"] if r["kind"] == "grad"} == {n for n, _ in model.named_parameters()}


def test_dropout_in_training_passes_with_torchs_draws_replayed(binary):
    """nn.Dropout in training traces to `empty` -> `expand` -> `bernoulli`: its mask, drawn for a
    shape, is replayed from torch's reference forward as a constant, so --candle verifies training
    mode as it runs (it stopped with "use --eval")."""
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Dropout(0.5)).double().train()
    result = check_in_candle(model, [torch.randn(X4, dtype=torch.float64)], binary=binary)
    assert result["port"]["ok"] and result["native"]["ok"], summary_lines(result)
    assert [d["op"] for d in result["replayed_draws"]] == ["aten.bernoulli.p"]
    assert any("random draws" in line and "replayed" in line for line in summary_lines(result))


def test_a_draw_of_computed_probabilities_is_named_with_what_to_do(binary):
    """A draw whose value depends on the model's values (bernoulli of computed probabilities) is
    not replayed: the candle run names it, with --eval."""
    result = check_in_candle(Fn(lambda y: y * torch.bernoulli(torch.sigmoid(y)).detach()).double(),
                             [torch.randn(X4, dtype=torch.float64)], binary=binary)
    failing = [op for op in result["port"]["failing_ops"] if op["status"] == "error"]
    assert failing and "bernoulli" in failing[0]["op"], result["port"]["failing_ops"]
    assert result["replayed_draws"] == []


class _ZeroInitResidual(nn.Module):
    """A residual block whose final BatchNorm starts at zero (pytorchvideo's and timm's ResNets):
    the fusing ReLU sees the exact zeros the first ReLU made, where candle's relu'(0) is 1."""

    def __init__(self) -> None:
        super().__init__()
        self.conv_a, self.conv_b = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1)
        self.norm_c = nn.BatchNorm2d(4)
        nn.init.zeros_(self.norm_c.weight)

    def forward(self, x):
        z = torch.relu(self.conv_a(x))
        return torch.relu(z + self.norm_c(self.conv_b(z)))


def test_native_differing_from_port_names_the_ops_the_modes_run_differently(binary):
    """Native candle runs, its gradients differ, no op is measured wrong, port mode equals torch:
    the cause is an op the modes run differently, and the report names relu with its note."""
    torch.manual_seed(0)
    result = check_in_candle(_ZeroInitResidual().double().eval(), [torch.randn(X4, dtype=torch.float64)], binary=binary)
    native = result["native"]
    assert result["port"]["ok"] and native["ran"] and not native["equal_to_torch"]
    assert [s["op"] for s in native["suspects"]] == ["aten.relu.default"]
    assert "relu'(0) is 1" in native["suspects"][0]["measured"] and len(native["suspects"][0]["locations"]) == 2
    assert any("relu.default: suspect: native and port mode run only these ops differently" in line
               for line in summary_lines(result))


class _OldStyleSwish(torch.autograd.Function):
    """pytorchvideo's SwishFunction: forward takes `ctx`, no setup_context."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * s * (1 + x * (1 - s))


def test_an_old_style_autograd_function_is_traced_as_its_forward(binary):
    """functionalize refused it ("it must override the setup_context staticmethod"; X3D could not
    run in candle); now its forward's ops are traced, candle differentiates them, and
    Function.apply is torch's own again afterwards."""
    apply = torch.autograd.Function.apply
    result = check_in_candle(Fn(lambda y: _OldStyleSwish.apply(y)).double(), [torch.randn(X4, dtype=torch.float64)], binary=binary)
    assert result["port"]["ok"] and result["native"]["ok"], result["port"]["failing_ops"]
    assert "aten.sigmoid.default" in result["ops"]
    assert torch.autograd.Function.apply == apply


def test_missing_native_gradients_name_the_fused_softmax(binary):
    """MTCNN's RNet ends in nn.Softmax(dim=1) on a (N, 2) tensor: native candle's softmax_last_dim
    returns no gradient, port mode's composed softmax does; the missing gradients name it."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 9 * 9, 4), nn.Softmax(dim=1)).double()
    result = check_in_candle(model, [torch.randn(X4, dtype=torch.float64)], binary=binary)
    native = result["native"]
    assert result["port"]["ok"] and native["missing_gradients"]
    assert [s["op"] for s in native["suspects"]] == ["aten._softmax.default"]
    assert "softmax_last_dim" in native["suspects"][0]["measured"]


def test_a_drop_path_draw_is_replayed(binary):
    """Drop path (transformers' GLPN, timm): `torch.rand` in training mode, replayed from torch's
    reference forward (it stopped with "rand is random ... --eval")."""

    def drop_path(y):
        keep = torch.floor(torch.rand((y.shape[0], 1, 1, 1), dtype=y.dtype) + 0.5)
        return y / 0.5 * keep

    torch.manual_seed(1)
    result = check_in_candle(Fn(drop_path).double(), [torch.randn(X4, dtype=torch.float64)], binary=binary)
    assert result["port"]["ok"], summary_lines(result)
    assert [d["op"] for d in result["replayed_draws"]] == ["aten.rand.default"]


class _QueriesRequiringGrad(nn.Module):
    """transformers' MaskFormer decoder: a tensor made to require a gradient in training only."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        queries = torch.zeros_like(x)
        if self.training:
            queries.requires_grad_(True)  # the line the error names
        return self.conv(x) + queries.sum()


def test_a_trace_the_model_stops_names_its_line_and_eval(binary):
    from candle_port.verify.candle_check import _guarded

    model = _QueriesRequiringGrad().double()
    x = torch.randn(1, 3, 4, 4, dtype=torch.float64)
    line = next(i for i, t in enumerate(Path(__file__).read_text().splitlines(), 1) if "the line the error names" in t)
    result = _guarded(lambda: check_in_candle(model.train(), [x], binary=binary), train=True)
    assert not result["ok"] and f"(at {__file__}:{line} (`queries.requires_grad_(True)" in result["error"]
    assert result["error"].endswith("--eval traces it if that line runs in training only")
    assert _guarded(lambda: check_in_candle(model.eval(), [x], binary=binary), train=False)["port"]["ok"]


class _CallOverride(nn.Module):
    """controlnet_aux's HED blocks override `__call__`, not `forward`: torch records no frame of
    theirs for the ops they call."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def __call__(self, x):
        return F.max_pool2d(self.conv(x), 2)


def test_an_op_without_a_user_frame_has_no_location_rather_than_candle_ports():
    from candle_port.verify.graph_export import parse_stack, trace_for_candle, user_frame

    gm, _, _ = trace_for_candle(_CallOverride(), [torch.randn(1, 3, 4, 4)])
    where = {str(n.target): user_frame(parse_stack(n.meta.get("stack_trace"))) for n in gm.graph.nodes if n.op == "call_function"}
    pool = next(frame for op, frame in where.items() if "max_pool2d" in op)
    assert pool is None  # was graph_export.py's own tracing call
    assert all(frame is None or "candle_port" not in frame.file for frame in where.values())


def test_spectral_norm_trains_in_candle_in_eval_and_train_mode_says_why_it_differs(binary):
    """basicsr's UNetDiscriminatorSN: spectral norm's power iteration runs under torch.no_grad()
    in training, which an ATen graph cannot keep, so candle differentiates through it. The result
    says where gradients were turned off; in eval mode (no iteration) candle equals torch."""
    torch.manual_seed(0)
    model = Fn(lambda y: y, conv=nn.utils.spectral_norm(nn.Conv2d(3, 4, 3, padding=1))).double()
    x = torch.randn(X4, dtype=torch.float64)
    trained = check_in_candle(model.train(), [x], binary=binary)
    assert not trained["port"]["ok"] and len(trained["gradients_off"]) == 1
    assert trained["gradients_off"][0].startswith(f"{__file__}:")
    assert any(line.startswith("note: the forward turns gradients off (torch.no_grad) at ") for line in summary_lines(trained))
    evaluated = check_in_candle(model.eval(), [x], binary=binary)
    assert evaluated["port"]["ok"] and evaluated["native"]["ok"] and evaluated["gradients_off"] == []


def test_a_scatter_add_into_a_tensor_needing_a_gradient_is_named_as_the_suspect(binary):
    """The runner runs candle's scatter_add, whose backward zeroes the destination's gradient at
    the scattered positions (torch: 1): the gradient differs in both modes, and the op table's
    measured wrong gradient names the node with its line."""

    def scatter_into_y(y):
        return y.scatter_add(3, torch.tensor([0, 0, 1, 2, 2, 2, 8, 7, 0]).expand(2, 4, 9, 9), y * 2)

    torch.manual_seed(0)
    result = check_in_candle(Fn(scatter_into_y).double(), [torch.randn(X4, dtype=torch.float64)], binary=binary)
    for mode in ("native", "port"):
        r = result[mode]
        assert r["ran"] and not r["ok"] and r["worst"]["kind"] == "grad"
        assert [s["op"] for s in r["suspects"]] == ["aten.scatter_add.default"]
        assert Path(r["suspects"][0]["location"].rsplit(":", 1)[0]).name == Path(__file__).name


class _CircularPadded(nn.Module):
    """torch's own circular padding (what F.pad traced to before the exporter made it a cat):
    `new_empty`, then `copy_` into slices of it, which functionalize keeps."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 5)

    def forward(self, x):
        return torch.ops.aten._pad_circular(self.lin(x), [2, 1]) * 2  # the copy_ line


def test_a_copy_into_a_view_read_later_is_an_error_on_its_line(binary):
    """The runner has values, not storage: a `copy_` into a slice of a tensor a later node reads
    was unused, so skipped, and that read saw zeros (a wrong output, no message); now each such
    `copy_` is an error on its line, in both modes."""
    torch.manual_seed(0)
    result = check_in_candle(_CircularPadded().double(), [torch.randn(2, 3, 5, dtype=torch.float64)], binary=binary)
    line = next(i for i, t in enumerate(Path(__file__).read_text().splitlines(), 1) if "# the copy_ line" in t)
    for mode in ("native", "port"):
        failing = [op for op in result[mode]["failing_ops"] if op["status"] == "error"]
        assert failing and all(op["op"] == "aten.copy_.default" for op in failing), failing
        assert failing[0]["location"] == f"{__file__}:{line}"
        assert "mutates new_empty (read by" in failing[0]["message"] and "in-place write" in failing[0]["message"]
        assert not result[mode]["ok"]


def test_unmapped_op_is_named_with_its_line(binary):
    # atan: candle has no such function (the op table's absence check), so nothing maps it
    model = Fn(lambda y: torch.atan(y)).double()
    result = check_in_candle(model, [torch.randn(X4, dtype=torch.float64)], binary=binary)
    failing = result["port"]["failing_ops"]
    assert failing[0]["op"] == "aten.atan.default" and failing[0]["status"] == "no_mapping"
    assert Path(failing[0]["location"].rsplit(":", 1)[0]).name == Path(__file__).name


class _Decoder1d(nn.Module):
    """demucs' decoder: ConvTranspose1d layers called in one loop (one source line)."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.ConvTranspose1d(3, 3, 4, 2), nn.ConvTranspose1d(3, 2, 4, 2)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_native_conv_transpose1d_backward_refusal_is_pinned_on_its_line_once(binary):
    """candle's `backward is not supported for conv-transpose1d` names the line of the layers (one
    line for a loop, with the count) rather than only every gradient missing; the ops the modes run
    differently are not blamed for it, and the forward's difference (no padding, batch 2) is named."""
    torch.manual_seed(0)
    model = _Decoder1d().double().train()
    result = check_in_candle(model, [torch.randn(2, 3, 9, dtype=torch.float64)], binary=binary)
    native = result["native"]
    assert result["port"]["ok"] and not native["ok"]
    # without padding, candle's forward is wrong at batch 2 too: named, with the layers' line
    [suspect] = native["suspects"]
    assert "conv_transpose1d forward is wrong for batch > 1" in suspect["why"]
    assert Path(suspect["location"].rsplit(":", 1)[0]).name == Path(__file__).name
    assert any(t["kind"] == "output" and t["status"] != "ok" for t in native["tensors"])
    pinned = [op for op in native["failing_ops"] if op["status"] == "backward_error"]
    assert len(pinned) == 2 and all("conv-transpose1d" in op["message"] for op in pinned)
    lines = [line for line in summary_lines(result) if "backward_error" in line]
    assert len(lines) == 1 and lines[0].endswith("(x2)") and "x = layer(x)" not in lines[0], lines
    assert Path(pinned[0]["location"].rsplit(":", 1)[0]).name == Path(__file__).name


def test_a_padded_conv_transpose1d_forward_is_not_a_suspect(binary):
    """With padding candle's conv_transpose1d forward is right: only its backward is missing."""
    torch.manual_seed(0)
    model = Fn(nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1), conv=nn.Conv1d(3, 4, 3, padding=1)).double().train()
    native = check_in_candle(model, [torch.randn(2, 3, 9, dtype=torch.float64)], binary=binary)["native"]
    assert not native["ok"] and not any("forward is wrong" in s.get("why", "") for s in native["suspects"])
    assert all(t["status"] == "ok" for t in native["tensors"] if t["kind"] == "output")


def test_the_forward_suspect_needs_batch_and_input_channels_above_one_and_no_padding():
    """candle's col2im conv_transpose1d forward is right with one input channel or batch 1, and
    with padding it takes the direct kernel: only the measured case is named."""
    from candle_port.verify.candle_run import forward_suspects

    def graph(batch, padding=(0,)):
        node = {"op": "aten.convolution.default", "location": "dec.py:7", "code": "y = up(x)",
                "args": [{"ref": "x"}, {"ref": "w"}, None, [2], list(padding), [1], True, [0], 1],
                "outputs": [{"shape": [batch, 2, 12]}]}
        return {"nodes": [node]}

    [suspect] = forward_suspects(graph(2), {"w": [3, 2, 4]})
    assert suspect["locations"] == ["dec.py:7"] and "forward is wrong for batch > 1" in suspect["why"]
    assert forward_suspects(graph(2), {"w": [1, 2, 4]}) == []
    assert forward_suspects(graph(1), {"w": [3, 2, 4]}) == []
    assert forward_suspects(graph(2, padding=(1,)), {"w": [3, 2, 4]}) == []
    assert len(forward_suspects(graph(2), {})) == 1  # a computed weight (weight norm): assumed several


def test_port_fixed_unet_trains_in_native_candle(binary, tmp_path):
    """port-fix's rewrite decomposes the resizes into ops candle differentiates natively."""
    from candle_port.api import fix_source

    fixed = fix_source((ROOT / "examples" / "unet.py").read_text(encoding="utf-8"), "runtime")
    path = tmp_path / "unet_fixed.py"
    assert fixed.fixed, "port-fix changed nothing"
    path.write_text(fixed.text, encoding="utf-8")
    namespace: dict = {"__name__": "unet_fixed", "__file__": str(path)}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    torch.manual_seed(0)
    model = namespace["UNet"]().double().train()
    result = check_in_candle(model, [torch.randn(2, 3, 17, 17, dtype=torch.float64)], binary=binary)
    for mode in ("native", "port"):
        assert result[mode]["ok"] and result[mode]["worst_rel_to_scale"] <= 1e-9, result[mode].get("failing_ops")
    assert "aten.upsample_bilinear2d.default" not in result["ops"]


def test_verify_cli_candle_json(binary, monkeypatch, capsys):
    import json

    from typer.testing import CliRunner

    from candle_port.cli.main import app

    monkeypatch.setenv("CANDLE_PORT_RUN", str(binary))
    out = CliRunner().invoke(app, ["verify", f"{ROOT / 'examples' / 'unet.py'}:UNet", "--input-shape", "1,3,9,9",
                                   "--dtype", "float64", "--candle", "--output-format", "json"])
    assert out.exit_code == 0, out.output
    candle = json.loads(out.stdout)["candle"]
    assert candle["ok"] and not candle["native"]["ok"]
    assert candle["tolerance"]["mode"] == "noise" and candle["rtol"] == 1e-9
    rows = candle["port"]["tensors"]
    assert rows and all({"own_noise", "allowed", "judged_by", "reason"} <= set(r) for r in rows)
    assert candle["port"]["worst"]["judged_by"] in ("noise", "floor")
    assert candle["native"]["backward"]["message"] == "backward not supported for upsample_bilinear2d"


def test_verify_cli_candle_builds_a_config_class_model(binary, monkeypatch):
    """--candle builds MODEL as verify's workers do: MODEL(ConfigClass(**config_kwargs)) (it used
    to call MODEL() and stop with a missing `config` argument on every transformers model)."""
    import json

    from typer.testing import CliRunner

    from candle_port.cli.main import app

    monkeypatch.setenv("CANDLE_PORT_RUN", str(binary))
    out = CliRunner().invoke(app, ["verify", f"{ROOT / 'fixtures' / 'verify' / 'config_model.py'}:Net",
                                   "--config-class", "config_model:NetConfig", "--config-kwargs", '{"width": 3}',
                                   "--input-shape", "1,3,6,6", "--dtype", "float64", "--candle", "--output-format", "json"])
    assert out.exit_code == 0, out.output
    candle = json.loads(out.stdout)["candle"]
    assert candle["ok"] and candle["port"]["ok"] and candle["rewritten"]["native"]["ok"]
    assert candle["native"]["backward"]["message"] == "backward not supported for upsample_bilinear2d"
    assert {r["name"] for r in candle["port"]["tensors"] if r["kind"] == "grad"} == {"conv.weight", "conv.bias", "head.weight", "head.bias"}


def test_verify_cli_candle_with_convert_runs_the_converted_model(binary, monkeypatch):
    """--strategy convert changes no source: --candle's second run is the built model with
    runtime.convert's layers (it used to report "port-fix changed nothing" and run nothing)."""
    import json

    from typer.testing import CliRunner

    from candle_port.cli.main import app

    monkeypatch.setenv("CANDLE_PORT_RUN", str(binary))
    out = CliRunner().invoke(app, ["verify", f"{ROOT / 'fixtures' / 'verify' / 'factory_config.py'}:ConfigNeck",
                                   "--strategy", "convert", "--input-shape", "1,3,8,8", "--dtype", "float64", "--candle",
                                   "--output-format", "json"])
    assert out.exit_code == 0, out.output
    candle = json.loads(out.stdout)["candle"]
    converted = candle["rewritten"]
    assert converted["label"] == "converted model (runtime.convert)" and converted["changed"]
    assert converted["native"]["ok"] and converted["port"]["ok"] and not candle["native"]["ok"]


def test_verify_cli_candle_passes_forward_kwargs(binary, monkeypatch):
    import json

    from typer.testing import CliRunner

    from candle_port.cli.main import app

    monkeypatch.setenv("CANDLE_PORT_RUN", str(binary))
    out = CliRunner().invoke(app, ["verify", f"{ROOT / 'fixtures' / 'verify' / 'forward_flag.py'}:FlagNet",
                                   "--forward-kwargs", '{"inference": false}', "--input-shape", "1,3,6,6",
                                   "--dtype", "float64", "--candle", "--output-format", "json"])
    assert out.exit_code == 0, out.output
    candle = json.loads(out.stdout)["candle"]
    assert candle["port"]["ok"] and candle["rewritten"]["native"]["ok"]
    assert {"head.weight", "head.bias"} <= {r["name"] for r in candle["port"]["tensors"] if r["kind"] == "grad"}


FACTORY = ROOT / "fixtures" / "verify" / "factory_pool_candle.py"


def test_factory_built_max_pool_is_found_and_fixed(binary):
    """MONAI-style ``Pool[Pool.MAX, 2](kernel_size=3, stride=2, padding=1)``: port-check sees no
    pooling call; the traced graph names the max_pool2d at its line, and the twin passes."""
    from candle_port.api import check_source

    text = FACTORY.read_text(encoding="utf-8")
    assert not [d for d in check_source(text, str(FACTORY)) if d.code in ("CP106", "CP107")]
    namespace: dict = {"__name__": "factory_pool_candle", "__file__": str(FACTORY)}
    exec(compile(text, str(FACTORY), "exec"), namespace)
    torch.manual_seed(0)
    result = check_in_candle(namespace["FactoryPooled"]().double().train(), [torch.randn(X4, dtype=torch.float64)],
                             binary=binary)
    failing = [op for op in result["native"]["failing_ops"] if op["status"] == "error"]
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "the pooling line" in t)
    assert failing[0]["op"] == "aten.max_pool2d_with_indices.default"
    assert failing[0]["location"] == f"{FACTORY}:{line}"
    assert result["port"]["ok"] and result["port"]["worst_rel_to_scale"] <= 1e-9


def test_torch_hardsigmoid_backward_is_float32_accurate_in_float64():
    """Why timm's MobileNetV3 differed by 6.9e-9: torch's own CPU hardsigmoid backward multiplies
    by 1.0f/6.0f in float64; the reference of the candle check uses the exact 1/6."""
    x = torch.tensor([0.5], dtype=torch.float64, requires_grad=True)
    F.hardsigmoid(x).sum().backward()
    assert abs(x.grad.item() - 1 / 6) / (1 / 6) == pytest.approx(2.98e-8, rel=1e-2)


def test_torch_celu_backward_is_float32_accurate_in_float64():
    """Why the celu case uses alpha 0.5: torch's derivative of celu is `elu_backward(grad, alpha, 1,
    1.0 / alpha.toFloat())` (derivatives.yaml), alpha rounded to float32 in float64: for alpha 0.7
    the gradient is (0.7 / float32(0.7)) exp(x / float32(0.7)), 5.6e-8 relative off the exact
    exp(x / 0.7) at x = -3; candle's is exact. 0.5 is exact in float32."""
    x = torch.tensor([-3.0], dtype=torch.float64, requires_grad=True)
    F.celu(x, 0.7).sum().backward()
    assert abs(x.grad.item() / math.exp(-3.0 / 0.7) - 1) == pytest.approx(5.6e-8, rel=1e-2)
    x.grad = None
    F.celu(x, 0.5).sum().backward()
    assert x.grad.item() == pytest.approx(math.exp(-3.0 / 0.5), rel=1e-15)


CORPUS = Path(os.environ.get("CANDLE_PORT_CORPUS", ROOT / ".corpus"))
# (model, init kwargs, input shape, native failure: (op, file:line) or "wrong" for a wrong gradient)
REAL = [
    pytest.param("diffusers.models.unets.unet_stable_cascade:UpDownBlock2d",
                 {"in_channels": 4, "out_channels": 8, "mode": "down"}, (1, 4, 16, 16),
                 ("aten.upsample_bilinear2d.default", "unet_stable_cascade.py:127"), id="diffusers-stable-cascade-down"),
    pytest.param("kornia.feature.disk._unets.unet:Unet", {"in_features": 3, "down": [8, 8, 16], "up": [8, 8], "size": 3},
                 (1, 3, 32, 32), ("aten.upsample_bilinear2d.default", "blocks.py:40"), id="kornia-disk-unet"),
    pytest.param("kornia.feature.tfeat:TFeat", {"pretrained": False}, (2, 1, 32, 32),
                 ("aten.max_pool2d_with_indices.default", "tfeat.py:"), id="kornia-tfeat-wrong-gradient"),
]


@pytest.mark.corpus
@pytest.mark.usefixtures("corpus_dir")
@pytest.mark.parametrize("spec, kwargs, shape, expected", REAL)
def test_real_model_native_names_the_op_and_port_passes(binary, monkeypatch, spec, kwargs, shape, expected):
    """Real models (about 5-20 s each with the dev binary): native candle fails at the named op and
    line (a backward error, or for TFeat a wrong max_pool2d gradient named as the suspect); the
    candle-port-ops twins pass in float64 within 1e-9."""
    import importlib

    for package in ("diffusers", "kornia"):
        monkeypatch.syspath_prepend(str(CORPUS / package))
    module, attr = spec.split(":")
    torch.manual_seed(0)
    model = getattr(importlib.import_module(module), attr)(**kwargs).double().train()
    result = check_in_candle(model, [torch.randn(shape, dtype=torch.float64)], binary=binary)
    assert result["port"]["ok"] and result["port"]["worst_rel_to_scale"] <= 1e-9, result["port"]["failing_ops"]
    native = result["native"]
    assert not native["ok"]
    named = [op for op in native["failing_ops"] if op["status"] != "skipped"] or native["suspects"]
    op, where = expected
    assert named[0]["op"] == op and where in named[0]["location"], named[:2]
    assert result["tolerance"]["mode"] == "noise"
    if native["ran"]:  # TFeat: native runs, its gradient is wrong far beyond the model's own noise
        worst = native["worst"]
        assert worst["kind"] == "grad" and worst["rel_to_scale"] > 0.1 and worst["of_allowed"] > 1e7, worst


TWO_CLOSE = ROOT / "fixtures" / "verify" / "batchnorm_two_close.py"


def test_two_value_batchnorm_passes_by_its_own_noise_not_the_floor(binary):
    """A BatchNorm over two nearly equal values (efficientnet_b0's case in small): candle's
    gradient before it differs from torch's by more than the fixed 1e-9, within 50 x the noise the
    original's own rounding makes there; with the fixed rtol (--rtol 1e-9) it fails."""
    namespace: dict = {"__name__": "batchnorm_two_close"}
    exec(compile(TWO_CLOSE.read_text(encoding="utf-8"), str(TWO_CLOSE), "exec"), namespace)
    torch.manual_seed(0)
    model, x = namespace["TwoValueNorm"]().double().train(), namespace["two_close"]()
    result = check_in_candle(model, [x], binary=binary)
    for mode in ("native", "port"):
        r = result[mode]
        assert r["ok"], [t for t in r["tensors"] if t["status"] != "ok"]
        worst = r["worst"]
        assert worst["judged_by"] == "noise" and worst["rel_to_scale"] > 1e-9, worst
        assert worst["reason"].startswith("50 x the original's own noise")
    fixed = check_in_candle(model, [x], binary=binary, rtol=1e-9)
    assert fixed["tolerance"]["mode"] == "given" and not fixed["port"]["ok"]
    assert fixed["port"]["worst"]["judged_by"] == "given"


@pytest.mark.corpus
@pytest.mark.usefixtures("corpus_dir")
def test_efficientnet_b0_at_32x32_passes_by_the_measured_noise(binary, monkeypatch):
    """timm efficientnet_b0 at 2x3x32x32 (BatchNorms over 2 values at 1x1 maps; about 30 s): the
    port differs from torch by more than the fixed 1e-9 on conv_stem.weight's gradient, within 50
    x the original's own measured noise there (as verify --candle builds it: seed 0, inputs from
    seed 1)."""
    import importlib

    monkeypatch.syspath_prepend(str(CORPUS / "timm"))
    efficientnet = importlib.import_module("timm.models.efficientnet")
    torch.manual_seed(0)
    model = efficientnet.efficientnet_b0().double().train()
    x = torch.randn(2, 3, 32, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    result = check_in_candle(model, [x], binary=binary, modes=("port",))
    port = result["port"]
    assert port["ok"], [t for t in port["tensors"] if t["status"] != "ok"][:3]
    worst = port["worst"]
    assert (worst["kind"], worst["name"], worst["judged_by"]) == ("grad", "conv_stem.weight", "noise"), worst
    assert worst["rel_to_scale"] > 1e-9 and worst["of_allowed"] < 0.1, worst
