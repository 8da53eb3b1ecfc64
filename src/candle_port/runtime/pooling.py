"""Max, average and adaptive pooling composed only of ops that candle can differentiate.

candle's pooling backward bails unless kernel == stride (no padding, dilation or ceil_mode), its
max_pool2d gradient is wrong even then (scaled by the window mean of the max mask), and it has no
adaptive pooling (../shared/candle-ops.md, section 2.1). These functions equal torch's in value,
indices, gradient and memory format, and touch the input only through:

* max pools: ``gather`` (one per call, on the input viewed with flattened spatial dims); the
  choice of the gathered element is computed without gradient from the detached input, in its
  channels-last (N, S, C) layout and in cache-sized chunks (``index_select`` of the windows,
  ``amax``, the first element equal to it, integer look-ups). For channels_last or contiguous
  NCHW 2-D input (outside tracing) the windows are strided views instead: ``maximum`` of the
  window positions' views, then per position ``eq`` + ``lerp`` for the first element equal to
  the maximum (see ``_pool_max_views``); without a gradient, and with no output 0 or NaN, the
  maximum itself is the result (no ``gather``). NCHW input runs as (N * C, 1, H, W): planes of
  one channel, each a channels_last image (torch's own NCHW max pool kernel is 4-9x slower than
  this ``maximum`` of views);
* average pools: ``matmul`` with 0/1 window matrices per spatial axis, then a division by
  torch's divisor (a constant tensor), in float32 for float16 / bfloat16 input. channels_last
  input whose windows tile the axes sums views instead (the parts of ``unbind`` added, or
  ``sum`` over the split axis; without a gradient ``as_strided`` parts), and so does
  channels_last stride-1 pooling when no gradient is needed (shifts added in place into a copy,
  or shifted ``narrow`` views of the zero-padded input while tracing). channels_last 2-D input
  with a gradient, outside tracing, whose windows a convolution reproduces (not ceil_mode's extra
  window) is one depthwise ``conv2d`` (candle's conv2d differentiates groups; the traced graph
  keeps the matrices).

Index tables, window matrices and divisors depend on sizes and arguments only; they are built
once per key (cached) and carry no gradient; outside tracing a call's whole plan (meta answer,
tables, divisor) is remembered per (op, sizes, strides, dtype, device, arguments). Arguments are
checked by running torch's own op on a meta tensor; when that raises, or for what is not composed here (non-floating dtypes, windows
with no element inside the input), torch's op itself is called, so it raises or computes. So it
is while ``torch.jit.trace`` records (the trace runs in torch, and torch's op keeps its sizes a
function of the input's; a traced composition would bake the traced sizes in). The modules'
forwards are torch's own under ``torch.jit.script``.

In plain eager mode (nothing tracing, a plain tensor, no ``composition()`` switch) each function
is torch's own ``F.`` function: the composition runs where a tracer records it, or when asked
(``_dispatch``).

Inputs holding inf or NaN: average pools sum each window's own elements (taps, see ``_taps``)
instead of the 0/1 matrices (0 * inf = NaN would spread over the plane); max pools pick the
window's last NaN as torch does. Output strides are torch's (read from the meta call).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import List, NamedTuple, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import _disable_current_modes

from ._dispatch import use_native
from ._layout import match_strides
from ._pool3d_slices import _depth_taps, pool_windows
from ._recording import recording, size_constant
from ._taps import apply_taps, finite_input, taps_from_bounds
from .bilinear import apply_matrix

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "clear_pooling_cache",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
]

_PoolArg = Union[int, Sequence[int]]
_PoolOptArg = Union[int, Sequence[int], None]


# ---------------------------------------------------------------------------------------------
# Arguments: torch checks them (on a meta tensor) and tells the output shape and memory format.


def _pool_meta(fn, x: torch.Tensor, *args) -> Optional[torch.Tensor]:
    """``fn(meta copy of x, *args)``'s first output, or None when torch rejects the arguments
    (or the dtype, or anything else), so that the caller hands the real call to torch. Outside
    tracing the answer is cached per (op, sizes, strides, dtype, arguments): torch's meta call
    costs more than the whole pool on small late feature maps."""
    if not x.is_floating_point():
        return None
    if torch._C._len_torch_dispatch_stack() > 0:
        with _disable_current_modes():
            return _pool_meta_call(fn, torch.empty_like(x, device="meta"), args)
    if torch.compiler.is_compiling():
        return _pool_meta_call(fn, torch.empty_like(x, device="meta"), args)
    try:
        key = (fn, tuple(x.shape), x.stride(), x.dtype, _pool_hashable(args))
        hash(key)
    except TypeError:  # an argument torch may accept but that does not hash (e.g. a tensor)
        return _pool_meta_call(fn, torch.empty_like(x, device="meta"), args)
    return _pool_meta_cached(key, fn, x, args)


def _pool_hashable(v):
    if isinstance(v, (list, tuple, torch.Size)):
        return (type(v).__name__,) + tuple(_pool_hashable(e) for e in v)
    if isinstance(v, torch.Tensor):
        raise TypeError("tensor argument")
    return (type(v).__name__, v)


_POOL_META_CACHE: dict = {}
_POOL_META_CACHE_MAX = 512


def _pool_meta_cached(key, fn, x: torch.Tensor, args) -> Optional[torch.Tensor]:
    if key in _POOL_META_CACHE:
        return _POOL_META_CACHE[key]
    out = _pool_meta_call(fn, torch.empty_like(x, device="meta"), args)
    if len(_POOL_META_CACHE) >= _POOL_META_CACHE_MAX:
        _POOL_META_CACHE.clear()
    _POOL_META_CACHE[key] = out
    return out


def _pool_signature(fn, x: torch.Tensor, args) -> Optional[tuple]:
    """A hashable key for (op, input sizes / strides / dtype / device, arguments), or None
    while tracing or for an argument that does not hash: what a call's plan depends on."""
    if recording() or torch.jit.is_tracing():
        return None
    try:
        key = (fn, tuple(x.shape), x.stride(), x.dtype, x.device, _pool_hashable(args))
        hash(key)
    except TypeError:
        return None
    return key


_POOL_PLANS: dict = {}
# a plan may hold a max pool's window-start table (Ho * Wo * C floats): bounded, and cleared
# whole when full (a model calls its pools with a few signatures)
_POOL_PLANS_MAX = 128


def _pool_plan_memo(key: Optional[tuple], build):
    """``build()``, remembered under ``key`` (not when None): the meta answer, tables and
    divisors of a call, so that a repeated call skips their look-ups."""
    if key is None:
        return build()
    plan = _POOL_PLANS.get(key)
    if plan is None:
        if len(_POOL_PLANS) >= _POOL_PLANS_MAX:
            _POOL_PLANS.clear()
        plan = _POOL_PLANS[key] = build()
    return plan


def _pool_meta_call(fn, xm: torch.Tensor, args) -> Optional[torch.Tensor]:
    try:
        out = fn(xm, *args)
    except Exception:  # torch's own call on x raises the same error, or computes
        return None
    return out[0] if isinstance(out, tuple) else out


def _pool_ints(v: _PoolOptArg, n: int, default: Optional[Tuple[int, ...]] = None) -> Tuple[int, ...]:
    """An int or a sequence of 1 or n ints (already accepted by torch) as n ints."""
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        assert default is not None
        return default
    if isinstance(v, (list, tuple, torch.Size)):
        vals = tuple(int(e) for e in v)
        return vals * n if len(vals) == 1 else vals
    return (int(v),) * n


def _pool_channels_last(x: torch.Tensor, meta_out: torch.Tensor) -> bool:
    """Whether torch's output (seen on meta) is channels_last(_3d), i.e. whether to pool the
    channels-last view ((N, H, W, C) / (N, D, H, W, C)) of a batched 4-D / 5-D input."""
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(x.dim())
    return (
        fmt is not None
        and meta_out.dim() == x.dim()
        and meta_out.is_contiguous(memory_format=fmt)
        and not meta_out.is_contiguous()
    )


