"""Source indices and weights of linear interpolation along one axis, computed as ATen's CPU
kernels compute them (``aten/src/ATen/native/UpSample.h``).

Everything here builds small 1-D tensors that carry no gradient; they depend only on sizes,
scales and dtypes, never on the values of the tensor being resized.

ATen details reproduced (each one was checked against torch 2.13 CPU, see the tests):

* The arithmetic type is ``opmath`` of the input dtype: float32 for float16 / bfloat16 /
  float32, float64 for float64.
* ``align_corners=False``: ``src = scale * (dst + 0.5) - 0.5`` is rounded once (the kernels are
  compiled with FMA contraction), then clamped at 0. ``align_corners=True``: ``src = scale * dst``.
* The floor of ``src`` is taken with ``floorf``, i.e. after rounding ``src`` to float32, even for
  float64 input; the weight ``src - i0`` is then clamped to [0, 1].
* An axis whose output size equals its input size is copied unchanged, whatever the scale.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import torch

__all__ = [
    "AxisPlan",
    "aa_matrix",
    "aa_weights",
    "axis_plan",
    "compute_dtype",
    "cubic_matrix",
    "cubic_taps",
    "source_coords",
]

_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitter for float64


class AxisPlan(NamedTuple):
    """Where each output sample of one axis reads from: ``out[j] = w0[j]*x[i0[j]] + w1[j]*x[i1[j]]``."""

    i0: torch.Tensor  # int64, (out,)
    i1: torch.Tensor  # int64, (out,)
    w0: torch.Tensor  # compute dtype, (out,)
    w1: torch.Tensor  # compute dtype, (out,)
    identity: bool


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """ATen's opmath type: float64 stays float64, every other float type computes in float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _fma_minus_half(scale: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """``scale * d - 0.5`` rounded once, in float64 (error-free product and sum, Dekker/Knuth)."""
    p = scale * d
    c = _SPLIT * scale
    sh = c - (c - scale)
    sl = scale - sh
    c = _SPLIT * d
    dh = c - (c - d)
    dl = d - dh
    e = ((sh * dh - p) + sh * dl + sl * dh) + sl * dl  # p + e == scale * d exactly
    h = p - 0.5
    bb = h - p
    lo = (p - (h - bb)) + (-0.5 - bb)  # h + lo == p - 0.5 exactly
    return h + (lo + e)


