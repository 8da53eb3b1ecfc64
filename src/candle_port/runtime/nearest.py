"""Nearest and nearest-exact resize as one ``index_select`` per axis, candle-differentiable.

candle's own ``upsample_nearest1d/2d`` refuse a backward for non-integer or non-uniform factors,
overwrite the accumulated gradient, and have no 3-D version (../shared/candle-ops.md, 2.1/2.3).
``index_select`` has a full backward (index_add), and a nearest resize is exactly a gather of
whole slices along each axis, so the result is bitwise torch's whatever the dtype.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import List, Optional

import torch

from ._layout import layout_of, to_layout
from ._recording import size_constant
from .bilinear import _OTHER_CACHES, _tracing

__all__ = ["nearest_index", "upsample_nearest_nd"]

_NEAREST_DIGIT = 128  # small integers, exact in every dtype torch's nearest kernels accept (int8 included)

_NEAREST_OPS = {
    (1, False): "upsample_nearest1d",
    (2, False): "upsample_nearest2d",
    (3, False): "upsample_nearest3d",
    (1, True): "_upsample_nearest_exact1d",
    (2, True): "_upsample_nearest_exact2d",
    (3, True): "_upsample_nearest_exact3d",
}


@lru_cache(maxsize=256)
def _nearest_index(
    in_size: int,
    out_size: int,
    scale: Optional[float],
    exact: bool,
    ndim: int,
    axis: int,
    dtype: torch.dtype,
    device: torch.device,
) -> Optional[torch.Tensor]:
    """Source index of every output sample of one axis, as ATen's CPU kernel picks it.

    ATen's float rounding of the index differs between kernels (the 4-D kernel uses
    ``nearest_idx`` from UpSample.h, with its out == in and out == 2 * in special cases; the 3-D
    and 5-D kernels use opmath-typed ``src = scale * j`` / ``max(scale * (j + 0.5) - 0.5, 0) + 0.5``
    and ``floorf``; float64 differs from float32), so rather than re-deriving every variant the
    kernel itself is asked once, on an integer ramp: ``0 .. in-1`` written as base-128 digits in
    the channels of a (1, digits, 1.., in, 1..) tensor of ``dtype`` (exact in any dtype), with
    size 1 and no scale on the other axes. The ramp is built from sizes alone; the answer is a
    constant int64 index, never part of the resized tensor's graph. None for an identity axis.
    """
    digits = 1
    while _NEAREST_DIGIT**digits < in_size:
        digits += 1
    ramp = torch.arange(in_size, dtype=torch.int64)
    probe = torch.stack([(ramp // _NEAREST_DIGIT**k) % _NEAREST_DIGIT for k in range(digits)]).to(dtype)
    shape = [1, digits] + [1] * ndim
    shape[2 + axis] = in_size
    sizes = [1] * ndim
    sizes[axis] = out_size
    scales: List[Optional[float]] = [None] * ndim
    scales[axis] = scale
    op = getattr(torch.ops.aten, _NEAREST_OPS[(ndim, exact)])
    got = op(probe.reshape(shape), sizes, *scales).reshape(digits, out_size).to(torch.int64)
    index = sum(got[k] * _NEAREST_DIGIT**k for k in range(digits))
    if in_size == out_size and bool((index == ramp).all()):
        return None  # identity: the axis is copied
    return index.to(device)


_OTHER_CACHES.append(_nearest_index)


@lru_cache(maxsize=256)
def _nearest_factor(
    in_size: int,
    out_size: int,
    scale: Optional[float],
    exact: bool,
    ndim: int,
    axis: int,
    dtype: torch.dtype,
    device: torch.device,
) -> int:
    """``s`` when ATen's source index of this axis is ``j // s`` with ``out == s * in`` (an
    integer upscale: every input slice repeated ``s`` times), else 0."""
    if out_size % in_size or out_size < 2 * in_size:
        return 0
    index = _nearest_index(in_size, out_size, scale, exact, ndim, axis, dtype, device)
    s = out_size // in_size
    ramp = torch.arange(out_size, device=index.device) // s
    return s if bool((index == ramp).all()) else 0


_OTHER_CACHES.append(_nearest_factor)


def nearest_index(
    in_size: int,
    out_size: int,
    scale: Optional[float],
    exact: bool,
    ndim: int,
    axis: int,
    dtype: torch.dtype,
    device: torch.device,
) -> Optional[torch.Tensor]:
    """Cached int64 (out,) source indices of one axis (None: unchanged); see ``_nearest_index``."""
    return size_constant(_nearest_index, in_size, out_size, scale, exact, ndim, axis, dtype, device)


def _repeat_axes(y: torch.Tensor, first: int, factors: List[int]) -> torch.Tensor:
    """``y`` with spatial axis ``k`` (at ``first + k``) repeated ``factors[k]`` times element by
    element (0: unchanged): one copy of a broadcast view, ``y[.., i, None, ..].expand(.., s, ..)``
    reshaped; its backward is the sum over the broadcast axes."""
    view, expanded, merged = [], [], []
    for d, n in enumerate(y.shape):
        k = d - first
        s = factors[k] if 0 <= k < len(factors) else 0
        view.append(n)
        expanded.append(n)
        if s:
            view.append(1)
            expanded.append(s)
            merged.append(n * s)
        else:
            merged.append(n)
    return y.reshape(view).expand(expanded).reshape(merged)


def upsample_nearest_nd(
    x: torch.Tensor, out: List[int], scales: List[Optional[float]], exact: bool
) -> torch.Tensor:
    r"""Nearest (``exact=False``) or nearest-exact resize of an (N, C, \*spatial) tensor, 3-D to 5-D.

    ``out`` and ``scales`` are the output sizes and the scales ATen sees (``1/scale_factor`` is
    used for the coordinates when a scale factor was given and not recomputed). Per axis whose
    size changes (W first), ``y = y.index_select(axis, idx)`` with ATen's source indices::

        nearest:        idx[j] = min(floor(j * scale), in - 1)
        nearest-exact:  idx[j] = min(floor((j + 0.5) * scale), in - 1)
        scale = 1 / scale_factor if given (and not recomputed) else in / out

    rounded exactly as ATen rounds them (see ``_nearest_index``). Forward is bitwise torch's
    for every dtype; backward is index_add, i.e. the sum of the output gradients that read each
    input, as ATen's. The output is channels_last (3d) when the input is, like ATen; else
    contiguous; it never aliases ``x``.

    A spatial axis other than W, upscaled by an integer ``s`` whose indices are exactly
    ``j // s`` (x2, x3, ... in every dtype that rounds them so), is not gathered: after the
    other axes, every such axis is repeated at once by one copy of a broadcast view
    (``_repeat_axes``: reshape with a size-1 axis after each, ``expand`` to ``s``, reshape),
    whose backward is a sum over the broadcast axes; measured faster than ``index_select``
    (one pass, no index_add in the backward). W is gathered on the (rows, W) view.

    In candle: compute ``idx`` on the host (u32), then ``x.index_select(&idx, axis)?`` per axis;
    an integer-factor axis: ``y.reshape(.., n, 1, ..)?.broadcast_as(.., n, s, ..)?
    .reshape(.., n * s, ..)?`` (reshape copies the broadcast view; backward sums it).
    """
    ndim = x.dim() - 2
    fmt = layout_of(x)
    channels_last = fmt != torch.contiguous_format
    # channels_last: work on the (N, *spatial, C) view, which is contiguous, so every
    # index_select moves whole C-vectors; permuting back gives the channels_last result.
    y = x.permute(0, *range(2, ndim + 2), 1) if channels_last else x
    first = 1 if channels_last else 2
    if channels_last and not (torch.is_grad_enabled() and x.requires_grad) and not _tracing():
        # Without a gradient, a channels_last input whose every changed axis is an integer
        # upscale ``j // s`` is one copy of a broadcast view (C-vectors repeated), writing the
        # output once; with a gradient W stays an index_select (see below).
        keys = [(x.shape[2 + k], out[k], scales[k], exact, ndim, k, x.dtype, x.device) for k in range(ndim)]
        moved = [nearest_index(*key) is not None for key in keys]
        reps = [size_constant(_nearest_factor, *key) if m else 0 for key, m in zip(keys, moved)]
        if any(moved) and all(r or not m for r, m in zip(reps, moved)):
            y = _repeat_axes(y, first, reps)
            return to_layout(y.permute(0, ndim + 1, *range(1, ndim + 1)), fmt)
    changed = False
    factors = [0] * ndim
    for k in reversed(range(ndim)):  # W first: on the smaller tensor when upsampling
        key = (x.shape[2 + k], out[k], scales[k], exact, ndim, k, x.dtype, x.device)
        idx = nearest_index(*key)
        if idx is None:
            continue
        changed = True
        if k < ndim - 1:
            # an integer upscale of a spatial axis other than W: repeated below, after every
            # gather (on the smaller tensor). W is always gathered: the repeat's backward would
            # sum over a size-s axis with only W (or C) after it, measured 3-4x slower than the
            # index_add of index_select (bench/runtime_speed.py --modes)
            factors[k] = size_constant(_nearest_factor, *key)
            if factors[k]:
                continue
        d = first + k
        if y.is_contiguous():
            # index_select along dim 1 of the (rows, size, inner) view: torch's index_select
            # along the last dim of a 4-D tensor was measured 5-30x slower than along dim 1 of
            # the (rows, W) view (forward and backward), and a middle dim of a 4-D/5-D tensor
            # slower than dim 1 of the 3-D view
            inner = math.prod(y.shape[d + 1 :])
            if inner == 1:
                view = y.reshape(-1, y.shape[d])
            else:
                view = y.reshape(-1, y.shape[d], inner)
            y = view.index_select(1, idx).reshape(y.shape[:d] + (out[k],) + y.shape[d + 1 :])
        else:
            y = y.index_select(d, idx)
    if not changed:
        return x.clone(memory_format=fmt)
    if any(factors):
        y = _repeat_axes(y, first, factors)
    if channels_last:
        y = y.permute(0, ndim + 1, *range(1, ndim + 1))
    return to_layout(y, fmt)

