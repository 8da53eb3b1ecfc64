"""``nn.Upsample`` and friends whose forward uses :func:`candle_port.runtime.interpolate`.

Each class subclasses its torch counterpart and only replaces ``forward``, so constructor,
attributes, ``repr``, (empty) ``state_dict`` and ``isinstance`` checks are torch's own.
Under ``torch.jit.script`` the forward is torch's own (TorchScript compiles only the
``torch.jit.is_scripting()`` branch; a scripted model runs in torch, never in candle).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .functional import interpolate

# nn-named modules from their own files, re-exported so that this module mirrors torch.nn
from .convolution1d import Conv1d  # noqa: E402
from .transposed_conv import ConvTranspose1d, ConvTranspose2d  # noqa: E402
from .volumetric_conv import Conv3d, ConvTranspose3d  # noqa: E402
from .volumetric_pooling import AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, MaxPool3d  # noqa: E402

__all__ = [
    "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
    "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "Conv1d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "MaxPool3d",
]


def _forward(self: nn.Upsample, input: torch.Tensor) -> torch.Tensor:
    if torch.jit.is_scripting():  # TorchScript runs in torch, not candle: torch's own forward
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )
    return interpolate(
        input,
        self.size,
        self.scale_factor,
        self.mode,
        self.align_corners,
        recompute_scale_factor=self.recompute_scale_factor,
    )


class Upsample(nn.Upsample):
    """``torch.nn.Upsample`` whose every mode is candle-trainable (see :func:`interpolate`)."""

    forward = _forward


class UpsamplingBilinear2d(nn.UpsamplingBilinear2d):
    """``torch.nn.UpsamplingBilinear2d`` (``align_corners=True``), candle-trainable."""

    forward = _forward


class UpsamplingNearest2d(nn.UpsamplingNearest2d):
    """``torch.nn.UpsamplingNearest2d``, candle-trainable (one ``index_select`` per axis)."""

    forward = _forward
