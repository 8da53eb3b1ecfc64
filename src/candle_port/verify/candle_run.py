"""Run a model's traced graph in real candle (crates/candle-port-run) and compare with torch.

``check_in_candle(model, inputs)`` exports the graph (graph_export.py), runs the binary in both
modes (``native``: candle's own pooling/upsampling/fused ops; ``port``: candle-port-ops twins),
and compares each mode's outputs and parameter gradients with torch's on the same weights,
inputs and loss. The binary is found or built by candle_binary.py.

The tolerance follows verify's torch comparison (compare.py): the model's own rounding noise is
measured in torch (``measure_noise``: the same forward and backward with inputs and parameters
perturbed by the unit roundoff, or, for a float32 model, run in float64), and each tensor is
allowed ``max(CANDLE_RTOL[dtype], factor * own_noise)`` of its scale. The fixed floor keeps a
noise-free model's bound where it always was; an ill-conditioned model (a BatchNorm over two
values) gets the bound its own rounding calls for. ``--rtol``/``--atol`` replace both.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

from .candle_binary import BINARY, CandleRunError, find_binary  # noqa: F401  (re-exported)
from .compare import NOISE_FACTOR
from .graph_export import export_graph

MODES = ("native", "port")
# candle sums in another order than torch (conv, matmul), so bitwise equality is not expected;
# differences are judged norm-wise per kind, as in compare.py. The floor of the tolerance: a tensor
# is never allowed less than this (of its scale), whatever the measured noise.
CANDLE_RTOL = {"float64": 1e-9, "float32": 1e-4}
RUN_TIMEOUT_S = 1800
MAX_TENSOR_LINES = 5  # differing tensors named per mode in the text report
# Perturbed noise runs, each with its own draw; a tensor's noise is the largest. One draw is not
# enough: in an ill-conditioned model a single rounding decides the size of the noise, and one draw
# may miss it (efficientnet_b0 at 2x3x32x32: blocks.0.0.bn1.weight's gradient 2.3e-11 to 4.5e-9
# over six draws; candle's difference 2.9e-9).
NOISE_DRAWS = 4


@dataclass
class CandleTolerance:
    """How candle's tensors are judged against torch's.

    ``noise``: per tensor ``max(floor, factor * own_noise)`` of its scale, ``own_noise`` the
    original's measured rounding noise for that tensor (``measure_noise``); ``floor``: the fixed
    floor only (no noise could be measured); ``given``: the user's ``atol + rtol * scale``."""

    mode: str  # "noise", "floor" or "given"
    floor: float  # CANDLE_RTOL of the dtype, or the noise runs' perturbation where that is larger
    factor: float = NOISE_FACTOR
    rtol: float = 0.0
    atol: float = 0.0
    method: str = ""  # the noise measurement: "perturbed" or "float64"
    eps: float = 0.0
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _rel(x: float, scale: float) -> float:
    return x / scale if scale > 0 else 0.0


def _judge(rel: float, scale: float, own_noise: float | None, tol: CandleTolerance) -> dict:
    """The allowed difference (of scale) for one tensor, which rule set it, and why."""
    if tol.mode == "given":
        allowed = _rel(tol.atol + tol.rtol * scale, scale)
        return {"allowed": allowed, "judged_by": "given",
                "reason": f"given with --rtol/--atol: {tol.atol:g} + {tol.rtol:g} x scale"}
    if own_noise is None:
        why = tol.note if tol.mode == "floor" else "no noise measured for this tensor"
        return {"allowed": tol.floor, "judged_by": "floor", "reason": f"fixed floor {tol.floor:g} ({why})"}
    by_noise = tol.factor * own_noise
    if by_noise > tol.floor:
        return {"allowed": by_noise, "judged_by": "noise",
                "reason": f"{tol.factor:g} x the original's own noise {own_noise:.1e} (above the floor {tol.floor:g})"}
    return {"allowed": tol.floor, "judged_by": "floor",
            "reason": f"fixed floor {tol.floor:g} ({tol.factor:g} x the original's own noise {own_noise:.1e} is below it)"}