def axis_scale(
    in_size: int, out_size: int, align_corners: bool, scale_factor: Optional[float]
) -> float:
    """ATen's ``area_pixel_compute_scale`` in float64 (rounded to the compute dtype by the caller)."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if scale_factor is not None and scale_factor > 0:
        return 1.0 / scale_factor
    return float("nan")  # in/out, computed in the compute dtype by the caller


def source_coords(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale_factor: Optional[float],
    dtype: torch.dtype,
) -> torch.Tensor:
    """ATen's ``area_pixel_compute_source_index`` for every output index, before any clamp.

    ``scale * j`` (align_corners) or ``scale * (j + 0.5) - 0.5`` rounded once (fused), in
    ``dtype``; linear modes clamp the result at 0 afterwards, cubic does not."""
    j = torch.arange(out_size, dtype=torch.float64)
    if align_corners:
        if out_size > 1:
            scale = torch.tensor(float(in_size - 1), dtype=dtype) / (out_size - 1)
        else:
            scale = torch.zeros((), dtype=dtype)
        return scale * j.to(dtype)
    if scale_factor is not None and scale_factor > 0:
        scale = torch.tensor(1.0 / scale_factor, dtype=torch.float64).to(dtype)
    else:
        scale = torch.tensor(float(in_size), dtype=dtype) / out_size
    # float32 operands multiply exactly in float64 and the sum is exact too, so one rounding
    # to float32 afterwards is the fused result; float64 needs the error-free version.
    if dtype == torch.float64:
        return _fma_minus_half(scale, j + 0.5)
    return (scale.double() * (j + 0.5) - 0.5).to(dtype)


def axis_plan(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale_factor: Optional[float],
    dtype: torch.dtype,
    device: torch.device,
) -> AxisPlan:
    """Indices and weights for one axis; ``dtype`` is the compute dtype (float32 or float64)."""
    if in_size == out_size:
        idx = torch.arange(out_size, device=device)
        one = torch.ones(out_size, dtype=dtype, device=device)
        return AxisPlan(idx, idx, one, torch.zeros_like(one), True)
    src = source_coords(in_size, out_size, align_corners, scale_factor, dtype).clamp_min(0)
    i0 = src.to(torch.float32).floor().to(torch.int64).clamp_max(in_size - 1)
    w1 = (src - i0.to(dtype)).clamp(0, 1)
    w0 = 1 - w1
    i1 = torch.where(i0 < in_size - 1, i0 + 1, i0)
    return AxisPlan(i0.to(device), i1.to(device), w0.to(device), w1.to(device), False)


def aa_matrix(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale_factor: Optional[float],
    dtype: torch.dtype,
    device: torch.device,
    cubic: bool = False,
) -> torch.Tensor:
    """The dense (out, in) matrix of antialiased linear (or, with ``cubic``, bicubic) resizing.

    ATen's ``_upsample_bilinear2d_aa`` (the PIL algorithm), computed in ``dtype`` (float32 or
    float64) with ATen's roundings::

        scale   = as for plain bilinear ((in-1)/(out-1) with align_corners, else 1/scale_factor
                  or in/out); 0 when align_corners and out == 1
        support = scale if scale >= 1 else 1            (triangle of half-width 1, widened by scale)
        inv     = 1/scale if scale >= 1 else 1
        center  = scale * (j + 0.5)                     (rounded to dtype)
        xmin    = max(trunc((center - support) + 0.5), 0)
        xsize   = clamp(min(trunc((center + support) + 0.5), in) - xmin, 0, 2*ceil(support) + 1)
        w[k]    = max(0, 1 - |(xmin + k - center + 0.5) * inv|)       for k < xsize
        A[j, xmin + k] = w[k] / sum(w)                  (sum accumulated in order, in dtype;
                                                         left unnormalised when the sum is 0)

    ``cubic=True`` is ``_upsample_bicubic2d_aa``: the same with support ``2 * max(scale, 1)`` and
    PIL's cubic filter (``a = -0.5``, not the ``-0.75`` of plain bicubic) in place of the triangle.

    ``center - support`` and ``center + support`` are rounded to ``dtype`` before 0.5 is added
    in float64, as ATen's mixed float/double arithmetic does; so is ``xmin + k - center``.
    """
    if in_size == out_size:
        return torch.eye(in_size, dtype=dtype, device=device)
    w, xmin, xsize = aa_weights(in_size, out_size, align_corners, scale_factor, dtype, cubic)
    kmax = w.shape[1]
    cols = torch.arange(in_size, dtype=torch.int64)
    rel = cols[None, :] - xmin[:, None]  # (out, in) tap index of each column
    inside = (rel >= 0) & (rel < xsize[:, None])
    a = torch.gather(w, 1, rel.clamp(0, kmax - 1))
    a = torch.where(inside, a, torch.zeros((), dtype=dtype))
    return a.to(device)


def aa_weights(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale_factor: Optional[float],
    dtype: torch.dtype,
    cubic: bool = False,
):
    """The taps of :func:`aa_matrix` (on the CPU): ``(w (out, kmax), xmin (out,), xsize (out,))``,
    row ``j`` reading inputs ``xmin[j] + k`` for ``k < xsize[j]`` with weights ``w[j, k]`` (0 past
    ``xsize``), exactly the elements ATen's kernel reads."""
    if align_corners:
        if out_size > 1:
            scale = torch.tensor(float(in_size - 1), dtype=dtype) / (out_size - 1)
        else:
            scale = torch.zeros((), dtype=dtype)
    elif scale_factor is not None and scale_factor > 0:
        scale = torch.tensor(1.0 / scale_factor, dtype=torch.float64).to(dtype)
    else:
        scale = torch.tensor(float(in_size), dtype=dtype) / out_size
    wide = bool(scale >= 1.0)
    half = 2.0 if cubic else 1.0  # ATen's interp_size / 2
    support = (scale * half) if wide else torch.full((), half, dtype=dtype)
    inv = (1.0 / scale.double()).to(dtype) if wide else torch.ones((), dtype=dtype)
    kmax = int(math.ceil(float(support))) * 2 + 1
    j = torch.arange(out_size, dtype=torch.float64)
    center = (scale.double() * (j + 0.5)).to(dtype)  # exact product, one rounding
    xmin = ((center - support).double() + 0.5).trunc().to(torch.int64).clamp_min(0)
    xmax = ((center + support).double() + 0.5).trunc().to(torch.int64).clamp_max(in_size)
    xsize = (xmax - xmin).clamp(0, kmax)
    k = torch.arange(kmax, dtype=torch.int64)
    pos = xmin[:, None] + k  # (out, kmax) input index of each tap
    t = ((pos.to(dtype) - center[:, None]).double() + 0.5) * inv.double()
    t = t.to(dtype).abs()
    if cubic:
        w = _cubic_filter(t, -0.5)
    else:
        w = torch.where(t < 1, 1 - t, torch.zeros((), dtype=dtype))
    w = torch.where(k < xsize[:, None], w, torch.zeros((), dtype=dtype))
    total = torch.zeros(out_size, dtype=dtype)
    for c in range(kmax):  # in order, in dtype, as ATen (a cumsum may accumulate in float64)
        total = total + w[:, c]
    w = torch.where(total[:, None] != 0, w / torch.where(total != 0, total, 1)[:, None], w)
    return w, xmin, xsize


