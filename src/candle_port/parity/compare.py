"""`candle-port compare`: the candle side of a parity directory judged against the torch side.

Each tensor is judged on its own scale, ``scale = max(max|torch|, floor)`` (the floor, 1e-3 of
the largest tensor of its kind, keeps a gradient that is analytically zero from failing on its
rounding alone), against torch's own rounding noise measured by `reference`:
``max|candle - torch| / scale <= max(factor * noise / scale, floor)``, the floor 1e-9 in float64
and ``factor`` unit roundoffs in float32 (FLOOR). ``--rtol``/``--atol``
replace that by ``max|candle - torch| <= atol + rtol * scale``.

The first divergence is the first module, in the order torch's modules finished, whose recorded
output fails; when the forward agrees and gradients do not, the backward goes wrong in the last
module (in that order) with a failing gradient: everything after it agrees.
"""

from __future__ import annotations

import json
import itertools
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from candle_port.parity import FORMAT, tensor_files
from candle_port.parity.renames import suggest

NOISE_FACTOR = 50.0
UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float64": 2.0 ** -53, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
SCALE_FLOOR = 1e-3  # of the largest max|torch| of the same kind
# The least a tensor may differ by, of its scale: two correct implementations round differently
# (another summation order, layer_norm's mean taken apart), which a noise measured on torch alone
# need not show. float64: 1e-9, far below any real defect (the planted ones are 1e-3 and more);
# float32 and narrower: NOISE_FACTOR unit roundoffs.
FLOOR = {"float64": 1e-9}
LOSS_RTOL = {"float32": 1e-4, "float64": 1e-9, "float16": 1e-2, "bfloat16": 1e-1}


class CompareError(Exception):
    """A parity directory that cannot be compared (exit code 2)."""


@dataclass
class Judged:
    name: str
    kind: str  # output, module, grad
    status: str  # match, DIFFERS, missing, shape, no-gradient
    rel: float = 0.0  # max|candle - torch| / scale
    allowed: float = 0.0
    shape: list = field(default_factory=list)
    candle_shape: list = field(default_factory=list)
    layout: str = ""  # the order of candle's dims that matched torch's layout, e.g. "(0, 2, 3, 1)"
    module_class: str = ""
    source: str = ""


@dataclass
class Comparison:
    directory: str
    dtype: str
    mode: str
    model: str
    verdict: str = "match"  # match, DIVERGES, error
    first_divergence: dict | None = None
    backward_divergence: dict | None = None
    build_error: str | None = None
    forward_error: str | None = None
    backward_error: str | None = None
    outputs: list = field(default_factory=list)
    modules: list = field(default_factory=list)
    gradients: list = field(default_factory=list)
    without_gradient: list = field(default_factory=list)
    gradient_hint: str | None = None
    never_loaded: list = field(default_factory=list)
    unknown_to_torch: list = field(default_factory=list)
    tried_absent: list = field(default_factory=list)  # optional names the port tried and built without
    shape_mismatches: list = field(default_factory=list)
    dtype_mismatches: list = field(default_factory=list)
    suggested_renames: list = field(default_factory=list)
    losses: dict | None = None
    tolerance: dict = field(default_factory=dict)
    not_recorded: int = 0
    # Modules that differ inside an enclosing module that agrees: the port draws the module's
    # boundary elsewhere (an activation applied after it, not in it), or the enclosing module
    # damps the difference below its tolerance (a layer scale). compare cannot tell which.
    boundaries: list = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return {"match": 0, "DIVERGES": 1}.get(self.verdict, 2)

    def to_json(self) -> dict:
        data = asdict(self)
        data["exit_code"] = self.exit_code
        return data


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        hint = ("write it with `candle-port reference MODEL --out DIR`" if path.name == "manifest.json"
                else "run the port's parity check (candle_port_parity::Parity::check) on this directory first")
        raise CompareError(f"{path}: missing ({hint})") from None
    except (OSError, ValueError) as exc:
        raise CompareError(f"{path}: {exc}") from None


def _tensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        return tensor_files.read(path)
    except FileNotFoundError:
        raise CompareError(f"{path}: missing") from None
    except tensor_files.TensorFileError as exc:
        raise CompareError(str(exc)) from None


