"""Cases of the interpolate family: ``F.interpolate`` keyword arguments and a float64 input.

Every mode, with a size and with a scale factor (integer, non-integer, downscaling,
non-uniform), size-1 inputs and outputs, odd sizes, align_corners both ways where torch allows
it, recompute_scale_factor, antialias (bilinear / bicubic), 3-D to 5-D inputs and batches.
Some cases are long enough (over 128 inputs per tap) that the crate takes its ``index_select``
path rather than its dense matmul (crates/candle-port-ops/src/interpolate/apply.rs), and 2-D
nearest appears on both sides of ATen's ``out_h + out_w <= 128`` switch between its two index
rules.

Left out on purpose, because torch 2.14's own forward and backward disagree there (so no single
answer exists; measured with a random sweep of 2400 cases against the crate):

* nearest whose output size equals, or is twice, the input size through a non-trivial scale
  factor, for 3-D and 5-D input, and for 4-D input when ``out_h + out_w > 128`` (the forward
  computes ``floor(j * scale)``, the backward copies or halves the index);
* bicubic, and antialiased bilinear / bicubic, whose size is unchanged through a non-trivial
  scale factor (one direction copies that axis, the other resamples it);
* antialiased bilinear / bicubic with output width 1 and a changed height: the forward gives
  every output row the same value (a torch bug); the backward is the separable one.
"""

from __future__ import annotations

import torch


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _case(name: str, shape, mode: str, seed: int = 0, **params):
    return {"name": name, "op": "interpolate", "input": _x(*shape, seed=seed), "params": {"mode": mode, **params}}


def _nearest():
    return [
        _case("nearest1d_up2", (2, 3, 5), "nearest", scale_factor=2.0),
        _case("nearest1d_size_odd", (1, 2, 7), "nearest", size=11),
        _case("nearest1d_down", (1, 2, 9), "nearest", scale_factor=0.4),
        _case("nearest1d_noninteger", (1, 1, 6), "nearest", scale_factor=1.7),
        _case("nearest2d_up2", (2, 2, 4, 5), "nearest", scale_factor=2.0),
        _case("nearest2d_nonuniform", (1, 2, 5, 6), "nearest", scale_factor=[1.5, 2.5]),
        _case("nearest2d_size_down", (1, 3, 9, 7), "nearest", size=[4, 3]),
        _case("nearest2d_size1_out", (1, 2, 5, 4), "nearest", size=1),
        _case("nearest2d_size1_in", (1, 2, 1, 1), "nearest", size=[3, 5]),
        _case("nearest2d_near2x_small", (1, 1, 5, 6), "nearest", scale_factor=2.0000001),
        _case("nearest2d_same_size_small", (1, 1, 6, 7), "nearest", scale_factor=1.05),
        _case("nearest2d_large_size", (1, 1, 30, 40), "nearest", size=[55, 77]),
        _case("nearest2d_large_scale", (1, 1, 45, 40), "nearest", scale_factor=1.7),
        _case("nearest2d_recompute", (1, 2, 5, 7), "nearest", scale_factor=1.3, recompute_scale_factor=True),
        _case("nearest3d_nonuniform", (1, 2, 3, 4, 5), "nearest", scale_factor=[2.0, 1.5, 0.6]),
        _case("nearest3d_size", (2, 1, 4, 3, 5), "nearest", size=[5, 6, 2]),
        _case("nearest_exact1d", (1, 2, 7), "nearest-exact", scale_factor=1.6),
        _case("nearest_exact2d_size", (1, 2, 5, 6), "nearest-exact", size=[8, 4]),
        _case("nearest_exact2d_down", (1, 1, 9, 10), "nearest-exact", scale_factor=0.45),
        _case("nearest_exact2d_large", (1, 1, 30, 40), "nearest-exact", size=[55, 77]),
        _case("nearest_exact3d_up2", (1, 1, 3, 4, 5), "nearest-exact", scale_factor=2.0),
    ]


