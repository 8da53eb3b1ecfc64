"""Cases of the pooling family: a ``torch.nn.functional`` pooling op, its keyword arguments, an input.

Every op (max/avg 1-D and 2-D, adaptive avg/max 1-D and 2-D) with every option: stride != kernel,
padding, dilation, ceil_mode both ways (including torch's dropped last window), count_include_pad
both ways, divisor_override, return_indices; ties (integer-valued and constant planes), -inf and
NaN entries for the max pools; adaptive sizes that do not divide the input, and upscaling ones;
size-1 inputs; batch > 1. Shapes stay small so the committed vectors stay well under 1 MB.
"""

from __future__ import annotations

import torch

NAN, INF = float("nan"), float("inf")


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _ints(*shape: int, seed: int = 0, high: int = 3) -> torch.Tensor:
    """Integer values in [0, high): many ties inside windows."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, high, shape, generator=gen).to(torch.float64)


def _with(x: torch.Tensor, value: float, every: int) -> torch.Tensor:
    """``x`` with every ``every``-th element (flat) set to ``value``, plus the very first."""
    y = x.clone().reshape(-1)
    y[::every] = value
    return y.reshape(x.shape)


def _case(name, op, x, **params):
    return {"name": name, "op": op, "input": x, "params": params}


def _max2d():
    return [
        _case("max2d_k2", "max_pool2d", _x(2, 3, 6, 6, seed=1), kernel_size=2),
        _case("max2d_k3s2p1", "max_pool2d", _x(1, 2, 7, 8), kernel_size=3, stride=2, padding=1, return_indices=True),
        _case("max2d_k3s1p1_odd", "max_pool2d", _x(2, 2, 5, 7, seed=2), kernel_size=3, stride=1, padding=1),
        _case("max2d_k2s3", "max_pool2d", _x(1, 2, 8, 7, seed=3), kernel_size=2, stride=3, return_indices=True),
        _case("max2d_rect_k", "max_pool2d", _x(1, 3, 7, 9, seed=4), kernel_size=(2, 3), stride=(1, 2), padding=(1, 1)),
        _case("max2d_dil2", "max_pool2d", _x(1, 2, 9, 9, seed=5), kernel_size=3, stride=1, dilation=2,
              return_indices=True),
        _case("max2d_dil_pad", "max_pool2d", _x(2, 1, 8, 7, seed=6), kernel_size=(3, 2), stride=2, padding=1,
              dilation=(2, 3), return_indices=True),
        _case("max2d_ceil", "max_pool2d", _x(1, 2, 7, 7, seed=7), kernel_size=2, stride=2, ceil_mode=True,
              return_indices=True),
        _case("max2d_ceil_drop_last", "max_pool2d", _x(1, 1, 5, 5, seed=8), kernel_size=2, stride=2, padding=1,
              ceil_mode=True, return_indices=True),
        _case("max2d_ceil_k3s2", "max_pool2d", _x(1, 2, 6, 8, seed=9), kernel_size=3, stride=2, ceil_mode=True),
        _case("max2d_floor_k3s2", "max_pool2d", _x(1, 2, 6, 8, seed=9), kernel_size=3, stride=2, ceil_mode=False),
        _case("max2d_size1", "max_pool2d", _x(2, 2, 1, 1, seed=10), kernel_size=1, return_indices=True),
        _case("max2d_size1_pad", "max_pool2d", _x(1, 2, 1, 1, seed=11), kernel_size=2, stride=1, padding=1,
              return_indices=True),
        _case("max2d_whole", "max_pool2d", _x(2, 2, 5, 5, seed=12), kernel_size=5, return_indices=True),
        _case("max2d_ties_int", "max_pool2d", _ints(2, 2, 7, 7, seed=13), kernel_size=3, stride=2, padding=1,
              return_indices=True),
        _case("max2d_ties_overlap", "max_pool2d", _ints(1, 2, 6, 6, seed=14, high=2), kernel_size=3, stride=1,
              return_indices=True),
        _case("max2d_constant", "max_pool2d", torch.full((1, 2, 5, 6), 0.5, dtype=torch.float64), kernel_size=2,
              stride=1, padding=1, return_indices=True),
        _case("max2d_neginf", "max_pool2d", _with(_x(1, 2, 6, 6, seed=15), -INF, 3), kernel_size=2, stride=1,
              padding=1, return_indices=True),
        _case("max2d_neginf_plane", "max_pool2d", torch.full((1, 1, 4, 5), -INF, dtype=torch.float64),
              kernel_size=3, stride=2, padding=1, return_indices=True),
        _case("max2d_nan", "max_pool2d", _with(_x(1, 2, 7, 6, seed=16), NAN, 5), kernel_size=3, stride=2,
              padding=1, return_indices=True),
        _case("max2d_nan_ties", "max_pool2d", _with(_ints(1, 1, 6, 6, seed=17), NAN, 4), kernel_size=3, stride=1,
              return_indices=True),
        _case("max2d_k2_nan_ties", "max_pool2d", _with(_ints(2, 2, 6, 7, seed=19), NAN, 3), kernel_size=2,
              return_indices=True),
        _case("max2d_k2_neginf", "max_pool2d", _with(_x(1, 2, 4, 6, seed=191), -INF, 2), kernel_size=2,
              return_indices=True),
        _case("max2d_with_indices_fn", "max_pool2d_with_indices", _x(2, 2, 5, 6, seed=18), kernel_size=2,
              stride=1),
    ]


def _max1d():
    return [
        _case("max1d_k2", "max_pool1d", _x(2, 3, 9, seed=20), kernel_size=2),
        _case("max1d_k3s2p1", "max_pool1d", _x(1, 2, 10, seed=21), kernel_size=3, stride=2, padding=1,
              return_indices=True),
        _case("max1d_k4s1p2_dil2", "max_pool1d", _x(1, 2, 11, seed=22), kernel_size=4, stride=1, padding=2,
              dilation=2, return_indices=True),
        _case("max1d_ceil", "max_pool1d", _x(2, 1, 8, seed=23), kernel_size=3, stride=2, ceil_mode=True,
              return_indices=True),
        _case("max1d_ceil_drop_last", "max_pool1d", _x(1, 1, 5, seed=24), kernel_size=2, stride=2, padding=1,
              ceil_mode=True, return_indices=True),
        _case("max1d_size1", "max_pool1d", _x(2, 2, 1, seed=25), kernel_size=1, return_indices=True),
        _case("max1d_ties", "max_pool1d", _ints(2, 2, 12, seed=26, high=2), kernel_size=3, stride=1, padding=1,
              return_indices=True),
        _case("max1d_neginf", "max_pool1d", _with(_x(1, 2, 9, seed=27), -INF, 2), kernel_size=3, stride=2,
              padding=1, return_indices=True),
        _case("max1d_nan", "max_pool1d", _with(_x(1, 2, 9, seed=28), NAN, 4), kernel_size=4, stride=2,
              padding=2, return_indices=True),
        _case("max1d_k3_nan_tiles", "max_pool1d", _with(_ints(2, 1, 10, seed=291, high=2), NAN, 4), kernel_size=3,
              return_indices=True),
        _case("max1d_with_indices_fn", "max_pool1d_with_indices", _x(1, 3, 7, seed=29), kernel_size=3,
              stride=2, dilation=2),
    ]


def _avg2d():
    return [
        _case("avg2d_k2", "avg_pool2d", _x(2, 3, 6, 6, seed=30), kernel_size=2),
        _case("avg2d_k3s1p1", "avg_pool2d", _x(1, 2, 7, 8, seed=31), kernel_size=3, stride=1, padding=1),
        _case("avg2d_k3s1p1_nopad", "avg_pool2d", _x(1, 2, 7, 8, seed=31), kernel_size=3, stride=1, padding=1,
              count_include_pad=False),
        _case("avg2d_k3s2p1", "avg_pool2d", _x(2, 2, 9, 7, seed=32), kernel_size=3, stride=2, padding=1),
        _case("avg2d_rect", "avg_pool2d", _x(1, 2, 8, 9, seed=33), kernel_size=(2, 4), stride=(3, 2),
              padding=(1, 2)),
        _case("avg2d_ceil_incl", "avg_pool2d", _x(1, 2, 7, 7, seed=34), kernel_size=3, stride=2, padding=1,
              ceil_mode=True, count_include_pad=True),
        _case("avg2d_ceil_excl", "avg_pool2d", _x(1, 2, 7, 7, seed=34), kernel_size=3, stride=2, padding=1,
              ceil_mode=True, count_include_pad=False),
        _case("avg2d_ceil_past_pad", "avg_pool2d", _x(1, 1, 6, 6, seed=35), kernel_size=3, stride=2,
              ceil_mode=True),
        _case("avg2d_ceil_drop_last", "avg_pool2d", _x(1, 1, 5, 5, seed=36), kernel_size=2, stride=2, padding=1,
              ceil_mode=True),
        _case("avg2d_divisor", "avg_pool2d", _x(1, 2, 6, 7, seed=37), kernel_size=3, stride=2, padding=1,
              divisor_override=5),
        _case("avg2d_divisor_ceil", "avg_pool2d", _x(2, 1, 7, 5, seed=38), kernel_size=2, stride=2,
              ceil_mode=True, divisor_override=3),
        _case("avg2d_k2s3", "avg_pool2d", _x(1, 2, 8, 8, seed=39), kernel_size=2, stride=3),
        _case("avg2d_size1", "avg_pool2d", _x(2, 2, 1, 1, seed=40), kernel_size=1),
        _case("avg2d_size1_pad", "avg_pool2d", _x(1, 2, 1, 1, seed=41), kernel_size=2, stride=1, padding=1,
              count_include_pad=False),
        _case("avg2d_whole", "avg_pool2d", _x(2, 3, 4, 5, seed=42), kernel_size=(4, 5)),
    ]


def _avg1d():
    return [
        _case("avg1d_k2", "avg_pool1d", _x(2, 3, 9, seed=50), kernel_size=2),
        _case("avg1d_k3s1p1", "avg_pool1d", _x(1, 2, 10, seed=51), kernel_size=3, stride=1, padding=1),
        _case("avg1d_k3s1p1_nopad", "avg_pool1d", _x(1, 2, 10, seed=51), kernel_size=3, stride=1, padding=1,
              count_include_pad=False),
        _case("avg1d_k4s3p2_ceil", "avg_pool1d", _x(2, 1, 11, seed=52), kernel_size=4, stride=3, padding=2,
              ceil_mode=True),
        _case("avg1d_k4s3p2_ceil_nopad", "avg_pool1d", _x(2, 1, 11, seed=52), kernel_size=4, stride=3,
              padding=2, ceil_mode=True, count_include_pad=False),
        _case("avg1d_size1", "avg_pool1d", _x(1, 2, 1, seed=53), kernel_size=1),
    ]


def _adaptive():
    return [
        _case("aavg2d_divisible", "adaptive_avg_pool2d", _x(2, 2, 8, 6, seed=60), output_size=(4, 3)),
        _case("aavg2d_nondiv", "adaptive_avg_pool2d", _x(1, 3, 7, 10, seed=61), output_size=(3, 4)),
        _case("aavg2d_up", "adaptive_avg_pool2d", _x(1, 2, 3, 2, seed=62), output_size=(5, 7)),
        _case("aavg2d_global", "adaptive_avg_pool2d", _x(2, 3, 5, 6, seed=63), output_size=1),
        _case("aavg2d_size1", "adaptive_avg_pool2d", _x(1, 2, 1, 1, seed=64), output_size=(2, 3)),
        _case("aavg1d_nondiv", "adaptive_avg_pool1d", _x(2, 2, 10, seed=65), output_size=4),
        _case("aavg1d_up", "adaptive_avg_pool1d", _x(1, 2, 3, seed=66), output_size=7),
        _case("amax2d_divisible", "adaptive_max_pool2d", _x(2, 2, 8, 6, seed=70), output_size=(4, 3),
              return_indices=True),
        _case("amax2d_nondiv", "adaptive_max_pool2d", _x(1, 3, 7, 10, seed=71), output_size=(3, 4),
              return_indices=True),
        _case("amax2d_up", "adaptive_max_pool2d", _x(1, 2, 3, 2, seed=72), output_size=(5, 4),
              return_indices=True),
        _case("amax2d_global", "adaptive_max_pool2d", _x(2, 2, 5, 6, seed=73), output_size=1),
        _case("amax2d_ties", "adaptive_max_pool2d", _ints(1, 2, 7, 7, seed=74, high=2), output_size=3,
              return_indices=True),
        _case("amax2d_neginf", "adaptive_max_pool2d", _with(_x(1, 2, 6, 5, seed=75), -INF, 2), output_size=(4, 3),
              return_indices=True),
        _case("amax2d_nan", "adaptive_max_pool2d", _with(_x(1, 2, 7, 6, seed=76), NAN, 5), output_size=(3, 4),
              return_indices=True),
        _case("amax2d_with_indices_fn", "adaptive_max_pool2d_with_indices", _x(1, 2, 5, 5, seed=77),
              output_size=(2, 3)),
        _case("amax1d_nondiv", "adaptive_max_pool1d", _x(2, 2, 10, seed=78), output_size=4, return_indices=True),
        _case("amax1d_up", "adaptive_max_pool1d", _x(1, 2, 3, seed=79), output_size=5, return_indices=True),
        _case("amax1d_nan_ties", "adaptive_max_pool1d", _with(_ints(1, 2, 11, seed=80, high=2), NAN, 4),
              output_size=3, return_indices=True),
        _case("amax2d_divisible_nan", "adaptive_max_pool2d", _with(_x(1, 2, 6, 4, seed=82), NAN, 7), output_size=(3, 2),
              return_indices=True),
        _case("amax1d_with_indices_fn", "adaptive_max_pool1d_with_indices", _x(1, 2, 9, seed=81), output_size=4),
    ]


def cases():
    return _max2d() + _max1d() + _avg2d() + _avg1d() + _adaptive()