def _diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """max|a - b|; NaN and infinities count as equal only where both sides have the same one,
    else the difference is infinite. One pass in the tensors' own dtype when all is finite (a
    float32 difference is within one rounding of the exact one), masks only when it is not."""
    if a.dtype != b.dtype:
        a, b = a.to(torch.float64), b.to(torch.float64)
    if not a.numel():
        return 0.0
    d = float((a - b).abs().max())
    if math.isfinite(d):
        return d
    a64, b64 = a.to(torch.float64), b.to(torch.float64)
    same = (torch.isnan(a64) & torch.isnan(b64)) | (torch.isinf(a64) & (a64 == b64))
    d64 = torch.where(same, torch.zeros_like(a64), (a64 - b64).abs())
    d64 = torch.where(torch.isnan(d64), torch.full_like(d64, math.inf), d64)
    return float(d64.max())


# Activations a port may apply after a module where torch's module applies it inside.
ACTIVATIONS = {"relu": torch.relu, "gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu,
               "hardswish": torch.nn.functional.hardswish, "relu6": torch.nn.functional.relu6}


def _activation_between(candle_t: torch.Tensor | None, torch_t: torch.Tensor, allowed: float) -> str:
    """The activation `act` with `torch's = act(candle's)` within the row's tolerance, if one is:
    the port applies it after this module, torch's module inside. "" when none fits."""
    if candle_t is None or candle_t.numel() != torch_t.numel() or not torch_t.is_floating_point():
        return ""
    candle_t = candle_t.reshape(torch_t.shape).to(torch_t.dtype)
    scale = max(_max_abs(torch_t), 1e-300)
    for name, act in ACTIVATIONS.items():
        if _diff(act(candle_t), torch_t) / scale <= max(allowed, 1e-6):
            return name
    return ""


MAX_PERMUTED_RANK = 5  # 120 orders at most


def _best_layout(candle_t: torch.Tensor, torch_t: torch.Tensor) -> tuple[float, str]:
    """The smallest max|candle - torch| over the orders of candle's dims, each then reshaped to
    torch's shape (the plain reshape first: a tie keeps it), and the order that gave it
    ("" for the plain reshape)."""
    best, layout = _diff(candle_t.reshape(torch_t.shape), torch_t), ""
    if best == 0.0 or candle_t.dim() > MAX_PERMUTED_RANK:
        return best, layout
    for order in itertools.permutations(range(candle_t.dim())):
        if order == tuple(range(candle_t.dim())):
            continue
        d = _diff(candle_t.permute(order).reshape(torch_t.shape), torch_t)
        if d < best:
            best, layout = d, str(order)
    return best, layout


def _max_abs(t: torch.Tensor) -> float:
    """max|t| over its finite values."""
    if not t.numel():
        return 0.0
    m = float(t.abs().max())
    if math.isfinite(m):
        return m
    finite = t[torch.isfinite(t)]
    return float(finite.abs().max()) if finite.numel() else 0.0


class _Judge:
    def __init__(self, dtype: str, noise: dict, factor: float, rtol: float | None, atol: float | None):
        self.floor = FLOOR.get(dtype, factor * UNIT_ROUNDOFF.get(dtype, 2.0 ** -24))
        self.noise, self.factor, self.rtol, self.atol = noise, factor, rtol, atol

    def __call__(self, key: str, name: str, kind: str, torch_t: torch.Tensor, candle_t: torch.Tensor | None, floor: float) -> Judged:
        row = Judged(name=name, kind=kind, status="match", shape=list(torch_t.shape))
        if candle_t is None:
            row.status = "missing"
            return row
        row.candle_shape = list(candle_t.shape)
        scale = max(_max_abs(torch_t), floor, 1e-300)
        if tuple(candle_t.shape) != tuple(torch_t.shape):
            if candle_t.numel() != torch_t.numel():
                row.status = "shape"
                return row
            # A port that flattens differently is judged by values; one that keeps another
            # layout (a module returning (B, C, H, W) where torch's returns (B, H*W, C)) by the
            # order of its dims that agrees best.
            diff, row.layout = _best_layout(candle_t, torch_t)
        else:
            diff = _diff(candle_t, torch_t)
        row.rel = diff / scale
        if self.rtol is not None or self.atol is not None:
            row.allowed = ((self.atol or 0.0) + (self.rtol or 0.0) * scale) / scale
        else:
            row.allowed = max(self.factor * self.noise.get(key, 0.0) / scale, self.floor)
        if not row.rel <= row.allowed:
            row.status = "DIFFERS"
        return row


def _floor(tensors: list[torch.Tensor]) -> float:
    return SCALE_FLOOR * max((_max_abs(t) for t in tensors), default=0.0)