def _linear():
    return [
        _case("linear_up2", (2, 3, 5), "linear", scale_factor=2.0),
        _case("linear_size_ac", (1, 2, 5), "linear", size=9, align_corners=True),
        _case("linear_down", (1, 2, 11), "linear", scale_factor=0.37),
        _case("linear_noninteger", (1, 1, 7), "linear", scale_factor=1.37),
        _case("linear_recompute", (1, 2, 7), "linear", scale_factor=1.37, recompute_scale_factor=True),
        _case("linear_size1_out", (1, 2, 6), "linear", size=1),
        _case("linear_size1_out_ac", (1, 2, 6), "linear", size=1, align_corners=True),
        _case("linear_size1_in_ac", (1, 2, 1), "linear", size=4, align_corners=True),
        _case("linear_same_size_scale", (1, 2, 5), "linear", scale_factor=1.1),
        _case("linear_long", (1, 2, 300), "linear", size=613),
        _case("bilinear_up2", (1, 2, 5, 7), "bilinear", scale_factor=2.0, align_corners=False),
        _case("bilinear_up2_ac", (2, 2, 4, 5), "bilinear", scale_factor=2.0, align_corners=True),
        _case("bilinear_size_odd", (1, 3, 5, 7), "bilinear", size=[9, 4]),
        _case("bilinear_nonuniform", (1, 2, 6, 5), "bilinear", scale_factor=[1.5, 0.7]),
        _case("bilinear_down", (1, 2, 13, 11), "bilinear", scale_factor=0.3),
        _case("bilinear_recompute", (1, 2, 5, 6), "bilinear", scale_factor=1.7, recompute_scale_factor=True),
        _case("bilinear_recompute_ac", (1, 2, 5, 6), "bilinear", scale_factor=2.3, recompute_scale_factor=True,
              align_corners=True),
        _case("bilinear_size1_out", (1, 2, 4, 5), "bilinear", size=1),
        _case("bilinear_size1_in_ac", (1, 1, 1, 1), "bilinear", size=[3, 4], align_corners=True),
        _case("bilinear_batch", (3, 2, 6, 4), "bilinear", size=[10, 7]),
        _case("bilinear_large", (1, 1, 24, 30), "bilinear", size=[45, 61]),
        _case("bilinear_tall", (2, 3, 200, 2), "bilinear", size=[150, 3]),
        _case("trilinear_up2", (1, 2, 3, 4, 5), "trilinear", scale_factor=2.0),
        _case("trilinear_size_ac", (1, 1, 3, 4, 5), "trilinear", size=[5, 7, 6], align_corners=True),
        _case("trilinear_nonuniform", (2, 1, 6, 5, 7), "trilinear", scale_factor=[0.5, 1.5, 0.7]),
        _case("trilinear_recompute", (1, 1, 3, 4, 5), "trilinear", scale_factor=1.7, recompute_scale_factor=True),
    ]


def _cubic():
    return [
        _case("bicubic_up2", (1, 2, 5, 6), "bicubic", scale_factor=2.0),
        _case("bicubic_size_ac", (1, 2, 5, 6), "bicubic", size=[9, 11], align_corners=True),
        _case("bicubic_down", (1, 2, 13, 12), "bicubic", scale_factor=0.45),
        _case("bicubic_nonuniform", (2, 1, 6, 5), "bicubic", scale_factor=[1.5, 2.5]),
        _case("bicubic_size1_in", (1, 1, 1, 3), "bicubic", size=[3, 5]),
        _case("bicubic_size1_out", (1, 1, 5, 4), "bicubic", size=1),
        _case("bicubic_recompute", (1, 2, 5, 7), "bicubic", scale_factor=1.6, recompute_scale_factor=True),
        _case("bicubic_same_size_by_size", (1, 2, 5, 6), "bicubic", size=[5, 6]),
        _case("bicubic_large", (1, 1, 36, 40), "bicubic", size=[50, 45]),
        _case("bicubic_long_ac", (1, 1, 2, 520), "bicubic", size=[3, 1100], align_corners=True),
    ]


def _antialias():
    return [
        _case("bilinear_aa_down", (1, 2, 16, 13), "bilinear", scale_factor=0.4, antialias=True),
        _case("bilinear_aa_down_ac", (1, 2, 15, 12), "bilinear", size=[6, 5], align_corners=True, antialias=True),
        _case("bilinear_aa_up", (1, 1, 4, 5), "bilinear", scale_factor=1.5, antialias=True),
        _case("bilinear_aa_nonuniform", (1, 2, 12, 9), "bilinear", size=[5, 11], antialias=True),
        _case("bilinear_aa_large", (1, 1, 44, 50), "bilinear", scale_factor=0.5, antialias=True),
        _case("bicubic_aa_down", (1, 2, 16, 13), "bicubic", scale_factor=0.4, antialias=True),
        _case("bicubic_aa_down_ac", (1, 2, 14, 15), "bicubic", size=[5, 6], align_corners=True, antialias=True),
        _case("bicubic_aa_up", (1, 1, 4, 5), "bicubic", scale_factor=1.8, antialias=True),
        _case("bicubic_aa_large", (1, 1, 44, 50), "bicubic", scale_factor=0.5, antialias=True),
    ]


def _area():
    return [
        _case("area1d_down", (1, 2, 11), "area", size=4),
        _case("area1d_up", (1, 2, 4), "area", size=9),
        _case("area2d_down_scale", (2, 2, 9, 7), "area", scale_factor=0.5),
        _case("area2d_size", (1, 3, 10, 11), "area", size=[3, 5]),
        _case("area2d_up_scale", (1, 1, 3, 4), "area", scale_factor=2.5),
        _case("area2d_size1_out", (1, 2, 5, 7), "area", size=1),
        _case("area2d_large", (1, 1, 40, 45), "area", size=[7, 9]),
        _case("area3d_size", (1, 1, 6, 5, 7), "area", size=[3, 2, 4]),
    ]


def cases():
    table = _nearest() + _linear() + _cubic() + _antialias() + _area()
    for seed, case in enumerate(table):  # a different input per case
        case["input"] = _x(*case["input"].shape, seed=seed)
    return table