def _cubic_filter(t: torch.Tensor, a: float) -> torch.Tensor:
    """Keys' cubic convolution kernel at ``|t|`` (ATen's ``aa_filter`` for bicubic), in t's dtype."""
    t = t.abs()
    zero = torch.zeros((), dtype=t.dtype)
    return torch.where(t < 1, _keys_near(t, a), torch.where(t < 2, _keys_far(t, a), zero))


_KEYS_A = -0.75  # ATen's bicubic (upsample_bicubic2d) constant


def _fma(a: torch.Tensor, b: torch.Tensor, c: float) -> torch.Tensor:
    """``a * b + c`` rounded once for float32 (ATen's kernels are compiled with FMA contraction;
    measured: 5x closer to ATen's bicubic than separate roundings). float64: plain arithmetic."""
    if a.dtype == torch.float32:
        return (a.double() * b.double() + c).to(torch.float32)
    return a * b + c


def _keys_near(x: torch.Tensor, a: float = _KEYS_A) -> torch.Tensor:
    """``((a + 2) * x - (a + 3)) * x * x + 1`` for 0 <= x <= 1, contracted as ATen's."""
    return _fma(_fma(torch.full_like(x, a + 2), x, -(a + 3)) * x, x, 1.0)


def _keys_far(x: torch.Tensor, a: float = _KEYS_A) -> torch.Tensor:
    """``((a * x - 5 * a) * x + 8 * a) * x - 4 * a`` for 1 <= x <= 2, contracted as ATen's."""
    return _fma(_fma(_fma(torch.full_like(x, a), x, -5 * a), x, 8 * a), x, -4 * a)


def cubic_matrix(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale_factor: Optional[float],
    dtype: torch.dtype,
    device: torch.device,
) -> torch.Tensor:
    """The dense (out, in) matrix of ATen's bicubic resize along one axis (``upsample_bicubic2d``).

    ::

        src  = source_coords(...)                      (no clamp at 0, unlike the linear modes)
        i    = min(floorf(src), in - 1);  t = clamp(src - i, 0, 1)
        c    = [K(t + 1), K(t), K(1 - t), K(2 - t)]    (Keys' kernel, A = -0.75, in dtype)
        A[j, clamp(i - 1 + k, 0, in - 1)] += c[k]      for k in 0..3

    so taps beyond a border pile up on the edge sample, as ATen's clamped indices do. Unlike
    the linear modes, an axis whose size does not change is not special-cased: with a scale
    factor that is not 1, ATen (and this) still resamples it.
    """
    index, coeffs = cubic_taps(in_size, out_size, align_corners, scale_factor, dtype)
    cols = torch.arange(in_size, dtype=torch.int64)
    mat = torch.zeros(out_size, in_size, dtype=dtype)
    for k in range(4):
        mat = mat + (cols[None, :] == index[:, k, None]).to(dtype) * coeffs[:, k, None]
    return mat.to(device)


def cubic_taps(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale_factor: Optional[float],
    dtype: torch.dtype,
):
    """The 4 taps per output of :func:`cubic_matrix` (on the CPU): ``(index (out, 4) int64,
    coeffs (out, 4))``, the clamped input indices ATen's kernel reads and Keys' weights."""
    src = source_coords(in_size, out_size, align_corners, scale_factor, dtype)
    i0 = src.to(torch.float32).floor().to(torch.int64).clamp_max(in_size - 1)
    t = (src - i0.to(dtype)).clamp(0, 1)
    x1 = t + 1.0
    x2 = 1.0 - t
    coeffs = [_keys_far(x1), _keys_near(t), _keys_near(x2), _keys_far(x2 + 1.0)]
    index = torch.stack([(i0 - 1 + k).clamp(0, in_size - 1) for k in range(4)], 1)
    return index, torch.stack(coeffs, 1)
