"""The runtime strategy's fixtures compute what their originals compute, forward and backward.

Runs fixtures/fix/runtime/{pooling,other_modes}.in.py and their .out.py side by side on the same
float64 inputs: every returned tensor and every input gradient must agree (indices exactly). This
is what "port-fix --strategy runtime keeps the model" means at the level of one file.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import torch

RUNTIME_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fix" / "runtime"
TOLERANCE = 1e-12  # float64; the runtime is exact up to rounding order


def _load(case: str, suffix: str) -> dict:
    return runpy.run_path(str(RUNTIME_FIXTURES / f"{case}.{suffix}.py"))


def _flat(outputs) -> list[torch.Tensor]:
    flat: list[torch.Tensor] = []
    for item in outputs if isinstance(outputs, (tuple, list)) else (outputs,):
        flat.extend(_flat(item) if isinstance(item, (tuple, list)) else [item])
    return flat


def _run(fn, inputs: list[torch.Tensor], weights_seed: int):
    leaves = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    outputs = _flat(fn(*leaves))
    generator = torch.Generator().manual_seed(weights_seed)
    loss = sum(
        (o * torch.randn(o.shape, generator=generator, dtype=o.dtype)).sum() for o in outputs if o.is_floating_point()
    )
    grads = torch.autograd.grad(loss, [t for t in leaves if t.requires_grad])
    return outputs, grads


def _assert_same(original, rewritten):
    (outs_a, grads_a), (outs_b, grads_b) = original, rewritten
    assert len(outs_a) == len(outs_b)
    for a, b in zip(outs_a, outs_b):
        assert a.shape == b.shape and a.dtype == b.dtype
        if a.is_floating_point():
            assert (a - b).abs().max().item() <= TOLERANCE
        else:
            assert torch.equal(a, b)  # max-pool indices
    for a, b in zip(grads_a, grads_b):
        assert (a - b).abs().max().item() <= TOLERANCE


def test_fixtures_really_were_rewritten():
    for case in ("pooling", "other_modes"):
        assert "candle_runtime." in (RUNTIME_FIXTURES / f"{case}.out.py").read_text()


def test_pooling_functions_match():
    torch.manual_seed(0)
    x, signal = torch.randn(2, 3, 13, 11, dtype=torch.float64), torch.randn(2, 3, 17, dtype=torch.float64)
    original, rewritten = _load("pooling", "in")["pools"], _load("pooling", "out")["pools"]
    _assert_same(_run(lambda x, s: original(x, s, (4, 6)), [x, signal], 1), _run(lambda x, s: rewritten(x, s, (4, 6)), [x, signal], 1))


@pytest.mark.parametrize("attribute", ["pool", "down", "smooth", "head", "global_pool", "pick"])
def test_pooling_modules_match(attribute):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 12, 9, dtype=torch.float64)
    original = getattr(_load("pooling", "in")["Stem"](), attribute)
    rewritten = getattr(_load("pooling", "out")["Stem"](), attribute)
    target = getattr(rewritten, "func", rewritten)  # functools.partial -> its function
    owner = target.__module__ if callable(target) and not isinstance(target, torch.nn.Module) else type(target).__module__
    assert owner.startswith("candle_port.runtime") == (attribute != "global_pool")
    _assert_same(_run(original, [x], 2), _run(rewritten, [x], 2))


def test_pooling_sequential_and_subclass_match():
    torch.manual_seed(0)
    original, rewritten = _load("pooling", "in"), _load("pooling", "out")
    signal = torch.randn(2, 8, 21, dtype=torch.float64)
    pool_a, pool_b = original["Stem"]().seq[1], rewritten["Stem"]().seq[1]
    assert type(pool_b).__module__ == "candle_port.runtime.pooling_modules"
    _assert_same(_run(pool_a, [signal], 3), _run(pool_b, [signal], 3))
    x = torch.randn(1, 2, 10, 10, dtype=torch.float64)
    assert isinstance(rewritten["blur"], torch.nn.AvgPool2d)  # still an AvgPool2d for isinstance checks
    _assert_same(_run(original["blur"], [x], 4), _run(rewritten["blur"], [x], 4))


def test_other_interpolate_modes_match():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 16, 12, dtype=torch.float64)
    volume = torch.randn(1, 2, 4, 5, 6, dtype=torch.float64)
    signal = torch.randn(2, 3, 9, dtype=torch.float64)
    original, rewritten = _load("other_modes", "in"), _load("other_modes", "out")
    _assert_same(_run(original["resize"], [x, volume, signal], 5), _run(rewritten["resize"], [x, volume, signal], 5))
    _assert_same(_run(original["up"], [x], 6), _run(rewritten["up"], [x], 6))
