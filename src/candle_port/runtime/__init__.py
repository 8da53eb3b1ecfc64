"""candle_port.runtime: resize ops equal to torch's, built only from ops candle can differentiate.

Swap ``F.interpolate`` / ``nn.Upsample`` for these in a PyTorch model: it keeps computing the same
numbers, and the same composition ported to candle trains (candle has no backward for
``upsample_bilinear2d``, none for bicubic, trilinear or 3-D nearest, and a partial one for
nearest). Every interpolate mode is covered. Imports nothing but torch.
"""

from .area import resize_area
from .bicubic import upsample_bicubic2d
from .bilinear import clear_cache, upsample_bilinear2d, upsample_linear1d
from .functional import interpolate, upsample, upsample_bilinear, upsample_nearest
from .modules import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from .nearest import upsample_nearest_nd
from .trilinear import upsample_trilinear3d

__all__ = [
    "Upsample",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
    "clear_cache",
    "interpolate",
    "resize_area",
    "upsample",
    "upsample_bilinear",
    "upsample_bicubic2d",
    "upsample_bilinear2d",
    "upsample_linear1d",
    "upsample_nearest",
    "upsample_nearest_nd",
    "upsample_trilinear3d",
]
