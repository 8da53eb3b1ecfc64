"""candle_port.runtime: resize and pooling ops equal to torch's, built only from ops candle can differentiate.

Swap ``F.interpolate`` / ``nn.Upsample`` and 1-D/2-D max, average and adaptive pooling for these
in a PyTorch model: it keeps computing the same numbers, and the same composition ported to candle
trains (candle has no backward for ``upsample_bilinear2d``, none for bicubic, trilinear or 3-D
nearest, a partial one for nearest, a bailing or wrong one for max/avg pooling and no adaptive
pooling at all). Every interpolate mode is covered; so are grid_sample, transposed and 3-D
convolutions and pools, and ``conv1d`` (candle's weight gradient is wrong for batch > 1). Imports
nothing but torch.

In plain eager mode each op that replaces a ``torch.nn.functional`` function calls that function
(what the user gets from torch anyway, at torch's speed); under make_fx, torch.export,
torch.compile, FakeTensor / functorch, and inside ``with composition():`` (or with
``CANDLE_PORT_RUNTIME=composition`` set) it runs the composition, which is what a tracer records
and candle runs. See ``_dispatch``.
"""

from ._dispatch import composition
from .area import resize_area
from .bicubic import upsample_bicubic2d
from .bilinear import clear_cache, upsample_bilinear2d, upsample_linear1d
from .convert import convert, routed
from .convolution1d import Conv1d, conv1d
from .functional import interpolate, upsample, upsample_bilinear, upsample_nearest
from .modules import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from .grid_sample import affine_grid, grid_sample
from .nearest import upsample_nearest_nd
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    avg_pool1d,
    avg_pool2d,
    clear_pooling_cache,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
)
from .pooling_modules import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from .transposed_conv import ConvTranspose1d, ConvTranspose2d, conv_transpose1d, conv_transpose2d
from .trilinear import upsample_trilinear3d
from .volumetric_conv import Conv3d, ConvTranspose3d, conv3d, conv_transpose3d
from .volumetric_pooling import (
    AdaptiveAvgPool3d,
    AdaptiveMaxPool3d,
    AvgPool3d,
    MaxPool3d,
    adaptive_avg_pool3d,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool3d,
    max_pool3d,
    max_pool3d_with_indices,
)

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "Conv1d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "Upsample",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "affine_grid",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "clear_cache",
    "clear_pooling_cache",
    "composition",
    "conv1d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "convert",
    "grid_sample",
    "interpolate",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_pool3d",
    "max_pool3d_with_indices",
    "resize_area",
    "routed",
    "upsample",
    "upsample_bicubic2d",
    "upsample_bilinear",
    "upsample_bilinear2d",
    "upsample_linear1d",
    "upsample_nearest",
    "upsample_nearest_nd",
    "upsample_trilinear3d",
]