# ---------------------------------------------------------------------------------------------
# Index tables (max pools) and window matrices (average pools), per spatial axis.


def _pool_axis_positions(starts: List[int], length: int, step: int, in_size: int) -> Optional[List[List[int]]]:
    """Window ``o`` reads ``starts[o] + j * step`` for ``j < length``. Positions before the input
    become the window's first in-bound position, positions after it the last one: duplicates
    never change a max, argmax's first-maximum order over them is torch's first-maximum order
    over the in-bound elements, and the last NaN stays the last. None if a window has no
    in-bound element (torch then reads past its bounds; left to torch)."""
    rows = []
    for start in starts:
        pos = [start + j * step for j in range(length)]
        inside = [q for q in pos if 0 <= q < in_size]
        if not inside:
            return None
        rows.append([inside[0] if q < 0 else inside[-1] if q >= in_size else q for q in pos])
    return rows


class _PoolTable(NamedTuple):
    flat: torch.Tensor  # int64 (P * K,): flat input index (h * W + w) of every window element
    windows: int  # P, output positions
    size: int  # K, elements per window (row-major over the window's axes)
    base: torch.Tensor  # int64 (P,): K * arange(P), the offset of each window in ``flat``


def _pool_table(rows_per_axis: List[List[List[int]]], in_sizes: Tuple[int, ...], device) -> _PoolTable:
    """Combine per-axis windows into flat indices, window-major then row-major in the window."""
    nd = len(rows_per_axis)
    t = torch.zeros((), dtype=torch.int64)
    for i, rows in enumerate(rows_per_axis):
        r = torch.tensor(rows, dtype=torch.int64)  # (O_i, k_i)
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = r.shape
        t = t + r.reshape(shape) * math.prod(in_sizes[i + 1 :])  # (O_0, .., k_0, ..)
    k = math.prod(len(rows[0]) for rows in rows_per_axis)
    p = math.prod(len(rows) for rows in rows_per_axis)
    base = torch.arange(p, dtype=torch.int64, device=device) * k
    return _PoolTable(t.reshape(-1).contiguous().to(device), p, k, base)


@lru_cache(maxsize=256)
def _pool_max_table(
    in_sizes: Tuple[int, ...],
    out_sizes: Tuple[int, ...],
    kernel: Tuple[int, ...],
    stride: Tuple[int, ...],
    padding: Tuple[int, ...],
    dilation: Tuple[int, ...],
    device: torch.device,
) -> Optional[_PoolTable]:
    axes = []
    for n, o, k, s, p, d in zip(in_sizes, out_sizes, kernel, stride, padding, dilation):
        rows = _pool_axis_positions([i * s - p for i in range(o)], k, d, n)
        if rows is None:
            return None
        axes.append(rows)
    return _pool_table(axes, in_sizes, device)


