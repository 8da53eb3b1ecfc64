"""Write the shared test vectors: torch's numbers for every op of the runtime and the Rust crate.

For each case of each family (``cases_<family>.py`` beside this file) and each dtype (float32,
float64) it stores, in ``crates/candle-port-ops/tests/vectors/<family>.safetensors``:
``<id>.input``, ``<id>.output``, ``<id>.grad_output`` (a seeded upstream gradient),
``<id>.grad_input`` (torch autograd of ``(output * grad_output).sum()``) and, for ops that return
indices, ``<id>.indices`` (int64). Ops with more than one tensor argument (grid_sample's grid, a
convolution's weight and bias) list them in the case's ``operands`` (keyword names, in order): each
is stored as ``<id>.<name>`` with its gradient ``<id>.grad_<name>``, and passed as ``name=tensor``. ``<family>.json`` lists the cases: ``id``, ``op`` (the name of
the ``torch.nn.functional`` function), ``dtype`` and ``params`` (its keyword arguments, verbatim),
so torch, ``candle_port.runtime`` (same signatures) and the crate read one table.

The vectors are committed (a few MB in all) so that ``cargo test`` needs no torch; CI regenerates
them into a temporary folder and checks that they equal the committed ones
(tests/runtime/test_vectors.py). Run ``python scripts/vectors/make_vectors.py`` after changing a
case table.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parents[1] / "crates" / "candle-port-ops" / "tests" / "vectors"
FAMILIES = ("interpolate", "pooling", "native", "grid", "transposed_conv", "volumetric", "conv1d", "norm")
DTYPES = {"float32": torch.float32, "float64": torch.float64}
FORMAT = {"format": "candle-port-vectors", "version": 1}


def load_family(name: str):
    """The case module of a family; each defines ``cases() -> list[dict]``.

    A case dict holds ``name`` (unique in the family), ``op``, ``params`` and ``input`` (a float64
    tensor; cast per dtype) and optionally ``operands`` (a dict of further float64 tensor keyword
    arguments, each differentiated) and ``dtypes`` (default both)."""
    sys.path.insert(0, str(HERE))
    try:
        return importlib.import_module(f"cases_{name}")
    finally:
        sys.path.pop(0)


def call(namespace: Any, op: str, x: torch.Tensor, params: Dict[str, Any], operands=None):
    """``op`` from ``namespace`` (torch.nn.functional or candle_port.runtime) on ``x`` (and the
    tensor keyword arguments ``operands``)."""
    return getattr(namespace, op)(x, **(operands or {}), **params)


def split_output(result):
    """(output, indices or None): ops with return_indices give a pair."""
    if isinstance(result, tuple):
        return result[0], result[1]
    return result, None


def run_case(case: Dict[str, Any], dtype_name: str, seed: int) -> Dict[str, torch.Tensor]:
    dtype = DTYPES[dtype_name]
    x = case["input"].to(dtype).clone().requires_grad_(True)
    operands = {k: v.to(dtype).clone().requires_grad_(True) for k, v in case.get("operands", {}).items()}
    out, indices = split_output(call(F, case["op"], x, case["params"], operands))
    gen = torch.Generator().manual_seed(seed)
    grad_output = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(dtype)
    grad_input, *grad_operands = torch.autograd.grad((out * grad_output).sum(), [x, *operands.values()],
                                                     allow_unused=True)
    tensors = {
        "input": x.detach(),
        "output": out.detach(),
        "grad_output": grad_output,
        "grad_input": grad_input,
    }
    for (name, value), grad in zip(operands.items(), grad_operands):
        tensors[name] = value.detach()
        tensors[f"grad_{name}"] = torch.zeros_like(value) if grad is None else grad
    if indices is not None:
        tensors["indices"] = indices.to(torch.int64)
    return {k: v.contiguous() for k, v in tensors.items()}


def write_family(name: str, out_dir: Path) -> int:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # reductions in one fixed order: the same bytes on every run
    try:
        return _write_family(name, out_dir)
    finally:
        torch.set_num_threads(threads)


def _write_family(name: str, out_dir: Path) -> int:
    module = load_family(name)
    entries: List[Dict[str, Any]] = []
    blobs: Dict[str, torch.Tensor] = {}
    seen = set()
    for seed, case in enumerate(module.cases()):
        if case["name"] in seen:
            raise ValueError(f"duplicate case name {case['name']!r} in cases_{name}.py")
        seen.add(case["name"])
        for dtype_name in case.get("dtypes", DTYPES):
            case_id = f"{case['name']}.{'f32' if dtype_name == 'float32' else 'f64'}"
            tensors = run_case(case, dtype_name, seed)
            for key, value in tensors.items():
                blobs[f"{case_id}.{key}"] = value
            entry = {"id": case_id, "op": case["op"], "dtype": dtype_name, "params": case["params"],
                     "tensors": sorted(tensors)}
            if case.get("operands"):
                entry["operands"] = list(case["operands"])
            entries.append(entry)
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(blobs, str(out_dir / f"{name}.safetensors"))
    table = {**FORMAT, "family": name, "torch": torch.__version__.split("+")[0], "cases": entries}
    (out_dir / f"{name}.json").write_text(json.dumps(table, indent=1) + "\n")
    return len(entries)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder to write (default: %(default)s)")
    parser.add_argument("families", nargs="*", default=list(FAMILIES))
    args = parser.parse_args(argv)
    for name in args.families:
        count = write_family(name, args.out)
        print(f"{name}: {count} cases -> {args.out / name}.safetensors")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
