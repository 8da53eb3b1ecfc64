"""Run a model's traced graph in real candle (crates/candle-port-run) and compare with torch.

``check_in_candle(model, inputs)`` exports the graph (graph_export.py), runs the binary in both
modes (``native``: candle's own pooling/upsampling/fused ops; ``port``: candle-port-ops twins),
and compares each mode's outputs and parameter gradients with torch's on the same weights,
inputs and loss. The binary is found as ``$CANDLE_PORT_RUN``, on PATH, or built with cargo from
this checkout's workspace.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Sequence

from .graph_export import export_graph

BINARY = "candle-port-run"
MODES = ("native", "port")
# candle sums in another order than torch (conv, matmul), so bitwise equality is not expected;
# differences are judged norm-wise per kind, as in compare.py.
CANDLE_RTOL = {"float64": 1e-9, "float32": 1e-4}
RUN_TIMEOUT_S = 1800


class CandleRunError(RuntimeError):
    """The candle side could not be run at all (no cargo, build failed, binary crashed)."""


def _workspace_root() -> Path | None:
    for parent in Path(__file__).resolve().parents:
        if (parent / "crates" / BINARY / "Cargo.toml").exists():
            return parent
    return None


def find_binary(build: bool = True, profile: str = "release") -> Path:
    """``$CANDLE_PORT_RUN``, ``candle-port-run`` on PATH, or ``cargo build`` here (release for
    users; the tests use the dev profile that ``cargo test`` has already built)."""
    if os.environ.get("CANDLE_PORT_RUN"):
        return Path(os.environ["CANDLE_PORT_RUN"])
    on_path = shutil.which(BINARY)
    if on_path:
        return Path(on_path)
    root = _workspace_root()
    if root is None:
        raise CandleRunError(f"{BINARY} is not on PATH and this install has no crates/{BINARY} to build")
    cargo = shutil.which("cargo")
    if cargo is None:
        raise CandleRunError(f"--candle needs cargo to build {BINARY} (or set CANDLE_PORT_RUN to a built binary)")
    target = Path(os.environ.get("CARGO_TARGET_DIR", root / "target"))
    binary = target / ("debug" if profile == "dev" else profile) / BINARY
    if build:
        done = subprocess.run([cargo, "build", "--profile", profile, "--locked", "-p", BINARY], cwd=root,
                              capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise CandleRunError(f"cargo build of {BINARY} failed: {tail}")
    if not binary.exists():
        raise CandleRunError(f"{binary} was not built")
    return binary


def _compare(torch_t: dict, candle_t: dict, rtol: float) -> tuple[list[dict], bool]:
    """Rows per tensor: ``rel_to_scale = max|a - b| / max(max|b|, largest max|b| of its kind)``."""
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
        passed = diff <= rtol * scale
        ok &= passed
        rows.append({"kind": kind, "name": name, "status": "ok" if passed else "differs",
                     "max_abs": diff, "rel_to_scale": diff / scale})
    return rows, ok


def run_mode(binary: Path, export_dir: Path, mode: str, rtol: float) -> dict:
    """One candle run and its comparison with torch."""
    from safetensors.torch import load_file

    done = subprocess.run([str(binary), str(export_dir), "--ops", mode], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return {"mode": mode, "ok": False, "error": tail}
    report = json.loads((export_dir / f"candle-{mode}.json").read_text(encoding="utf-8"))
    reference = load_file(str(export_dir / "torch.safetensors"))
    rows, equal = _compare(reference, load_file(str(export_dir / f"candle-{mode}.safetensors")), rtol)
    failing = [n for n in report["nodes"] if n["status"] not in ("ok", "unused")]
    worst = max((r.get("rel_to_scale", 0.0) for r in rows), default=0.0)
    # a parameter torch gives no gradient either (not on the loss's path) is not missing
    missing = [n for n in report["missing_gradients"] if f"grad.{n}" in reference]
    ran = bool(report["forward_ok"] and report["backward"]["ok"] and not missing
               and all(n["status"] in ("ok", "unused") for n in report["nodes"]))
    return {
        "mode": mode, "ok": bool(ran and equal), "ran": ran, "equal_to_torch": equal,
        "worst_rel_to_scale": worst, "backward": report["backward"],
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
        shape = (node["outputs"][0] or {}).get("shape", []) if node["outputs"] else []
        if name in ("convolution", "_convolution") and len(shape) != 3:
            continue  # only the 1-D convolution's gradient is measured wrong
        suspects.append({"op": node["op"], "location": node["location"], "code": node["code"],
                         "measured": "; ".join(f"{m['probe']}: {m['evidence']}" for m in wrong)})
    return suspects


# ops that port mode runs with a candle-port-ops twin instead of candle's own op
PORT_TWINS = {"max_pool2d", "max_pool2d_with_indices", "max_pool1d", "max_pool1d_with_indices", "avg_pool2d",
              "avg_pool1d", "conv1d", "convolution", "_convolution"}


def check_in_candle(model: Any, inputs: Sequence[Any], seed: int = 0, modes: Sequence[str] = MODES,
                    binary: Path | None = None, keep: Path | None = None) -> dict:
    """Export ``model(*inputs)`` and run it in candle in each mode; JSON-ready result.

    ``ok`` is true when the port mode runs, differentiates every parameter and equals torch within
    ``CANDLE_RTOL``; ``native`` says what a straightforward port gets.
    """
    binary = binary or find_binary()
    dtype = str(next(iter(model.parameters())).dtype).removeprefix("torch.")
    rtol = CANDLE_RTOL.get(dtype, CANDLE_RTOL["float32"])
    with tempfile.TemporaryDirectory(prefix="candle-port-run-") as tmp:
        export_dir = Path(keep) if keep else Path(tmp)
        graph = export_graph(model, inputs, export_dir, seed=seed)
        results = {mode: run_mode(binary, export_dir, mode, rtol) for mode in modes}
    ops = sorted({n["op"] for n in graph["nodes"]})
    final = results.get("port", next(iter(results.values())))
    return {"ok": final["ok"], "rtol": rtol, "dtype": dtype, "ops": ops,
            "reference_fixes": graph.get("reference_fixes", {}), **results}


def summary_lines(result: dict) -> list[str]:
    """One line per mode, then one per failing op with its source line (for the text report)."""
    lines = []
    for mode in MODES:
        r = result.get(mode)
        if r is None:
            continue
        if "error" in r:
            lines.append(f"candle {mode}: could not run: {r['error']}")
            continue
        verdict = "PASS" if r["ok"] else "FAIL"
        lines.append(f"candle {mode}: {verdict} (worst difference {r['worst_rel_to_scale']:.2e} of scale)")
        skipped = [op for op in r["failing_ops"] if op["status"] == "skipped"]
        for op in r["failing_ops"]:
            if op["status"] == "skipped":
                continue
            lines.append(f"  {op['location'] or '?'}: {op['op']}: {op['status']}: {op.get('message') or ''}")
        if skipped:
            lines.append(f"  {len(skipped)} later ops not run (an input failed)")
        if r["missing_gradients"]:
            lines.append(f"  no gradient for: {', '.join(r['missing_gradients'])}")
        for op in r.get("suspects", []):
            lines.append(f"  {op['location'] or '?'}: {op['op']}: gradient measured wrong in candle ({op['measured']})")
    return lines
