"""Cases of the conv1d family: ``F.conv1d`` with its weight and bias as operands (each
differentiated). Batch > 1 with several output channels per group is where candle 0.11.0's own
``conv1d`` trains the weight wrong; stride, padding, dilation, groups (grouped and depthwise), an
input the last window does not reach, and a NaN and an inf in the input.
"""

from __future__ import annotations

from cases_transposed_conv import _case, _nonfinite, _x


def cases():
    return [
        _case("c1d_basic", "conv1d", _x(2, 3, 9, seed=1), _x(4, 3, 3, seed=2), _x(4, seed=3), padding=1),
        _case("c1d_stride_unread", "conv1d", _x(3, 2, 12, seed=4), _x(5, 2, 4, seed=5), _x(5, seed=6),
              stride=3, padding=1),
        _case("c1d_groups_dilation", "conv1d", _x(2, 4, 11, seed=7), _x(6, 2, 3, seed=8), _x(6, seed=9),
              stride=2, padding=2, dilation=2, groups=2),
        _case("c1d_depthwise", "conv1d", _x(2, 3, 8, seed=10), _x(3, 1, 5, seed=11), padding=2, groups=3),
        _case("c1d_pointwise_no_bias", "conv1d", _x(4, 5, 6, seed=12), _x(2, 5, 1, seed=13)),
        _case("c1d_nonfinite", "conv1d", _nonfinite(_x(2, 2, 9, seed=14)), _x(3, 2, 3, seed=15), stride=2),
    ]
