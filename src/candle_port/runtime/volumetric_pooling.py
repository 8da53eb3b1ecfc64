"""3-D max, average and adaptive pooling composed of ops candle can differentiate.

candle has no 3-D pooling (../shared/candle-ops.md 3.2). These functions are
:mod:`candle_port.runtime.pooling`'s n-D implementation with three spatial axes (one
implementation for 1-D, 2-D and 3-D): values, indices, gradient and output strides equal to
torch's, and the input is touched only through:

* max pools: one ``gather`` from the channels-last (N, D*H*W, C) view; which element of each
  window wins is chosen without gradient (detached windows, ``amax``, the first element equal to
  it, integer look-ups), with torch's rules: the first maximum in (d, h, w) window order, and a
  window with NaN yields its last NaN. Contiguous input outside tracing (``max_pool3d``) chooses
  by a 2-D max pool of every depth slice, then the depth windows, and gathers from the
  (N, C, D*H*W) view (``_pool3d_slices``);
* average pools: per axis a GEMM with the 0/1 window matrix, then a division by torch's divisor
  (a constant); an input holding inf / NaN sums each window's own elements instead (taps), so a
  non-finite value reaches only the windows that contain it.

Index tables and matrices depend on sizes and arguments only, are built on the host once per key
(cached) and carry no gradient. Arguments are checked by torch's own op on a meta tensor; what it
rejects, non-floating dtypes and windows with no element inside the input go to torch's op
itself. Imports nothing but torch.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import torch
import torch.nn.functional as F
from torch import nn

from ._dispatch import use_native
from ._pool3d_slices import max_by_slices, pool_windows
from .pooling import (
    _POOL_MAX_WITH_INDICES,
    _pool_adaptive_max,
    _pool_avg,
    _pool_adaptive_avg,
    _pool_ints,
    _pool_max,
    _pool_meta,
    max_pool2d,
)

__all__ = [
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool3d",
    "AvgPool3d",
    "MaxPool3d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "avg_pool3d",
    "max_pool3d",
    "max_pool3d_with_indices",
]

_VpArg = Union[int, Sequence[int]]


def max_pool3d(
    input: torch.Tensor,
    kernel_size: _VpArg,
    stride: Optional[_VpArg] = None,
    padding: _VpArg = 0,
    dilation: _VpArg = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    r"""``F.max_pool3d`` (same signature, values, indices, gradient) for candle.

    Input (N, C, D, H, W) or (C, D, H, W). A host-built table ``T`` (P, K) holds the flat index
    ``d*H*W + h*W + w`` of each element of each output position's window (K = k_d k_h k_w;
    padding positions replaced by the window's first / last in-bound element). Then, on the
    channels-last view ``xv`` (N, D*H*W, C) of the input::

        win  = xv.detach().index_select(1, T.flatten()).reshape(N, P, K, C)
        top  = win.amax(2)                          # no gradient
        pick = first k with win[.., k, ..] == top   # last NaN if the window has one
        idx  = T.flatten()[pick + K * arange(P)]    # integers: torch's return_indices
        out  = xv.gather(1, idx)                    # Op::Gather: its backward is torch's

    exactly :func:`candle_port.runtime.max_pool2d`'s recipe with one more axis in the table.
    """
    return _vp_max(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _vp_max(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    """By 2-D slices then depth windows (``_pool3d_slices``) where that applies, else pooling.py's
    table path (tracing, other layouts, what torch rejects)."""
    if use_native(x):  # plain eager mode: torch's kernel (``_dispatch``)
        return F.max_pool3d(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    if isinstance(x, torch.Tensor) and x.dim() in (4, 5) and x.is_floating_point():
        meta = _pool_meta(_POOL_MAX_WITH_INDICES[3], x, kernel_size, stride, padding, dilation, ceil_mode, True)
        if meta is not None and meta.numel() > 0:
            k = _pool_ints(kernel_size, 3)
            s, p, d = _pool_ints(stride, 3, k), _pool_ints(padding, 3), _pool_ints(dilation, 3)
            windows = pool_windows(x.shape[-3], meta.shape[-3], k[0], s[0], p[0], d[0])
            got = max_by_slices(
                x, meta, windows, lambda x2: max_pool2d(x2, k[1:], s[1:], p[1:], d[1:], ceil_mode, True), return_indices
            )
            if got is not None:
                return got
    return _pool_max(3, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d_with_indices(
    input: torch.Tensor,
    kernel_size: _VpArg,
    stride: Optional[_VpArg] = None,
    padding: _VpArg = 0,
    dilation: _VpArg = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """``F.max_pool3d_with_indices``: :func:`max_pool3d` returning (values, indices) always."""
    return _vp_max(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool3d(input: torch.Tensor, output_size, return_indices: bool = False):
    r"""``F.adaptive_max_pool3d`` for candle: ATen's adaptive windows ``[floor(i*D/D_out),
    ceil((i+1)*D/D_out))`` per axis (shorter windows padded by repeating their last element),
    then :func:`max_pool3d`'s composition; values, indices and gradient equal torch's."""
    return _pool_adaptive_max(3, input, output_size, return_indices)


def adaptive_max_pool3d_with_indices(input: torch.Tensor, output_size, return_indices: bool = False):
    """``F.adaptive_max_pool3d_with_indices``: (values, indices) always."""
    return _pool_adaptive_max(3, input, output_size, True)


def avg_pool3d(
    input: torch.Tensor,
    kernel_size: _VpArg,
    stride: Optional[_VpArg] = None,
    padding: _VpArg = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: Optional[int] = None,
) -> torch.Tensor:
    r"""``F.avg_pool3d`` (same signature, output, gradient) for candle.

    :func:`candle_port.runtime.avg_pool2d`'s composition with three axes: per axis a GEMM with
    the (out, in) 0/1 window matrix (``Op::Matmul``), then the division by ATen's divisor
    (``divisor_override``, else the product over the axes of the window clipped to the padded
    input with count_include_pad, or of its in-bound part). An input holding inf / NaN sums each
    window's own elements instead (``index_select`` taps and ``add``), as torch's kernel does.
    """
    args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    return _pool_avg(3, F.avg_pool3d, input, args)


def adaptive_avg_pool3d(input: torch.Tensor, output_size) -> torch.Tensor:
    r"""``F.adaptive_avg_pool3d`` for candle: ATen's adaptive windows per axis, summed by a
    GEMM with the 0/1 window matrix (taps for inf / NaN input) and divided by the window sizes;
    as :func:`avg_pool3d`."""
    return _pool_adaptive_avg(3, F.adaptive_avg_pool3d, input, output_size)


class MaxPool3d(nn.MaxPool3d):
    """``torch.nn.MaxPool3d`` whose forward is :func:`max_pool3d` (candle-trainable)."""

    def forward(self, input: torch.Tensor):
        return max_pool3d(
            input, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices,
        )


class AvgPool3d(nn.AvgPool3d):
    """``torch.nn.AvgPool3d`` whose forward is :func:`avg_pool3d` (candle-trainable)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return avg_pool3d(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )


class AdaptiveAvgPool3d(nn.AdaptiveAvgPool3d):
    """``torch.nn.AdaptiveAvgPool3d`` whose forward is :func:`adaptive_avg_pool3d`."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(nn.AdaptiveMaxPool3d):
    """``torch.nn.AdaptiveMaxPool3d`` whose forward is :func:`adaptive_max_pool3d`."""

    def forward(self, input: torch.Tensor):
        return adaptive_max_pool3d(input, self.output_size, self.return_indices)
