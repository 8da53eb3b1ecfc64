"""``mode="area"`` (adaptive average pooling) as one averaging matrix per axis, candle-differentiable.

candle's ``avg_pool2d`` trains only when the kernel equals the stride and divides the size
(../shared/candle-ops.md 2.1, 2.3); adaptive windows overlap or vary in width. The window mean
is separable, so per axis a constant (out, in) matrix of ``1 / width`` entries and a matmul
(backward: matmul) give the same numbers.
"""

from __future__ import annotations

from functools import lru_cache
from typing import List

import torch

from ._coords import compute_dtype
from ._layout import layout_of, to_layout
from .bilinear import _OTHER_CACHES, _constants, apply_matrix

__all__ = ["area_matrix", "resize_area"]


@lru_cache(maxsize=256)
def _area_matrix(in_size: int, out_size: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    j = torch.arange(out_size, dtype=torch.int64)
    start = (j * in_size) // out_size
    end = ((j + 1) * in_size + out_size - 1) // out_size
    cols = torch.arange(in_size, dtype=torch.int64)
    inside = (cols[None, :] >= start[:, None]) & (cols[None, :] < end[:, None])
    width = (end - start).to(torch.float64)
    return (inside.to(torch.float64) / width[:, None]).to(dtype).to(device)


_OTHER_CACHES.append(_area_matrix)


def area_matrix(in_size: int, out_size: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """(out, in): row j averages inputs ``[floor(j*in/out), ceil((j+1)*in/out))`` (ATen's windows)."""
    return _constants(_area_matrix, in_size, out_size, dtype, device)


def resize_area(x: torch.Tensor, out: List[int]) -> torch.Tensor:
    r"""``F.interpolate(x, size=out, mode="area")``, i.e. ``adaptive_avg_pool{1,2,3}d(x, out)``.

    (N, C, \*in) -> (N, C, \*out) for 1 to 3 spatial axes. Each axis whose size changes is
    averaged by ``area_matrix`` (one matmul), last axis first. ATen sums each window and divides
    once; the separable product of per-axis means differs only by rounding (float32 <= 1e-6,
    float64 <= 1e-12). float16 / bfloat16 are computed in float32 and rounded once. Layout:
    channels_last for a channels_last 4-D input, contiguous otherwise (``adaptive_avg_pool3d``
    returns contiguous even for channels_last_3d input).

    In candle: ``m.broadcast_matmul(&x)`` per axis with the uploaded (out, in) matrix ``m``.
    """
    fmt = layout_of(x) if x.dim() == 4 else torch.contiguous_format
    orig = x.dtype
    cdt = compute_dtype(orig)
    y = x.to(cdt) if cdt != orig else x
    for k in reversed(range(x.dim() - 2)):
        if x.shape[2 + k] != out[k]:
            y = apply_matrix(y, 2 + k, area_matrix(x.shape[2 + k], out[k], cdt, x.device))
    if y is x:
        return x.clone(memory_format=fmt)
    if y.dtype != orig:
        y = y.to(orig)
    return to_layout(y, fmt)