def _compare(torch_t: dict, candle_t: dict, tol: CandleTolerance | float,
             noise: Sequence[dict] = ()) -> tuple[list[dict], bool]:
    """Rows per tensor: ``rel_to_scale = max|a - b| / max(max|b|, largest max|b| of its kind)``,
    ``own_noise = max|b - noisy b| / scale`` over the original's noise runs (``noise``: one dict
    per run, key -> tensor), and
    the ``allowed`` bound with what set it (``judged_by``, ``reason``). A float ``tol`` is a fixed
    relative tolerance (the floor alone)."""
    import torch

    if not isinstance(tol, CandleTolerance):
        tol = CandleTolerance("floor", floor=float(tol), note="fixed")
    largest: dict[str, float] = {}
    for key, ref in torch_t.items():
        kind = key.split(".", 1)[0]
        largest[kind] = max(largest.get(kind, 0.0), float(ref.abs().max()) if ref.numel() else 0.0)
    rows, ok = [], True
    for key, ref in torch_t.items():
        kind, name = key.split(".", 1)
        got = candle_t.get(key)
        if got is None:
            rows.append({"kind": kind, "name": name, "status": "missing"})
            ok = False
            continue
        if tuple(got.shape) != tuple(ref.shape):
            rows.append({"kind": kind, "name": name, "status": f"shape {tuple(got.shape)} != {tuple(ref.shape)}"})
            ok = False
            continue
        diff = float((got.to(ref.dtype) - ref).abs().max()) if ref.numel() else 0.0
        scale = max(float(ref.abs().max()) if ref.numel() else 0.0, largest[kind]) or 1.0
        own_noise = None
        for run in noise:
            noisy = run.get(key)
            if noisy is None or tuple(noisy.shape) != tuple(ref.shape):
                continue
            a, b = ref.to(torch.float64), noisy.to(torch.float64)
            finite = torch.isfinite(a) & torch.isfinite(b)
            delta = (a - b).abs()[finite]
            own_noise = max(own_noise or 0.0, float(delta.max()) / scale if delta.numel() else 0.0)
        rel = diff / scale
        judged = _judge(rel, scale, own_noise, tol)
        passed = diff <= judged["allowed"] * scale
        ok &= passed
        rows.append({"kind": kind, "name": name, "status": "ok" if passed else "differs",
                     "max_abs": diff, "rel_to_scale": rel, "own_noise": own_noise, **judged,
                     "of_allowed": rel / judged["allowed"] if judged["allowed"] > 0 else (0.0 if rel == 0 else float("inf"))})
    return rows, ok


