"""Drop-in replacements for ``torch.nn.functional.interpolate`` and its deprecated aliases.

Bilinear (4-D) and linear (3-D) resizing go through :func:`upsample_bilinear2d`, which candle can
differentiate once ported; every other mode is passed to torch unchanged.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from .bilinear import _output_size_and_scales, _resample, _Scale, _Size

__all__ = ["interpolate", "upsample", "upsample_bilinear", "upsample_nearest"]


def interpolate(
    input: torch.Tensor,
    size: _Size = None,
    scale_factor: _Scale = None,
    mode: str = "nearest",
    align_corners: Optional[bool] = None,
    recompute_scale_factor: Optional[bool] = None,
    antialias: bool = False,
) -> torch.Tensor:
    """``F.interpolate`` with ``mode='bilinear'`` (4-D) / ``'linear'`` (3-D) made candle-trainable.

    Same signature, output and gradient as ``torch.nn.functional.interpolate`` (to float
    rounding; see :func:`candle_port.runtime.upsample_bilinear2d` for the formula and
    tolerances). Other modes and ranks call torch directly with the same arguments, so they
    keep torch's behaviour and errors. ``antialias=True`` with bilinear is the antialiased
    resize of ``_upsample_bilinear2d_aa`` (float32 / float64; ATen raises for half types, and
    so does this), built from two dense matrix products.
    """
    ours = (mode == "bilinear" and input.dim() == 4) or (
        mode == "linear" and input.dim() == 3 and not antialias  # torch raises for that one
    )
    if not ours:
        return F.interpolate(
            input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias
        )
    return _resample(
        input,
        size,
        scale_factor,
        bool(align_corners),
        recompute_scale_factor,
        input.dim() - 2,
        None,
        antialias,
    )


def upsample(
    input: torch.Tensor,
    size: _Size = None,
    scale_factor: _Scale = None,
    mode: str = "nearest",
    align_corners: Optional[bool] = None,
) -> torch.Tensor:
    """Like the deprecated ``F.upsample``: :func:`interpolate` (without the deprecation warning)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_bilinear(
    input: torch.Tensor, size: _Size = None, scale_factor: _Scale = None
) -> torch.Tensor:
    """Like ``F.upsample_bilinear``: bilinear with ``align_corners=True``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def upsample_nearest(
    input: torch.Tensor, size: _Size = None, scale_factor: _Scale = None
) -> torch.Tensor:
    """Like ``F.upsample_nearest``; passed to torch (nearest needs no new op)."""
    return F.interpolate(input, size, scale_factor, mode="nearest")
