"""3-D max, average and adaptive pooling composed of ops candle can differentiate.

candle has no 3-D pooling (../shared/candle-ops.md 3.2). These functions equal torch's in value,
indices, gradient and output memory format, and touch the input only through:

* max pools: one ``gather`` from the (N, C, D*H*W) view; which element of each window wins is
  chosen without gradient (detached ``index_select`` of the windows, ``argmax``, integer
  look-ups), with torch's rules: the first maximum in (d, h, w) window order, and a window with
  NaN yields its last NaN;
* average pools: per axis one ``index_select`` of the window elements (a padding position reads a
  concatenated zero slice) and a ``sum`` over the window, then a division by torch's divisor (a
  constant). No dense 0/1 matrices: an inf / NaN reaches only the windows that contain it.

Index tables depend on sizes and arguments only, are built on the host once per key (cached) and
carry no gradient. Arguments are checked by torch's own op on a meta tensor; what it rejects, non-
floating dtypes and windows with no element inside the input go to torch's op itself.
Imports nothing but torch.
"""

from __future__ import annotations

from functools import lru_cache
from typing import List, NamedTuple, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from .transposed_conv import _tc_constant, _tc_meta, _tc_take

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


def _vp_ints(v, default=None) -> Tuple[int, int, int]:
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        return default
    if isinstance(v, (list, tuple, torch.Size)):
        vals = tuple(int(e) for e in v)
        return vals * 3 if len(vals) == 1 else vals
    return (int(v),) * 3


class _VpTable(NamedTuple):
    flat: torch.Tensor  # int64 (P * K,): flat input index d*H*W + h*W + w of every window element
    windows: int
    size: int
    positions: torch.Tensor  # int32 (K,): 1..K, to find a window's last NaN
    base: torch.Tensor  # int64 (P,): K * arange(P)


def _vp_table(axes: List[List[List[int]]], in_sizes: Tuple[int, int, int], device) -> _VpTable:
    d = torch.tensor(axes[0], dtype=torch.int64)  # (Do, kd)
    h = torch.tensor(axes[1], dtype=torch.int64)
    w = torch.tensor(axes[2], dtype=torch.int64)
    hw = in_sizes[1] * in_sizes[2]
    t = (
        d[:, None, None, :, None, None] * hw
        + h[None, :, None, None, :, None] * in_sizes[2]
        + w[None, None, :, None, None, :]
    )  # (Do, Ho, Wo, kd, kh, kw)
    p = d.shape[0] * h.shape[0] * w.shape[0]
    k = d.shape[1] * h.shape[1] * w.shape[1]
    return _VpTable(
        t.reshape(-1).contiguous().to(device),
        p,
        k,
        torch.arange(1, k + 1, dtype=torch.int32, device=device),
        torch.arange(p, dtype=torch.int64, device=device) * k,
    )


def _vp_positions(starts: List[int], length: int, step: int, in_size: int) -> Optional[List[List[int]]]:
    """Window ``o`` reads ``starts[o] + j * step``; positions outside the input become the
    window's first (before) / last (after) in-bound position: duplicates change neither the max
    nor torch's first-maximum / last-NaN choice. None if a window has no in-bound element."""
    rows = []
    for start in starts:
        pos = [start + j * step for j in range(length)]
        inside = [q for q in pos if 0 <= q < in_size]
        if not inside:
            return None
        rows.append([inside[0] if q < 0 else inside[-1] if q >= in_size else q for q in pos])
    return rows


@lru_cache(maxsize=128)
def _vp_max_table(in_sizes, out_sizes, kernel, stride, padding, dilation, device) -> Optional[_VpTable]:
    axes = []
    for n, o, k, s, p, d in zip(in_sizes, out_sizes, kernel, stride, padding, dilation):
        rows = _vp_positions([i * s - p for i in range(o)], k, d, n)
        if rows is None:
            return None
        axes.append(rows)
    return _vp_table(axes, in_sizes, device)


