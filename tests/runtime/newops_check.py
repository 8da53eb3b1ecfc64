"""Checks shared by the tests of the grid_sample / transposed / 3-D runtime ops.

* :func:`parity`: forward and every gradient (input, weights / grid) against torch's native op;
* :func:`nonfinite`: the same with inf / NaN planted in the input (equal NaN and inf positions);
* :func:`path_runs`: a spy on a runtime helper that may decline (return None), recording per
  call whether it ran;
* :func:`candle_graph`: the make_fx forward graph, classified with the verify op table
  (src/candle_port/verify/candle_ops.json): no op on a gradient path that candle cannot
  differentiate, none whose candle gradient is wrong, and none of the ``forbidden`` aten ops.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from candle_port.verify.classify import classify_graph

TOL = {torch.float32: dict(rtol=1e-5, atol=2e-5), torch.float64: dict(rtol=1e-12, atol=1e-12)}


def _grads(out, inputs, grad_out):
    want = [t for t in inputs if t.requires_grad]
    got = torch.autograd.grad(out, want, grad_out, allow_unused=True)
    return [torch.zeros_like(t) if g is None else g for t, g in zip(want, got)]


def parity(ours: Callable, theirs: Callable, inputs: Sequence[torch.Tensor], tol=None, seed: int = 0):
    """Assert ours(*inputs) == theirs(*inputs) and their gradients for a random output gradient;
    return (forward error, backward error): max abs differences."""
    ref = theirs(*inputs)
    out = ours(*inputs)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    tol = tol or TOL[ref.dtype]
    torch.testing.assert_close(out, ref, **tol)
    fwd = (out - ref).abs().max().item() if ref.numel() else 0.0
    bwd = 0.0
    if any(t.requires_grad for t in inputs):
        g = torch.randn(ref.shape, dtype=ref.dtype, generator=torch.Generator().manual_seed(seed))
        for a, b in zip(_grads(out, inputs, g), _grads(ref, inputs, g)):
            torch.testing.assert_close(a, b, **tol)
            bwd = max(bwd, (a - b).abs().max().item() if a.numel() else 0.0)
    return fwd, bwd


def nonfinite(ours: Callable, theirs: Callable, inputs: Sequence[torch.Tensor], tol=None):
    """parity with NaN allowed: the same non-finite positions (NaN, +inf, -inf) in the output and
    the first input's gradient, equal values elsewhere. For the other inputs (weights, grid) the
    gradient must equal torch's where torch's is finite, and be non-finite only where torch's is:
    torch's own weight gradients multiply inputs by zeros (0 * inf) that the compositions skip."""
    ref = theirs(*inputs)
    out = ours(*inputs)
    tol = tol or TOL[ref.dtype]
    torch.testing.assert_close(out, ref, equal_nan=True, **tol)
    if any(t.requires_grad for t in inputs):
        g = torch.ones_like(ref)
        first = inputs[0].requires_grad
        for i, (a, b) in enumerate(zip(_grads(out, inputs, g), _grads(ref, inputs, g))):
            if i == 0 and first:
                torch.testing.assert_close(a, b, equal_nan=True, **tol)
            else:
                finite = b.isfinite()
                torch.testing.assert_close(a[finite], b[finite], **tol)
                assert bool((a.isfinite() | ~finite).all()), "non-finite where torch's gradient is finite"
    return int((~ref.isfinite()).sum())


def candle_graph(fn: Callable, inputs: Sequence[torch.Tensor], forbidden: Sequence[str] = ()) -> set[str]:
    """Trace ``fn`` with make_fx; assert candle differentiates every op on a gradient path from
    any input (verify's classification); return the names of the ops traced."""
    gm = make_fx(fn)(*inputs)
    sources = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    report = classify_graph(gm.graph, sources, "make_fx")
    lacking = [(r.name, r.reason) for r in report.lacking]
    wrong = [(r.name, r.wrong) for r in report.wrong]
    assert not lacking, f"candle cannot differentiate: {lacking}"
    assert not wrong, f"candle's gradient is wrong for: {wrong}"
    names = {r.name for r in report.ops}
    bad = {n for n in names for f in forbidden if f in n}
    assert not bad, f"forbidden ops traced: {sorted(bad)}"
    torch.testing.assert_close(gm(*inputs), fn(*inputs), rtol=0, atol=0, equal_nan=True)
    return names


def path_runs(monkeypatch, module, name: str) -> list:
    """Replace ``module.name`` (a helper that returns None when its path does not apply) by a
    spy; the returned list gets, per call, whether the path ran (its result was not None)."""
    ran: list = []
    real = getattr(module, name)

    def spy(*args):
        got = real(*args)
        ran.append(got is not None)
        return got

    monkeypatch.setattr(module, name, spy)
    return ran