def _module_of(parameter: str) -> str:
    return parameter.rsplit(".", 1)[0] if "." in parameter else ""


def _shape_guess(torch_shape: list, port_shape: list) -> str:
    if len(torch_shape) == 2 and list(reversed(torch_shape)) == list(port_shape):
        return "transposed"
    if sorted(torch_shape) == sorted(port_shape):
        return "permuted (e.g. OIHW vs HWIO)"
    if math.prod(torch_shape) == math.prod(port_shape):
        return "reshaped"
    return "different size"


def compare(directory: Path, factor: float = NOISE_FACTOR, rtol: float | None = None,
            atol: float | None = None) -> Comparison:
    manifest = _read_json(directory / "manifest.json")
    if manifest.get("format") != FORMAT:
        raise CompareError(f"{directory / 'manifest.json'}: format {manifest.get('format')!r}, expected {FORMAT!r}")
    side = _read_json(directory / "candle.json")
    torch_side = _tensors(directory / "torch.safetensors")
    candle = _tensors(directory / "candle.safetensors")
    dtype = manifest["dtype"]
    result = Comparison(directory=str(directory), dtype=dtype, mode=manifest.get("mode", ""), model=manifest.get("model", ""))
    result.tolerance = ({"mode": "fixed", "rtol": rtol or 0.0, "atol": atol or 0.0} if rtol is not None or atol is not None
                        else {"mode": "noise", "factor": factor, "method": manifest.get("noise_method", ""),
                              "floor": FLOOR.get(dtype, factor * UNIT_ROUNDOFF.get(dtype, 2.0 ** -24))})
    judge = _Judge(dtype, manifest.get("noise") or {}, factor, rtol, atol)
    result.build_error = side.get("build_error")
    result.forward_error = side.get("forward_error")
    result.backward_error = side.get("backward_error")

    # Weights: what the port asked its VarBuilder for, against torch's state_dict.
    shapes = manifest.get("shapes", {})
    requests = side.get("requests", [])
    asked = {r["torch_name"] for r in requests if r["status"] != "absent"}
    for r in requests:
        if r["status"] == "absent" and result.build_error and r is requests[-1]:
            result.unknown_to_torch.append({"name": r["name"], "torch_name": r["torch_name"], "shape": r["shape"]})
        elif r["status"] == "absent":
            result.tried_absent.append(r["name"])
        elif r["status"] == "missing":
            result.unknown_to_torch.append({"name": r["name"], "torch_name": r["torch_name"], "shape": r["shape"]})
        elif r["status"] == "shape_mismatch":
            result.shape_mismatches.append({"name": r["name"], "torch_name": r["torch_name"], "port_shape": r["shape"],
                                            "torch_shape": r["torch_shape"], "looks": _shape_guess(r["torch_shape"], r["shape"])})
    result.never_loaded = [n for n in shapes if n not in asked and not n.endswith("num_batches_tracked")]
    if side.get("dtype") and side["dtype"] != dtype:
        result.dtype_mismatches.append({"torch": dtype, "port": side["dtype"]})
    if result.unknown_to_torch and len(result.unknown_to_torch) * 2 >= max(1, len(requests)):
        result.suggested_renames = suggest([(u["name"], tuple(u["shape"])) for u in result.unknown_to_torch],
                                           [(n, tuple(shapes[n])) for n in result.never_loaded])

    # Forward: outputs, then each recorded module in the order torch's modules finished.
    out_floor = _floor([torch_side[n] for n in manifest["outputs"] if n in torch_side])
    for name in manifest["outputs"] if not result.build_error else []:
        result.outputs.append(judge(name, name, "output", torch_side[name], candle.get(name), out_floor))
    modules = manifest.get("modules", [])
    module_tensors = [torch_side[f"module:{m['name']}"] for m in modules if f"module:{m['name']}" in torch_side]
    mod_floor = 0.0 if not module_tensors else SCALE_FLOOR * max(_max_abs(t) for t in module_tensors) * 1e-3
    for m in modules:
        key = f"module:{m['name']}"
        if key not in candle:
            result.not_recorded += 1
            continue
        row = judge(key, m["name"], "module", torch_side[key], candle[key], mod_floor)
        row.module_class, row.source = m.get("class", ""), m.get("source", "")
        result.modules.append(row)
    agreeing = {r.name.split("#")[0] for r in result.modules if r.status == "match"}

    def agreeing_ancestor(name: str) -> str:
        module = _module_of(name.split("#")[0])
        while module and module not in agreeing:
            module = _module_of(module)
        return module

    failing = [r for r in result.modules if r.status != "match"]
    inside = {}
    for r in failing:
        ancestor = agreeing_ancestor(r.name)
        if ancestor:
            inside[r.name] = ancestor
            key = f"module:{r.name}"
            activation = _activation_between(candle.get(key), torch_side[key], r.allowed)
            result.boundaries.append({"module": r.name, "inside": ancestor, "activation_after": activation})
            if activation:  # torch's = act(candle's): a boundary drawn elsewhere, not a divergence
                r.status = "boundary"
    failing = [r for r in failing if r.status != "boundary"]
    if failing:
        # A divergence that reaches its enclosing module's output first; else the first one.
        first = next((r for r in failing if r.name not in inside), failing[0])
        result.first_divergence = {"module": first.name, "class": first.module_class, "source": first.source,
                                   "rel": first.rel, "allowed": first.allowed, "status": first.status,
                                   "inside_agreeing": inside.get(first.name, "")}

    # Backward: every parameter torch has a gradient for.
    order = {name: i for i, name in enumerate(manifest.get("parameters", []))}
    grads = sorted((k for k in torch_side if k.startswith("grad:")), key=lambda k: order.get(k[5:], len(order)))
    grad_floor = _floor([torch_side[k] for k in grads])
    without = set(side.get("without_gradient", []))
    for key in grads:
        name = key[len("grad:"):]
        if name in without:
            result.gradients.append(Judged(name=name, kind="grad", status="no-gradient", shape=list(torch_side[key].shape)))
        elif result.backward_error or result.forward_error or result.build_error:
            continue
        elif key not in candle and name not in asked:
            continue  # never loaded: listed under never_loaded
        else:
            result.gradients.append(judge(key, name, "grad", torch_side[key], candle.get(key), grad_floor))
    result.without_gradient = sorted(without)
    result.gradient_hint = side.get("hint")
    bad_grads = [g for g in result.gradients if g.status != "match"]
    # The backward is located when the forward agrees, modules that differ only inside agreeing
    # ones aside (their difference does not reach the model's output).
    propagating = [r for r in failing if r.name not in inside]
    if bad_grads and not propagating and all(r.status == "match" for r in result.outputs):
        order = {m["name"].split("#")[0]: i for i, m in enumerate(modules)}

        def position(param: str) -> int:
            module = _module_of(param)
            while module and module not in order:
                module = _module_of(module)
            return order.get(module, -1)

        last = max(bad_grads, key=lambda g: position(g.name))
        module = _module_of(last.name)
        at = position(last.name)
        info = modules[at] if at >= 0 else {}
        # What runs after it before the next module whose gradients agree: a parameterless op
        # there (a pool, a resize) may be the one whose backward is wrong.
        with_params = {_module_of(g.name) for g in result.gradients}
        between = []
        for m in modules[at + 1:] if at >= 0 else []:
            name = m["name"].split("#")[0]
            if module.startswith(name + ".") or name == module:
                continue  # a container of the module itself
            if name in with_params:
                break
            between.append(f"{m['name']} ({m.get('class', '')})")
        result.backward_divergence = {"module": module, "class": info.get("class", ""), "source": info.get("source", ""),
                                      "parameter": last.name, "status": last.status, "then": between}

    # Loss curves.
    steps = manifest.get("steps") or None
    if steps:
        torch_losses, candle_losses = steps.get("losses", []), side.get("losses", [])
        tol = LOSS_RTOL.get(dtype, 1e-4) if rtol is None else rtol
        rows = []
        for i, t in enumerate(torch_losses):
            c = candle_losses[i] if i < len(candle_losses) else None
            rel = abs(c - t) / max(abs(t), 1e-30) if c is not None else math.inf
            rows.append({"step": i, "torch": t, "candle": c, "rel": rel, "ok": rel <= tol})
        result.losses = {"optimizer": steps["optimizer"], "lr": steps["lr"], "rtol": tol, "steps": rows,
                         "follows": all(r["ok"] for r in rows)}

    diverges = (result.build_error or result.forward_error or result.backward_error or failing or bad_grads
                or any(r.status != "match" for r in result.outputs) or result.shape_mismatches
                or result.unknown_to_torch or result.dtype_mismatches
                or (result.losses is not None and not result.losses["follows"]))
    result.verdict = "DIVERGES" if diverges else "match"
    return result