def _pool_adaptive_bounds(in_size: int, out_size: int) -> List[Tuple[int, int]]:
    """ATen's adaptive windows: ``[floor(i * in / out), ceil((i + 1) * in / out))``."""
    return [((i * in_size) // out_size, -(-((i + 1) * in_size) // out_size)) for i in range(out_size)]


@lru_cache(maxsize=256)
def _pool_adaptive_max_table(
    in_sizes: Tuple[int, ...], out_sizes: Tuple[int, ...], device: torch.device
) -> _PoolTable:
    axes = []
    for n, o in zip(in_sizes, out_sizes):
        bounds = _pool_adaptive_bounds(n, o)
        length = max(e - s for s, e in bounds)
        # end - 1 < n always, so positions past a short window repeat its last element
        axes.append([[min(s + j, e - 1) for j in range(length)] for s, e in bounds])
    return _pool_table(axes, in_sizes, device)


class _PoolMatrix(NamedTuple):
    matrix: torch.Tensor  # (out, in) 0/1: which inputs each window sums
    count: torch.Tensor  # (out,): torch's divisor along this axis
    bounds: Tuple[Tuple[int, int], ...]  # [lo, hi): the in-bound inputs of each window
    identity: bool  # every window is its own single input: the axis is left as it is
    tile: int  # k when window o is exactly [o * k, o * k + k) (windows tile the axis), else 0


@lru_cache(maxsize=256)
def _pool_avg_matrix(
    in_size: int,
    out_size: int,
    kernel: int,
    stride: int,
    padding: int,
    count_include_pad: bool,
    dtype: torch.dtype,
    device: torch.device,
) -> _PoolMatrix:
    """ATen's avg_pool windows: ``start = o * s - p``; the divisor counts ``[start,
    min(start + k, in + p))`` with count_include_pad, else the in-bound part only."""
    bounds, counts = [], []
    for o in range(out_size):
        start = o * stride - padding
        end = min(start + kernel, in_size + padding)
        lo, hi = max(start, 0), min(end, in_size)
        bounds.append((lo, hi))
        counts.append(end - start if count_include_pad else hi - lo)
    return _pool_matrix_from(bounds, counts, in_size, dtype, device)


@lru_cache(maxsize=256)
def _pool_adaptive_avg_matrix(in_size: int, out_size: int, dtype: torch.dtype, device: torch.device) -> _PoolMatrix:
    bounds = _pool_adaptive_bounds(in_size, out_size)
    return _pool_matrix_from(bounds, [e - s for s, e in bounds], in_size, dtype, device)


def _pool_matrix_from(bounds, counts, in_size: int, dtype, device) -> _PoolMatrix:
    cols = torch.arange(in_size, device=device)
    lo = torch.tensor([b[0] for b in bounds], device=device, dtype=torch.int64)
    hi = torch.tensor([b[1] for b in bounds], device=device, dtype=torch.int64)
    a = ((cols >= lo[:, None]) & (cols < hi[:, None])).to(dtype)
    identity = len(bounds) == in_size and all(b == (i, i + 1) for i, b in enumerate(bounds))
    k = bounds[0][1] - bounds[0][0]
    tile = k if k > 0 and all(b == (o * k, o * k + k) for o, b in enumerate(bounds)) else 0
    counts_t = torch.tensor(counts, dtype=dtype, device=device)
    return _PoolMatrix(a, counts_t, tuple(bounds), identity, tile)


@lru_cache(maxsize=256)
def _pool_divisor(
    counts: Tuple[_PoolMatrix, ...], override: Optional[int]
) -> torch.Tensor:
    """The (H_out, W_out) (or (W_out,)) divisor, shaped to broadcast against the output."""
    if override is not None:
        d = torch.full((), float(override), dtype=counts[0].count.dtype, device=counts[0].count.device)
        return d
    d = counts[0].count
    for m in counts[1:]:
        d = d[..., None] * m.count
    return d


@lru_cache(maxsize=256)
def _pool_kron(rows: _PoolMatrix, columns: _PoolMatrix) -> torch.Tensor:
    """The (Ho*Wo, H*W) 0/1 matrix of a 2-D window sum: the Kronecker product of the two axes'
    matrices, a size-only constant (a trace records it as one, not as a `kron` candle lacks)."""
    return torch.kron(rows.matrix, columns.matrix)


def clear_pooling_cache() -> None:
    """Drop the cached pooling index tables, window matrices, divisors and per-call plans."""
    _pool_kron.cache_clear()
    _pool_view_plan.cache_clear()
    _pool_max_table.cache_clear()
    _pool_adaptive_max_table.cache_clear()
    _pool_avg_matrix.cache_clear()
    _pool_adaptive_avg_matrix.cache_clear()
    _pool_divisor.cache_clear()
    _pool_conv_kernel.cache_clear()
    _depth_taps.cache_clear()
    pool_windows.cache_clear()
    _POOL_META_CACHE.clear()
    _POOL_PLANS.clear()


# ---------------------------------------------------------------------------------------------
# The two compositions.


def _pool_batched(x: torch.Tensor, nd: int) -> Tuple[torch.Tensor, bool]:
    """``x`` with a batch dim (unbatched input gets one of size 1), and whether it was added."""
    if x.dim() == nd + 1:
        return x.unsqueeze(0), True
    return x, False


# Window elements (rows * K * C) materialised per step: small enough to stay in cache and to be
# reused by the allocator (one large window tensor costs more in page faults than in copying).
_POOL_MAX_CHUNK = 1 << 23
_POOL_MAX_CHUNK_MIN = 1 << 14
_POOL_MAX_CHUNK_DIV = 2


def _pool_max_pick(src: torch.Tensor, flat: torch.Tensor, base: torch.Tensor, k: int, tracing: bool) -> torch.Tensor:
    """The chosen element of each window, as its position in ``flat`` (int64, ``base[p] + 0..K-1``):
    ``src`` is the detached input as an (N, S, C) channels-last view, ``flat`` the windows' flat
    spatial indices (P * K), ``base`` = K * (window number) (P,); returns (N, P, C). No gradient.

    The windows are taken whole rows of C at a time (``index_select`` along S, fast in this
    layout) into (N, P, K, C); the maximum is ``amax`` over K and the chosen position is the
    first element equal to it: ``amax`` over K of ``(win == max) * (K - k)`` (0/1 times a
    decreasing weight; the comparison is written as floats, which torch vectorises, unlike a
    bool result). That is torch's first maximum; a window holding NaN has a NaN maximum and
    takes its last NaN instead (ATen's ``val > maxval || isnan(val)``), a correction run only
    when a maximum is NaN (always when tracing: no branch on data)."""
    n, c = src.shape[0], src.shape[2]
    code_t = torch.float32 if src.dtype in (torch.float16, torch.bfloat16) else src.dtype
    weights = torch.arange(k, 0, -1, dtype=code_t, device=src.device).reshape(k, 1)
    win = src.index_select(1, flat).reshape(n, -1, k, c)
    top = win.amax(2, keepdim=True)
    flags = _pool_flag(torch.eq, win, top, code_t, tracing)
    first = (flags * weights if tracing else flags.mul_(weights)).amax(2)  # K - first equal
    pick = (base + k)[:, None] - first.to(torch.int64)
    if tracing or bool(top.sum().isnan()):  # inf - inf only costs the correction
        last_nan = (_pool_flag(torch.ne, win, win, code_t, tracing) * weights.flip(0)).amax(2)
        last_nan = last_nan.to(torch.int64)
        pick = torch.where(last_nan > 0, base[:, None] + last_nan - 1, pick)
    return pick


def _pool_flag(cmp, a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype, tracing: bool) -> torch.Tensor:
    """``cmp(a, b)`` as 0/1 of ``dtype`` (written straight into a float tensor outside tracing:
    torch vectorises comparisons with a float result, not with a bool one)."""
    if tracing:
        return cmp(a, b).to(dtype)
    return cmp(a, b, out=torch.empty(a.shape, dtype=dtype, device=a.device))


def _pool_max_index(x: torch.Tensor, table: _PoolTable, channels_last: bool) -> torch.Tensor:
    """The chosen element of each window of batched ``x`` (N, C, *S), as an (N, P, C) int64
    index: the flat spatial index ``s``, or for ``channels_last`` the index ``s * C + c`` into
    the (N, S * C) view (a gather along its last dim is about twice as fast as along S). The
    choice runs on the channels-last (N, S, C) layout (a view for channels_last input, a copy
    per batch chunk otherwise), in chunks of about ``_POOL_MAX_CHUNK`` window elements (one
    chunk when tracing)."""
    n, c = x.shape[0], x.shape[1]
    p, k = table.windows, table.size
    xd = x.detach()
    flat = table.flat * c if channels_last else table.flat
    tracing = recording()
    if tracing:
        pick = _pool_max_pick(xd.movedim(1, -1).reshape(n, -1, c), table.flat, table.base, k, True)
        index = flat.index_select(0, pick.reshape(-1)).reshape(n, p, c)
        return index + torch.arange(c, device=x.device) if channels_last else index
    # chunks of at most a quarter of the input too: the window, its flags and (for contiguous
    # input) the transposed batch stay well under torch's own peak (output, indices, gradient)
    rows = max(1, min(_POOL_MAX_CHUNK, max(x.numel() // _POOL_MAX_CHUNK_DIV, _POOL_MAX_CHUNK_MIN)) // (k * c))
    nb, pc = (max(1, min(n, rows // p)), p) if rows >= p else (1, rows)
    index = torch.empty((n, p, c), dtype=torch.int64, device=x.device)
    channel = torch.arange(c, device=x.device)
    for n0 in range(0, n, nb):
        n1 = min(n, n0 + nb)
        src = xd[n0:n1].movedim(1, -1).reshape(n1 - n0, -1, c)
        for p0 in range(0, p, pc):
            p1 = min(p, p0 + pc)
            pick = _pool_max_pick(src, table.flat[p0 * k : p1 * k], table.base[: p1 - p0], k, False)
            part = index[n0:n1, p0:p1]
            torch.index_select(flat[p0 * k : p1 * k], 0, pick.reshape(-1), out=part.view(-1))
            if channels_last:
                part.add_(channel)
    return index


def _pool_max_apply(
    x: torch.Tensor, table: _PoolTable, out_sizes: Tuple[int, ...], channels_last: bool, want_index: bool
) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """Max pool of batched ``x`` (N, C, *S) by an index table: (values, flat spatial indices
    if ``want_index``)."""
    n, c = x.shape[0], x.shape[1]
    index = _pool_max_index(x, table, channels_last)  # (N, P, C)
    shape = (n,) + out_sizes + (c,)
    if channels_last:  # gather from the (N, S * C) view: the gradient path stays channels_last
        out = x.movedim(1, -1).reshape(n, -1).gather(1, index.reshape(n, -1))
        spatial = torch.div(index, c, rounding_mode="floor") if want_index else None
        return out.reshape(shape).movedim(-1, 1), None if spatial is None else spatial.reshape(shape).movedim(-1, 1)
    index = index.transpose(1, 2).contiguous()  # (N, C, P)
    out = x.reshape(n, c, -1).gather(2, index)
    return out.reshape((n, c) + out_sizes), index.reshape((n, c) + out_sizes)


_POOL_KRON_MAX_IN = 256  # H*W up to which the 2-D window sum is one GEMM (measured: 14x14)


def _pool_sum_apply(x: torch.Tensor, axes: Sequence[_PoolMatrix], channels_last: bool) -> torch.Tensor:
    """Window sums of batched ``x`` (N, C, *S): a GEMM per axis with its (out, in) 0/1 matrix
    (an identity axis is skipped)."""
    n, c = x.shape[0], x.shape[1]
    if len(axes) == 2 and x.shape[2] * x.shape[3] <= _POOL_KRON_MAX_IN:
        # Small planes (adaptive pools of late feature maps): one GEMM with the (Ho*Wo, H*W)
        # Kronecker product of the two 0/1 matrices, instead of a W GEMM and many tiny H GEMMs.
        k = size_constant(_pool_kron, axes[0], axes[1])
        ho, wo = axes[0].matrix.shape[0], axes[1].matrix.shape[0]
        if channels_last:
            xv = x.permute(0, 2, 3, 1).reshape(n, -1, c)  # (N, H*W, C) view, no copy
            y = torch.bmm(k.expand(n, ho * wo, k.shape[1]), xv)
            return y.reshape(n, ho, wo, c).permute(0, 3, 1, 2)
        y = torch.mm(x.reshape(n * c, -1), k.t())
        return y.reshape(n, c, ho, wo)
    if channels_last:
        a_h, a_w = axes[0].matrix, axes[1].matrix
        h, w = x.shape[2], x.shape[3]
        ho, wo = a_h.shape[0], a_w.shape[0]
        xv = x.permute(0, 2, 3, 1).reshape(n, h, w * c)  # the (N, H, W, C) view, no copy
        y = torch.bmm(a_h.expand(n, ho, h), xv)  # (N, Ho, W*C)
        y = torch.bmm(a_w.expand(n * ho, wo, w), y.reshape(n * ho, w, c))  # (N*Ho, Wo, C)
        return y.reshape(n, ho, wo, c).permute(0, 3, 1, 2)
    y = x
    for k in reversed(range(len(axes))):  # W first: one mm; then H (and D): a left-multiply
        if not axes[k].identity:
            y = apply_matrix(y, 2 + k, axes[k].matrix)
    return y.clone() if y is x else y


# Tiles up to this size are summed as the adds of ``unbind``'s parts (one op per element
# either way; the backward of ``unbind`` stacks the parts' gradients into one input-sized
# tensor); larger ones by ``sum`` over the split axis.
_POOL_TILE_ADDS = 8


def _pool_sum_tiled(x: torch.Tensor, axes: Sequence[_PoolMatrix]) -> torch.Tensor:
    """Window sums of a channels_last (N, C, H, W) ``x`` whose windows tile each axis (window
    ``o`` is ``[o * k, o * k + k)``: adaptive pools with ``in % out == 0``, avg pools with
    ``kernel == stride`` and no padding): on the (N, H, W, C) view, each axis is split into
    (out, k) and summed over k: the adds of the k parts ``unbind`` gives (views; its backward
    is one ``stack``), or ``sum`` for larger k. Each output adds only its window's own
    elements, so inf / NaN behave as in torch's kernel. (``narrow`` is skipped when it keeps
    the whole axis: its backward would fill an input-sized gradient with zeros first.)"""
    v = x.permute(0, 2, 3, 1)
    for dim, m in ((1, axes[0]), (2, axes[1])):
        k, out = m.tile, m.matrix.shape[0]
        if v.shape[dim] != out * k:
            v = v.narrow(dim, 0, out * k)
        if k == 1:
            continue
        v = v.reshape(v.shape[:dim] + (out, k) + v.shape[dim + 1 :])
        if k > _POOL_TILE_ADDS:
            v = v.sum(dim + 1)
            continue
        parts = v.unbind(dim + 1)
        y = parts[0] + parts[1]
        for part in parts[2:]:
            y = y + part
        v = y
    return v.permute(0, 3, 1, 2)


def _pool_sum_tiled_views(x: torch.Tensor, axes: Sequence[_PoolMatrix]) -> torch.Tensor:
    """``_pool_sum_tiled`` without a gradient to compute: the k parts of each axis are strided
    views (``as_strided``) of the (N, H, W, C) memory, added; fewer ops than splitting the
    axis (the op count is what costs on small late feature maps)."""
    v = x.permute(0, 2, 3, 1)
    for dim, m in ((1, axes[0]), (2, axes[1])):
        k, out = m.tile, m.matrix.shape[0]
        if k == 1 and v.shape[dim] == out:
            continue
        size, stride = list(v.shape), list(v.stride())
        size[dim] = out
        step, stride[dim] = stride[dim], stride[dim] * k
        base = v.storage_offset()
        y = v.as_strided(size, stride, base)
        y = y.clone() if k == 1 else y + v.as_strided(size, stride, base + step)
        for j in range(2, k):
            y.add_(v.as_strided(size, stride, base + j * step))
        v = y
    return v.permute(0, 3, 1, 2)


@lru_cache(maxsize=256)
def _pool_shift(m: _PoolMatrix) -> Optional[Tuple[int, int]]:
    """(k, p) when window o is ``[o - p, o - p + k)`` clipped to the input (stride 1, zero
    padding p, every window inside the padded input), else None."""
    out, n = m.matrix.shape
    k = max(hi - lo for lo, hi in m.bounds)
    if (out - n + k - 1) % 2 or out - n + k - 1 < 0:
        return None
    p = (out - n + k - 1) // 2
    ok = all(b == (max(o - p, 0), min(o - p + k, n)) for o, b in enumerate(m.bounds))
    return (k, p) if ok else None


def _pool_sum_shifted(x: torch.Tensor, axes: Sequence[_PoolMatrix]) -> torch.Tensor:
    """Window sums of a channels_last (N, C, H, W) ``x`` with stride-1 windows (see
    ``_pool_shift``), when no gradient is needed: per axis, the (N, H, W, C) view zero-padded
    by p on both sides (one copy) and its k shifted ``narrow`` views added. Each output adds only
    its window's elements and zeros, so inf / NaN behave as in torch's kernel. (With a gradient,
    the GEMMs are cheaper: each narrow's backward would fill a padded-size gradient.)"""
    v = x.permute(0, 2, 3, 1)
    for dim, m in ((1, axes[0]), (2, axes[1])):
        shift = _pool_shift(m)
        assert shift is not None
        k, p = shift
        if k == 1 and p == 0:
            continue
        out = m.matrix.shape[0]
        pad = [0, 0, 0, 0, 0, 0]
        pad[2 * (3 - dim)] = pad[2 * (3 - dim) + 1] = p  # F.pad lists the last dim first
        vp = F.pad(v, pad) if p else v
        y = vp.narrow(dim, 0, out) + vp.narrow(dim, 1, out) if k > 1 else vp.narrow(dim, 0, out).clone()
        tracing = recording()
        for j in range(2, k):
            y = y + vp.narrow(dim, j, out) if tracing else y.add_(vp.narrow(dim, j, out))
        v = y
    return v.permute(0, 3, 1, 2)


def _pool_sum_shifted_inplace(x: torch.Tensor, axes: Sequence[_PoolMatrix]) -> Optional[torch.Tensor]:
    """``_pool_sum_shifted`` in eager mode with fewer fresh tensors (each costs page faults
    on first touch, more than the adds): per axis, a copy of the shift that every output has,
    then the other shifts added in place on the output ranges they reach (no padded copy).
    With ``grad``, autograd records the in-place adds on views. None when some axis has no
    shift that every output reads (left to the padded path)."""
    v = x.permute(0, 2, 3, 1)
    plans = []
    for dim, m in ((1, axes[0]), (2, axes[1])):
        k, p = _pool_shift(m)  # type: ignore[misc]
        n, out = v.shape[dim], m.matrix.shape[0]
        full = [t - p for t in range(k) if 0 <= t - p <= n - out]
        if not full:
            return None
        plans.append((dim, [t - p for t in range(k)], out, full[0], n))
    for dim, shifts, out, d0, n in plans:
        if len(shifts) == 1 and d0 == 0 and out == n:
            continue
        y = v.narrow(dim, d0, out).clone(memory_format=torch.contiguous_format)
        for d in shifts:
            if d == d0:
                continue
            lo, hi = max(0, -d), min(out, n - d)
            if hi > lo:
                y.narrow(dim, lo, hi - lo).add_(v.narrow(dim, lo + d, hi - lo))
        v = y
    return v.permute(0, 3, 1, 2)


def _pool_sum_taps(x: torch.Tensor, axes: Sequence[_PoolMatrix], channels_last: bool) -> torch.Tensor:
    """The same window sums by taps (input with inf / NaN): each window adds only its own
    elements, as torch's kernels do (see ``_taps``)."""
    v = x.permute(0, 2, 3, 1) if channels_last else x
    dims = (1, 2) if channels_last else tuple(range(2, x.dim()))
    for k in reversed(range(len(axes))):
        m = axes[k]
        taps = taps_from_bounds(m.bounds, v.shape[dims[k]], x.dtype, x.device)
        v = apply_taps(v, dims[k], taps)
    return v.permute(0, 3, 1, 2) if channels_last else v


class _PoolConv(NamedTuple):
    """A 2-D average pool's windows as a convolution's: every window is ``[o * s - p, o * s - p
    + k)`` clipped to the input, and the convolution gives exactly torch's output count."""

    kernel: Tuple[int, int]
    stride: Tuple[int, int]
    padding: Tuple[int, int]
    divisor: Optional[float]  # every window's divisor, when they are all equal: in the kernel


def _pool_conv_geometry(in_sizes, out_sizes, kernel, stride, padding, divisor) -> Optional[_PoolConv]:
    """The convolution that sums the same windows, or None where ceil_mode adds a window the
    convolution would not have."""
    for n, o, k, s, p in zip(in_sizes, out_sizes, kernel, stride, padding):
        if (n + 2 * p - k) // s + 1 != o:
            return None
    uniform = float(divisor.min()) if bool(divisor.min() == divisor.max()) else None
    return _PoolConv(tuple(kernel), tuple(stride), tuple(padding), uniform)


@lru_cache(maxsize=64)
def _pool_conv_kernel(
    channels: int, kernel: Tuple[int, int], divisor: Optional[float], dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """Every tap 1, or 1 / divisor where all windows share one (one op less each way)."""
    return torch.full((channels, 1) + kernel, 1.0 if divisor is None else 1.0 / divisor, dtype=dtype, device=device)


def _pool_sum_conv(x: torch.Tensor, conv: _PoolConv) -> torch.Tensor:
    """Window sums of a channels_last (N, C, H, W) ``x`` with a gradient, as a depthwise
    ``conv2d``: one op forward and one backward, where the 0/1 matrices take two GEMMs each way
    (AvgPool2d(3, 1, 1) forward+backward 3.4-4.1x -> 0.63-0.74x torch's). Every tap's weight is
    positive and padding adds zeros, so each output adds only its window's own elements: inf /
    NaN behave as in torch's kernel. With one divisor for all windows the taps are 1 / divisor
    and the result is the average. Only outside tracing: the traced graph keeps the matrices
    (candle runs a grouped conv2d as one conv per channel)."""
    weight = _pool_conv_kernel(x.shape[1], conv.kernel, conv.divisor, x.dtype, x.device)
    return F.conv2d(x, weight, None, conv.stride, conv.padding, 1, x.shape[1])


def _pool_avg_core(
    x: torch.Tensor,
    nd: int,
    meta: torch.Tensor,
    axes: Sequence[_PoolMatrix],
    divisor: torch.Tensor,
    conv: Optional[_PoolConv] = None,
) -> torch.Tensor:
    xb, added = _pool_batched(x, nd)
    cl = not added and x.dim() == 4 and _pool_channels_last(x, meta)  # 5-D: generic path
    dtype = x.dtype
    if dtype in (torch.float16, torch.bfloat16):
        xb = xb.to(torch.float32)  # ATen accumulates and divides in float32 for these
    need_grad = torch.is_grad_enabled() and xb.requires_grad
    fresh = False  # y is a new tensor nothing else holds: divided in place
    if cl and conv is not None and need_grad and not recording():
        y = _pool_sum_conv(xb, conv)
        if conv.divisor is not None:
            return match_strides(y if y.dtype == dtype else y.to(dtype), meta.stride())
    elif cl and all(a.tile for a in axes):  # adds of views: no 0 * inf, no finiteness test
        views = not (need_grad or recording()) and all(a.tile <= _POOL_TILE_ADDS for a in axes)
        y = _pool_sum_tiled_views(xb, axes) if views else _pool_sum_tiled(xb, axes)
        # in place only without a gradient: y is a view (permute) of the sum, and autograd
        # records an in-place op on a view as a scatter into its base
        fresh = not need_grad and any(a.tile > 1 for a in axes) and not recording()
    elif cl and not need_grad and all(_pool_shift(a) for a in axes):  # stride 1: adds of shifted views
        y = None if recording() else _pool_sum_shifted_inplace(xb, axes)
        if y is None:
            y = _pool_sum_shifted(xb, axes)
        else:
            fresh = True
    elif finite_input(xb):
        y = _pool_sum_apply(xb, axes, cl)
    else:
        y = _pool_sum_taps(xb, axes, cl)
    y = y.div_(divisor) if fresh else y / divisor
    if y.dtype != dtype:
        y = y.to(dtype)
    return match_strides(y.squeeze(0) if added else y, meta.stride())


class _PoolAxisPos(NamedTuple):
    offset: int  # t * d: the position's input offset from its window's start
    lo: int  # outputs [lo, hi) have this position inside the input
    hi: int
    start: int  # input index read by output lo
    step: int  # s: input stride between consecutive outputs


class _PoolViewPlan(NamedTuple):
    axes: Tuple[Tuple[_PoolAxisPos, ...], ...]  # per spatial axis, its window positions in order
    full: Tuple[int, ...]  # per axis, a position inside the input for every output
    base: torch.Tensor  # (Ho, Wo, C) code dtype: flat (N, H*W*C) index of each window's start
    offsets: Tuple[torch.Tensor, ...]  # 0-d code tensors, row-major over the window positions
    code: torch.dtype  # float32 when flat indices are exact in it, else float64
    planes: bool  # a contiguous NCHW input, run as (N * C, 1, H, W): channels_last planes of 1 channel


@lru_cache(maxsize=64)
def _pool_view_plan(
    in_sizes: Tuple[int, ...],
    out_sizes: Tuple[int, ...],
    channels: int,
    kernel: Tuple[int, ...],
    stride: Tuple[int, ...],
    padding: Tuple[int, ...],
    dilation: Tuple[int, ...],
    device: torch.device,
    planes: bool = False,
) -> Optional[_PoolViewPlan]:
    """The window positions of a 2-D max pool as strided views of the (N, H, W, C) input: per
    axis and position ``t``, the outputs whose element ``o * s - p + t * d`` is inside the
    input (a contiguous range, read with step ``s``). None when no position of an axis is
    inside for every output (left to the table path)."""
    axes, full = [], []
    for n, o, k, st, p, d in zip(in_sizes, out_sizes, kernel, stride, padding, dilation):
        pos = []
        for t in range(k):
            lo = max(0, -(-(p - t * d) // st))
            hi = min(o, (n - 1 + p - t * d) // st + 1)
            if hi > lo:
                pos.append(_PoolAxisPos(t * d, lo, hi, lo * st - p + t * d, st))
        whole = [i for i, q in enumerate(pos) if q.lo == 0 and q.hi == o]
        if not whole:
            return None
        axes.append(tuple(pos))
        full.append(whole[0])
    h, w = in_sizes
    code = torch.float32 if h * w * channels < (1 << 24) else torch.float64
    rows = torch.arange(out_sizes[0], dtype=torch.int64) * stride[0] - padding[0]
    cols = torch.arange(out_sizes[1], dtype=torch.int64) * stride[1] - padding[1]
    base = (rows[:, None, None] * w + cols[None, :, None]) * channels + torch.arange(channels)
    offsets = tuple(
        torch.tensor(float((a.offset * w + b.offset) * channels), dtype=code, device=device)
        for a in axes[0]
        for b in axes[1]
    )
    return _PoolViewPlan(tuple(axes), tuple(full), base.to(code).to(device), offsets, code, planes)


def _pool_strided(t: torch.Tensor, dims: Sequence[Tuple[int, int, int, int]]) -> torch.Tensor:
    """A strided view of an (N, A, B, C) ``t``: for each ``(dim, start, count, step)`` along
    ``dim`` in (1, 2), ``count`` elements from ``start`` every ``step`` (one ``as_strided``;
    cheaper than indexing with slices, which costs more than the op on small maps)."""
    size, stride = list(t.shape), list(t.stride())
    offset = t.storage_offset()
    for dim, start, count, step in dims:
        offset += start * stride[dim]
        size[dim] = count
        stride[dim] *= step
    return t.as_strided(size, stride, offset)


def _pool_view_max(v: torch.Tensor, dim: int, axis: Sequence[_PoolAxisPos], full: int) -> torch.Tensor:
    """The maximum over an axis's window positions, by ``maximum`` of strided views (NaN
    propagates; a zero's sign may differ from ATen's first-element choice, which the caller
    handles)."""
    first = axis[full]
    view = _pool_strided(v, [(dim, first.start, first.hi - first.lo, first.step)])
    # positions covering every output first: the first two make y in one op, no copy
    rest = sorted((q for i, q in enumerate(axis) if i != full), key=lambda q: (q.lo, -q.hi))
    if not rest:
        return view.clone()
    y = None
    for q in rest:
        other = _pool_strided(v, [(dim, q.start, q.hi - q.lo, q.step)])
        if y is None and q.lo == first.lo and q.hi == first.hi:
            y = torch.maximum(view, other)
            continue
        if y is None:
            y = view.clone()
        part = _pool_strided(y, [(dim, q.lo, q.hi - q.lo, 1)])
        torch.maximum(part, other, out=part)
    assert y is not None
    return y


def _pool_max_views(
    x: torch.Tensor, meta: torch.Tensor, plan: _PoolViewPlan, return_indices: bool
):
    """Max pool of a channels_last (N, C, H, W) ``x`` by strided views of its (N, H, W, C)
    memory: no copy of the windows.

    The maximum ``y`` is ``maximum`` over the window positions' views, H then W (separable;
    computed without gradient). Without a gradient to compute and when no output is zero or
    NaN, ``y`` is the result. Else the chosen element is located as in ATen: per position
    ``t`` in reverse row-major order, ``code = lerp(code, offset_t, v_t == y)`` (a 0/1 weight:
    exact), so the first element equal to the maximum wins (which also fixes a zero's sign);
    where a maximum is NaN, an ascending pass with ``v_t != v_t`` takes the last NaN. Then
    one ``gather`` along the last dim of the (N, H*W*C) view: the gradient path is the same
    single ``gather`` as the table path's."""
    out_shape = tuple(meta.shape)
    if plan.planes:  # contiguous NCHW: each channel plane is a channels_last image of 1 channel
        x = x.reshape(-1, 1, x.shape[2], x.shape[3])

    def finish(t: torch.Tensor) -> torch.Tensor:
        """(N, Ho, Wo, C) results in the layout torch returns."""
        if plan.planes:
            return t.reshape(out_shape)
        return match_strides(t.permute(0, 3, 1, 2), meta.stride())

    n, c = x.shape[0], x.shape[1]
    ax_h, ax_w = plan.axes
    xv = x.detach().permute(0, 2, 3, 1)  # (N, H, W, C)
    need_grad = torch.is_grad_enabled() and x.requires_grad
    with torch.no_grad():
        rows = _pool_view_max(xv, 1, ax_h, plan.full[0])  # (N, Ho, W, C): a new tensor
        y = _pool_view_max(rows, 2, ax_w, plan.full[1])
        if not (need_grad or return_indices):
            m = y.numel()
            scratch = rows.view(-1)[:m].view(y.shape) if rows.is_contiguous() and rows.numel() >= m else None
            if float(torch.abs(y, out=scratch).amin()) > 0:  # NaN: not > 0
                return finish(y)
    with torch.no_grad():
        order = [(i, a, j, b) for i, a in enumerate(ax_h) for j, b in enumerate(ax_w)]
        # the default is the last position when every output has it (no other position equal
        # to the maximum: it is the one), else a position every output has
        i, a, j, b = order[-1]
        last_full = a.lo == 0 and a.hi == y.shape[1] and b.lo == 0 and b.hi == y.shape[2]
        default = len(order) - 1 if last_full else plan.full[0] * len(ax_w) + plan.full[1]
        m = y.numel()
        if rows.dtype == plan.code and rows.is_contiguous() and rows.numel() >= 2 * m:
            buf = rows.view(-1)  # the row maxima are spent: the code and flags live there
        else:
            buf = torch.empty(2 * m, dtype=plan.code, device=x.device)
        acc, flags = buf[:m].view(y.shape), buf[m : 2 * m].view(y.shape)
        acc.fill_(plan.offsets[default])

        ho, wo = y.shape[1], y.shape[2]

        def passes(positions, compare):
            for i, a, j, b in positions:
                view = _pool_strided(xv, [(1, a.start, a.hi - a.lo, a.step), (2, b.start, b.hi - b.lo, b.step)])
                if a.lo == 0 and a.hi == ho and b.lo == 0 and b.hi == wo:  # every output: no views
                    f, yr, ar = flags, y, acc
                else:
                    region = [(1, a.lo, a.hi - a.lo, 1), (2, b.lo, b.hi - b.lo, 1)]
                    f, yr, ar = (_pool_strided(t, region) for t in (flags, y, acc))
                compare(view, yr if compare is torch.eq else view, out=f)
                ar.lerp_(plan.offsets[i * len(ax_w) + j], f)

        passes(reversed(order[:-1] if last_full else order), torch.eq)
        if bool(y.sum().isnan()):
            passes(order, torch.ne)  # x != x: the last NaN of the window
        index = acc.add_(plan.base).to(torch.int64).reshape(n, -1)
    out = finish(x.permute(0, 2, 3, 1).reshape(n, -1).gather(1, index).reshape(n, out_shape[2], out_shape[3], c))
    if not return_indices:
        return out
    spatial = torch.div(index, c, rounding_mode="floor")
    return out, finish(spatial.reshape(n, out_shape[2], out_shape[3], c))


def _pool_max_view_plan(x: torch.Tensor, meta: torch.Tensor, nd: int, window) -> Optional[_PoolViewPlan]:
    """The strided-view plan for a batched 2-D ``x``, channels_last or contiguous NCHW (run as
    channel planes), outside tracing (``window``: kernel, stride, padding, dilation); else None
    (the table path)."""
    if nd != 2 or x.dim() != 4 or recording():  # a tracer records the table path
        return None
    if _pool_channels_last(x, meta):
        channels, planes = x.shape[1], False
    elif x.is_contiguous() and meta.is_contiguous():
        channels, planes = 1, True
    else:
        return None
    key = (tuple(x.shape[-2:]), tuple(meta.shape[-2:]), channels) + tuple(window) + (x.device, planes)
    return size_constant(_pool_view_plan, *key)


def _pool_max_core(
    x: torch.Tensor,
    nd: int,
    meta: torch.Tensor,
    table: _PoolTable,
    view_plan: Optional[_PoolViewPlan],
    return_indices: bool,
):
    """Values, and indices if ``return_indices``: what torch's op returns. ``view_plan``: the
    windows as strided views (channels_last input), used outside tracing."""
    if view_plan is not None and not recording():
        return _pool_max_views(x, meta, view_plan, return_indices)
    xb, added = _pool_batched(x, nd)
    cl = not added and _pool_channels_last(x, meta)
    out_sizes = tuple(meta.shape[-nd:])
    out, index = _pool_max_apply(xb, table, out_sizes, cl, return_indices)
    out = match_strides(out.squeeze(0) if added else out, meta.stride())
    if not return_indices:
        return out
    return out, match_strides(index.squeeze(0) if added else index, meta.stride())


# ---------------------------------------------------------------------------------------------
# Max pooling.


_POOL_MAX_FN = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_POOL_MAX_WITH_INDICES = {1: F.max_pool1d_with_indices, 2: F.max_pool2d_with_indices, 3: F.max_pool3d_with_indices}
_POOL_ADAPTIVE_MAX_FN = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}
_POOL_ADAPTIVE_MAX_WITH_INDICES = {
    1: F.adaptive_max_pool1d_with_indices,
    2: F.adaptive_max_pool2d_with_indices,
    3: F.adaptive_max_pool3d_with_indices,
}


def _pool_max(nd: int, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    if use_native(x) or torch.jit.is_tracing():  # torch's kernel: plain eager mode (``_dispatch``), jit.trace
        return _POOL_MAX_FN[nd](x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    with_indices = _POOL_MAX_WITH_INDICES[nd]
    args = (kernel_size, stride, padding, dilation, ceil_mode)

    def build():
        meta = _pool_meta(with_indices, x, kernel_size, stride, padding, dilation, ceil_mode, True)
        if meta is None or meta.numel() == 0 or x.numel() == 0:
            return None
        kernel = _pool_ints(kernel_size, nd)
        key = (
            tuple(x.shape[-nd:]),
            tuple(meta.shape[-nd:]),
            kernel,
            _pool_ints(stride, nd, kernel),
            _pool_ints(padding, nd),
            _pool_ints(dilation, nd),
            x.device,
        )
        table = size_constant(_pool_max_table, *key)
        return None if table is None else (meta, table, _pool_max_view_plan(x, meta, nd, key[2:6]))

    plan = _pool_plan_memo(_pool_signature(with_indices, x, args), build)
    if plan is None or torch.jit.is_tracing():  # see _pool_meta
        torch_fn = _POOL_MAX_FN[nd]  # so torch raises or computes
        return torch_fn(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    return _pool_max_core(x, nd, *plan, return_indices)


def max_pool2d(
    input: torch.Tensor,
    kernel_size: _PoolArg,
    stride: _PoolOptArg = None,
    padding: _PoolArg = 0,
    dilation: _PoolArg = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    r"""``F.max_pool2d`` (same signature, output, indices and gradient) for candle.

    Input (N, C, H, W) or (C, H, W), any float dtype. Output ``(…, H_out, W_out)`` with
    ``H_out = floor((H + 2p - d(k - 1) - 1 + (ceil_mode ? s - 1 : 0)) / s) + 1``, dropping a last
    window that starts in the right padding (likewise W); torch checks the arguments. Window
    ``(i, j)`` reads rows ``i*s_h - p_h + a*d_h`` and columns ``j*s_w - p_w + b*d_w``; elements
    in the padding never win. A channels_last input gives a channels_last output.

    **Exactness.** Values and ``return_indices`` (flat ``h * W + w`` per plane, int64) equal
    torch's bitwise, including ties (the first maximum in row-major window order wins) and NaN
    (a window with NaN yields NaN, and its index is the window's last NaN, as in ATen's
    ``val > maxval || isnan(val)``). The gradient is the output gradient added at the chosen
    element of every window (accumulating where windows overlap), as torch's.

    **Composition.** Once per (sizes, arguments, device), a host-built table ``T`` (P, K) of flat
    input indices for each output position's window (K = k_h * k_w, out-of-input positions
    replaced by the window's first / last in-bound element). Then, without gradient, on the
    channels-last view ``xv`` (N, H*W, C) of ``x.detach()`` (a copy for contiguous input), in
    chunks of batches / window rows: ``win = xv.index_select(1, T.flatten()).reshape(N, P, K,
    C)``, ``top = win.amax(2)``, ``pick`` = the first ``k`` with ``win[:, :, k] == top`` (``amax``
    over K of ``(win == top) * (K - k)``; the window's last NaN when ``top`` is NaN), ``idx =
    T.flatten()[pick + K * arange(P)]`` (integers). Then ``out = x.reshape(N, C, H*W).gather(2,
    idx)`` (channels_last input: a gather along the last dim of its (N, H*W*C) view): the only
    op on the gradient path is ``gather``, whose backward scatters into zeros, i.e. torch's
    max-pool backward.

    The same choice in candle (Rust), where argmax keeps the first maximum, for ``x: Tensor``
    (n, c, h, w)::

        // Host side, once: t (u32, P*K), base = (0..P) * K (u32, P), positions = 1..=K (u32).
        let xf = x.reshape((n, c, h * w))?;
        let win = xf.detach().index_select(&t, 2)?.reshape((n, c, p, k))?;   // no graph
        let mut pick = win.argmax_keepdim(3)?;                  // u32, Reduce ArgMax: no grad
        // candle's CPU argmax replaces only on a strictly greater value (cpu_backend ReduceIndex),
        // so ties keep the first element, as torch; but it skips NaN, so when the model can make
        // NaN, pick the last NaN of the window as torch does (u8/u32 ops, no gradient):
        //   let nan = win.ne(&win)?.to_dtype(DType::U32)?.broadcast_mul(&positions)?;
        //   let has = nan.max_keepdim(3)?.gt(0u32)?;
        //   pick = has.where_cond(&nan.argmax_keepdim(3)?, &pick)?;
        let idx = t.index_select(&pick.squeeze(3)?.broadcast_add(&base)?.flatten_all()?, 0)?
                   .reshape((n, c, p))?;                         // u32, no grad
        let out = xf.gather(&idx, 2)?.reshape((n, c, h_out, w_out))?;  // Op::Gather: bwd exact
        // Never candle's max_pool2d: its backward bails (k != s) or is wrong (k == s).

    **channels_last input** (outside tracing) takes the same choice from strided views of its
    (N, H, W, C) memory instead of copied windows: ``y`` = ``maximum`` over the window
    positions' views (per axis, the outputs whose element is inside the input form one range
    read with step ``s``); then, per position in reverse row-major order, ``code = lerp(code,
    offset, v == y)`` (the first element equal to ``y`` wins; a NaN window takes its last NaN in
    a second pass) and the same ``gather``. Without a gradient and with no output 0 or NaN,
    ``y`` is returned as it is (``maximum`` may give +0 where ATen's first maximum is -0).

    Falls back to ``F.max_pool2d`` itself for non-floating dtypes, for arguments torch rejects
    (so torch raises), for empty outputs, and for a window with no element inside the input
    (possible only with dilation > 1; torch then returns -inf with an index past the window).
    """
    return _pool_max(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d_with_indices(
    input: torch.Tensor,
    kernel_size: _PoolArg,
    stride: _PoolOptArg = None,
    padding: _PoolArg = 0,
    dilation: _PoolArg = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """``F.max_pool2d_with_indices``: :func:`max_pool2d` returning (values, indices) always."""
    return _pool_max(2, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d(
    input: torch.Tensor,
    kernel_size: _PoolArg,
    stride: _PoolOptArg = None,
    padding: _PoolArg = 0,
    dilation: _PoolArg = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """``F.max_pool1d`` for candle: :func:`max_pool2d`'s composition on the one axis of an
    (N, C, L) or (C, L) input (indices are positions in L)."""
    return _pool_max(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(
    input: torch.Tensor,
    kernel_size: _PoolArg,
    stride: _PoolOptArg = None,
    padding: _PoolArg = 0,
    dilation: _PoolArg = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """``F.max_pool1d_with_indices``: :func:`max_pool1d` returning (values, indices) always."""
    return _pool_max(1, input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ---------------------------------------------------------------------------------------------
# Average pooling.


def _pool_avg(nd: int, torch_fn, x, args):
    """``args`` as torch_fn takes them: kernel_size, stride, padding, ceil_mode,
    count_include_pad[, divisor_override]."""
    if use_native(x) or torch.jit.is_tracing():  # torch's kernel: plain eager mode (``_dispatch``), jit.trace
        return torch_fn(x, *args)

    def build():
        kernel_size, stride, padding, _, count_include_pad = args[:5]
        override = args[5] if len(args) > 5 else None
        meta = _pool_meta(torch_fn, x, *args)
        if meta is None or meta.numel() == 0 or x.numel() == 0:
            return None
        kernel = _pool_ints(kernel_size, nd)
        strides = _pool_ints(stride, nd, kernel)
        pads = _pool_ints(padding, nd)
        dtype = _pool_compute_dtype(x)
        axes = tuple(
            size_constant(_pool_avg_matrix, n, o, k, s, p, bool(count_include_pad), dtype, x.device)
            for n, o, k, s, p in zip(x.shape[-nd:], meta.shape[-nd:], kernel, strides, pads)
        )
        divisor = size_constant(_pool_divisor, axes, None if override is None else int(override))
        conv = None
        if nd == 2 and not recording():  # the traced graph keeps the matrices
            conv = _pool_conv_geometry(x.shape[-nd:], meta.shape[-nd:], kernel, strides, pads, divisor)
        return meta, axes, divisor, conv

    plan = _pool_plan_memo(_pool_signature(torch_fn, x, args), build)
    if plan is None or torch.jit.is_tracing():
        return torch_fn(x, *args)
    return _pool_avg_core(x, nd, *plan)


def _pool_compute_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype


def avg_pool2d(
    input: torch.Tensor,
    kernel_size: _PoolArg,
    stride: _PoolOptArg = None,
    padding: _PoolArg = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: Optional[int] = None,
) -> torch.Tensor:
    r"""``F.avg_pool2d`` (same signature, output shape, memory format, gradient) for candle.

    Window ``(i, j)`` covers rows ``[i*s_h - p_h, i*s_h - p_h + k_h)`` (likewise columns); zero
    padding. ``out = window sum / divisor`` with ATen's divisor: ``divisor_override`` if given;
    else with ``count_include_pad`` the window clipped to the padded input, ``(min(hs + k_h, H +
    p_h) - hs) * (min(ws + k_w, W + p_w) - ws)`` (smaller than ``k_h * k_w`` only for a ceil_mode
    window running past the padding); else the number of in-bound elements. Output sizes as
    :func:`max_pool2d` with dilation 1; torch checks the arguments.

    **Precision.** Equal to torch to float rounding (summation order differs): float32 <= 1e-6
    for inputs in [-1, 1], float64 <= 1e-12. float16 / bfloat16 are summed and divided in float32
    and rounded once, as ATen does (so they may differ from torch by one ulp of the output dtype).

    **Composition.** Per axis a host-built (out, in) 0/1 matrix ``A`` (``A[o, q] = 1`` for the
    in-bound ``q`` of window ``o``), then ``y = (A_h @ x @ A_w^T) / D`` with the constant
    divisor ``D`` (H_out, W_out). Backward is ``A_h^T (G / D) A_w``: each window's gradient
    spread evenly over its in-bound elements, as torch's.

    The same in candle (Rust), for ``x: Tensor`` (n, c, h, w)::

        let y = x.broadcast_matmul(&a_w.t()?)?;          // Op::Matmul: (n, c, h, w_out)
        let y = a_h.broadcast_matmul(&y)?;               // (h_out, h) @ (n, c, h, w_out)
        let y = y.broadcast_div(&d)?;                    // Op::Binary Div by a constant
        // f16 / bf16: to_dtype(F32) first, to_dtype(orig) last. Never candle's avg_pool2d:
        // its backward bails for k != s and is wrong when H or W % k != 0.

    channels_last input is pooled as its (N, H, W, C) view (two bmm, adds of views without a
    gradient, one depthwise ``conv2d`` with one outside tracing) and returned channels_last.
    Falls back to ``F.avg_pool2d`` itself for non-floating dtypes and rejected arguments.
    """
    args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    return _pool_avg(2, F.avg_pool2d, input, args)


def avg_pool1d(
    input: torch.Tensor,
    kernel_size: _PoolArg,
    stride: _PoolOptArg = None,
    padding: _PoolArg = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> torch.Tensor:
    """``F.avg_pool1d`` for candle: :func:`avg_pool2d`'s composition (one GEMM with the 0/1
    window matrix, then the divisor) on the one axis of an (N, C, L) or (C, L) input."""
    args = (kernel_size, stride, padding, ceil_mode, count_include_pad)
    return _pool_avg(1, F.avg_pool1d, input, args)


# ---------------------------------------------------------------------------------------------
# Adaptive pooling.


def adaptive_avg_pool2d(input: torch.Tensor, output_size) -> torch.Tensor:
    r"""``F.adaptive_avg_pool2d`` for candle (output_size an int, a pair, None entries keep the
    input size).

    Output row ``i`` averages input rows ``[floor(i*H/H_out), ceil((i+1)*H/H_out))`` (ATen's
    windows; likewise columns): ``y = (A_h @ x @ A_w^T) / D`` with 0/1 window matrices and the
    constant window sizes ``D``, i.e. :func:`avg_pool2d`'s composition and candle recipe with
    other matrices. Precision as :func:`avg_pool2d`; channels_last in, channels_last out.
    """
    return _pool_adaptive_avg(2, F.adaptive_avg_pool2d, input, output_size)


def adaptive_avg_pool1d(input: torch.Tensor, output_size) -> torch.Tensor:
    """``F.adaptive_avg_pool1d`` for candle: :func:`adaptive_avg_pool2d` on one axis."""
    return _pool_adaptive_avg(1, F.adaptive_avg_pool1d, input, output_size)


def _pool_adaptive_avg(nd: int, torch_fn, x, output_size):
    if use_native(x) or torch.jit.is_tracing():  # torch's kernel: plain eager mode (``_dispatch``), jit.trace
        return torch_fn(x, output_size)

    def build():
        meta = _pool_meta(torch_fn, x, output_size)
        if meta is None or meta.numel() == 0 or x.numel() == 0:
            return None
        dtype = _pool_compute_dtype(x)
        axes = tuple(
            size_constant(_pool_adaptive_avg_matrix, n, o, dtype, x.device)
            for n, o in zip(x.shape[-nd:], meta.shape[-nd:])
        )
        divisor = size_constant(_pool_divisor, axes, None)
        conv = None
        if nd == 2 and not recording() and all(a.tile for a in axes):
            tiles = tuple(a.tile for a in axes)
            conv = _pool_conv_geometry(x.shape[-nd:], meta.shape[-nd:], tiles, tiles, (0, 0), divisor)
        return meta, axes, divisor, conv

    plan = _pool_plan_memo(_pool_signature(torch_fn, x, (output_size,)), build)
    if plan is None or torch.jit.is_tracing():
        return torch_fn(x, output_size)
    return _pool_avg_core(x, nd, *plan)


def _pool_adaptive_max(nd: int, x, output_size, return_indices):
    if use_native(x) or torch.jit.is_tracing():  # torch's kernel: plain eager mode (``_dispatch``), jit.trace
        return _POOL_ADAPTIVE_MAX_FN[nd](x, output_size, return_indices)
    with_indices = _POOL_ADAPTIVE_MAX_WITH_INDICES[nd]

    def build():
        meta = _pool_meta(with_indices, x, output_size, True)
        if meta is None or meta.numel() == 0 or x.numel() == 0:
            return None
        key = (tuple(x.shape[-nd:]), tuple(meta.shape[-nd:]), x.device)
        table = size_constant(_pool_adaptive_max_table, *key)
        view_plan = None
        if all(n % o == 0 for n, o in zip(x.shape[-nd:], meta.shape[-nd:])):  # windows tile: k == s
            k = tuple(n // o for n, o in zip(x.shape[-nd:], meta.shape[-nd:]))
            view_plan = _pool_max_view_plan(x, meta, nd, (k, k, (0,) * nd, (1,) * nd))
        return meta, table, view_plan

    plan = _pool_plan_memo(_pool_signature(with_indices, x, (output_size,)), build)
    if plan is None or torch.jit.is_tracing():
        torch_fn = _POOL_ADAPTIVE_MAX_FN[nd]  # torch raises or computes
        return torch_fn(x, output_size, return_indices)
    return _pool_max_core(x, nd, *plan, return_indices)


def adaptive_max_pool2d(input: torch.Tensor, output_size, return_indices: bool = False):
    r"""``F.adaptive_max_pool2d`` for candle: values, indices and gradient equal to torch's.

    Window ``(i, j)`` covers ATen's adaptive rows ``[floor(i*H/H_out), ceil((i+1)*H/H_out))``
    and columns; windows of different sizes are padded to the longest by repeating their last
    element. Then :func:`max_pool2d`'s composition and candle recipe (index table, detached
    ``index_select`` + ``argmax``, integer look-up, ``gather``); ties and NaN as there.
    """
    return _pool_adaptive_max(2, input, output_size, return_indices)


def adaptive_max_pool2d_with_indices(input: torch.Tensor, output_size, return_indices: bool = False):
    """``F.adaptive_max_pool2d_with_indices``: (values, indices) always."""
    return _pool_adaptive_max(2, input, output_size, True)


def adaptive_max_pool1d(input: torch.Tensor, output_size, return_indices: bool = False):
    """``F.adaptive_max_pool1d`` for candle: :func:`adaptive_max_pool2d` on one axis."""
    return _pool_adaptive_max(1, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input: torch.Tensor, output_size, return_indices: bool = False):
    """``F.adaptive_max_pool1d_with_indices``: (values, indices) always."""
    return _pool_adaptive_max(1, input, output_size, True)
