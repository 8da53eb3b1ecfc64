"""Cases of the volumetric family: ``F.conv3d`` / ``F.conv_transpose3d`` (weight and bias as
differentiated operands) and the 3-D pools (max with indices, avg, adaptive avg and max).

Stride, padding, dilation, groups, output_padding, per-axis arguments; ceil_mode,
count_include_pad, divisor_override; ties, -inf and NaN for the max pools; adaptive sizes that do
not divide the input. Shapes stay small so the committed vectors stay well under 400 KB.
"""

from __future__ import annotations

import torch

NAN, INF = float("nan"), float("inf")


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _ints(*shape: int, seed: int = 0, high: int = 3) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, high, shape, generator=gen).to(torch.float64)


def _with(x: torch.Tensor, value: float, every: int) -> torch.Tensor:
    y = x.clone().reshape(-1)
    y[::every] = value
    return y.reshape(x.shape)


def _conv(name, op, x, weight, bias=None, **params):
    operands = {"weight": weight}
    if bias is not None:
        operands["bias"] = bias
    return {"name": name, "op": op, "input": x, "operands": operands, "params": params}


def _case(name, op, x, **params):
    return {"name": name, "op": op, "input": x, "params": params}


def _convs():
    return [
        _conv("conv3d_p1", "conv3d", _x(1, 2, 4, 5, 4, seed=1), _x(3, 2, 3, 3, 3, seed=2), _x(3, seed=3), padding=1),
        _conv("conv3d_groups_rect", "conv3d", _x(2, 2, 5, 6, 5, seed=4), _x(4, 1, 2, 3, 2, seed=5), _x(4, seed=6),
              stride=(1, 2, 2), padding=(0, 1, 1), dilation=(2, 1, 1), groups=2),
        _conv("conv3d_1x1_nobias", "conv3d", _x(1, 3, 3, 3, 3, seed=7), _x(2, 3, 1, 1, 1, seed=8)),
        _conv("conv3d_s2", "conv3d", _x(1, 2, 5, 5, 6, seed=9), _x(2, 2, 3, 3, 3, seed=10), _x(2, seed=11),
              stride=2, padding=1),
        _conv("convt3d_s2op1", "conv_transpose3d", _x(1, 2, 3, 3, 2, seed=12), _x(2, 3, 3, 3, 3, seed=13),
              _x(3, seed=14), stride=2, padding=1, output_padding=1),
        _conv("convt3d_groups_dil", "conv_transpose3d", _x(1, 4, 2, 3, 3, seed=15), _x(4, 1, 2, 2, 2, seed=16),
              stride=(1, 2, 2), dilation=(2, 1, 1), output_padding=(1, 1, 0), groups=2),
        _conv("convt3d_nobias", "conv_transpose3d", _x(2, 1, 2, 2, 3, seed=17), _x(1, 2, 2, 3, 2, seed=18)),
        _conv("conv3d_nonfinite", "conv3d", _with(_with(_x(1, 1, 5, 5, 5, seed=19), NAN, 61), INF, 97),
              _x(1, 1, 2, 2, 2, seed=20), stride=2),
    ]


def _pools():
    return [
        _case("max3d_k2", "max_pool3d", _x(1, 2, 4, 4, 4, seed=30), kernel_size=2),
        _case("max3d_k3s2p1", "max_pool3d", _x(1, 2, 5, 6, 5, seed=31), kernel_size=3, stride=2, padding=1,
              return_indices=True),
        _case("max3d_dil_ceil", "max_pool3d", _x(1, 1, 6, 5, 7, seed=32), kernel_size=(2, 3, 2), stride=(2, 1, 2),
              dilation=(2, 1, 1), ceil_mode=True, return_indices=True),
        _case("max3d_ties", "max_pool3d", _ints(1, 2, 4, 5, 4, seed=33, high=2), kernel_size=2, stride=1,
              return_indices=True),
        _case("max3d_nan_neginf", "max_pool3d", _with(_with(_x(1, 1, 4, 4, 5, seed=34), NAN, 7), -INF, 5),
              kernel_size=2, stride=2, padding=1, return_indices=True),
        _case("avg3d_k2", "avg_pool3d", _x(1, 2, 4, 4, 6, seed=40), kernel_size=2),
        _case("avg3d_k3s2p1", "avg_pool3d", _x(1, 2, 5, 6, 5, seed=41), kernel_size=3, stride=2, padding=1),
        _case("avg3d_k3s2p1_nopad", "avg_pool3d", _x(1, 2, 5, 6, 5, seed=41), kernel_size=3, stride=2, padding=1,
              count_include_pad=False),
        _case("avg3d_ceil_divisor", "avg_pool3d", _x(2, 1, 5, 4, 5, seed=42), kernel_size=(2, 2, 3),
              stride=(2, 1, 2), ceil_mode=True, divisor_override=5),
        _case("aavg3d_nondiv", "adaptive_avg_pool3d", _x(1, 2, 5, 7, 6, seed=50), output_size=(2, 3, 4)),
        _case("aavg3d_global", "adaptive_avg_pool3d", _x(2, 2, 3, 4, 3, seed=51), output_size=1),
        _case("amax3d_nondiv", "adaptive_max_pool3d", _x(1, 2, 5, 7, 6, seed=52), output_size=(2, 3, 4),
              return_indices=True),
        _case("amax3d_ties", "adaptive_max_pool3d", _ints(1, 2, 4, 5, 3, seed=53, high=2), output_size=(3, 2, 2),
              return_indices=True),
    ]


def cases():
    return _convs() + _pools()
