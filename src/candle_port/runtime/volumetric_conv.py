"""3-D convolution and transposed convolution as one 2-D convolution over depth windows.

candle has no 3-D convolution (../shared/candle-ops.md 3.3). With ``x`` (N, C, D, H, W) and a
weight (C_out, C/g, k_d, k_h, k_w)::

    conv3d(x, w)[n, :, o] = sum_j conv2d(x[n, :, o * s_d - p_d + j * d_d], w[:, :, j])

and the sum over the k_d depth taps is folded into the channels of a single conv2d: one
``index_select`` on the depth axis gathers, for every output depth ``o``, its k_d input slices
(a padding slice reads a concatenated zero slice), the (N * D_out, g * k_d * C/g, H, W) stack goes
through ``conv2d(groups=g)`` with the weight laid out (C_out, k_d * C/g, k_h, k_w), and the result
is reshaped back to (N, C_out, D_out, H_out, W_out). The conv2d is called the way candle
differentiates it (:func:`candle_port.runtime.transposed_conv._tc_conv2d`). Transposed 3-D
convolution is this on the zero-dilated, padded input with the flipped weight, or with a stride
and dilation 1 one such convolution per output residue (as the 1-D / 2-D ones in
transposed_conv.py). Values and gradients (input, weight, bias) equal torch's to float
rounding; inputs enter only products with weights, never a dense 0/1 matrix, so inf / NaN reach
only the outputs they reach in torch. Imports nothing but torch.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from ._dispatch import use_native
from .transposed_conv import (
    _tc_blocks,
    _tc_channels_last,
    _tc_conv2d,
    _tc_dense,
    _tc_flip_weight,
    _tc_ints,
    _tc_polyphase,
    _tc_prepare,
    _tc_take,
    _tc_valid,
)

__all__ = ["Conv3d", "ConvTranspose3d", "conv3d", "conv_transpose3d"]

_VcArg = Union[int, Sequence[int]]


def _vc_depth_rows(depth: int, out: int, k: int, stride: int, left: int, dilation: int) -> List[int]:
    rows = []
    for o in range(out):
        for j in range(k):
            src = o * stride - left + j * dilation
            rows.append(src if 0 <= src < depth else depth)
    return rows


def _vc_conv3d(x, weight, bias, stride, pads, dilation, groups):
    """conv3d of batched ``x`` with per-side ``pads`` (3 (left, right) pairs)."""
    n, c, depth, h, w = x.shape
    cout, cg, kd, kh, kw = weight.shape
    left, right = pads[0]
    dout = (depth + left + right - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    xt = x.permute(0, 2, 1, 3, 4)  # (N, D, C, H, W): a view
    sel = _tc_take(xt, 1, _vc_depth_rows(depth, dout, kd, stride[0], left, dilation[0]))
    sel = sel.reshape(n * dout, kd, groups, cg, h, w)
    if groups > 1:
        sel = sel.transpose(1, 2)
    sel = sel.reshape(n * dout, groups * kd * cg, h, w)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(cout, kd * cg, kh, kw)
    y = _tc_conv2d(sel, w2, bias, stride[1:], pads[1:], dilation[1:], groups)
    y = y.reshape(n, dout, cout, y.shape[2], y.shape[3])
    return y.permute(0, 2, 1, 3, 4).contiguous()


def _vc_conv3d_plain(x, weight, bias, groups):
    """Stride 1, no padding, no dilation: one residue of a strided transposed 3-D convolution."""
    return _vc_conv3d(x, weight, bias, (1, 1, 1), ((0, 0),) * 3, (1, 1, 1), groups)


def _vc_pads(padding, kernel, dilation) -> Optional[Tuple[Tuple[int, int], ...]]:
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * 3
        if padding == "same":
            pads = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            return tuple(pads)
        return None
    p = _tc_ints(padding, 3)
    if len(p) != 3 or any(v < 0 for v in p):
        return None
    return tuple((v, v) for v in p)


def conv3d(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    stride: _VcArg = 1,
    padding: Union[_VcArg, str] = 0,
    dilation: _VcArg = 1,
    groups: int = 1,
) -> torch.Tensor:
    r"""``F.conv3d`` (same signature, output, gradients; padding ints, ``'same'`` or ``'valid'``)
    as one ``index_select`` over depth and one ``conv2d``, for candle.

    The same in candle (Rust), for ``x`` (n, c, d, h, w), ``wt`` (co, c/g, kd, kh, kw)::

        let xt = x.permute((0, 2, 1, 3, 4))?;                                 // (n, d, c, h, w)
        let xz = Tensor::cat(&[&xt, &xt.narrow(1, 0, 1)?.zeros_like()?], 1)?; // zero slice at d
        let sel = xz.index_select(&rows, 1)?                                  // rows: (do * kd) host table
            .reshape((n * d_out, kd, g, c / g, h, w))?.transpose(1, 2)?
            .reshape((n * d_out, g * kd * (c / g), h, w))?;
        let w2 = wt.permute((0, 2, 1, 3, 4))?.reshape((co, kd * (c / g), kh, kw))?;
        let y = sel.conv2d(&w2, p_h, s_h, d_h, g)?                             // Op::Conv2D
            .reshape((n, d_out, co, h_out, w_out))?.permute((0, 2, 1, 3, 4))?;
    """
    if use_native(input):  # plain eager mode: torch's kernel (``_dispatch``)
        return F.conv3d(input, weight, bias, stride, padding, dilation, groups)
    try:
        s, d = _tc_ints(stride, 3), _tc_ints(dilation, 3)
        ok = (
            input.is_floating_point()
            and input.dim() in (4, 5)
            and weight.dim() == 5
            and input.numel() > 0
            and weight.numel() > 0
            and input.dtype == weight.dtype
            and input.device == weight.device
            and len(s) == len(d) == 3
            and all(v > 0 for v in s + d)
            and groups >= 1
            and weight.shape[0] % groups == 0
            and input.shape[-4] == weight.shape[1] * groups
            and (bias is None or (bias.dim() == 1 and bias.shape[0] == weight.shape[0]))
            and not (padding == "same" and any(v != 1 for v in s))
        )
        pads = _vc_pads(padding, weight.shape[2:], d) if ok else None
    except (TypeError, ValueError):
        ok, pads = False, None
    if ok and pads is not None:
        ok = all(
            n + pl + pr >= dl * (k - 1) + 1 for n, (pl, pr), dl, k in zip(input.shape[-3:], pads, d, weight.shape[2:])
        )
    if not ok or pads is None:
        return F.conv3d(input, weight, bias, stride, padding, dilation, groups)  # torch raises or computes
    batched = input.dim() == 5
    x = input if batched else input.unsqueeze(0)
    y = _vc_conv3d(x, weight, bias, s, pads, d, groups)
    return y if batched else y.squeeze(0)


def conv_transpose3d(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    stride: _VcArg = 1,
    padding: _VcArg = 0,
    output_padding: _VcArg = 0,
    groups: int = 1,
    dilation: _VcArg = 1,
) -> torch.Tensor:
    r"""``F.conv_transpose3d`` for candle: the input zero-dilated and padded by one
    ``index_select`` per axis (as :func:`conv_transpose2d`), then :func:`conv3d`'s composition
    with stride 1, dilation ``d`` and the weight's channels swapped per group and its three kernel
    axes reversed. With dilation 1 and a stride above 1, one such stride-1 conv3d per output
    residue (its taps of the kernel only, no inserted zeros), interleaved by ``stack`` and a
    permuted reshape (see transposed_conv.py)."""
    args = (input, weight, bias, stride, padding, output_padding, groups, dilation)
    if use_native(input):  # plain eager mode: torch's kernel (``_dispatch``)
        return F.conv_transpose3d(*args)
    try:
        s, p, op, d = (_tc_ints(v, 3) for v in (stride, padding, output_padding, dilation))
        ok = (
            input.is_floating_point()
            and input.numel() > 0
            and len(s) == len(p) == len(op) == len(d) == 3
            and _tc_valid(3, input, weight, bias, s, p, op, d, groups)
        )
    except (TypeError, ValueError):
        ok = False
    if ok:
        sizes, k = input.shape[-3:], weight.shape[2:]
        ok = all((n - 1) * st - 2 * pd + dl * (kk - 1) + o + 1 > 0 for n, st, pd, dl, kk, o in zip(sizes, s, p, d, k, op))
    if not ok:
        return F.conv_transpose3d(*args)  # torch raises, or computes what needs no composition
    batched = input.dim() == 5
    x = input if batched else input.unsqueeze(0)
    if tuple(weight.shape[2:]) == s and not any(p + op) and all(v == 1 for v in d):
        y = _tc_blocks(x, weight, bias, groups, 3)  # kernel == stride: one matmul
        return y if batched else y.squeeze(0)
    y = _tc_polyphase(x, weight, bias, s, p, op, d, groups, 3, _vc_conv3d_plain)
    if y is not None:
        return y if batched else y.squeeze(0)
    cl = _tc_channels_last(x, s, op)
    x = _tc_prepare(x, weight, s, p, op, d, 3)
    w = _tc_flip_weight(weight, groups, 3)
    y = _tc_dense(_vc_conv3d(x, w, bias, (1, 1, 1), ((0, 0),) * 3, d, groups), cl)
    return y if batched else y.squeeze(0)


def _vc_pad_rows(n: int, left: int, right: int, mode: str) -> List[int]:
    rows = []
    for q in range(-left, n + right):
        if mode == "replicate":
            rows.append(min(max(q, 0), n - 1))
        elif mode == "circular":
            rows.append(q % n)
        else:  # reflect, without repeating the edge
            period = 2 * (n - 1)
            r = abs(q) % period if period else 0
            rows.append(period - r if r >= n else r)
    return rows


def _vc_pad(x: torch.Tensor, pad: Sequence[int], mode: str) -> torch.Tensor:
    """``F.pad(x, pad, mode)`` for reflect / replicate / circular as one ``index_select`` per
    padded axis (``pad`` in F.pad's order: last axis first)."""
    for i in range(len(pad) // 2):
        left, right = int(pad[2 * i]), int(pad[2 * i + 1])
        if left or right:
            dim = x.dim() - 1 - i
            x = _tc_take(x, dim, _vc_pad_rows(x.shape[dim], left, right, mode))
    return x


class Conv3d(nn.Conv3d):
    """``torch.nn.Conv3d`` whose forward is :func:`conv3d` (same state_dict; every padding_mode,
    the non-zero ones as index_select)."""

    def _conv_forward(self, input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]):
        if self.padding_mode != "zeros":
            if self.padding_mode not in ("reflect", "replicate", "circular") or input.dim() not in (4, 5):
                return super()._conv_forward(input, weight, bias)
            return conv3d(
                _vc_pad(input, self._reversed_padding_repeated_twice, self.padding_mode),
                weight, bias, self.stride, 0, self.dilation, self.groups,
            )
        return conv3d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose3d(nn.ConvTranspose3d):
    """``torch.nn.ConvTranspose3d`` whose forward is :func:`conv_transpose3d` (same state_dict)."""

    def forward(self, input: torch.Tensor, output_size: Optional[List[int]] = None) -> torch.Tensor:
        if self.padding_mode != "zeros":
            raise ValueError("Only `zeros` padding mode is supported for ConvTranspose3d")
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size, 3, self.dilation
        )
        return conv_transpose3d(
            input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation
        )
