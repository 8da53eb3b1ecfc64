"""Bicubic resize (plain and antialiased) as two dense matrix products, candle-differentiable.

candle has no bicubic op at all (an open PR's backward bails; ../shared/candle-ops.md 3.1). Per
axis the resize is linear in the input, so it is one (out, in) matrix built from sizes alone
(``_coords.cubic_matrix`` / ``aa_matrix(cubic=True)``) and ``y = A_h @ x @ A_w^T``, whose
backward (matmul) candle has.
"""

from __future__ import annotations

from functools import lru_cache
from typing import List, Optional

import torch

from ._coords import aa_matrix, compute_dtype, cubic_matrix, cubic_taps
from ._taps import Taps, apply_taps, finite_input
from ._layout import layout_of, to_layout
from ._recording import size_constant
from .bilinear import _OTHER_CACHES, _aa_taps, apply_matrix

__all__ = ["upsample_bicubic2d"]


@lru_cache(maxsize=256)
def _bicubic_axis(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale: Optional[float],
    antialias: bool,
    dtype: torch.dtype,
    device: torch.device,
) -> torch.Tensor:
    if antialias:
        return aa_matrix(in_size, out_size, align_corners, scale, dtype, device, cubic=True)
    return cubic_matrix(in_size, out_size, align_corners, scale, dtype, device)


_OTHER_CACHES.append(_bicubic_axis)


def upsample_bicubic2d(
    x: torch.Tensor,
    out: List[int],
    scales: List[Optional[float]],
    align_corners: bool,
    antialias: bool = False,
) -> torch.Tensor:
    r"""Bicubic resize of an (N, C, H, W) float tensor to (N, C, out[0], out[1]).

    Equals ``F.interpolate(x, ..., mode="bicubic", align_corners=..., antialias=...)`` to float
    rounding (float32 <= 1e-6 for inputs in [-1, 1], float64 <= 1e-12), in value, gradient and
    layout. ``scales`` are the scales ATen sees (ignored with align_corners, as ATen does).

    Per axis, ``A[j, clamp(i - 1 + k, 0, in - 1)] += K(k - 1 - t)``, k = 0..3, with
    ``src = scale * (j + 0.5) - 0.5`` (align_corners: ``scale * j``; no clamp at 0),
    ``i = floor(src)``, ``t = src - i`` and Keys' cubic kernel ``K`` with ``A = -0.75``
    (``_coords.cubic_matrix``). Taps past a border land on the edge sample. Unlike bilinear, an
    axis whose size does not change is still resampled when a scale factor other than 1 is
    given (ATen does so). ``antialias=True``: PIL's filter (``a = -0.5``) with support
    ``2 * max(scale, 1)``, normalised per row (``_coords.aa_matrix``); float32 / float64 only.

    Computed in float32 for float16 / bfloat16 (ATen's opmath) and rounded once at the end.
    W is resampled first, then H: ``y = A_h @ (x @ A_w^T)`` (mm / bmm).

    In candle: upload ``a_h`` (h_out, h), ``a_w`` (w_out, w), then
    ``a_h.broadcast_matmul(&x.broadcast_matmul(&a_w.t()?)?)?``.
    """
    fmt = layout_of(x)
    if align_corners:
        scales = [None, None]
    orig = x.dtype
    cdt = compute_dtype(orig)
    y = x.to(cdt) if cdt != orig else x
    finite = finite_input(x)
    for k in (1, 0):
        key = (x.shape[2 + k], out[k], bool(align_corners), scales[k], antialias, cdt, x.device)
        if finite:
            y = apply_matrix(y, 2 + k, size_constant(_bicubic_axis, *key))
        elif antialias:  # inf / NaN: only the taps ATen reads (see _taps)
            if key[0] != key[1]:
                y = apply_taps(y, 2 + k, _aa_taps(*key[:4], cdt, x.device, cubic=True))
        else:
            index, coeffs = cubic_taps(*key[:4], cdt)
            y = apply_taps(y, 2 + k, Taps(index.to(x.device), coeffs.to(x.device), False))
    if y.dtype != orig:
        y = y.to(orig)
    return to_layout(y, fmt)
