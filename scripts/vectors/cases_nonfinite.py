"""Cases of the nonfinite family: every op family on inputs holding NaN and +-inf.

The dense compositions (a resampling or window matrix times the input) multiply every input by
a weight, mostly 0: one inf (0 * inf = NaN) or NaN then fills a whole output line with NaN, where
torch's kernels read only their taps. Here NaN and +-inf sit at chosen places: inside, on the
borders and corners, in reach of the padding, and in every tap of one window (a window of only
NaN, of only +inf, of only -inf, and of +inf and -inf together); each mode or pool gets an input
with NaN (and infs) and one with infs only (an inf must stay an inf, not turn into NaN). Output,
indices and input gradient are torch's, positions and values of NaN and inf included (the
gradients of operands such as a weight or a grid are not stored here: see ``_both``).

Each case names the ``family`` whose test runner (Rust ``tests/<family>_vectors.rs``, the same
dispatch as that family's own cases) handles its op; ``tests/runtime/test_vectors.py`` runs all
of them through ``candle_port.runtime``.
"""

from __future__ import annotations

from typing import Iterable, Tuple

import torch

NAN, INF = float("nan"), float("inf")

Mark = Tuple[Tuple[int, ...], float]


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _marked(x: torch.Tensor, marks: Iterable[Mark]) -> torch.Tensor:
    """``x`` with ``x[index] = value`` for each mark (an index may hold slices)."""
    y = x.clone()
    for index, value in marks:
        y[index] = value
    return y


def _nan_marks(rank: int) -> list:
    """NaN inside, +inf on the first corner, -inf on the last edge (batch 0, channel 0)."""
    inner = (0, 0) + (2,) * (rank - 2)
    corner = (0, 0) + (0,) * (rank - 2)
    edge = (0, 1) + (1,) * (rank - 3) + (-1,)
    return [(inner, NAN), (corner, INF), (edge, -INF)]


def _inf_marks(rank: int) -> list:
    """+inf inside, -inf on the last corner, +inf on the first edge (no NaN at all)."""
    inner = (0, 1) + (1,) * (rank - 3) + (2,)
    corner = (0, 0) + (-1,) * (rank - 2)
    edge = (0, 1) + (0,) * (rank - 2)
    return [(inner, INF), (corner, -INF), (edge, INF)]


def _both(family, name, op, shape, seed, operands=None, **params):
    """Two cases of one op: NaN with infs, and infs only."""
    out = []
    for tag, marks in (("nan", _nan_marks(len(shape))), ("inf", _inf_marks(len(shape)))):
        case = {"name": f"{name}_{tag}", "family": family, "op": op,
                "input": _marked(_x(*shape, seed=seed), marks), "params": params}
        if operands:
            # The operands' own gradients (a weight's, a grid's) read the non-finite input
            # through torch's backward kernels, where 0 * inf of cropped or clipped taps makes
            # NaN: their values are torch's kernels', not the op's; output and input gradient
            # are what this family holds the ops to.
            case["operands"] = operands
            case["operand_grads"] = False
        out.append(case)
    return out


def _interp(name, shape, seed, **params):
    return _both("interpolate", name, "interpolate", shape, seed, **params)


def _interpolate():
    return (
        _interp("nf_nearest_up", (1, 2, 5, 6), 1, size=[9, 4], mode="nearest")
        + _interp("nf_nearest_exact", (1, 2, 5, 6), 2, scale_factor=1.6, mode="nearest-exact")
        + _interp("nf_linear_up", (2, 2, 7), 3, size=12, mode="linear")
        + _interp("nf_linear_down_ac", (1, 2, 9), 4, size=5, mode="linear", align_corners=True)
        + _interp("nf_bilinear_up", (1, 2, 5, 6), 5, size=[9, 13], mode="bilinear")
        + _interp("nf_bilinear_down", (1, 2, 9, 8), 6, size=[4, 3], mode="bilinear")
        + _interp("nf_bilinear_same_size", (1, 2, 5, 6), 15, size=[5, 6], mode="bilinear")
        + _interp("nf_bilinear_one_axis", (1, 2, 5, 6), 16, size=[9, 6], mode="bilinear")
        + _interp("nf_bilinear_ac", (1, 2, 5, 6), 7, scale_factor=2.5, mode="bilinear", align_corners=True)
        + _interp("nf_bilinear_aa", (1, 2, 9, 8), 8, size=[3, 5], mode="bilinear", antialias=True)
        + _interp("nf_bicubic_up", (1, 2, 5, 6), 9, size=[9, 4], mode="bicubic")
        + _interp("nf_bicubic_aa", (1, 2, 9, 8), 10, size=[3, 5], mode="bicubic", antialias=True)
        + _interp("nf_trilinear", (1, 2, 4, 4, 5), 11, size=[5, 4, 7], mode="trilinear")
        + _interp("nf_area_2d", (1, 2, 9, 8), 12, size=[4, 3], mode="area")
        + _interp("nf_area_1d", (2, 2, 9), 13, size=4, mode="area")
        + _interp("nf_area_3d", (1, 2, 5, 6, 5), 14, size=[3, 4, 2], mode="area")
    )


def _windows(x: torch.Tensor) -> torch.Tensor:
    """(N, C, 7, 8)-or-larger 2-D input whose channel 1 has every tap of four 3x3 windows of a
    (3, stride 2, padding 1) pool non-finite: NaN, +inf, -inf, and +inf with -inf."""
    y = x.clone()
    y[0, 1, 1:4, 1:4] = NAN  # window (1, 1)
    y[0, 1, 1:4, 5:8] = INF  # window (1, 3)
    y[0, 1, 3:6, 1:4] = -INF  # window (2, 1)
    y[0, 1, 5:7, 5:8] = INF  # window (3, 3) holds rows 5, 6 (7 is padding) ...
    y[0, 1, 6, 7] = -INF  # ... and -inf with them
    return y


