"""Bilinear / linear resize composed only of ops that candle can differentiate.

The forward graph touching the input uses ``index_select``, ``gather``, ``matmul``/``bmm``, broadcast
``mul``/``add``, ``permute``/``unsqueeze``/``squeeze`` (views), ``clone`` (copy) and ``to``
(dtype). Everything else (indices, weights, dense interpolation matrices) is built from sizes
alone and carries no gradient.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import List, NamedTuple, Optional, Sequence, Tuple, Union

import torch

from ._coords import AxisPlan, aa_matrix, aa_weights, axis_plan, compute_dtype
from ._layout import layout_of, to_layout
from ._recording import recording, size_constant
from ._taps import Taps, apply_taps, finite_input

__all__ = ["apply_matrix", "upsample_bilinear2d", "upsample_linear1d"]

_Size = Union[int, Sequence[int], None]
_Scale = Union[float, Sequence[float], None]

# Per-axis composition, chosen by measurement (bench/runtime_speed.py, 2 threads, float32):
# * input axis <= _MATMUL_MAX_IN: one GEMM with the dense (out, in) interpolation matrix; it
#   beats index-and-lerp (fewer passes over memory) while the matrix is short;
# * longer axes: the last (contiguous) axis uses a block-permuted banded matrix when upscaled
#   ("bandlast") and gather-and-lerp when downscaled; any other axis uses a banded matrix cut
#   into blocks of output rows, each reading a window of L input rows (index_select of the
#   windows, then one batched GEMM), so the work per output is L, not in.
# * before all of these: an integer upscale with exactly repeating weights ("periodic"), except
#   on a short axis with a narrow rest (see _PERIODIC_MIN_REST).
_MATMUL_MAX_IN = 128
_BAND_BLOCK = 32
# Block targets (rounded to a divisor of the output size, see _band_block) of the banded GEMMs:
# the left-multiply of a non-last axis, and the last axis of an upscale (block-permute, below).
# Measured on the (1, 3, 1024, 1024) -> (1500, 2000) mask upscale, thread CPU time.
_BAND_BLOCK_LEFT = 24
_BAND_BLOCK_LAST = 32
# A non-last axis with at least this many elements after it is resampled by a left-multiply
# (bmm with A broadcast over the batch); shorter rows (a channels_last W axis with few channels)
# move the axis last instead.
_LEFT_MUL_MIN_REST = 32
# An integer upscale whose weights repeat exactly (x2, x4, x8 with align_corners=False) is one
# index_select of windows plus one GEMM with a fixed small matrix (see _Periodic); inputs are
# taken in blocks of this many (halved until it divides the axis), which sizes that GEMM.
# Measured (thread CPU time, 1 thread): 8 for the last axis, 4 for the others.
_PERIODIC_GROUP_LAST = 8
_PERIODIC_GROUP = 4
# ... but a short axis (in <= _MATMUL_MAX_IN) keeps its dense GEMM unless at least this many
# elements follow it (the H axis of a channels_last input): measured equal work on 1 thread,
# and the dense GEMM's backward runs on every thread where index_select's index_add may not.
_PERIODIC_MIN_REST = 4096
# Without a gradient, a channels_last integer upscale whose taps are fixed neighbours per phase
# (_Phase: x2, and x4 / x8 with align_corners=False) is computed in chunks of about this many
# bytes of output (measured on 1 thread, (8, 64, 64, 64) x2 and (2, 256, 64, 64) x4: 8 MiB
# within 10% of the best of 2..32 MiB on both).
_PHASE_CHUNK_BYTES = 8 << 20
# channels_last (the (N, H, W, C) view, every axis moving whole C-vectors): an upscaled axis
# longer than this is never resampled by the dense GEMM (its 2 * in flops per output cost more
# than the band's copy of the windows); periodic where exact, else the banded left-multiply.
# Measured forward+backward, 1 thread: U-Net x2 ac=True cl 45 -> 25 ms, DPT x4 cl 164 -> 62 ms
# (with W first when W is upscaled: the smaller tensor, and H's rows then hold W_out * C).
_CL_MATMUL_MAX_IN = 16
# Without a gradient, a contiguous (NCHW) input whose W axis is not periodic and whose images are
# larger than this many bytes of output (the 1024 -> 1500x2000 mask) is resized by two lerps per
# band of output rows of about this size (_apply_lerp_rows): 1 thread, no page faults, 26 -> 17 ms
# (native 34); 512 KiB and 4 MiB measured within 15%.
_LERP_CHUNK_BYTES = 1 << 20


# ---------------------------------------------------------------------------------------------
# Small constants per axis, cached: they depend on sizes, scales, dtype and device only.


@lru_cache(maxsize=256)
def _plan(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale: Optional[float],
    dtype: torch.dtype,
    device: torch.device,
) -> AxisPlan:
    return axis_plan(in_size, out_size, align_corners, scale, dtype, device)


def _build_dense(p: AxisPlan, in_size: int) -> torch.Tensor:
    """The (out, in) interpolation matrix ``A`` with ``A[j, i0[j]] = w0[j]``, ``A[j, i1[j]] += w1[j]``."""
    cols = torch.arange(in_size, device=p.i0.device)
    a = (cols == p.i0[:, None]).to(p.w0.dtype) * p.w0[:, None]
    return a + (cols == p.i1[:, None]).to(p.w1.dtype) * p.w1[:, None]


@lru_cache(maxsize=256)
def _dense(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale: Optional[float],
    dtype: torch.dtype,
    device: torch.device,
) -> torch.Tensor:
    return _build_dense(_plan(in_size, out_size, align_corners, scale, dtype, device), in_size)


@lru_cache(maxsize=256)
def _dense_aa(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale: Optional[float],
    dtype: torch.dtype,
    device: torch.device,
) -> torch.Tensor:
    return aa_matrix(in_size, out_size, align_corners, scale, dtype, device)


class _Band(NamedTuple):
    win: torch.Tensor  # int64 (nb * L,): input rows of every window, block after block
    weights: torch.Tensor  # (nb, block, L)
    nb: int
    length: int
    block: int


def _build_band(p: AxisPlan, in_size: int, block: int) -> _Band:
    """Cut the banded (out, in) matrix into ``nb`` blocks of ``block`` output rows, each with a
    window of ``L`` consecutive input rows (the widest block's span; windows are shifted left
    where they would run past the end)."""
    out_size = p.i0.numel()
    dense = _build_dense(p, in_size)
    nb = -(-out_size // block)
    pad = nb * block - out_size
    if pad:
        dense = torch.cat([dense, dense.new_zeros(pad, in_size)])
        i0 = torch.cat([p.i0, p.i0[-1:].expand(pad)])
        i1 = torch.cat([p.i1, p.i1[-1:].expand(pad)])
    else:
        i0, i1 = p.i0, p.i1
    lo = i0.reshape(nb, block).amin(1)
    hi = i1.reshape(nb, block).amax(1)
    length = int((hi - lo).max()) + 1
    start = lo.clamp_max(in_size - length)
    win = start[:, None] + torch.arange(length, device=start.device)
    weights = torch.gather(
        dense.reshape(nb, block, in_size), 2, win[:, None, :].expand(nb, block, length)
    ).contiguous()
    return _Band(win.reshape(-1), weights, nb, length, block)


@lru_cache(maxsize=256)
def _band(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale: Optional[float],
    dtype: torch.dtype,
    device: torch.device,
    block: int = _BAND_BLOCK,
) -> _Band:
    p = _plan(in_size, out_size, align_corners, scale, dtype, device)
    return _build_band(p, in_size, block)


def _band_block(out_size: int, target: int) -> int:
    """The divisor of ``out_size`` in [target / 2, 2 * target] closest to ``target`` (so the
    blocks tile the axis and no padded row has to be cut off by a copy), else ``target``."""
    divisors = [d for d in range(max(target // 2, 1), 2 * target + 1) if out_size % d == 0]
    return min(divisors, key=lambda d: abs(d - target)) if divisors else target


class _Periodic(NamedTuple):
    """An integer upscale whose weights repeat, applied ``group`` inputs at a time: block ``b``
    reads the ``width = group + taps - 1`` inputs ``index[b * width : (b + 1) * width]``
    (``clamp(b * group + lo + i)``) and writes its ``group * s`` outputs as
    ``weight.T @ window``, the same (width, group * s) weights for every block."""

    index: torch.Tensor  # int64 (in / group * width,)
    weight: torch.Tensor  # (width, group * s)
    width: int
    factor: int


def _build_periodic(p: AxisPlan, in_size: int, out_size: int, group: int) -> Optional[_Periodic]:
    """The plan as ``_Periodic`` when it is one exactly: ``out = s * in`` and the dense matrix
    built from the repeating weights (taps clamped at the borders, as ATen clamps) equals the
    plan's bit for bit; None otherwise (e.g. x3, whose weights ATen rounds differently in every
    period, or align_corners=True)."""
    if out_size % in_size or out_size < 2 * in_size or in_size < 3 or in_size % group:
        return None
    s = out_size // in_size
    k = in_size // 2  # an interior period, away from the clamped borders
    j = torch.arange(s * k, s * k + s)
    o0, o1 = p.i0[j] - k, p.i1[j] - k
    lo, hi = int(o0.min()), int(o1.max())
    taps = hi - lo + 1
    width = group + taps - 1
    # block weights: input g of the block (window rows g .. g + taps - 1) feeds outputs g*s + r
    weight = torch.zeros(width, group * s, dtype=p.w0.dtype)
    r = torch.arange(s)
    for g in range(group):
        weight.index_put_((o0 - lo + g, g * s + r), p.w0[j], accumulate=True)
        weight.index_put_((o1 - lo + g, g * s + r), p.w1[j], accumulate=True)
    nblk = in_size // group
    index = (torch.arange(nblk)[:, None] * group + lo + torch.arange(width)).clamp(0, in_size - 1)
    # the dense (out, in) matrix of this form: any mismatch with ATen's plan, even of one ulp
    # at a border, rejects it
    rows = torch.arange(out_size).reshape(nblk, 1, group * s).expand(nblk, width, group * s)
    cols = index.reshape(nblk, width, 1).expand(nblk, width, group * s)
    vals = weight.reshape(1, width, group * s).expand(nblk, width, group * s)
    dense = torch.zeros(out_size, in_size, dtype=weight.dtype)
    dense.index_put_((rows.reshape(-1), cols.reshape(-1)), vals.reshape(-1), accumulate=True)
    if not torch.equal(dense, _build_dense(p, in_size).cpu()):
        return None
    dev = p.i0.device
    return _Periodic(index.reshape(-1).to(dev), weight.to(dev), width, s)


@lru_cache(maxsize=256)
def _periodic(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale: Optional[float],
    dtype: torch.dtype,
    device: torch.device,
    group: int,
) -> Optional[_Periodic]:
    p = _plan(in_size, out_size, align_corners, scale, dtype, torch.device("cpu"))
    got = _build_periodic(p, in_size, out_size, group)
    if got is None or device == torch.device("cpu"):
        return got
    return _Periodic(got.index.to(device), got.weight.to(device), got.width, got.factor)


class _Phase(NamedTuple):
    """An integer upscale by ``factor`` whose taps, per output phase, are two fixed neighbours:
    output ``s * i + r`` (phase ``r``) is ``lerp(x[clamp(i + oa)], x[clamp(i + ob)], w[i])``,
    ``clamp`` to ``[0, in - 1]`` (so the border taps ATen clamps are the same elements). Phases
    with the same (oa, ob) form one group: ``groups`` holds ``(r0, r1, oa, ob, w)`` with ``w``
    of shape (in, r1 - r0), the weight of the second tap (the first one's is ``1 - w``)."""

    factor: int
    groups: Tuple[Tuple[int, int, int, int, torch.Tensor], ...]


def _build_phase(p: AxisPlan, in_size: int, out_size: int) -> Optional[_Phase]:
    """The plan as ``_Phase`` when it is one: ``out = s * in``, every interior phase reads the
    same two offsets in [-1, 1], every tap with a non-zero weight reads one of its phase's two
    clamped neighbours, and the two weights sum to 1 (to 4 ulps: ATen's ``w0 = 1 - w1``), so
    ``a + w1 * (b - a)`` equals ATen's ``w0 * a + w1 * b`` to rounding. True for x2 with either
    align_corners, x4 / x8 with align_corners=False; None otherwise (x4 with align_corners=True
    reads different neighbours along the axis)."""
    if out_size % in_size or out_size < 2 * in_size or in_size < 3:
        return None
    s = out_size // in_size
    n = in_size
    i = torch.arange(n, device=p.i0.device)
    dtype = p.w0.dtype
    offs = []
    for r in range(s):
        j = i[1:-1] * s + r
        oa = (p.i0[j] - i[1:-1]).unique().tolist()
        ob = (p.i1[j] - i[1:-1]).unique().tolist()
        if len(oa) != 1 or len(ob) != 1 or not -1 <= oa[0] < ob[0] <= 1:
            return None
        offs.append((oa[0], ob[0]))
    tol = 4 * torch.finfo(dtype).eps
    groups = []
    r = 0
    while r < s:
        r1 = r + 1
        while r1 < s and offs[r1] == offs[r]:
            r1 += 1
        oa, ob = offs[r]
        ca, cb = (i + oa).clamp(0, n - 1), (i + ob).clamp(0, n - 1)
        cols = []
        for rr in range(r, r1):
            j = i * s + rr
            wa = torch.zeros(n, dtype=dtype, device=i.device)
            wb = torch.zeros(n, dtype=dtype, device=i.device)
            for idx, w in ((p.i0[j], p.w0[j]), (p.i1[j], p.w1[j])):
                live = w != 0
                on_a = live & (idx == ca)
                on_b = live & (idx == cb) & ~on_a
                if bool((live & ~on_a & ~on_b).any()):
                    return None
                wa = wa + torch.where(on_a, w, 0.0)
                wb = wb + torch.where(on_b, w, 0.0)
            if bool(((wa + wb - 1).abs() > tol).any()):
                return None
            cols.append(wb)
        groups.append((r, r1, oa, ob, torch.stack(cols, 1)))
        r = r1
    return _Phase(s, tuple(groups))


@lru_cache(maxsize=256)
def _phase(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale: Optional[float],
    dtype: torch.dtype,
    device: torch.device,
) -> Optional[_Phase]:
    return _build_phase(_plan(in_size, out_size, align_corners, scale, dtype, device), in_size, out_size)


class _RowBand(NamedTuple):
    """Output rows ``[j0, j1)`` of one image read input rows ``[r0, r1)``; ``i0``, ``i1`` are the
    H taps relative to ``r0`` and ``w1`` (j1 - j0, 1) the second tap's weight."""

    j0: int
    j1: int
    r0: int
    r1: int
    i0: torch.Tensor
    i1: torch.Tensor
    w1: torch.Tensor


@lru_cache(maxsize=64)
def _row_bands(
    in_size: int,
    out_size: int,
    align_corners: bool,
    scale: Optional[float],
    dtype: torch.dtype,
    device: torch.device,
    rows: int,
) -> Tuple[_RowBand, ...]:
    p = _plan(in_size, out_size, align_corners, scale, dtype, device)
    bands = []
    for j0 in range(0, out_size, rows):
        j1 = min(out_size, j0 + rows)
        r0, r1 = int(p.i0[j0]), int(p.i1[j1 - 1]) + 1
        w1 = p.w1[j0:j1].reshape(-1, 1).contiguous()
        bands.append(_RowBand(j0, j1, r0, r1, p.i0[j0:j1] - r0, p.i1[j0:j1] - r0, w1))
    return tuple(bands)


@lru_cache(maxsize=64)
def _phase_spans(
    n_img: int, h: int, w: int, s_h: int, item: int, chunk: int, device: torch.device
) -> Tuple[Tuple[int, int, int, int, torch.Tensor], ...]:
    """The chunks of ``_apply_phase_cl``: ``(n0, n1, a, b, index)``, images ``[n0, n1)``, input
    rows ``[a, b)``, ``index`` the flat (row * w + col) positions of rows ``a - 1 .. b`` and
    columns ``-1 .. w``, clamped to the image."""
    if item <= chunk:
        per = max(1, chunk // item)
        bounds = [(n0, min(n_img, n0 + per), 0, h) for n0 in range(0, n_img, per)]
    else:
        rows = max(1, chunk // (item // (h * s_h) * s_h))
        bounds = [(n0, n0 + 1, a, min(h, a + rows)) for n0 in range(n_img) for a in range(0, h, rows)]
    cols = torch.arange(-1, w + 1).clamp(0, w - 1)
    spans = []
    for n0, n1, a, b in bounds:
        rid = torch.arange(a - 1, b + 1).clamp(0, h - 1)
        spans.append((n0, n1, a, b, (rid[:, None] * w + cols).reshape(-1).to(device)))
    return tuple(spans)



def _get_plan(*key) -> AxisPlan:
    return size_constant(_plan, *key)


def _get_dense(*key) -> torch.Tensor:
    return size_constant(_dense, *key)


def _get_band(*key) -> _Band:
    return size_constant(_band, *key)


def _get_dense_aa(*key) -> torch.Tensor:
    return size_constant(_dense_aa, *key)


def _get_periodic(*key) -> Optional[_Periodic]:
    return size_constant(_periodic, *key)


def _get_phase(*key) -> Optional[_Phase]:
    return size_constant(_phase, *key)


# lru_cache'd builders of the other modes (nearest, bicubic, area) register here.
_OTHER_CACHES: list = []


def clear_cache() -> None:
    """Drop the cached per-axis index/weight tensors of every mode."""
    for cache in _OTHER_CACHES:
        cache.cache_clear()
    _plan.cache_clear()
    _dense.cache_clear()
    _band.cache_clear()
    _dense_aa.cache_clear()
    _periodic.cache_clear()
    _phase.cache_clear()
    _row_bands.cache_clear()
    _phase_spans.cache_clear()


# ---------------------------------------------------------------------------------------------
# One axis.


def _lerp_index(x: torch.Tensor, dim: int, p: AxisPlan) -> torch.Tensor:
    """``w0 * x.index_select(dim, i0) + w1 * x.index_select(dim, i1)``, weights broadcast on ``dim``."""
    shape = [1] * (x.dim() - dim)
    shape[0] = -1
    w0, w1 = p.w0.reshape(shape), p.w1.reshape(shape)
    return x.index_select(dim, p.i0) * w0 + x.index_select(dim, p.i1) * w1


def _lerp_gather(x: torch.Tensor, p: AxisPlan) -> torch.Tensor:
    """The same along the last dim with ``gather`` (faster than ``index_select`` there)."""
    shape = x.shape[:-1] + (p.i0.numel(),)
    g0 = torch.gather(x, -1, p.i0.expand(shape))
    g1 = torch.gather(x, -1, p.i1.expand(shape))
    return g0 * p.w0 + g1 * p.w1


def _periodic_group(in_size: int, last: bool) -> int:
    """Inputs per block of the periodic GEMM: 8 on the last axis, 4 on others, halved until it
    divides the axis."""
    group = _PERIODIC_GROUP_LAST if last else _PERIODIC_GROUP
    while in_size % group:
        group //= 2
    return group


def _apply_periodic(x: torch.Tensor, dim: int, pd: _Periodic) -> torch.Tensor:
    """``x`` (contiguous) upscaled along ``dim`` by the repeating weights: one ``index_select``
    of every block's window, then one GEMM with the (width, group * s) weights, whose result is
    already the output in order (each block's outputs side by side)."""
    n = x.shape[dim]
    lead = x.shape[:dim]
    rest = math.prod(x.shape[dim + 1 :])
    if rest == 1:
        # the last axis: dim 1 of the (rows, n) view, then (rows * blocks, width) @ weights
        win = x.reshape(-1, n).index_select(1, pd.index)
        y = torch.mm(win.reshape(-1, pd.width), pd.weight)
    else:
        # dim 1 of the (batch, n, rest) view, then weights.T @ (batch * blocks, width, rest)
        win = x.reshape(-1, n, rest).index_select(1, pd.index)
        y = torch.matmul(pd.weight.t(), win.reshape(-1, pd.width, rest))
    return y.reshape(lead + (n * pd.factor,) + x.shape[dim + 1 :])


def _apply_phase_cl(y: torch.Tensor, out: List[int], ph_h: _Phase, ph_w: _Phase) -> Optional[torch.Tensor]:
    """Without a gradient: ``y`` (N, C, H, W), channels_last-contiguous, upscaled by the phase
    forms of both axes into a fresh channels_last (N, C, H_out, W_out) tensor, in chunks of
    about ``_PHASE_CHUNK_BYTES`` of output (whole images, else bands of rows), so the
    intermediate stays in cache and the output is written once.

    Per chunk, on the (N, H, W, C) view: one ``index_select`` takes the chunk's rows and columns
    with a clamped border of one (so every neighbour ``clamp(i + o)`` is a plain slice), then
    per group of W phases one ``lerp`` of two shifted, broadcast slices into the (rows, W, s_w,
    C) intermediate, then per group of H phases one ``lerp`` into the output's rows. In candle:
    ``index_select``, ``narrow``, ``broadcast_as``, ``a + w * (b - a)`` (``broadcast_sub``,
    ``broadcast_mul``, ``broadcast_add``), ``stack``/``cat`` of the phases."""
    n_img, c, h, w = y.shape
    oh, ow = out
    s_h, s_w = ph_h.factor, ph_w.factor
    flat = y.permute(0, 2, 3, 1).reshape(n_img, h * w, c)
    res = torch.empty((n_img, oh, ow, c), dtype=y.dtype, device=y.device)
    item = oh * ow * c * y.element_size()
    spans = size_constant(_phase_spans, n_img, h, w, s_h, item, _PHASE_CHUNK_BYTES, y.device)
    for n0, n1, a, b, index in spans:
        nb, k = n1 - n0, b - a
        zp = flat[n0:n1].index_select(1, index).view(nb, k + 2, w + 2, c)
        if not bool(torch.isfinite(zp.sum())):
            return None  # inf / NaN: the caller takes the tap path
        z = torch.empty((nb, k + 2, w, s_w, c), dtype=y.dtype, device=y.device)
        for r0, r1, oa, ob, wt in ph_w.groups:
            shape = (nb, k + 2, w, r1 - r0, c)
            lo = zp[:, :, 1 + oa : 1 + oa + w, None, :].expand(shape)
            hi = zp[:, :, 1 + ob : 1 + ob + w, None, :].expand(shape)
            torch.lerp(lo, hi, wt.view(w, r1 - r0, 1), out=z[:, :, :, r0:r1])
        z = z.view(nb, k + 2, ow * c)
        o = res[n0:n1, s_h * a : s_h * b].view(nb, k, s_h, ow * c)
        for r0, r1, oa, ob, wt in ph_h.groups:
            shape = (nb, k, r1 - r0, ow * c)
            lo = z[:, 1 + oa : 1 + oa + k, None, :].expand(shape)
            hi = z[:, 1 + ob : 1 + ob + k, None, :].expand(shape)
            torch.lerp(lo, hi, wt[a:b].view(k, r1 - r0, 1), out=o[:, :, r0:r1])
    return res.permute(0, 3, 1, 2)


def _apply_lerp_rows(
    y: torch.Tensor, out: List[int], align_corners: bool, scales: List[Optional[float]]
) -> torch.Tensor:
    """Without a gradient: ``y`` (N, C, H, W), contiguous, resized band by band of output rows
    (about ``_LERP_CHUNK_BYTES`` each), so both intermediates stay in cache and the output is
    written once. Per band, on the image's (H, W) view: the input rows it reads (a view), W by
    ``lerp(x[:, i0], x[:, i1], w1)`` (two ``index_select`` on dim 1), then H by ``lerp`` of two
    ``index_select`` of those rows, into the output's rows. ``lerp`` (``a + w1 * (b - a)``) equals
    ATen's ``w0 * a + w1 * b`` (``w0 = 1 - w1``) to a few ulps. In candle: ``narrow``,
    ``index_select``, ``broadcast_sub`` / ``broadcast_mul`` / ``broadcast_add``, ``cat``."""
    n_img, c, h, w = y.shape
    oh, ow = out
    pw = _get_plan(w, ow, align_corners, scales[1], y.dtype, y.device)
    rows = max(1, _LERP_CHUNK_BYTES // (ow * y.element_size()))
    bands = size_constant(_row_bands, h, oh, align_corners, scales[0], y.dtype, y.device, rows)
    planes = y.reshape(n_img * c, h, w)
    res = torch.empty((n_img * c, oh, ow), dtype=y.dtype, device=y.device)
    for b in range(n_img * c):
        plane = planes[b]
        for band in bands:
            xs = plane[band.r0 : band.r1]
            z = torch.lerp(xs.index_select(1, pw.i0), xs.index_select(1, pw.i1), pw.w1)
            lo, hi = z.index_select(0, band.i0), z.index_select(0, band.i1)
            torch.lerp(lo, hi, band.w1, out=res[b, band.j0 : band.j1])
    return res.reshape(n_img, c, oh, ow)


def apply_matrix(x: torch.Tensor, dim: int, a: torch.Tensor) -> torch.Tensor:
    """``x`` resampled along ``dim`` (non-negative) by the dense (out, in) matrix ``a``.

    Always one plain 2-D GEMM, or one bmm with ``a`` broadcast over the leading dims (see below)."""
    in_size = x.shape[dim]
    out_size = a.shape[0]
    last = dim == x.dim() - 1
    rest = math.prod(x.shape[dim + 1 :])
    if not last and rest >= _LEFT_MUL_MIN_REST:
        # A left-multiply on the (batch, in, rest) view: no copy to move the axis last, and
        # backward is the same product with A^T. One 2-D mm when there is no batch.
        lead = x.shape[:dim]
        batch = math.prod(lead)
        if batch == 1:
            y = torch.mm(a, x.reshape(in_size, rest))
        else:
            y = torch.bmm(a.expand(batch, out_size, in_size), x.reshape(batch, in_size, rest))
        return y.reshape(lead + (out_size,) + x.shape[dim + 1 :])
    xt = x if last else x.transpose(dim, -1)
    lead = xt.shape[:-1]
    y = torch.mm(xt.reshape(-1, in_size), a.t()).reshape(lead + (out_size,))
    return y if last else y.transpose(dim, -1)


def _resample_axis(
    x: torch.Tensor,
    dim: int,
    out_size: int,
    align_corners: bool,
    scale: Optional[float],
    last_is_contiguous: bool,
    method: Optional[str],
    channels_last: bool = False,
) -> torch.Tensor:
    """Resample ``x`` along ``dim`` (non-negative) to ``out_size``; ``channels_last``: ``x`` is
    the (N, H, W, C) view of a channels_last input."""
    in_size = x.shape[dim]
    key = (in_size, out_size, align_corners, scale, x.dtype, x.device)
    last = dim == x.dim() - 1
    rest = math.prod(x.shape[dim + 1 :])
    if channels_last:
        short = in_size <= _CL_MATMUL_MAX_IN or (out_size < in_size and in_size <= _MATMUL_MAX_IN)
    else:
        short = in_size <= _MATMUL_MAX_IN and rest < _PERIODIC_MIN_REST
    if (method == "periodic" or (method is None and not short)) and x.is_contiguous():
        pd = _get_periodic(*key, _periodic_group(in_size, last))
        if pd is not None:
            return _apply_periodic(x, dim, pd)
    if method is None:
        if (short if channels_last else in_size <= _MATMUL_MAX_IN):
            method = "matmul"
        elif last and last_is_contiguous:
            method = "bandlast" if out_size >= in_size else "gather"
        else:
            method = "band"
    if method in ("matmul", "aa"):
        a = _get_dense_aa(*key) if method == "aa" else _get_dense(*key)
        return apply_matrix(x, dim, a)
    if method == "bandlast" and last and x.is_contiguous():
        # The last axis, banded: every block's window (index_select on dim 1 of the (rows, in)
        # view), one bmm over the blocks with the rows as M, (nb, rows, L) @ (nb, L, block),
        # then the (nb, rows, block) result put back in row order (one copy that moves whole
        # blocks). Measured cheaper than gather-and-lerp for upscales (no scatter_add backward).
        b = _get_band(*key, _band_block(out_size, _BAND_BLOCK_LAST))
        rows = math.prod(x.shape[:-1])
        xw = x.reshape(rows, in_size).index_select(1, b.win).reshape(rows, b.nb, b.length)
        y = torch.matmul(xw.transpose(0, 1), b.weights.transpose(1, 2))
        y = y.transpose(0, 1).reshape(rows, b.nb * b.block)
        if b.nb * b.block != out_size:
            y = y.narrow(1, 0, out_size)
        return y.reshape(x.shape[:-1] + (out_size,))
    if method == "band" and not last and rest >= _LEFT_MUL_MIN_REST and x.is_contiguous():
        # A banded left-multiply on the (batch, in, rest) view, no copy to move the axis: every
        # block's window of input rows (index_select on dim 1), then (nb, block, L) @
        # (batch, nb, L, rest), whose result is already (batch, out, rest) in order.
        b = _get_band(*key, _band_block(out_size, _BAND_BLOCK_LEFT))
        batch = math.prod(x.shape[:dim])
        xw = x.reshape(batch, in_size, rest).index_select(1, b.win).reshape(batch, b.nb, b.length, rest)
        y = torch.matmul(b.weights, xw).reshape(batch, b.nb * b.block, rest)
        if b.nb * b.block != out_size:
            y = y.narrow(1, 0, out_size)
        return y.reshape(x.shape[:dim] + (out_size,) + x.shape[dim + 1 :])
    if method == "band" and not last:
        # Move the axis first, take every block's window of input rows (one index_select), and
        # run one batched GEMM over the nb blocks: (nb, block, L) @ (nb, L, everything else).
        b = _get_band(*key)
        moved = x.movedim(dim, 0).contiguous()  # index_select's backward is slow on a strided dim 0
        rest = moved.shape[1:]
        xw = moved.index_select(0, b.win).reshape(b.nb, b.length, math.prod(rest))
        y = torch.matmul(b.weights, xw).reshape((b.nb * b.block,) + rest)
        if b.nb * b.block != out_size:
            y = y.narrow(0, 0, out_size)
        return y.movedim(0, dim)
    p = _get_plan(*key)
    if method == "gather" and last:
        return _lerp_gather(x, p)
    return _lerp_index(x, dim, p)


# ---------------------------------------------------------------------------------------------
# Argument handling shared with the public wrappers.


def _output_size_and_scales(
    x: torch.Tensor,
    size: _Size,
    scale_factor: _Scale,
    recompute_scale_factor: Optional[bool],
    ndim: int,
) -> Tuple[List[int], List[Optional[float]]]:
    """Output sizes and the scales ATen will see, following ``F.interpolate``'s rules."""
    spatial = list(x.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        if isinstance(size, (list, tuple, torch.Size)):
            if len(size) != ndim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {spatial} and output size of {size}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format."
                )
            sizes = list(size)
        else:
            sizes = [size] * ndim
        if not all(isinstance(s, int) or (torch.is_tensor(s) and not s.is_floating_point()) for s in sizes):
            raise TypeError(
                "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                f"Tuple[int, int, int], but got size with types {[type(s) for s in sizes]}"
            )
        return [int(s) for s in sizes], [None] * ndim
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != ndim:
            raise ValueError(
                "Input and scale_factor must have the same number of spatial dimensions, but "
                f"got input with spatial dimensions of {spatial} and "
                f"scale_factor of shape {scale_factor}. "
                "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                "scale_factor in (s1, s2, ...,sK) format."
            )
        scales = [float(s) for s in scale_factor]
    else:
        scales = [float(scale_factor)] * ndim
    sizes = [int(n * s) if math.isfinite(n * s) else -1 for n, s in zip(spatial, scales)]
    if recompute_scale_factor:
        return sizes, [None] * ndim
    return sizes, list(scales)


def _check_sizes(x: torch.Tensor, out: List[int]) -> None:
    spatial = list(x.shape[2:])
    if x.shape[1] == 0:
        raise RuntimeError(
            f"Non-empty {x.dim()}D data tensor expected but got a tensor with sizes {list(x.shape)}"
        )
    if min(spatial + out) <= 0:
        names = ["H", "W"] if len(spatial) == 2 else ["W"]
        i = ", ".join(f"{n}: {s}" for n, s in zip(names, spatial))
        o = ", ".join(f"{n}: {s}" for n, s in zip(names, out))
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({i}) output ({o})"
        )


# ---------------------------------------------------------------------------------------------
# The ops.


def upsample_bilinear2d(
    x: torch.Tensor,
    size: _Size = None,
    scale_factor: _Scale = None,
    align_corners: Optional[bool] = False,
    recompute_scale_factor: Optional[bool] = None,
    antialias: bool = False,
    *,
    _methods: Optional[Tuple[Optional[str], Optional[str]]] = None,
) -> torch.Tensor:
    r"""Bilinear resize of an ``(N, C, H_in, W_in)`` tensor to ``(N, C, H_out, W_out)``.

    Equals ``F.interpolate(x, size, scale_factor, mode="bilinear", align_corners=...,
    recompute_scale_factor=...)`` to float rounding (float32: <= 1e-6 for inputs in [-1, 1];
    float64: <= 1e-12; float16 / bfloat16: computed in float32 and rounded once, see the README),
    in value, gradient and memory format, but is built only from ops with a backward in candle,
    so the same composition ported to candle can be trained.

    **Sizes.** Exactly one of ``size`` (int or (H_out, W_out)) and ``scale_factor`` (float or
    (s_h, s_w)) is given. With ``scale_factor``: ``H_out = floor(H_in * s_h)`` (likewise W).

    **Coordinate mapping**, per axis, for output index ``j`` (ATen's
    ``area_pixel_compute_source_index``)::

        align_corners=True:   scale = (in - 1) / (out - 1)   (0 if out == 1)
                              src   = scale * j
        align_corners=False:  scale = 1 / scale_factor       if scale_factor was given and
                                                             recompute_scale_factor is not True
                                    = in / out               otherwise
                              src   = max(scale * (j + 0.5) - 0.5, 0)
        i0 = min(floor(src), in - 1);  i1 = min(i0 + 1, in - 1)
        w1 = clamp(src - i0, 0, 1);    w0 = 1 - w1
        out[j] = w0 * x[i0] + w1 * x[i1]

    An axis whose output size equals its input size is copied unchanged (whatever the scale),
    as in ATen. The arithmetic above is done as ATen does it: in float32 for float16 / bfloat16 /
    float32 input, in float64 for float64 input, ``scale * (j + 0.5) - 0.5`` rounded once (fused
    multiply-add), ``floor`` taken after rounding ``src`` to float32 (ATen calls ``floorf``).

    **Layout.** The output strides are ATen's: channels_last when ATen's
    ``suggest_memory_format`` says so (``_layout.layout_of``: a batch-1 tensor whose N stride is
    not the largest is contiguous), else contiguous. The result never aliases ``x``.

    **inf / NaN.** An input that is not all finite is resized by taps (``_taps``): each output
    reads exactly ATen's two taps per axis, so the non-finite outputs are ATen's (a dense
    matrix would give 0 * inf = NaN over the whole plane). Traced graphs (make_fx, export,
    compile) take the dense path.

    **Antialias.** ``antialias=True`` is ATen's ``_upsample_bilinear2d_aa`` (PIL's triangle
    filter): per axis a dense (out, in) matrix whose row ``j`` holds the triangle
    ``max(0, 1 - |(i + 0.5 - center) / max(scale, 1)|)`` over the inputs ``i`` within
    ``max(scale, 1)`` of ``center = scale * (j + 0.5)``, normalised to sum 1 (formula, clamps and
    roundings in ``_coords.aa_matrix``; the matrices equal the weights ATen uses, bit for bit).
    When downsampling (``scale > 1``) the support widens with the scale; when upsampling it is
    the plain triangle. ``align_corners`` only changes ``scale``. W is resampled first, then H, each
    by one GEMM; float32 and float64 only (ATen raises for float16 / bfloat16, so does this).

    **Differences from F.interpolate.** ``align_corners=None`` means False without a warning;
    results agree with ATen to a few ulps, not bitwise (ATen fuses the multiply-adds of the
    interpolation itself).

    **Composition.** W is resampled first, then H (channels_last: H first); an axis whose size
    does not change is skipped. Per axis (measured, see ``bench/runtime_speed.py`` and
    ``bench/runtime_table.py``):

    * an integer upscale whose weights repeat exactly (``out = s * in`` and the dense matrix
      of the repeating form equals ATen's bit for bit: x2, x4, x8 with align_corners=False;
      not x3, whose ATen weights round differently in every period): inputs in blocks of
      ``g`` (8 for W, 4 otherwise, halved until it divides the axis); one ``index_select``
      takes every block's ``g + 2`` clamped neighbours, one GEMM with the fixed
      (g + 2, g * s) weight matrix writes the block's ``g * s`` outputs in place
      (``_Periodic``). No gather, no scatter in the backward. A short axis (``in <= 128``)
      keeps the dense GEMM below unless at least 4096 elements follow it (the H axis of a
      channels_last input).
    * ``in <= 128``: one GEMM with the dense (out, in) interpolation matrix ``A``
      (``A[j, i0[j]] = w0[j]``, ``A[j, i1[j]] += w1[j]``): ``x @ A^T`` for W (2-D mm), ``A @ x``
      for H (bmm with ``A`` broadcast over N*C, on the (N*C, H, W_out) view: no copy).
    * longer last (W) axis, upscaled: the banded ``A`` cut into blocks of about 32 outputs
      (a divisor of ``out`` when there is one), each reading a window of ``L`` consecutive
      inputs: ``index_select`` of the windows on the (rows, W) view, one bmm over the blocks
      (nb, rows, L) @ (nb, L, block), and one copy putting the (nb, rows, block) result back
      in row order (it moves whole blocks).
    * longer last axis, downscaled: ``w0 * gather(x, -1, i0) + w1 * gather(x, -1, i1)``.
    * longer other axis (H, or W of a channels_last input): the banded ``A`` in blocks of
      about 24 output rows: ``index_select`` of the windows on dim 1 of the (batch, in, rest)
      view, one matmul (nb, block, L) @ (batch, nb, L, rest), whose result is the output in
      order; when ``rest < 32`` the axis is moved first and the blocks use one GEMM each
      over everything else.

    channels_last input is processed as its (N, H, W, C) view, so every axis moves whole
    C-vectors, and permuted back (no copy).

    The same composition in candle (Rust), for ``x: Tensor`` of shape (n, c, h, w)::

        // Host side, once per (in, out, align_corners, scale, dtype, device): compute i0, i1
        // (u32), w0, w1 exactly as above in f32 (f64 for an f64 model) and upload them; they
        // are constants, not Vars, so nothing here is recorded for backprop.
        //
        // Short axis (in <= 128), dense matrices a_w: (w_out, w), a_h: (h_out, h):
        //   let y = x.broadcast_matmul(&a_w.t()?)?;              // Op::Matmul (+ Broadcast)
        //   let y = a_h.broadcast_matmul(&y)?;                   // (h_out,h) @ (n,c,h,w_out)
        //
        // Integer upscale with repeating weights (idx: u32 (nblk * (g+2),), wp: (g+2, g*s)):
        //   let win = x.reshape((rows, w))?.index_select(&idx, 1)?;      // (rows, nblk*(g+2))
        //   let y = win.reshape((rows * nblk, g + 2))?.matmul(&wp)?      // (rows*nblk, g*s)
        //             .reshape((n, c, h, w * s))?;
        //   H likewise on the (n*c, h, w_out) view: index_select(&idx_h, 1), reshape to
        //   (n*c*nblk, g+2, w_out), wp_h.t().broadcast_matmul(&win)?, reshape.
        //
        // Long upscaled W axis, block-permuted band (win: u32 (nb*L,), wb: (nb, L, block)):
        //   let xw = x.reshape((rows, w))?.index_select(&win, 1)?.reshape((rows, nb, l))?
        //             .transpose(0, 1)?;                                  // (nb, rows, l)
        //   let y = xw.matmul(&wb)?.transpose(0, 1)?.contiguous()?         // (rows, nb, block)
        //             .reshape((rows, nb * block))?.narrow(1, 0, w_out)?;
        //
        // Long downscaled W axis, gather-and-lerp (index tensors broadcast to the output shape):
        //   let idx0 = i0.reshape((1, 1, 1, w_out))?.broadcast_as((n, c, h, w_out))?.contiguous()?;
        //   let g0 = x.contiguous()?.gather(&idx0, 3)?;         // Op::Gather (bwd: scatter_add
        //   let g1 = x.contiguous()?.gather(&idx1, 3)?;         //  into zeros, which is correct)
        //   let y = (g0.broadcast_mul(&w0.reshape((1, 1, 1, w_out))?)?
        //          + g1.broadcast_mul(&w1.reshape((1, 1, 1, w_out))?)?)?;
        //
        // Long H axis, banded blocks (win: u32 (nb*L,), wb: (nb, block, L)):
        //   let xw = y.index_select(&win, 2)?                     // Op::IndexSelect (bwd index_add)
        //             .reshape((n, c, nb, l, w_out))?;
        //   let out = wb.broadcast_matmul(&xw)?                   // (n, c, nb, block, w_out)
        //             .reshape((n, c, nb * block, w_out))?
        //             .narrow(2, 0, h_out)?;                      // Op::Narrow
        //   (or the same lerp as for W with index_select(&i0_h, 2) / index_select(&i1_h, 2),
        //    weights reshaped to (1, 1, h_out, 1): simplest, slower)
        //
        // antialias=true: always the dense path above, with the antialiased matrices
        //   (aa_matrix: rows of normalised triangle weights), W first, then H.
        // f16 / bf16: x.to_dtype(DType::F32)? first and .to_dtype(orig)? at the end.
        // Neither axis changes: x.copy()?. Never call candle's upsample_bilinear2d: its
        // backward always bails ("backward not supported for upsample_bilinear2d").
        // Do not use scatter / scatter_add in the forward: their init gradients are wrong.

    Args:
        x: float tensor of shape (N, C, H_in, W_in); N may be 0.
        size: output (H_out, W_out), or one int for both.
        scale_factor: multiplier(s) for H and W.
        align_corners: as in ``F.interpolate``; None means False.
        recompute_scale_factor: True maps coordinates with in/out instead of 1/scale_factor.
        antialias: the antialiased resize of ``F.interpolate(..., antialias=True)``.

    Returns:
        Tensor of shape (N, C, H_out, W_out), dtype of ``x``.
    """
    if x.dim() != 4:
        raise ValueError(f"upsample_bilinear2d expects a 4-D (N, C, H, W) tensor, got {x.dim()}-D")
    return _resample(
        x, size, scale_factor, bool(align_corners), recompute_scale_factor, 2, _methods, antialias
    )


def upsample_linear1d(
    x: torch.Tensor,
    size: _Size = None,
    scale_factor: _Scale = None,
    align_corners: Optional[bool] = False,
    recompute_scale_factor: Optional[bool] = None,
) -> torch.Tensor:
    """Linear resize of an ``(N, C, W_in)`` tensor; the W axis of ``upsample_bilinear2d``."""
    if x.dim() != 3:
        raise ValueError(f"upsample_linear1d expects a 3-D (N, C, W) tensor, got {x.dim()}-D")
    return _resample(x, size, scale_factor, bool(align_corners), recompute_scale_factor, 1, None)


def _resample(
    x: torch.Tensor,
    size: _Size,
    scale_factor: _Scale,
    align_corners: bool,
    recompute_scale_factor: Optional[bool],
    ndim: int,
    methods: Optional[Tuple[Optional[str], Optional[str]]],
    antialias: bool = False,
) -> torch.Tensor:
    if not x.is_floating_point():
        raise RuntimeError(f"upsample_bilinear2d/linear1d: expected a float tensor, got {x.dtype}")
    if antialias and x.dtype not in (torch.float32, torch.float64):
        # ATen's CPU kernel has no half-precision antialiased path; raise as it does.
        name = {torch.float16: "Half", torch.bfloat16: "BFloat16"}.get(x.dtype, str(x.dtype))
        raise RuntimeError(f'"compute_index_ranges_weights" not implemented for \'{name}\'')
    out, scales = _output_size_and_scales(x, size, scale_factor, recompute_scale_factor, ndim)
    _check_sizes(x, out)
    if align_corners:
        scales = [None] * ndim  # ATen ignores the scale with align_corners=True
    channels_last = ndim == 2 and not x.is_contiguous() and x.is_contiguous(
        memory_format=torch.channels_last
    )  # computed on the (N, H, W, C) view; the output layout is ATen's (layout_of)
    fmt = layout_of(x) if ndim == 2 else torch.contiguous_format
    orig = x.dtype
    cdt = compute_dtype(orig)
    finite: Optional[bool] = None
    # NCHW too when both axes are short (where the dense GEMMs would run), as the channels_last
    # path of (N * C, 1, H, W) images
    phase_nchw = ndim == 2 and not channels_last and x.is_contiguous() and max(x.shape[2:]) <= _MATMUL_MAX_IN
    if (
        (channels_last or phase_nchw)
        and methods is None
        and not antialias
        and not _needs_grad(x)
        and not _tracing()
    ):
        ph = [
            _get_phase(in_size, o, align_corners, sc, cdt, x.device)
            for in_size, o, sc in zip(x.shape[2:], out, scales)
        ]
        if ph[0] is not None and ph[1] is not None:
            y = x.to(cdt) if cdt != orig else x
            if phase_nchw:
                n, c, h, w = y.shape
                y = y.reshape(n * c, h, w, 1).permute(0, 3, 1, 2)
            if y.permute(0, 2, 3, 1).is_contiguous():
                # checks each chunk it reads for inf / NaN (in cache) instead of a pass over x
                res = _apply_phase_cl(y, out, ph[0], ph[1])
                if res is not None:
                    if phase_nchw:
                        res = res.reshape(x.shape[:2] + tuple(out))
                    return _finish(res, orig, fmt)
                finite = False
    if finite is None:
        finite = finite_input(x)
    if list(x.shape[2:]) == out and (finite or antialias):
        return to_layout(x.clone(), fmt)

    y = x.to(cdt) if cdt != orig else x
    if not finite:
        y = _resample_taps(y, out, align_corners, scales, antialias)
        return _finish(y, orig, fmt)
    if (
        ndim == 2
        and not channels_last
        and methods is None
        and not antialias
        and all(i != o for i, o in zip(x.shape[2:], out))
        and out[0] * out[1] * y.element_size() > _LERP_CHUNK_BYTES
        and y.is_contiguous()
        and not _needs_grad(x)
        and not _tracing()
        and _get_periodic(
            x.shape[3], out[1], align_corners, scales[1], y.dtype, y.device, _periodic_group(x.shape[3], True)
        )
        is None
    ):
        return _finish(_apply_lerp_rows(y, out, align_corners, scales), orig, fmt)
    h_method, w_method = methods if methods is not None else (None, None)
    if antialias:
        h_method = w_method = "aa"  # dense matrices, W then H as ATen
    if channels_last:
        # Work on the (N, H, W, C) view, which is contiguous: both axes then move whole
        # C-vectors (index_select / matmul), and permuting back gives channels_last for free.
        y = y.permute(0, 2, 3, 1)
        dims = (1, 2)
    else:
        dims = tuple(range(2, 2 + ndim))
    in_sizes = list(x.shape[2:])
    # Order (measured): NCHW input resamples W first, in place (one mm, or gather for a long W),
    # then H as a left-multiply (or banded GEMM) on that contiguous result, with no copy to move
    # an axis; antialias does W first as ATen. channels_last does W first when W is upscaled
    # (on the smaller tensor; H's rows then hold W_out * C), else H first.
    w_first = antialias or not channels_last or out[-1] > in_sizes[-1]
    for k in reversed(range(ndim)) if w_first else range(ndim):
        if in_sizes[k] == out[k]:
            continue
        method = w_method if k == ndim - 1 else h_method
        last_contig = not channels_last and k == ndim - 1
        y = _resample_axis(y, dims[k], out[k], align_corners, scales[k], last_contig, method, channels_last)
    if channels_last:
        y = y.permute(0, 3, 1, 2)
    return _finish(y, orig, fmt)


def _needs_grad(x: torch.Tensor) -> bool:
    """Whether autograd records ops on ``x`` here (else the no-gradient compositions may run)."""
    return torch.is_grad_enabled() and x.requires_grad


def _tracing() -> bool:
    """make_fx / FakeTensor / torch.compile / torch.jit.trace / functorch transforms: keep the
    traced compositions (no ``out=`` writes, no value-dependent chunking)."""
    return recording() or torch.jit.is_tracing() or torch._C._are_functorch_transforms_active()


def _finish(y: torch.Tensor, orig: torch.dtype, fmt: torch.memory_format) -> torch.Tensor:
    if y.dtype != orig:
        y = y.to(orig)
    if y.numel() == 0:  # contiguous() keeps an empty tensor's strides as they are
        return y.clone(memory_format=fmt)
    return to_layout(y, fmt)


def _linear_taps(in_size: int, out_size: int, align_corners: bool, scale, dtype, device) -> Taps:
    """The two taps ATen's linear kernels read per output (both, even with weight 0; an axis of
    unchanged size reads ``x[j]`` twice with weights 1 and 0, as ATen does)."""
    if in_size == out_size:
        idx = torch.arange(out_size, device=device)
        one = torch.ones(out_size, dtype=dtype, device=device)
        p = AxisPlan(idx, idx, one, torch.zeros_like(one), True)
    else:
        p = _get_plan(in_size, out_size, align_corners, scale, dtype, device)
    return Taps(torch.stack([p.i0, p.i1], 1), torch.stack([p.w0, p.w1], 1), False)


def _aa_taps(in_size: int, out_size: int, align_corners: bool, scale, dtype, device, cubic=False) -> Taps:
    """The taps ATen's antialiased kernels read: ``xmin + k`` for ``k < xsize``, the rest on the
    zero slab."""
    w, xmin, xsize = aa_weights(in_size, out_size, align_corners, scale, dtype, cubic)
    k = torch.arange(w.shape[1])
    index = torch.where(k < xsize[:, None], xmin[:, None] + k, in_size)
    return Taps(index.to(device), w.to(device), bool((k >= xsize[:, None]).any()))


def _resample_taps(
    y: torch.Tensor,
    out: List[int],
    align_corners: bool,
    scales: List[Optional[float]],
    antialias: bool,
) -> torch.Tensor:
    """The resize by taps (an input with inf or NaN): every axis, W first, as ATen reads it."""
    ndim = len(out)
    for k in reversed(range(ndim)):
        in_size = y.shape[2 + k]
        if antialias:
            if in_size == out[k]:
                continue
            taps = _aa_taps(in_size, out[k], align_corners, scales[k], y.dtype, y.device)
        else:
            taps = _linear_taps(in_size, out[k], align_corners, scales[k], y.dtype, y.device)
        y = apply_taps(y, 2 + k, taps)
    return y
