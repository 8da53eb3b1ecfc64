"""Cases of the norm family: ``F.layer_norm`` and ``F.rms_norm`` over the last dimension, with the
weight (and bias) as differentiated operands.

crates/candle-port-ops/tests/norm_vectors.rs checks candle-port-ops' ``norm`` layers (whose
forward candle differentiates) against these, and measures candle-nn's own layers on them: its
fused ``LayerNorm``/``RmsNorm`` give no gradient at all, and its ``layer_norm_slow`` rounds eps to
f32, which moves float64 results of rows whose variance is near eps off torch's. Shapes: a
transformer's (batch, tokens, hidden), a channels-last image (ConvNeXt), BERT's eps 1e-12, rows
of nearly equal values, and a NaN, an inf and a -inf in the input.
"""

from __future__ import annotations

import torch


def _x(*shape: int, seed: int = 0, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=gen, dtype=torch.float64) * scale + shift


def _nonfinite(x: torch.Tensor) -> torch.Tensor:
    """``x`` with a NaN, an inf and a -inf, in three different rows."""
    y = x.clone()
    y[0, 0, 1], y[0, 2, 3], y[1, 1, 0] = float("nan"), float("inf"), float("-inf")
    return y


def _layer(name, x, eps, bias=True, seed=0):
    n = x.shape[-1]
    operands = {"weight": _x(n, seed=seed + 1, scale=0.5, shift=1.0)}
    if bias:
        operands["bias"] = _x(n, seed=seed + 2, scale=0.5)
    return {"name": name, "op": "layer_norm", "input": x, "operands": operands,
            "params": {"normalized_shape": [n], "eps": eps}}


def _rms(name, x, eps, seed=0):
    n = x.shape[-1]
    return {"name": name, "op": "rms_norm", "input": x, "operands": {"weight": _x(n, seed=seed + 1, scale=0.5, shift=1.0)},
            "params": {"normalized_shape": [n], "eps": eps}}


def cases():
    return [
        _layer("ln_tokens", _x(2, 3, 8, seed=1), 1e-5, seed=10),
        _layer("ln_bert_eps", _x(3, 16, seed=2, scale=3.0, shift=2.0), 1e-12, seed=20),
        _layer("ln_channels_last", _x(2, 3, 4, 6, seed=3), 1e-6, seed=30),
        _layer("ln_near_eps_variance", _x(2, 4, 8, seed=4, scale=3e-3), 1e-5, seed=40),
        _layer("ln_no_bias", _x(2, 3, 8, seed=5), 1e-5, bias=False, seed=50),
        _layer("ln_nonfinite", _nonfinite(_x(2, 3, 8, seed=6)), 1e-5, seed=60),
        _rms("rms_tokens", _x(2, 3, 8, seed=7), 1e-6, seed=70),
        _rms("rms_near_eps", _x(2, 4, 8, seed=8, scale=3e-3), 1e-5, seed=80),
        _rms("rms_nonfinite", _nonfinite(_x(2, 3, 8, seed=9)), 1e-6, seed=90),
    ]