def _pool(name, op, x, **params):
    return {"name": name, "family": "pooling", "op": op, "input": x, "params": params}


def _pooling():
    k3 = dict(kernel_size=3, stride=2, padding=1)
    windows = _windows(_x(2, 2, 7, 8, seed=20))
    return (
        _both("pooling", "nf_avg2d_k3s2p1", "avg_pool2d", (2, 2, 7, 8), 21, **k3)
        + _both("pooling", "nf_avg2d_k3s2p1_nopad", "avg_pool2d", (1, 2, 7, 8), 22, count_include_pad=False, **k3)
        + _both("pooling", "nf_avg2d_k2", "avg_pool2d", (1, 2, 6, 6), 23, kernel_size=2)
        + _both("pooling", "nf_avg2d_ceil_divisor", "avg_pool2d", (1, 2, 7, 7), 24, kernel_size=2, stride=2,
                ceil_mode=True, divisor_override=3)
        + _both("pooling", "nf_avg1d_k3s2p1", "avg_pool1d", (2, 2, 9), 25, **k3)
        + _both("pooling", "nf_aavg2d_nondiv", "adaptive_avg_pool2d", (1, 2, 7, 10), 26, output_size=[3, 4])
        + _both("pooling", "nf_aavg2d_up", "adaptive_avg_pool2d", (1, 2, 4, 3), 27, output_size=[6, 5])
        + _both("pooling", "nf_aavg2d_global", "adaptive_avg_pool2d", (2, 2, 5, 6), 28, output_size=1)
        + _both("pooling", "nf_aavg1d_nondiv", "adaptive_avg_pool1d", (2, 2, 10), 29, output_size=4)
        + _both("pooling", "nf_max2d_k3s2p1", "max_pool2d", (1, 2, 7, 8), 30, return_indices=True, **k3)
        + _both("pooling", "nf_max1d_k3s2p1", "max_pool1d", (1, 2, 9), 31, return_indices=True, **k3)
        + _both("pooling", "nf_amax2d_nondiv", "adaptive_max_pool2d", (1, 2, 7, 10), 32, output_size=[3, 4],
                return_indices=True)
        + [
            _pool("nf_avg2d_windows", "avg_pool2d", windows, **k3),
            _pool("nf_avg2d_windows_nopad", "avg_pool2d", windows, count_include_pad=False, **k3),
            _pool("nf_aavg2d_windows", "adaptive_avg_pool2d", windows, output_size=[4, 4]),
            _pool("nf_max2d_windows", "max_pool2d", windows, return_indices=True, **k3),
            _pool("nf_amax2d_windows", "adaptive_max_pool2d", windows, output_size=[4, 4], return_indices=True),
        ]
    )


def _volumetric():
    k3 = dict(kernel_size=3, stride=2, padding=1)
    weight = {"weight": _x(2, 2, 2, 2, 2, seed=49), "bias": _x(2, seed=48)}
    return (
        _both("volumetric", "nf_avg3d_k3s2p1", "avg_pool3d", (1, 2, 5, 6, 5), 40, **k3)
        + _both("volumetric", "nf_aavg3d_nondiv", "adaptive_avg_pool3d", (1, 2, 5, 7, 6), 41, output_size=[2, 3, 4])
        + _both("volumetric", "nf_max3d_k3s2p1", "max_pool3d", (1, 2, 5, 6, 5), 42, return_indices=True, **k3)
        + _both("volumetric", "nf_amax3d_nondiv", "adaptive_max_pool3d", (1, 2, 5, 7, 6), 43, output_size=[2, 3, 4],
                return_indices=True)
        + _both("volumetric", "nf_conv3d_p1", "conv3d", (1, 2, 4, 5, 4), 44, operands=weight, padding=1)
        + _both("volumetric", "nf_convt3d_s2", "conv_transpose3d", (1, 2, 3, 3, 3), 45, operands=weight, stride=2)
    )


def _convolutions():
    return (
        _both("conv1d", "nf_conv1d_p1", "conv1d", (2, 2, 9), 50,
              operands={"weight": _x(3, 2, 3, seed=51), "bias": _x(3, seed=52)}, padding=1)
        + _both("transposed_conv", "nf_ct1d_s2p1", "conv_transpose1d", (1, 2, 7), 53,
                operands={"weight": _x(2, 3, 3, seed=54)}, stride=2, padding=1)
        + _both("transposed_conv", "nf_ct2d_s2", "conv_transpose2d", (1, 2, 4, 5), 55,
                operands={"weight": _x(2, 2, 3, 3, seed=56), "bias": _x(2, seed=57)}, stride=2)
    )


def _grid():
    gen = torch.Generator().manual_seed(60)
    grid = (torch.rand((1, 4, 5, 2), generator=gen, dtype=torch.float64) * 2 - 1) * 1.3
    grid[0, 0, 0] = -1.0
    grid[0, -1, -1] = 1.0
    out = []
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("border", "reflection"):
            out += _both("grid", f"nf_gs_{mode}_{padding}", "grid_sample", (1, 2, 4, 5), 61,
                         operands={"grid": grid}, mode=mode, padding_mode=padding, align_corners=False)
    return out


def cases():
    return _interpolate() + _pooling() + _volumetric() + _convolutions() + _grid()
