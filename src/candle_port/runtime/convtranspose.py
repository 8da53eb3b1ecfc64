"""Bilinear upsampling by an integer factor, as a transposed convolution candle can differentiate.

Target of ``port-fix --strategy convtranspose``. For an integer scale ``s`` and
``align_corners=False``, ``F.interpolate(x, scale_factor=s, mode='bilinear')`` equals, border rows
included::

    x (N, C, H, W) -> (N*C, 1, H, W)            # every channel through one shared 1->1 kernel
      -> replicate-pad by 1 on each side        # reproduces ATen's clamping at the borders
      -> conv_transpose2d(weight=k k^T, stride=s, padding=s + s // 2)
      -> (N, C, s*H, s*W)

with the 1-D tent kernel ``k[t] = 1 - |t - c| / s`` of length ``K = 2s - s % 2`` centred at
``c = (K - 1) / 2``. The padding crops exactly the ``s + s // 2`` extra samples on each side.

candle's ``conv_transpose2d`` has a backward but no ``groups`` argument (../shared/candle-ops.md,
sections 2.1 and 4.4), hence the reshape to one channel instead of a depthwise kernel. Padding uses
``F.pad(mode='replicate')`` (candle: ``pad_with_same``, built from ``cat``, differentiable).

:class:`ConvTransposeUpsample` makes the kernel a learnable ``nn.Parameter`` (state_dict key
``weight``, shape ``(1, 1, K, K)``) that starts out exactly bilinear;
:func:`upsample_bilinear_convtranspose` uses the fixed kernel (exact, differentiable, not learnable).
Imports nothing but torch.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["ConvTransposeUpsample", "bilinear_kernel", "upsample_bilinear_convtranspose"]


def _integer_scale(size, scale_factor, mode, align_corners, antialias=False) -> int:
    """The integer scale these arguments describe, or ValueError saying why there is none."""
    if mode != "bilinear":
        raise ValueError(f"the conv-transpose upsampling reproduces mode='bilinear' only, got mode={mode!r}")
    if align_corners:
        raise ValueError("align_corners=True cannot be reproduced exactly by a transposed convolution")
    if antialias:
        raise ValueError("antialias=True cannot be reproduced by a transposed convolution")
    if size is not None:
        raise ValueError("size=... is not supported: pass an integer scale_factor")
    values = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor]
    if (
        not values
        or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values)
        or len(set(values)) != 1
        or float(values[0]) != int(values[0])
        or values[0] < 1
    ):
        raise ValueError(f"scale_factor must be one integer >= 1 for both axes, got {scale_factor!r}")
    return int(values[0])


def bilinear_kernel(scale: int, dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
    """The ``(1, 1, K, K)`` kernel that makes a stride-``scale`` transposed conv bilinear.

    ``K = 2*scale - scale % 2``; ``k[t] = 1 - |t - (K-1)/2| / scale``; the 2-D kernel is ``k k^T``.
    """
    size = 2 * scale - scale % 2
    center = (size - 1) / 2
    taps = torch.tensor([1.0 - abs(t - center) / scale for t in range(size)], dtype=torch.float64)
    return torch.outer(taps, taps).to(dtype=dtype, device=device).reshape(1, 1, size, size)


def _apply(input: torch.Tensor, weight: torch.Tensor, scale: int) -> torch.Tensor:
    if input.dim() != 4:
        raise ValueError(f"expected a 4-D (N, C, H, W) input, got {input.dim()}-D")
    n, c, h, w = input.shape
    x = input.reshape(n * c, 1, h, w)
    x = F.pad(x, (1, 1, 1, 1), mode="replicate")
    y = F.conv_transpose2d(x, weight.to(input.dtype), stride=scale, padding=scale + scale // 2)
    return y.reshape(n, c, h * scale, w * scale)


def upsample_bilinear_convtranspose(
    input: torch.Tensor,
    size=None,
    scale_factor=None,
    mode: str = "bilinear",
    align_corners: Optional[bool] = None,
    recompute_scale_factor: Optional[bool] = None,
    antialias: bool = False,
) -> torch.Tensor:
    """``F.interpolate(input, scale_factor=s, mode='bilinear')`` for an integer ``s``, as a fixed conv.

    Same signature as ``F.interpolate`` so a call site only changes its callee. Only
    ``mode='bilinear'``, ``align_corners`` False/None, no ``size`` and an integer uniform
    ``scale_factor`` are accepted (anything else raises ValueError): those are the cases where
    the transposed convolution is exact. ``recompute_scale_factor`` does not change the result for
    an integer scale. Shapes: ``(N, C, H, W) -> (N, C, s*H, s*W)``.
    """
    scale = _integer_scale(size, scale_factor, mode, align_corners, antialias)
    return _apply(input, bilinear_kernel(scale, input.dtype, input.device), scale)


class ConvTransposeUpsample(nn.Module):
    """A learnable upsampling that starts out exactly equal to ``nn.Upsample(mode='bilinear')``.

    Same constructor as ``nn.Upsample`` (so ``nn.Upsample(None, 2, 'bilinear')`` becomes
    ``ConvTransposeUpsample(None, 2, 'bilinear')``), restricted to an integer uniform
    ``scale_factor``, ``mode='bilinear'`` and ``align_corners`` False/None.

    Parameters: ``weight`` of shape ``(1, 1, K, K)``, ``K = 2s - s % 2``, one kernel shared by
    every channel, initialised to :func:`bilinear_kernel`. A checkpoint saved from the original
    model has no ``<prefix>.weight`` entry: ``load_state_dict(sd, strict=False)`` keeps the exact
    bilinear initial value (strict loading reports it under ``missing_keys``).
    """

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "bilinear",
        align_corners: Optional[bool] = None,
        recompute_scale_factor: Optional[bool] = None,
    ) -> None:
        super().__init__()
        self.scale = _integer_scale(size, scale_factor, mode, align_corners)
        self.scale_factor = float(self.scale)
        self.mode = mode
        self.align_corners = align_corners
        self.weight = nn.Parameter(bilinear_kernel(self.scale, torch.get_default_dtype()))

    def reset_parameters(self) -> None:
        """Put the kernel back to exact bilinear."""
        with torch.no_grad():
            self.weight.copy_(bilinear_kernel(self.scale, self.weight.dtype, self.weight.device))

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return _apply(input, self.weight, self.scale)

    def extra_repr(self) -> str:
        return f"scale_factor={self.scale_factor}, mode={self.mode!r}, kernel={math.prod(self.weight.shape[2:])} taps"
