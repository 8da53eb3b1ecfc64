"""The memory layout ATen gives a resize's output, and putting a result into it.

ATen allocates the output with the input's suggested memory format (channels_last stays
channels_last), except ``adaptive_avg_pool3d`` (mode ``area`` on 5-D), which always returns a
contiguous tensor. Matching the strides exactly matters to code that checks them (and to speed
downstream); the values do not depend on it.
"""

from __future__ import annotations

from typing import List, Sequence

import torch

__all__ = ["layout_of", "to_layout"]

_LAYOUT_ORDER = {
    torch.channels_last: (1, 3, 2, 0),
    torch.channels_last_3d: (1, 4, 3, 2, 0),
}


def layout_of(x: torch.Tensor) -> torch.memory_format:
    """channels_last(_3d) for a 4-D (5-D) input laid out so (and not also contiguous), else contiguous."""
    if x.is_contiguous():
        return torch.contiguous_format
    if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last):
        return torch.channels_last
    if x.dim() == 5 and x.is_contiguous(memory_format=torch.channels_last_3d):
        return torch.channels_last_3d
    return torch.contiguous_format


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