def run_mode(binary: Path, export_dir: Path, mode: str, tol: CandleTolerance | float,
             noise: Sequence[dict] = ()) -> dict:
    """One candle run and its comparison with torch (``tol``, ``noise``: see ``_compare``)."""
    from safetensors.torch import load_file

    done = subprocess.run([str(binary), str(export_dir), "--ops", mode], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return {"mode": mode, "ok": False, "error": tail}
    report = json.loads((export_dir / f"candle-{mode}.json").read_text(encoding="utf-8"))
    reference = load_file(str(export_dir / "torch.safetensors"))
    rows, equal = _compare(reference, load_file(str(export_dir / f"candle-{mode}.safetensors")), tol, noise)
    failing = [n for n in report["nodes"] if n["status"] not in ("ok", "unused")]
    worst = max((r.get("rel_to_scale", 0.0) for r in rows), default=0.0)
    judged = [r for r in rows if "of_allowed" in r]
    closest = max(judged, key=lambda r: r["of_allowed"]) if judged else None
    largest = max(judged, key=lambda r: r["rel_to_scale"]) if judged else None
    fields = ("kind", "name", "rel_to_scale", "own_noise", "allowed", "judged_by", "reason", "of_allowed")
    # a parameter torch gives no gradient either (not on the loss's path) is not missing
    missing = [n for n in report["missing_gradients"] if f"grad.{n}" in reference]
    ran = bool(report["forward_ok"] and report["backward"]["ok"] and not missing
               and all(n["status"] in ("ok", "unused") for n in report["nodes"]))
    return {
        "mode": mode, "ok": bool(ran and equal), "ran": ran, "equal_to_torch": equal,
        "worst_rel_to_scale": worst,
        # the tensor with the largest difference, and the one nearest its own bound
        "worst": None if largest is None else {k: largest[k] for k in fields},
        "closest": None if closest is None else {k: closest[k] for k in fields},
        "backward": report["backward"],
        "missing_gradients": missing, "failing_ops": failing, "tensors": rows,
        "suspects": [] if equal or not ran else wrong_gradient_suspects(export_dir, mode),
        "candle": report["candle"],
    }


def wrong_gradient_suspects(export_dir: Path, mode: str) -> list[dict]:
    """When candle ran but its gradients differ from torch's, the nodes this mode ran with a candle
    op whose gradient the op table measured wrong (max_pool2d with kernel == stride, ...), with
    their source lines: the likely cause, named."""
    from .optable import load_table, normalize

    graph = json.loads((export_dir / "graph.json").read_text(encoding="utf-8"))
    suspects = []
    for node in graph["nodes"]:
        name = normalize(node["op"]) if node["op"].startswith("aten.") else node["op"]
        entry = load_table()["ops"].get(name, {})
        wrong = [m for m in entry.get("measured", []) if m["verdict"] == "wrong-gradient" and m["role"] == "verdict"]
        if not wrong or (mode == "port" and name in PORT_TWINS):
            continue
        shape = _output_shape(node)
        if name in ("convolution", "_convolution") and len(shape) != 3:
            continue  # only the 1-D convolution's gradient is measured wrong
        suspects.append({"op": node["op"], "location": node["location"], "code": node["code"],
                         "measured": "; ".join(f"{m['probe']}: {m['evidence']}" for m in wrong)})
    return suspects


def _output_shape(node: dict) -> list[int]:
    """The shape of a graph node's first output ([] when it has none)."""
    return (node["outputs"][0] or {}).get("shape", []) if node.get("outputs") else []


def mode_difference_suspects(graph: dict) -> list[dict]:
    """When native candle runs with gradients off torch's (or missing) and port mode equals torch, the cause is
    an op the two modes run differently (PORT_TWINS, MODE_DIFFERS): those in the graph, one entry
    per op with its locations and the op table's note (candle's relu'(0) is 1: a zero-initialised
    final BatchNorm in a residual block, as pytorchvideo's and timm's ResNets have, feeds a ReLU
    exact zeros from the previous ReLU)."""
    from .optable import load_table, normalize

    found: dict[str, dict] = {}
    for node in graph["nodes"]:
        name = normalize(node["op"]) if node["op"].startswith("aten.") else node["op"]
        if name not in PORT_TWINS and name not in MODE_DIFFERS:
            continue
        if name in ("convolution", "_convolution") and not _twinned_convolution(node):
            continue
        entry = found.setdefault(node["op"], {"op": node["op"], "locations": [], "code": node["code"],
                                              "measured": _note_of(load_table()["ops"].get(name, {})),
                                              "why": "native and port mode run only these ops differently, "
                                                     "and port mode equals torch"})
        if node["location"] and node["location"] not in entry["locations"]:
            entry["locations"].append(node["location"])
    for entry in found.values():
        entry["location"] = entry["locations"][0] if entry["locations"] else None
    return list(found.values())


def placeholder_shapes(export_dir: Path, graph: dict) -> dict[str, list[int]]:
    """The shape of each placeholder node (parameters, buffers, inputs), read from the export's
    tensor file header."""
    from safetensors import safe_open

    with safe_open(str(export_dir / "tensors.safetensors"), "pt") as tensors:
        stored = {key: list(tensors.get_slice(key).get_shape()) for key in tensors.keys()}
    return {p["node"]: stored[f"{p['kind']}.{p['name']}"] for p in graph.get("placeholders", [])
            if f"{p['kind']}.{p['name']}" in stored}


def forward_suspects(graph: dict, shapes: dict[str, list[int]] | None = None) -> list[dict]:
    """When native candle's outputs differ from torch's: the nodes whose candle forward is measured
    wrong. candle 0.11.0's conv_transpose1d without padding, output_padding or dilation takes its
    CPU col2im path, wrong for batch > 1 with more than one input channel (candle_native.rs,
    `conv_transpose1d_forward_is_wrong_for_batch_above_one_without_padding`; EnCodec's and demucs'
    decoders), one entry with every location. `shapes`: placeholder shapes, for the weight's input
    channels (a weight computed in the graph, as weight norm's, is assumed to have several)."""
    shapes = shapes or {}
    locations: list[str] = []
    code = None
    for node in graph["nodes"]:
        args = node.get("args") or []
        shape = _output_shape(node)
        if not (node["op"].startswith("aten.convolution") and len(args) > 8 and args[6] is True and len(shape) == 3):
            continue
        padding, dilation, output_padding = args[4], args[5], args[7]
        weight = shapes.get(args[1].get("ref", "")) if isinstance(args[1], dict) else None
        channels_in = weight[0] if weight else 2
        if (shape[0] > 1 and channels_in > 1 and list(padding) == [0] and list(dilation) == [1]
                and list(output_padding) == [0]):
            if node["location"] and node["location"] not in locations:
                locations.append(node["location"])
            code = code or node["code"]
    if not locations:
        return []
    return [{"op": "aten.convolution.default (conv_transpose1d)", "locations": locations, "location": locations[0],
             "code": code, "measured": "", "why": "candle 0.11.0's conv_transpose1d forward is wrong for batch > 1 with "
             "more than one input channel when padding, output_padding and dilation are 0, 0 and 1 (measured: "
             "candle_native.rs); port mode runs candle-port-ops' twin"}]


def _note_of(entry: dict) -> str:
    """What the op table says about an op's candle gradient: its warning or its note."""
    return entry.get("warning") or entry.get("note") or ""


def _twinned_convolution(node: dict) -> bool:
    """Whether port mode runs this convolution by a twin (conv.rs `needs_twin`, with 1-D): 1-D and
    3-D convolutions and transposed ones; a plain 2-D convolution is candle's in both modes."""
    shape = _output_shape(node)
    args = node.get("args") or []
    transposed = len(args) > 6 and args[6] is True
    return len(shape) in (3, 5) or transposed


# ops the candle-port-run maps differently in port mode (beside PORT_TWINS): torch's relu'(0),
# composed softmax and gelu, layer_norm (crates/candle-port-run/src/ops/activation.rs, norm.rs).
# `_safe_softmax` is what `F.scaled_dot_product_attention` becomes in the trace (diffusers' attention).
MODE_DIFFERS = {"relu", "gelu", "_softmax", "_safe_softmax", "_log_softmax", "native_layer_norm", "layer_norm"}

# ops that port mode runs with a candle-port-ops twin instead of candle's own op
PORT_TWINS = {"max_pool2d", "max_pool2d_with_indices", "max_pool1d", "max_pool1d_with_indices", "avg_pool2d",
              "avg_pool1d", "conv1d", "convolution", "_convolution"}


def _torch_run(model: Any, inputs: Sequence[Any], upstream: dict, rng_state: Any) -> dict:
    """``output.<i>`` and ``grad.<param>`` of the export's loss ``sum_i sum(output_i * upstream_i)``,
    with the reference's exact backward kernels (graph_export.REFERENCE_FIXES)."""
    import torch

    from .graph_export import _exact_backward_mode, _flat_tensors

    leaves = [x.detach().clone() for x in inputs]
    model.zero_grad(set_to_none=True)
    torch.set_rng_state(rng_state)  # the same random draws as the reference's forward
    outs = _flat_tensors(model(*leaves))
    loss = sum((outs[i] * u.to(outs[i].dtype)).sum() for i, u in upstream.items())
    with _exact_backward_mode(set()):
        loss.backward()
    result = {f"output.{i}": o.detach() for i, o in enumerate(outs) if isinstance(o, torch.Tensor)}
    result.update({f"grad.{n}": p.grad.detach() for n, p in model.named_parameters() if p.grad is not None})
    model.zero_grad(set_to_none=True)
    return result


def measure_noise(model: Any, inputs: Sequence[Any], export_dir: Path, seed: int, rng_state: Any) -> dict:
    """The model's own rounding noise, as verify's reference run measures it (worker.py,
    ``_noise_reference``): float64 models run again with inputs and parameters perturbed by the
    unit roundoff of the least precise dtype the forward computes in (``perturbed``, NOISE_DRAWS
    draws); float32 models run in float64 (``float64``), or perturbed when they do not run in
    float64. Returns ``{"method", "eps", "note", "runs": [{key: tensor}, ...]}``, or
    ``{"method": "none", "error"}``. The model's state (weights, BatchNorm statistics) is restored."""
    import copy

    import torch
    from safetensors.torch import load_file

    from .worker import _lowest_float_dtype, _perturbed

    saved = torch.get_rng_state()
    upstream = {int(k.split(".", 1)[1]): v for k, v in load_file(str(Path(export_dir) / "tensors.safetensors")).items()
                if k.startswith("upstream.")}
    dtype = next(iter(model.parameters())).dtype
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    failed = ""
    try:
        if dtype != torch.float64:
            try:
                wide = copy.deepcopy(model).to(torch.float64)
                run = _torch_run(wide, [x.to(torch.float64) for x in inputs], upstream, rng_state)
                return {"method": "float64", "eps": torch.finfo(torch.float64).eps / 2,
                        "note": "torch against the same model run in float64", "runs": [run]}
            except Exception as exc:  # the model does not run in float64: perturb it in place
                failed = f"; float64 failed: {type(exc).__name__}"
        lowest = _lowest_float_dtype(model, list(inputs))
        model.load_state_dict(state)
        eps = torch.finfo(lowest).eps / 2
        runs = []
        for draw in range(NOISE_DRAWS):
            gen = torch.Generator().manual_seed(seed + 11 + draw)  # draw 0: verify's own perturbation
            with torch.no_grad():
                for p in model.parameters():
                    p.copy_(_perturbed(p, eps, gen))
            runs.append(_torch_run(model, [_perturbed(x, eps, gen) for x in inputs], upstream, rng_state))
            model.load_state_dict(state)
        note = (f"largest of {NOISE_DRAWS} torch runs with inputs and parameters perturbed by {eps:.2g} "
                f"(unit roundoff of {str(lowest).removeprefix('torch.')}){failed}")
        return {"method": "perturbed", "eps": eps, "note": note, "runs": runs}
    except Exception as exc:  # the noise run failed: the fixed floor judges
        text = str(exc).strip()
        return {"method": "none", "error": f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:200]}
    finally:
        model.zero_grad(set_to_none=True)
        model.load_state_dict(state)
        torch.set_rng_state(saved)


