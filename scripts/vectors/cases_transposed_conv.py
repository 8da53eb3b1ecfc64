"""Cases of the transposed_conv family: ``F.conv_transpose1d`` / ``F.conv_transpose2d`` with their
weight and bias as operands (each differentiated).

Stride, padding, output_padding (below the stride, and at or above it where the dilation allows),
dilation, groups (grouped and depthwise), per-axis arguments, with and without bias, batch > 1, a NaN and an inf in the input.
Shapes stay small so the committed vectors stay well under 400 KB.
"""

from __future__ import annotations

import torch


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _nonfinite(x: torch.Tensor) -> torch.Tensor:
    """``x`` with one NaN and one inf: torch's NaN / inf pattern must come out, not a NaN plane."""
    y = x.clone().reshape(-1)
    y[1], y[-3] = float("nan"), float("inf")
    return y.reshape(x.shape)


def _case(name, op, x, weight, bias=None, **params):
    operands = {"weight": weight}
    if bias is not None:
        operands["bias"] = bias
    return {"name": name, "op": op, "input": x, "operands": operands, "params": params}


def cases():
    return [
        _case("ct1d_basic", "conv_transpose1d", _x(2, 3, 7, seed=1), _x(3, 4, 3, seed=2), _x(4, seed=3)),
        _case("ct1d_s2p1op1", "conv_transpose1d", _x(1, 4, 6, seed=4), _x(4, 2, 4, seed=5), _x(2, seed=6),
              stride=2, padding=1, output_padding=1),
        _case("ct1d_groups_dil", "conv_transpose1d", _x(2, 4, 5, seed=7), _x(4, 3, 3, seed=8), _x(6, seed=9),
              stride=3, padding=2, output_padding=1, groups=2, dilation=2),
        _case("ct1d_op_below_dilation", "conv_transpose1d", _x(1, 2, 6, seed=10), _x(2, 3, 3, seed=11),
              stride=1, dilation=3, output_padding=2),
        _case("ct1d_depthwise", "conv_transpose1d", _x(1, 3, 8, seed=12), _x(3, 1, 5, seed=13), _x(3, seed=14),
              stride=2, padding=2, groups=3),
        _case("ct2d_basic", "conv_transpose2d", _x(2, 3, 4, 5, seed=20), _x(3, 2, 3, 3, seed=21), _x(2, seed=22)),
        _case("ct2d_groups_op", "conv_transpose2d", _x(1, 4, 5, 4, seed=23), _x(4, 2, 3, 3, seed=24), _x(4, seed=25),
              stride=2, padding=1, output_padding=1, groups=2),
        _case("ct2d_rect", "conv_transpose2d", _x(2, 2, 4, 5, seed=26), _x(2, 3, 2, 3, seed=27), _x(3, seed=28),
              stride=(2, 3), padding=(0, 1), output_padding=(1, 2), dilation=(1, 2)),
        _case("ct2d_depthwise", "conv_transpose2d", _x(1, 3, 4, 4, seed=29), _x(3, 1, 3, 3, seed=30),
              stride=2, padding=1, output_padding=1, groups=3),
        _case("ct2d_op_ge_stride", "conv_transpose2d", _x(1, 2, 4, 5, seed=31), _x(2, 2, 3, 2, seed=32),
              _x(2, seed=33), stride=1, dilation=2, output_padding=1),
        _case("ct2d_groups3_s3", "conv_transpose2d", _x(2, 6, 3, 3, seed=34), _x(6, 1, 2, 3, seed=35),
              _x(3, seed=36), stride=3, padding=(1, 0), groups=3),
        _case("ct1d_nonfinite", "conv_transpose1d", _nonfinite(_x(1, 2, 9, seed=37)), _x(2, 2, 3, seed=38),
              stride=2, groups=2),
        _case("ct2d_nonfinite", "conv_transpose2d", _nonfinite(_x(1, 2, 5, 5, seed=39)), _x(2, 1, 2, 2, seed=40),
              stride=2, groups=2),
    ]
