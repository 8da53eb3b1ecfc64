"""``mode="area"``: adaptive average pooling, by the pooling runtime's window matrices.

One implementation (``pooling._pool_adaptive_avg``): per axis a 0/1 window matrix (one GEMM),
then a division by the constant window sizes; windows holding inf / NaN are summed by taps.
"""

from __future__ import annotations

from typing import List

import torch
import torch.nn.functional as F

from .pooling import _pool_adaptive_avg

__all__ = ["resize_area"]

_ADAPTIVE = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}


def resize_area(x: torch.Tensor, out: List[int]) -> torch.Tensor:
    r"""``F.interpolate(x, size=out, mode="area")``, i.e. ``adaptive_avg_pool{1,2,3}d(x, out)``.

    (N, C, \*in) -> (N, C, \*out) for 1 to 3 spatial axes. Output ``j`` of an axis sums inputs
    ``[floor(j*in/out), ceil((j+1)*in/out))`` (ATen's windows): a GEMM per axis whose size
    changes with the 0/1 window matrix, last axis first, then one division by the product of
    the window widths (as ATen: sum, then divide). Equal to torch to float rounding (float32
    <= 1e-6, float64 <= 1e-12); float16 / bfloat16 in float32, rounded once. Layout as torch's:
    channels_last for a channels_last 4-D input, contiguous otherwise (``adaptive_avg_pool3d``
    returns contiguous even for channels_last_3d input). Non-finite input: see ``_taps``.

    In candle: ``m.broadcast_matmul(&x)`` per axis with the uploaded 0/1 matrix ``m``, then
    ``broadcast_div`` by the constant divisor.
    """
    nd = x.dim() - 2
    return _pool_adaptive_avg(nd, _ADAPTIVE[nd], x, list(out))
