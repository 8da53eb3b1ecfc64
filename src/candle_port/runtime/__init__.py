"""candle_port.runtime: resize ops equal to torch's, built only from ops candle can differentiate.

Swap ``F.interpolate`` / ``nn.Upsample`` for these in a PyTorch model: it keeps computing the same
numbers, and the same composition ported to candle trains (candle has no backward for
``upsample_bilinear2d``). Imports nothing but torch.
"""

from .bilinear import clear_cache, upsample_bilinear2d, upsample_linear1d
from .functional import interpolate, upsample, upsample_bilinear, upsample_nearest
from .modules import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = [
    "Upsample",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
    "clear_cache",
    "interpolate",
    "upsample",
    "upsample_bilinear",
    "upsample_bilinear2d",
    "upsample_linear1d",
    "upsample_nearest",
]
