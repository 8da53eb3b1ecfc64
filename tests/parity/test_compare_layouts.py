"""compare judges a module output kept in another layout by values: a candle port's module may
return (B, C, H, W) where torch's returns (B, H*W, C) (candle-transformers' SegFormer patch
embeddings and blocks). The order of candle's dims that agrees is used and shown; a plain
reshape (a port that flattens differently) is tried first; different values still differ."""

from __future__ import annotations

import torch

from candle_port.parity.compare import _activation_between, _Judge
from candle_port.parity.render import _row


def judge(torch_t, candle_t):
    return _Judge("float32", {}, 50.0, None, None)("module:x", "x", "module", torch_t, candle_t, 0.0)


def test_channels_first_against_tokens_is_judged_in_the_matching_order():
    candle_t = torch.randn(1, 16, 8, 8)
    torch_t = candle_t.permute(0, 2, 3, 1).reshape(1, 64, 16)
    row = judge(torch_t, candle_t)
    assert row.status == "match" and row.rel == 0.0
    assert row.layout == "(0, 2, 3, 1)"
    assert "read in the order (0, 2, 3, 1)" in _row(row)


def test_a_plain_flatten_needs_no_order():
    candle_t = torch.randn(2, 3, 4)
    row = judge(candle_t.reshape(2, 12), candle_t)
    assert row.status == "match" and row.layout == ""


def test_other_values_still_differ_and_other_sizes_are_a_shape_mismatch():
    candle_t = torch.randn(1, 16, 8, 8)
    torch_t = (candle_t + 1.0).permute(0, 2, 3, 1).reshape(1, 64, 16)
    assert judge(torch_t, candle_t).status == "DIFFERS"
    assert judge(torch.randn(1, 65, 16), candle_t).status == "shape"


def test_an_output_taken_before_an_activation_is_recognised():
    candle_t = torch.randn(2, 8, 4, 4)
    assert _activation_between(candle_t, torch.relu(candle_t), 1e-6) == "relu"
    assert _activation_between(candle_t, torch.nn.functional.silu(candle_t), 1e-6) == "silu"
    assert _activation_between(candle_t, candle_t * 2.0, 1e-6) == ""
    assert _activation_between(None, candle_t, 1e-6) == ""