def _vp_adaptive_bounds(in_size: int, out_size: int) -> List[Tuple[int, int]]:
    """ATen's adaptive windows: ``[floor(i * in / out), ceil((i + 1) * in / out))``."""
    return [((i * in_size) // out_size, -(-((i + 1) * in_size) // out_size)) for i in range(out_size)]


@lru_cache(maxsize=128)
def _vp_adaptive_max_table(in_sizes, out_sizes, device) -> _VpTable:
    axes = []
    for n, o in zip(in_sizes, out_sizes):
        bounds = _vp_adaptive_bounds(n, o)
        length = max(e - s for s, e in bounds)
        axes.append([[min(s + j, e - 1) for j in range(length)] for s, e in bounds])
    return _vp_table(axes, in_sizes, device)


def _vp_batched(x: torch.Tensor) -> Tuple[torch.Tensor, bool]:
    return (x.unsqueeze(0), True) if x.dim() == 4 else (x, False)


def _vp_format(t: torch.Tensor, meta: torch.Tensor) -> torch.Tensor:
    """``t`` in the memory format torch's output (seen on meta) has."""
    if t.dim() == 5 and meta.is_contiguous(memory_format=torch.channels_last_3d) and not meta.is_contiguous():
        return t.contiguous(memory_format=torch.channels_last_3d)
    return t


def _vp_max_apply(x: torch.Tensor, meta: torch.Tensor, table: _VpTable):
    xb, added = _vp_batched(x)
    n, c = xb.shape[0], xb.shape[1]
    p, k = table.windows, table.size
    xf = xb.reshape(n, c, -1)
    win = xf.detach().index_select(2, table.flat).reshape(n, c, p, k)
    pick = win.argmax(3, keepdim=True)  # first maximum, as torch
    value = win.gather(3, pick)
    tracing = torch._C._len_torch_dispatch_stack() > 0 or torch.compiler.is_compiling()
    if tracing or bool(value.sum().isnan()):  # torch keeps the last NaN of a window
        last_nan = (win.isnan() * table.positions).argmax(3, keepdim=True)
        pick = torch.where(value.isnan(), last_nan, pick)
    index = table.flat.index_select(0, (pick.squeeze(3) + table.base).reshape(-1)).reshape(n, c, p)
    out = xf.gather(2, index)
    shape = (n, c) + tuple(meta.shape[-3:])
    out, index = out.reshape(shape), index.reshape(shape)
    if added:
        out, index = out.squeeze(0), index.squeeze(0)
    return _vp_format(out, meta), _vp_format(index, meta)


def _vp_max(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    meta = _tc_meta(F.max_pool3d, x, kernel_size, stride, padding, dilation, ceil_mode, True)
    table = None
    if meta is not None and meta.numel() > 0 and x.is_floating_point() and x.numel() > 0:
        kernel = _vp_ints(kernel_size)
        key = (
            tuple(x.shape[-3:]),
            tuple(meta.shape[-3:]),
            kernel,
            _vp_ints(stride, kernel),
            _vp_ints(padding),
            _vp_ints(dilation),
            x.device,
        )
        table = _tc_constant(_vp_max_table, *key)
    if table is None:  # rejected, empty, integer, or a window outside the input: torch's own op
        return F.max_pool3d(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    out, index = _vp_max_apply(x, meta, table)
    return (out, index) if return_indices else out


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
    padding positions replaced by the window's first / last in-bound element). Then::

        win  = x.reshape(N, C, -1).detach().index_select(2, T.flatten()).reshape(N, C, P, K)
        pick = win.argmax(-1)                     # no gradient (last NaN if the window has one)
        idx  = T.flatten()[pick + K * arange(P)]  # integers: torch's return_indices
        out  = x.reshape(N, C, -1).gather(2, idx) # Op::Gather: its backward is torch's

    exactly :func:`candle_port.runtime.max_pool2d`'s recipe with one more axis in the table.
    """
    return _vp_max(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


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


def _vp_adaptive_max(x, output_size, return_indices):
    meta = _tc_meta(F.adaptive_max_pool3d, x, output_size, True)
    if meta is None or meta.numel() == 0 or x.numel() == 0 or not x.is_floating_point():
        return F.adaptive_max_pool3d(x, output_size, return_indices)
    table = _tc_constant(_vp_adaptive_max_table, tuple(x.shape[-3:]), tuple(meta.shape[-3:]), x.device)
    out, index = _vp_max_apply(x, meta, table)
    return (out, index) if return_indices else out


def adaptive_max_pool3d(input: torch.Tensor, output_size, return_indices: bool = False):
    r"""``F.adaptive_max_pool3d`` for candle: ATen's adaptive windows ``[floor(i*D/D_out),
    ceil((i+1)*D/D_out))`` per axis (shorter windows padded by repeating their last element),
    then :func:`max_pool3d`'s composition; values, indices and gradient equal torch's."""
    return _vp_adaptive_max(input, output_size, return_indices)


def adaptive_max_pool3d_with_indices(input: torch.Tensor, output_size, return_indices: bool = False):
    """``F.adaptive_max_pool3d_with_indices``: (values, indices) always."""
    return _vp_adaptive_max(input, output_size, True)


# ---------------------------------------------------------------------------------------------
# Average pooling: per-axis window sums by index_select + sum.


class _VpAxis(NamedTuple):
    rows: Tuple[int, ...]  # (O * K) input positions, in_size for "outside the window"
    windows: int  # O
    length: int  # K
    count: Tuple[int, ...]  # (O,) torch's divisor along this axis


@lru_cache(maxsize=256)
def _vp_avg_axis(in_size: int, out_size: int, kernel: int, stride: int, padding: int, include_pad: bool) -> _VpAxis:
    rows, counts = [], []
    for o in range(out_size):
        start = o * stride - padding
        end = min(start + kernel, in_size + padding)
        lo, hi = max(start, 0), min(end, in_size)
        rows += [q if lo <= q < hi else in_size for q in range(start, start + kernel)]
        counts.append(end - start if include_pad else hi - lo)
    return _VpAxis(tuple(rows), out_size, kernel, tuple(counts))


@lru_cache(maxsize=256)
def _vp_adaptive_axis(in_size: int, out_size: int) -> _VpAxis:
    bounds = _vp_adaptive_bounds(in_size, out_size)
    length = max(e - s for s, e in bounds)
    rows = []
    for s, e in bounds:
        rows += [s + j if s + j < e else in_size for j in range(length)]
    return _VpAxis(tuple(rows), out_size, length, tuple(e - s for s, e in bounds))


@lru_cache(maxsize=128)
def _vp_divisor(axes: Tuple[_VpAxis, ...], override: Optional[int], dtype, device) -> torch.Tensor:
    if override is not None:
        return torch.full((), float(override), dtype=dtype, device=device)
    c = [torch.tensor(a.count, dtype=dtype, device=device) for a in axes]
    return c[0][:, None, None] * c[1][None, :, None] * c[2][None, None, :]


def _vp_avg_apply(x: torch.Tensor, meta: torch.Tensor, axes: Tuple[_VpAxis, ...], override: Optional[int]):
    xb, added = _vp_batched(x)
    dtype = xb.dtype
    if dtype in (torch.float16, torch.bfloat16):
        xb = xb.to(torch.float32)  # ATen accumulates in float32 for these
    y = xb
    for i, axis in enumerate(axes):
        dim = 2 + i
        if axis.length == 1 and axis.rows == tuple(range(y.shape[dim])):
            continue
        y = _tc_take(y, dim, axis.rows)
        shape = y.shape[:dim] + (axis.windows, axis.length) + y.shape[dim + 1:]
        y = y.reshape(shape).sum(dim + 1)
    y = y / _tc_constant(_vp_divisor, axes, override, y.dtype, y.device)
    if y.dtype != dtype:
        y = y.to(dtype)
    if added:
        y = y.squeeze(0)
    return _vp_format(y, meta)


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

    Window sums one axis at a time: ``index_select`` of the K window positions of every output
    position (a padding position reads a concatenated zero slice) and ``sum`` over K; then the
    division by ATen's divisor (``divisor_override``, else the product over the axes of the
    window clipped to the padded input with count_include_pad, or of its in-bound part). The same
    in candle: ``cat`` a zero slice, ``index_select(&rows, dim)``, ``reshape``, ``sum(dim + 1)``
    per axis, ``broadcast_div`` by the constant divisor.
    """
    args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    meta = _tc_meta(F.avg_pool3d, input, *args)
    if meta is None or meta.numel() == 0 or input.numel() == 0 or not input.is_floating_point():
        return F.avg_pool3d(input, *args)
    kernel = _vp_ints(kernel_size)
    strides = _vp_ints(stride, kernel)
    pads = _vp_ints(padding)
    axes = tuple(
        _tc_constant(_vp_avg_axis, n, o, k, s, p, bool(count_include_pad))
        for n, o, k, s, p in zip(input.shape[-3:], meta.shape[-3:], kernel, strides, pads)
    )
    return _vp_avg_apply(input, meta, axes, None if divisor_override is None else int(divisor_override))


def adaptive_avg_pool3d(input: torch.Tensor, output_size) -> torch.Tensor:
    r"""``F.adaptive_avg_pool3d`` for candle: ATen's adaptive windows per axis, summed by
    ``index_select`` + ``sum`` (shorter windows padded with the zero slice), divided by the
    window sizes; as :func:`avg_pool3d`."""
    meta = _tc_meta(F.adaptive_avg_pool3d, input, output_size)
    if meta is None or meta.numel() == 0 or input.numel() == 0 or not input.is_floating_point():
        return F.adaptive_avg_pool3d(input, output_size)
    axes = tuple(
        _tc_constant(_vp_adaptive_axis, n, o) for n, o in zip(input.shape[-3:], meta.shape[-3:])
    )
    return _vp_avg_apply(input, meta, axes, None)


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
