"""Tensor-by-tensor differences between the original and the rewritten model.

``max_rel`` is ``max|a - b| / max|b|`` over the tensor (b = the original's). The test is
norm-wise within a kind (outputs, input gradients, parameter gradients): a tensor passes when
``max|a - b| <= atol + rtol * scale``, ``scale = max(max|b|, SCALE_FLOOR * G)`` and ``G`` the
largest ``max|b|`` of its kind; ``rel_to_scale = max|a - b| / scale`` is what is compared with rtol.
So a gradient that is analytically zero (a conv bias before BatchNorm), whose entries are only
float rounding noise of the size of eps * G, cannot fail a correct rewrite; a wrong rewrite moves
the large gradients too and still fails.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# Named tolerances of the runtime strategy (exact by construction, so only rounding may differ).
RUNTIME_RTOL_FLOAT32 = 1e-5
RUNTIME_RTOL_FLOAT64 = 1e-10
RUNTIME_ATOL = 0.0
# Strategies that change the numbers on purpose: their differences are information, not a verdict.
EXACT_STRATEGIES = ("runtime",)
# A tensor is judged against at least this fraction of the largest tensor of its kind.
SCALE_FLOOR = 1.0


def default_rtol(strategy: str, dtype: str) -> float | None:
    """The default relative tolerance, or None when differences are reported only."""
    if strategy not in EXACT_STRATEGIES:
        return None
    return RUNTIME_RTOL_FLOAT64 if dtype == "float64" else RUNTIME_RTOL_FLOAT32


@dataclass
class Row:
    kind: str  # output / input grad / param grad / new param
    name: str
    shape: tuple[int, ...]
    max_abs: float | None
    max_rel: float | None
    ok: bool | None  # None: no tolerance applies (information only)
    note: str = ""
    rel_to_scale: float | None = None  # max_abs / the scale the tolerance is applied to

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["shape"] = list(self.shape)
        return data


def max_abs_value(t: Any) -> float:
    import torch

    if t is None or t.numel() == 0:
        return 0.0
    t = t.detach().to(torch.float64)
    finite = t[torch.isfinite(t)]
    return float(finite.abs().max()) if finite.numel() else 0.0


def compare_tensor(kind: str, name: str, ref: Any, new: Any, rtol: float | None, atol: float,
                   floor: float = 0.0) -> Row:
    import torch

    if ref is None and new is None:
        return Row(kind, name, (), None, None, True, "no gradient in either")
    if ref is None or new is None:
        which = "original" if ref is None else "rewritten"
        shape = tuple((new if ref is None else ref).shape)
        return Row(kind, name, shape, None, None, False if rtol is not None else None, f"no gradient in the {which}")
    if tuple(ref.shape) != tuple(new.shape):
        return Row(kind, name, tuple(ref.shape), None, None, False, f"shape {tuple(new.shape)} in the rewritten")
    a, b = new.detach().to(torch.float64), ref.detach().to(torch.float64)
    if a.numel() == 0:
        return Row(kind, name, tuple(ref.shape), 0.0, 0.0, True)
    finite = torch.isfinite(a) & torch.isfinite(b)
    same_nonfinite = bool(((a == b) | finite).all()) and bool((torch.isfinite(a) == torch.isfinite(b)).all())
    diff = (a - b).abs()[finite]
    max_abs = float(diff.max()) if diff.numel() else 0.0
    own = float(b.abs()[finite].max()) if diff.numel() else 0.0
    scale = max(own, floor)

    def ratio(x: float, y: float) -> float:
        return x / y if y > 0 else (0.0 if x == 0 else float("inf"))

    max_rel, rel_to_scale = ratio(max_abs, own), ratio(max_abs, scale)
    ok = None
    if rtol is not None:
        ok = same_nonfinite and max_abs <= atol + rtol * scale
    note = "" if same_nonfinite else "non-finite values differ"
    if not note and scale > own and max_rel > (rtol or 0) and max_abs > 0:
        note = f"small next to its kind: judged against max {scale:.3g}"
    return Row(kind, name, tuple(ref.shape), max_abs, max_rel, ok, note, rel_to_scale)


def compare_results(original: dict, rewritten: dict, rtol: float | None, atol: float,
                    new_parameters: list[str]) -> list[Row]:
    rows: list[Row] = []

    def floor(tensors: dict) -> float:
        return SCALE_FLOOR * max((max_abs_value(t) for t in tensors.values()), default=0.0)

    out_floor, in_floor = floor(original["outputs"]), floor(original["input_grads"])
    param_floor = floor(original["param_grads"])
    for name, ref in original["outputs"].items():
        rows.append(compare_tensor("output", name, ref, rewritten["outputs"].get(name), rtol, atol, out_floor))
    for name, ref in original["input_grads"].items():
        rows.append(compare_tensor("input grad", name, ref, rewritten["input_grads"].get(name), rtol, atol, in_floor))
    new_grads = rewritten["param_grads"]
    for name, ref in original["param_grads"].items():
        if name not in new_grads:
            rows.append(Row("param grad", name, tuple(ref.shape) if ref is not None else (), None, None,
                            False if rtol is not None else None, "parameter missing in the rewritten model"))
            continue
        rows.append(compare_tensor("param grad", name, ref, new_grads[name], rtol, atol, param_floor))
    for name in new_parameters:
        grad = new_grads.get(name)
        shape = tuple(grad.shape) if grad is not None else ()
        rows.append(Row("new param", name, shape, None, None, None,
                        "added by the rewrite; no counterpart" + ("" if grad is not None else "; no gradient")))
    return rows
