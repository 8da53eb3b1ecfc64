"""The memory layout ATen gives a resize's output, and putting a result into it.

ATen allocates the output with the input's suggested memory format (channels_last stays
channels_last), except ``adaptive_avg_pool3d`` (mode ``area`` on 5-D), which always returns a
contiguous tensor. Matching the strides exactly matters to code that checks them (and to speed
downstream); the values do not depend on it.
"""

from __future__ import annotations

from typing import List, Sequence

import torch

__all__ = ["layout_of", "match_strides", "to_layout"]

_LAYOUT_ORDER = {
    torch.channels_last: (1, 3, 2, 0),
    torch.channels_last_3d: (1, 4, 3, 2, 0),
}


def _strides_like(sizes: Sequence[int], strides: Sequence[int], order: Sequence[int]) -> bool:
    """ATen's ``is_channels_last_strides_2d_s4`` / ``_3d_s5`` (c10/core/MemoryFormat.h)."""
    if strides[1] == 0:
        return False
    low = 0
    for d in order:
        if sizes[d] == 0 or strides[d] < low:
            return False
        if d == 0 and low == strides[1]:
            return False  # N111-like ambiguity: ATen falls back to contiguous
        low = strides[d] * (sizes[d] if sizes[d] > 1 else 1)
    return True


def layout_of(x: torch.Tensor) -> torch.memory_format:
    """ATen's ``suggest_memory_format()``: the layout it allocates a resize's or pool's output in.

    channels_last(_3d) when ``x``'s strides are "like" channels_last by ATen's rule (a batch-1
    tensor whose N stride is not the largest is not, and a size-1 dim's stride counts as ATen
    counts it), else contiguous."""
    if x.dim() == 4 and _strides_like(x.shape, x.stride(), _LAYOUT_ORDER[torch.channels_last]):
        return torch.channels_last
    if x.dim() == 5 and _strides_like(x.shape, x.stride(), _LAYOUT_ORDER[torch.channels_last_3d]):
        return torch.channels_last_3d
    return torch.contiguous_format


def match_strides(y: torch.Tensor, strides: Sequence[int]) -> torch.Tensor:
    """``y`` with the given strides when they are a dense contiguous or channels_last(_3d) layout
    of ``y``'s shape (a copy only if they differ); else ``y`` unchanged."""
    if tuple(y.stride()) == tuple(strides):
        return y
    for fmt in (torch.contiguous_format, torch.channels_last, torch.channels_last_3d):
        if fmt in _LAYOUT_ORDER and len(_LAYOUT_ORDER[fmt]) != y.dim():
            continue
        if _dense_strides(y.shape, fmt) == list(strides):
            return y.clone(memory_format=fmt)
    return y


def _dense_strides(shape: Sequence[int], fmt: torch.memory_format) -> List[int]:
    order = _LAYOUT_ORDER.get(fmt, tuple(reversed(range(len(shape)))))
    strides = [0] * len(shape)
    step = 1
    for d in order:
        strides[d] = step
        step *= max(shape[d], 1)
    return strides


def to_layout(y: torch.Tensor, fmt: torch.memory_format) -> torch.Tensor:
    """``y`` with exactly the strides a fresh tensor of ``fmt`` has (a copy only if they differ).

    ``contiguous(memory_format=...)`` keeps a tensor whose size-1 dims carry other strides;
    ``clone(memory_format=...)`` writes the canonical ones, as ATen's allocation does."""
    if list(y.stride()) == _dense_strides(y.shape, fmt):
        return y
    return y.clone(memory_format=fmt)
