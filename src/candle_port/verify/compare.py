"""Tensor-by-tensor differences between the original and the rewritten model, judged against the
original model's own rounding.

Every difference is measured against a scale: ``scale = max(max|b|, G)``, ``b`` the original's
tensor and ``G`` the largest ``max|b|`` of its kind (outputs, input gradients, parameter
gradients). A gradient that is analytically zero (a conv bias before BatchNorm) holds only
rounding noise of the size eps * G, so it cannot fail a correct rewrite on its own scale.

The tolerance comes from a reference run of the original (worker.py, ``_noise_reference``):

- ``float64`` (for float32 checks): the original and the rewritten float32 runs are each measured
  against the float64 run of the original: ``own_noise = max|orig - ref| / scale``,
  ``rewrite_dist = max|rew - ref| / scale``.
- ``perturbed`` (float64 checks, or a model that does not run in float64): the original run again
  with inputs and parameters perturbed by the unit roundoff of the least precise dtype the forward
  computes in: ``own_noise = max|orig - perturbed| / scale``, ``rewrite_dist = max|rew - orig| / scale``.

A tensor passes when ``rewrite_dist <= NOISE_FACTOR * max(own_noise, unit roundoff of the dtype)``:
the rewrite may round differently, never by much more than the model's own rounding amounts to.
``--rtol``/``--atol`` replace this by a fixed test, ``max|a - b| <= atol + rtol * scale``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# How far beyond the original's own rounding the rewrite may be. Measured (README, "Real models
# verified"): the worst rewrite_dist / own_noise of a correct rewrite was 1.64 over the corpus
# models in float32, 3.0 in float64 and 5.2 on fixtures/verify/batchnorm_two_values.py (a
# BatchNorm over two values); planted wrong rewrites are 1e3 and more beyond their noise.
NOISE_FACTOR = 50.0
# Unit roundoff per dtype: the floor of the measured noise (a tensor the original computes exactly).
UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float64": 2.0 ** -53}
# The fixed tolerances used only when no reference could be run (a model that cannot be deep-copied).
FALLBACK_RTOL = {"float32": 1e-5, "float64": 1e-10}
RUNTIME_ATOL = 0.0
SCALE_FLOOR = 1.0
KINDS = (("output", "outputs"), ("input grad", "input_grads"), ("param grad", "param_grads"))


@dataclass
class Tolerance:
    """How the tensors are judged: against the reference (``factor``) or fixed (``rtol``/``atol``)."""

    mode: str  # "reference" or "fixed"
    factor: float = NOISE_FACTOR
    floor: float = UNIT_ROUNDOFF["float32"]
    rtol: float = 0.0
    atol: float = 0.0
    method: str = ""  # the reference: "float64" or "perturbed"
    note: str = ""
    given: bool = False  # --rtol/--atol: the user's own tolerance, which judges every strategy

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Row:
    kind: str  # output / input grad / param grad / new param
    name: str
    shape: tuple[int, ...]
    max_abs: float | None  # max|rewritten - original|
    max_rel: float | None  # max_abs / max|original|
    ok: bool | None  # None: nothing to judge
    note: str = ""
    rel_to_scale: float | None = None  # max_abs / scale
    rewrite_dist: float | None = None  # the rewrite's distance from the reference, / scale
    own_noise: float | None = None  # the original's own distance from the reference, / scale
    allowed: float | None = None  # what rewrite_dist (or rel_to_scale, fixed mode) is compared with
    ratio: float | None = None  # rewrite_dist / max(own_noise, floor): fails above the factor

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["shape"] = list(self.shape)
        return data


def choose_tolerance(dtype: str, reference: dict | None, rtol: float | None, atol: float | None,
                     factor: float = NOISE_FACTOR) -> Tolerance:
    if rtol is not None or atol is not None:
        return Tolerance("fixed", rtol=rtol or 0.0, atol=atol or 0.0, note="given with --rtol/--atol", given=True)
    if not reference or reference.get("method") not in ("float64", "perturbed"):
        why = (reference or {}).get("error") or "the model could not be copied"
        return Tolerance("fixed", rtol=FALLBACK_RTOL[dtype], atol=RUNTIME_ATOL,
                         note=f"no reference run ({why}): fixed default")
    note = ("original and rewritten each against a float64 run of the original"
            if reference["method"] == "float64" else
            f"original vs a run with inputs and parameters perturbed by {reference['eps']:.2g} "
            f"(unit roundoff of {reference.get('lowest_dtype', dtype)})")
    if reference.get("float64_error"):
        note += f"; float64 failed: {reference['float64_error']}"
    # A forward computing in a less precise dtype than the model's (SAM 2's FPN interpolates in
    # float32 in a float64 model) rounds at that dtype's unit roundoff, also on a path the
    # perturbation does not move (a gradient on a linear path: own noise 0).
    floor = max(UNIT_ROUNDOFF[dtype], reference["eps"]) if reference["method"] == "perturbed" else UNIT_ROUNDOFF[dtype]
    return Tolerance("reference", factor=factor, floor=floor, method=reference["method"], note=note)


def max_abs_value(t: Any) -> float:
    import torch

    if t is None or t.numel() == 0:
        return 0.0
    t = t.detach().to(torch.float64)
    finite = t[torch.isfinite(t)]
    return float(finite.abs().max()) if finite.numel() else 0.0


def _distance(a: Any, b: Any) -> float:
    import torch

    if a is None or b is None or tuple(a.shape) != tuple(b.shape) or a.numel() == 0:
        return 0.0
    a, b = a.detach().to(torch.float64), b.detach().to(torch.float64)
    finite = torch.isfinite(a) & torch.isfinite(b)
    diff = (a - b).abs()[finite]
    return float(diff.max()) if diff.numel() else 0.0


def _ratio(x: float, y: float) -> float:
    return x / y if y > 0 else (0.0 if x == 0 else float("inf"))


def compare_tensor(kind: str, name: str, ref: Any, new: Any, tol: Tolerance, floor: float = 0.0,
                   noise_ref: Any = None) -> Row:
    """One row: ``ref`` the original's tensor, ``new`` the rewritten's, ``noise_ref`` the reference run's."""
    import torch

    if ref is None and new is None:
        return Row(kind, name, (), None, None, True, "no gradient in either")
    if ref is None or new is None:
        which = "original" if ref is None else "rewritten"
        shape = tuple((new if ref is None else ref).shape)
        return Row(kind, name, shape, None, None, False, f"no gradient in the {which}")
    if tuple(ref.shape) != tuple(new.shape):
        return Row(kind, name, tuple(ref.shape), None, None, False, f"shape {tuple(new.shape)} in the rewritten")
    a, b = new.detach().to(torch.float64), ref.detach().to(torch.float64)
    if a.numel() == 0:
        return Row(kind, name, tuple(ref.shape), 0.0, 0.0, True)
    same_nonfinite = bool((torch.isfinite(a) == torch.isfinite(b)).all()) and bool(
        ((a == b) | (torch.isfinite(a) & torch.isfinite(b))).all())
    max_abs = _distance(a, b)
    own = max_abs_value(b)
    scale = max(own, floor)
    row = Row(kind, name, tuple(ref.shape), max_abs, _ratio(max_abs, own), None,
              "" if same_nonfinite else "non-finite values differ", _ratio(max_abs, scale))
    if tol.mode == "fixed" or noise_ref is None or tuple(noise_ref.shape) != tuple(ref.shape):
        row.allowed = (tol.atol + tol.rtol * scale) / scale if scale > 0 else tol.atol
        ok = max_abs <= tol.atol + tol.rtol * scale
        if tol.mode == "reference":
            row.note = row.note or "no reference tensor: fixed default"
    else:
        if tol.method == "float64":
            row.rewrite_dist = _ratio(_distance(a, noise_ref), scale)
            row.own_noise = _ratio(_distance(b, noise_ref), scale)
        else:
            row.rewrite_dist = row.rel_to_scale
            row.own_noise = _ratio(_distance(b, noise_ref), scale)
        row.allowed = tol.factor * max(row.own_noise, tol.floor)
        row.ratio = row.rewrite_dist / max(row.own_noise, tol.floor)
        ok = row.rewrite_dist <= row.allowed
    row.ok = bool(ok and same_nonfinite)
    return row


def compare_results(original: dict, rewritten: dict, tol: Tolerance, new_parameters: list[str]) -> list[Row]:
    rows: list[Row] = []
    reference = original.get("reference") or {}
    for kind, key in KINDS:
        tensors = original[key]
        floor = SCALE_FLOOR * max((max_abs_value(t) for t in tensors.values()), default=0.0)
        theirs = rewritten[key]
        noise = reference.get(key) or {}
        for name, ref in tensors.items():
            if kind == "param grad" and name not in theirs:
                rows.append(Row(kind, name, tuple(ref.shape) if ref is not None else (), None, None, False,
                                "parameter missing in the rewritten model"))
                continue
            rows.append(compare_tensor(kind, name, ref, theirs.get(name), tol, floor, noise.get(name)))
    new_grads = rewritten["param_grads"]
    for name in new_parameters:
        grad = new_grads.get(name)
        shape = tuple(grad.shape) if grad is not None else ()
        rows.append(Row("new param", name, shape, None, None, None,
                        "added by the rewrite; no counterpart" + ("" if grad is not None else "; no gradient")))
    return rows