def choose_candle_tolerance(dtype: str, noise: dict | None, rtol: float | None = None, atol: float | None = None,
                            factor: float = NOISE_FACTOR) -> CandleTolerance:
    """``given`` when ``rtol``/``atol`` are set, ``noise`` when the noise run worked, else ``floor``."""
    floor = CANDLE_RTOL.get(dtype, CANDLE_RTOL["float32"])
    if rtol is not None or atol is not None:
        return CandleTolerance("given", floor=floor, factor=factor, rtol=rtol or 0.0, atol=atol or 0.0,
                               note="given with --rtol/--atol")
    if not noise or noise.get("method") not in ("perturbed", "float64"):
        why = (noise or {}).get("error") or "not measured"
        return CandleTolerance("floor", floor=floor, factor=factor, note=f"no noise reference: {why}")
    # A forward that computes in a less precise dtype than its parameters (SAM 2's FPN interpolates
    # in float32 inside a float64 model) resolves nothing below that dtype's unit roundoff, also
    # where a gradient does not move under the perturbation (a linear path: own noise 0).
    return CandleTolerance("noise", floor=max(floor, noise["eps"]), factor=factor, method=noise["method"],
                           eps=noise["eps"], note=noise["note"])


def check_in_candle(model: Any, inputs: Sequence[Any], seed: int = 0, modes: Sequence[str] = MODES,
                    binary: Path | None = None, keep: Path | None = None, rtol: float | None = None,
                    atol: float | None = None, factor: float = NOISE_FACTOR) -> dict:
    """Export ``model(*inputs)`` and run it in candle in each mode; JSON-ready result.

    ``ok`` is true when the port mode runs, differentiates every parameter and equals torch within
    the tolerance (``tolerance``: per tensor ``max(CANDLE_RTOL, factor * the model's own noise)``,
    or the given ``rtol``/``atol``); ``native`` says what a straightforward port gets.
    """
    import torch

    binary = binary or find_binary()
    dtype = str(next(iter(model.parameters())).dtype).removeprefix("torch.")
    with tempfile.TemporaryDirectory(prefix="candle-port-run-") as tmp:
        export_dir = Path(keep) if keep else Path(tmp)
        rng_state = torch.get_rng_state()
        graph = export_graph(model, inputs, export_dir, seed=seed)
        noise = None if rtol is not None or atol is not None else measure_noise(model, inputs, export_dir, seed, rng_state)
        tol = choose_candle_tolerance(dtype, noise, rtol, atol, factor)
        runs = (noise or {}).get("runs", [])
        results = {mode: run_mode(binary, export_dir, mode, tol, runs) for mode in modes}
        shapes = placeholder_shapes(export_dir, graph)
    native, port = results.get("native"), results.get("port")
    # native ran every op but its gradients differ or are missing (a fused softmax cuts them),
    # with no op measured wrong, while port mode equals torch: name the ops the modes run differently
    if (native and port and port["ok"] and not native["ok"] and "error" not in native
            and native["backward"]["ok"] and not native["failing_ops"] and not native["suspects"]):
        native["suspects"] = mode_difference_suspects(graph)
    if native and "error" not in native and any(t["kind"] == "output" and t["status"] != "ok" for t in native["tensors"]):
        native["suspects"] = forward_suspects(graph, shapes) + native["suspects"]
    ops = sorted({n["op"] for n in graph["nodes"]})
    final = results.get("port", next(iter(results.values())))
    return {"ok": final["ok"], "rtol": tol.floor, "tolerance": tol.to_json(), "dtype": dtype, "ops": ops,
            "reference_fixes": graph.get("reference_fixes", {}), "gradients_off": graph.get("gradients_off", []),
            **results}


