"""The shared vectors (crates/candle-port-ops/tests/vectors): torch, the runtime and the crate agree.

The crate's ``cargo test`` checks its ops against the same files; here the Python runtime is
checked against them, and the committed files are checked to be what the generator writes today.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import candle_port.runtime as runtime

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "crates" / "candle-port-ops" / "tests" / "vectors"
# The same bounds as the crate's tests (crates/candle-port-ops/tests/common/mod.rs).
REL_TOL = {"float32": 1e-5, "float64": 1e-10}
# The families whose cases the runtime is checked on here (every family of make_vectors.FAMILIES is
# also regenerated and compared below): forward output, indices and every stored gradient. The norm
# family is the crate's alone (torch's own LayerNorm/RMSNorm train; only candle-nn's do not).
RUNTIME_FAMILIES = ("interpolate", "pooling", "native", "grid", "transposed_conv", "volumetric", "conv1d")


def _generator():
    spec = importlib.util.spec_from_file_location("make_vectors", ROOT / "scripts" / "vectors" / "make_vectors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_vectors = _generator()


def rel_err(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """max |actual - expected| / max |expected| over finite entries; NaN and inf must coincide."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    a, e = actual.double(), expected.double()
    assert torch.equal(torch.isnan(a), torch.isnan(e)), "NaN positions differ"
    finite = torch.isfinite(e)
    assert torch.equal(a[~finite & ~torch.isnan(e)], e[~finite & ~torch.isnan(e)]), "inf entries differ"
    if not finite.any():
        return 0.0
    scale = e[finite].abs().max().clamp_min(torch.finfo(torch.float64).tiny)
    return float(((a[finite] - e[finite]).abs().max() / scale).item())


def _cases():
    for family in RUNTIME_FAMILIES:
        table = json.loads((VECTORS / f"{family}.json").read_text())
        for case in table["cases"]:
            # The native family also holds torch's numbers for ops the runtime does not replace
            # (relu, hardtanh): only candle's own ops are measured against those. Every other
            # family's op is the runtime's (as the crate's tests handle every case).
            if hasattr(runtime, case["op"]):
                yield pytest.param(family, case, id=case["id"])
            else:
                assert family == "native", f"{family}: runtime has no {case['op']}"


_TENSORS = {family: None for family in make_vectors.FAMILIES}


def _tensors(family: str):
    if _TENSORS[family] is None:
        _TENSORS[family] = load_file(str(VECTORS / f"{family}.safetensors"))
    return _TENSORS[family]


@pytest.mark.parametrize("family,case", list(_cases()))
def test_runtime_matches_torch_vectors(family, case):
    t = _tensors(family)
    cid = case["id"]
    x = t[f"{cid}.input"].clone().requires_grad_(True)
    # Further tensor arguments (grid, weight, bias), passed by keyword and differentiated too.
    operands = {name: t[f"{cid}.{name}"].clone().requires_grad_(True) for name in case.get("operands", [])}
    out, indices = make_vectors.split_output(make_vectors.call(runtime, case["op"], x, case["params"], operands))
    tol = REL_TOL[case["dtype"]]
    assert rel_err(out, t[f"{cid}.output"]) <= tol
    if "indices" in case["tensors"]:
        assert torch.equal(indices, t[f"{cid}.indices"])
    grads = torch.autograd.grad((out * t[f"{cid}.grad_output"]).sum(), [x, *operands.values()], allow_unused=True)
    for name, grad in zip(["input", *operands], grads):
        expected = t[f"{cid}.grad_{name}"]
        assert rel_err(torch.zeros_like(expected) if grad is None else grad, expected) <= tol, name


@pytest.mark.parametrize("family", make_vectors.FAMILIES)
def test_committed_vectors_are_what_the_generator_writes(family, tmp_path):
    make_vectors.write_family(family, tmp_path)
    assert json.loads((tmp_path / f"{family}.json").read_text())["cases"] == json.loads(
        (VECTORS / f"{family}.json").read_text())["cases"]
    fresh, committed = load_file(str(tmp_path / f"{family}.safetensors")), _tensors(family)
    assert sorted(fresh) == sorted(committed)
    for key in fresh:
        # torch's float32 kernels sum in an order that depends on the CPU's vector width (oneDNN
        # picks AVX2 or AVX-512 at run time): a vector regenerated on another machine may differ
        # in its last bit (conv_transpose1d's grad_input: 3.8e-8 on an AMD EPYC). Any change to a
        # case is many orders above these bounds.
        bound = 8 * torch.finfo(torch.float32).eps if fresh[key].dtype == torch.float32 else REL_TOL["float64"] * 10
        assert rel_err(fresh[key], committed[key]) <= bound, key
