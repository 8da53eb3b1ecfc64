"""The runtime strategy's CP105/CP108/CP110 fixtures compute what their originals compute.

fixtures/fix/runtime/{grid_sample,conv_transpose,volumetric,volumetric_pooling}.in.py and their .out.py (grid_sample
and affine_grid; ConvTranspose1d, grouped / output_padding ConvTranspose2d, conv_transpose1d;
Conv3d with a causal subclass, ConvTranspose3d, conv3d, conv_transpose3d; 3-D max, average and
adaptive pools) run side by side on the
same float64 inputs and weights: every output, input gradient and parameter gradient agrees.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import torch
from torch.nn.parameter import UninitializedParameter

RUNTIME_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fix" / "runtime"
TOLERANCE = 1e-10  # float64; the compositions sum in another order than torch's kernels


def _load(case: str, suffix: str) -> dict:
    return runpy.run_path(str(RUNTIME_FIXTURES / f"{case}.{suffix}.py"))


def _flat(outputs) -> list[torch.Tensor]:
    if isinstance(outputs, (tuple, list)):
        return [t for item in outputs for t in _flat(item)]
    return [outputs]


def _run(namespace: dict, name: str, inputs: list[torch.Tensor], init: dict | None):
    torch.manual_seed(0)
    fn = namespace[name](**init).double() if init is not None else namespace[name]
    params = [p for p in (fn.parameters() if init is not None else ()) if not isinstance(p, UninitializedParameter)]
    leaves = [t.clone().requires_grad_(True) for t in inputs]
    outputs = _flat(fn(*leaves))
    generator = torch.Generator().manual_seed(1)
    loss = sum((o * torch.randn(o.shape, generator=generator, dtype=o.dtype)).sum() for o in outputs if o.is_floating_point())
    grads = torch.autograd.grad(loss, leaves + params)
    return [o.detach() for o in outputs], grads


def _inputs(*shapes):
    generator = torch.Generator().manual_seed(2)
    return [torch.randn(s, generator=generator, dtype=torch.float64) for s in shapes]


CASES = {
    "warp": ("grid_sample", None, lambda: [_inputs((2, 3, 7, 9))[0], torch.tensor(
        [[[0.9, -0.2, 0.1], [0.3, 1.1, -0.05]], [[1.2, 0.1, -0.3], [0.0, 0.8, 0.2]]], dtype=torch.float64)]),
    "flow": ("grid_sample", None, lambda: [_inputs((2, 3, 7, 9))[0], 0.1 * _inputs((2, 7, 9, 2))[0]]),
    "Decoder": ("conv_transpose", {"c": 8}, lambda: _inputs((2, 8, 5, 6), (8, 8, 4))),
    "Block": ("volumetric", {"c": 4}, lambda: _inputs((1, 4, 4, 6, 6), (4, 4, 3, 3, 3))),
    "Encoder": ("volumetric_pooling", {}, lambda: _inputs((2, 3, 5, 7, 8))),
}


def test_fixtures_really_were_rewritten():
    for case in ("grid_sample", "conv_transpose", "volumetric", "volumetric_pooling"):
        text = (RUNTIME_FIXTURES / f"{case}.out.py").read_text()
        assert text.count("candle_runtime.") >= 5, case


@pytest.mark.parametrize("name", sorted(CASES))
def test_rewritten_equals_original(name):
    case, init, make_inputs = CASES[name]
    inputs = make_inputs()
    original, rewritten = _load(case, "in"), _load(case, "out")
    (outs_a, grads_a), (outs_b, grads_b) = _run(original, name, inputs, init), _run(rewritten, name, inputs, init)
    assert len(outs_a) == len(outs_b) and len(grads_a) == len(grads_b)
    for a, b in zip(outs_a + list(grads_a), outs_b + list(grads_b)):
        assert a.shape == b.shape and a.dtype == b.dtype
        if not a.is_floating_point():
            assert torch.equal(a, b)  # max-pool indices
            continue
        assert (a - b).abs().max().item() <= TOLERANCE * max(1.0, a.abs().max().item())


def test_rewritten_modules_are_the_runtimes():
    import candle_port.runtime as runtime

    torch.manual_seed(0)
    block = _load("volumetric", "out")["Block"](c=4)
    assert isinstance(block.conv, runtime.Conv3d) and isinstance(block.causal, runtime.Conv3d)
    assert isinstance(block.up, runtime.ConvTranspose3d)
    decoder = _load("conv_transpose", "out")["Decoder"](c=8)
    assert isinstance(decoder.up1d, runtime.ConvTranspose1d) and isinstance(decoder.depthwise, runtime.ConvTranspose2d)
    assert type(decoder.plain) is torch.nn.ConvTranspose2d  # candle trains it: not a finding, not rewritten