def tolerance_line(result: dict) -> str:
    """How the tensors were judged (for the text report)."""
    tol = result.get("tolerance")
    if not tol:
        return f"tolerance: rtol {result.get('rtol', 0):g} of scale"
    if tol["mode"] == "given":
        return f"tolerance: atol {tol['atol']:g} + rtol {tol['rtol']:g} x scale (given with --rtol/--atol)"
    if tol["mode"] == "floor":
        return f"tolerance: fixed {tol['floor']:g} of scale ({tol['note']})"
    return (f"tolerance per tensor: max({tol['floor']:g}, {tol['factor']:g} x the original's own noise) of scale; "
            f"noise: {tol['note']}")


def summary_lines(result: dict) -> list[str]:
    """One line per mode, then one per failing op with its source line (for the text report)."""
    lines = [tolerance_line(result)] if any(m in result for m in MODES) else []
    if result.get("gradients_off"):
        lines.append(f"note: the forward turns gradients off (torch.no_grad) at {', '.join(result['gradients_off'][:3])}; "
                     "the traced graph keeps no grad mode, so candle differentiates through that part and its "
                     "gradients upstream of it are not torch's (spectral norm's power iteration: --eval skips it)")
    for mode in MODES:
        r = result.get(mode)
        if r is None:
            continue
        if "error" in r:
            lines.append(f"candle {mode}: could not run: {r['error']}")
            continue
        verdict = "PASS" if r["ok"] else "FAIL"
        worst, close = r.get("worst"), r.get("closest")
        where = ""
        if worst and worst["rel_to_scale"] > 0:
            where = (f", {worst['kind']}.{worst['name']}; allowed there {worst['allowed']:.2e}: {worst['reason']}")
        missing = sum(1 for t in r["tensors"] if t["status"] == "missing")
        # a run whose only failure is gradients candle never computed says so, not "worst difference 0"
        absent = f"{missing} of {len(r['tensors'])} tensors missing (candle computed no gradient); among the rest, " if missing else ""
        lines.append(f"candle {mode}: {verdict} ({absent}worst difference {r['worst_rel_to_scale']:.2e} of scale{where})")
        differing = [t for t in r["tensors"] if t["status"] != "ok"]
        for t in differing[:MAX_TENSOR_LINES]:
            if "allowed" in t:
                lines.append(f"  {t['kind']}.{t['name']}: {t['rel_to_scale']:.2e} of scale > allowed {t['allowed']:.2e}: "
                             f"{t['reason']}")
            else:
                lines.append(f"  {t['kind']}.{t['name']}: {t['status']}")
        if len(differing) > MAX_TENSOR_LINES:
            lines.append(f"  ... and {len(differing) - MAX_TENSOR_LINES} more tensors differ")
        if not differing and close and close["rel_to_scale"] > 0 and worst and close["name"] != worst["name"]:
            lines.append(f"  closest to its bound: {close['kind']}.{close['name']} {close['rel_to_scale']:.2e} of scale, "
                         f"allowed {close['allowed']:.2e}: {close['reason']}")
        skipped = [op for op in r["failing_ops"] if op["status"] == "skipped"]
        failing: dict[str, int] = {}  # one line per distinct failure (a layer called in a loop fails once per call)
        for op in r["failing_ops"]:
            if op["status"] != "skipped":
                line = f"  {op['location'] or '?'}: {op['op']}: {op['status']}: {op.get('message') or ''}"
                failing[line] = failing.get(line, 0) + 1
        lines += [line + (f" (x{count})" if count > 1 else "") for line, count in failing.items()]
        if skipped:
            lines.append(f"  {len(skipped)} later ops not run (an input failed)")
        backward = r.get("backward") or {}
        if backward.get("ran") and not backward.get("ok") and not backward.get("nodes"):  # not pinned on a node above
            lines.append(f"  backward stopped: {backward.get('message') or '?'}")
        if r["missing_gradients"]:
            lines.append(f"  no gradient for: {', '.join(r['missing_gradients'])}")
        for op in r.get("suspects", []):
            if "why" in op:  # an op the two modes run differently
                more = len(op["locations"]) - 1
                where = (op["location"] or "?") + (f" (and {more} more)" if more > 0 else "")
                lines.append(f"  {where}: {op['op']}: suspect: {op['why']}" + (f" ({op['measured']})" if op["measured"] else ""))
                continue
            lines.append(f"  {op['location'] or '?'}: {op['op']}: gradient measured wrong in candle ({op['measured']})")
    return lines
