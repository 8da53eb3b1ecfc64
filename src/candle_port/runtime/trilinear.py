"""Trilinear resize: the linear axis plans of ``bilinear.py`` applied to D, H and W."""

from __future__ import annotations

from typing import Optional

import torch

from ._layout import layout_of, to_layout
from .bilinear import _resample, _Scale, _Size

__all__ = ["upsample_trilinear3d"]


def upsample_trilinear3d(
    x: torch.Tensor,
    size: _Size = None,
    scale_factor: _Scale = None,
    align_corners: Optional[bool] = False,
    recompute_scale_factor: Optional[bool] = None,
) -> torch.Tensor:
    """``F.interpolate(x, ..., mode="trilinear")`` of an (N, C, D, H, W) tensor, candle-trainable.

    Each axis whose size changes is resampled exactly as one axis of
    :func:`upsample_bilinear2d` (same coordinates, scales, roundings, compositions), W first,
    then H, then D; tolerances as there. channels_last_3d input gives channels_last_3d output
    (as ATen), computed on the contiguous layout and copied once at the end.
    """
    if x.dim() != 5:
        raise ValueError(f"upsample_trilinear3d expects a 5-D (N, C, D, H, W) tensor, got {x.dim()}-D")
    fmt = layout_of(x)
    y = _resample(x, size, scale_factor, bool(align_corners), recompute_scale_factor, 3, None)
    return to_layout(y, fmt)
