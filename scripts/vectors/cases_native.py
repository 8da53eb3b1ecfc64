"""Cases of the native family: torch's numbers for the candle-native measurements.

crates/candle-port-ops/tests/candle_native.rs runs candle 0.11.0's own ops (upsample_bilinear2d,
upsample_nearest2d, max_pool2d, avg_pool2d, relu, clamp) at these shapes and compares what candle
does, forward and backward, with these torch numbers: docs/candle-measured.md lists the results.
Shapes are chosen for what they probe: integer and non-integer scales, sizes a kernel divides and
sizes it does not, distinct maxima and ties, and values exactly at a kink (relu at 0, clamp at its
bounds).
"""

from __future__ import annotations

import torch


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _ties(*shape: int, seed: int = 0) -> torch.Tensor:
    """Small integers: most 2x2 windows hold their maximum two or more times."""
    return torch.randint(0, 3, shape, generator=torch.Generator().manual_seed(seed)).to(torch.float64)


def _kinks() -> torch.Tensor:
    """Values at relu's kink (0) and at hardtanh/clamp's bounds (-1, 1), and between them."""
    return torch.tensor([[-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 0.0]], dtype=torch.float64)


def cases():
    return [
        # upsample_bilinear2d: candle's forward (size and scale mode), whose backward bails.
        {"name": "bilinear_size", "op": "interpolate", "input": _x(1, 2, 5, 7, seed=1),
         "params": {"size": [9, 12], "mode": "bilinear", "align_corners": False}},
        {"name": "bilinear_size_corners", "op": "interpolate", "input": _x(1, 2, 5, 7, seed=2),
         "params": {"size": [9, 12], "mode": "bilinear", "align_corners": True}},
        {"name": "bilinear_scale", "op": "interpolate", "input": _x(1, 2, 5, 7, seed=3),
         "params": {"scale_factor": 1.5, "mode": "bilinear", "align_corners": False}},
        # upsample_nearest2d: integer uniform (backward works), non-integer, non-uniform, downscale.
        {"name": "nearest_up2", "op": "interpolate", "input": _x(1, 2, 4, 5, seed=4),
         "params": {"size": [8, 10], "mode": "nearest"}},
        {"name": "nearest_frac", "op": "interpolate", "input": _x(1, 2, 4, 5, seed=5),
         "params": {"size": [6, 7], "mode": "nearest"}},
        {"name": "nearest_nonuniform", "op": "interpolate", "input": _x(1, 2, 4, 5, seed=6),
         "params": {"size": [8, 15], "mode": "nearest"}},
        {"name": "nearest_down2", "op": "interpolate", "input": _x(1, 2, 6, 8, seed=7),
         "params": {"size": [3, 4], "mode": "nearest"}},
        # max_pool2d with kernel == stride: distinct maxima, ties, sizes the kernel does not divide.
        {"name": "max_k2", "op": "max_pool2d", "input": _x(1, 2, 6, 8, seed=8), "params": {"kernel_size": 2}},
        {"name": "max_k3", "op": "max_pool2d", "input": _x(1, 2, 6, 9, seed=9), "params": {"kernel_size": 3}},
        {"name": "max_k2_ties", "op": "max_pool2d", "input": _ties(1, 2, 6, 8, seed=10),
         "params": {"kernel_size": 2}},
        {"name": "max_k2_odd", "op": "max_pool2d", "input": _x(1, 2, 5, 7, seed=11), "params": {"kernel_size": 2}},
        # kernel != stride: candle's forward, whose backward bails.
        {"name": "max_k3s2", "op": "max_pool2d", "input": _x(1, 2, 7, 7, seed=12),
         "params": {"kernel_size": 3, "stride": 2}},
        {"name": "avg_k2", "op": "avg_pool2d", "input": _x(1, 2, 6, 8, seed=13), "params": {"kernel_size": 2}},
        {"name": "avg_k2_odd", "op": "avg_pool2d", "input": _x(1, 2, 5, 7, seed=14), "params": {"kernel_size": 2}},
        {"name": "avg_k3s2", "op": "avg_pool2d", "input": _x(1, 2, 7, 7, seed=15),
         "params": {"kernel_size": 3, "stride": 2}},
        # Gradients at a kink: torch's relu'(0) and its clamp/hardtanh gradient at the bounds.
        {"name": "relu_kinks", "op": "relu", "input": _kinks(), "params": {}},
        {"name": "hardtanh_kinks", "op": "hardtanh", "input": _kinks(),
         "params": {"min_val": -1.0, "max_val": 1.0}},
    ]
