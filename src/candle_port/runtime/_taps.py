"""Sparse (tap) application of a per-axis resampling, for inputs holding inf or NaN.

The fast compositions multiply by dense (out, in) matrices: an entry that is 0 still multiplies
every input, so one inf (0 * inf = NaN) or NaN fills a whole row of the output with NaN, where
torch's kernels read only their taps. When the input is not all finite, each axis is applied
instead as torch applies it: for output ``j``, ``sum_t w[j, t] * x[idx[j, t]]`` over exactly the
taps torch reads (``index_select`` per tap, ``mul``, ``add``; candle: ``index_select``,
``broadcast_mul``, ``add``). A tap that torch does not read (windows of different widths padded
to one length) points at a zero slab appended to the axis (``cat``), so it adds ``0 * 0``.

Which path runs is decided from the values (``x.sum()`` is not finite); under a tracer (make_fx,
torch.export, torch.compile), where a value cannot be branched on, the fast path is traced: a
traced graph agrees with torch on finite inputs only.
"""

from __future__ import annotations

from typing import List, NamedTuple, Sequence, Tuple

import torch

from ._recording import recording

__all__ = ["Taps", "apply_taps", "finite_input", "taps_from_bounds", "taps_from_lists"]


class Taps(NamedTuple):
    """Where each output of one axis reads: ``out[j] = sum_t weight[j, t] * x[index[j, t]]``."""

    index: torch.Tensor  # int64 (out, T); ``in_size`` is the zero slab
    weight: torch.Tensor  # (out, T), compute dtype
    zero_slot: bool  # whether some tap reads the zero slab


def finite_input(x: torch.Tensor) -> bool:
    """True when the fast (dense) path may run: tracing, or every element of ``x`` is finite.

    ``x.sum()`` is one cheap pass; a finite input whose sum overflows takes the tap path, which
    is exact too."""
    if recording() or torch.jit.is_tracing():
        return True
    return bool(torch.isfinite(x.detach().sum()))


def taps_from_lists(
    index: Sequence[Sequence[int]], weight: torch.Tensor, in_size: int, device: torch.device
) -> Taps:
    """Taps from per-output index lists of equal length; ``in_size`` marks the zero slab."""
    idx = torch.tensor([list(r) for r in index], dtype=torch.int64)
    zero = bool((idx == in_size).any())
    return Taps(idx.to(device), weight.to(device), zero)


def taps_from_bounds(
    bounds: Sequence[Tuple[int, int]], in_size: int, dtype: torch.dtype, device: torch.device
) -> Taps:
    """Unit-weight taps summing inputs ``[lo, hi)`` for each output (window sums)."""
    width = max(max(hi - lo for lo, hi in bounds), 1)
    rows: List[List[int]] = []
    for lo, hi in bounds:
        r = list(range(lo, hi))
        rows.append(r + [in_size] * (width - len(r)))
    weight = torch.ones(len(rows), width, dtype=dtype)
    return taps_from_lists(rows, weight, in_size, device)


def apply_taps(x: torch.Tensor, dim: int, taps: Taps) -> torch.Tensor:
    """``x`` resampled along ``dim`` by ``taps`` (one ``index_select`` per tap)."""
    if taps.zero_slot:
        shape = list(x.shape)
        shape[dim] = 1
        x = torch.cat([x, torch.zeros(shape, dtype=x.dtype, device=x.device)], dim)
    wshape = [1] * x.dim()
    wshape[dim] = -1
    y = None
    for t in range(taps.index.shape[1]):
        term = x.index_select(dim, taps.index[:, t]) * taps.weight[:, t].reshape(wshape)
        y = term if y is None else y + term
    assert y is not None
    return y
