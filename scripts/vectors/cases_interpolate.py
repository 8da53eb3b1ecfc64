"""Cases of the interpolate family: ``F.interpolate`` keyword arguments and a float64 input."""

from __future__ import annotations

import torch


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def cases():
    return [
        {"name": "bilinear_up2", "op": "interpolate", "input": _x(1, 2, 5, 7),
         "params": {"scale_factor": 2.0, "mode": "bilinear", "align_corners": False}},
    ]
