"""Cases of the pooling family: a ``torch.nn.functional`` pooling op, its keyword arguments, an input."""

from __future__ import annotations

import torch


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def cases():
    return [
        {"name": "max2d_k3s2p1", "op": "max_pool2d", "input": _x(1, 2, 7, 8),
         "params": {"kernel_size": 3, "stride": 2, "padding": 1, "return_indices": True}},
    ]
