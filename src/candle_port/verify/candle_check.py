"""``candle-port verify MODEL ... --candle``: the user's model, run in real candle, before and after
port-fix.

Builds the original model with verify's seed rules (the same init, inputs and dtype as the
original worker), exports its traced graph and runs it through candle-port-run in both modes
(candle_run.py). Native mode shows which op a straightforward port cannot train, at which source
line; port mode shows whether candle-port-ops' twins fix it. Then the same for the rewritten copy
(what port-fix produced, built in a child process that imports the model from the copy, as
verify's rewritten worker does): there, native candle ops are expected to pass.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .candle_run import CandleRunError, check_in_candle, summary_lines
from .compare import NOISE_FACTOR
from .spec import parse_model_spec

CHILD_TIMEOUT_S = 3600


def _build(job: dict):
    import torch

    from .worker import _config_args, _load_target, with_forward_kwargs

    _, factory = _load_target(job)  # as verify's workers import it: source root, skipped package inits
    args = _config_args(job)  # --config-class: MODEL(ConfigClass(**config_kwargs), ...)
    dtype = getattr(torch, job["dtype"])
    torch.manual_seed(job["seed"])
    model = factory(*args, **job["init_kwargs"]).to(dtype)
    model = with_forward_kwargs(model, job.get("forward_kwargs") or {})
    model.train(job["train"])
    gen = torch.Generator().manual_seed(job["seed"] + 1)
    inputs = [torch.randn(s, dtype=dtype, generator=gen) for s in job["input_shapes"]]
    return model, inputs


def _target(options: Any) -> tuple[Any, Any]:
    """(MODEL's spec, the source root): what the job imports, and the tree a driver imports and
    the rewritten copy is made from."""
    from .spec import resolve_source_root

    spec = parse_model_spec(options.model, options.cwd)
    return spec, resolve_source_root(spec, options.source_root)


def _job(options: Any, target: tuple[Any, Any] | None = None) -> dict:
    spec, source = target or _target(options)
    roots = sorted(source.modules)
    return {"module": spec.module, "attr": spec.attr, "import_root": str(spec.import_root),
            "init_kwargs": options.init_kwargs, "input_shapes": [list(s) for s in options.input_shapes],
            "dtype": options.dtype, "seed": options.seed, "train": options.train,
            # the tolerance: verify's --rtol/--atol and --noise-factor judge candle's numbers too
            "rtol": options.rtol, "atol": options.atol, "noise_factor": options.noise_factor,
            "skip_package_init": options.skip_package_init, "package_roots": roots,
            "forward_kwargs": options.forward_kwargs,
            "config_class": options.config_class, "config_kwargs": options.config_kwargs}


def _check(model: Any, inputs: list, job: dict) -> dict:
    from .worker import runtime_composition

    with runtime_composition():  # what torch's side runs is the runtime's composition, as candle's
        return check_in_candle(model, inputs, seed=job["seed"], rtol=job.get("rtol"), atol=job.get("atol"),
                               factor=job.get("noise_factor") or NOISE_FACTOR)


def _guarded(run, train: bool = False) -> dict:
    try:
        return run()
    except CandleRunError as exc:
        return {"ok": False, "error": str(exc)}
    except Exception as exc:  # the user's model failing to build or trace is a result, not a crash
        from .trace import model_line

        text = str(exc).strip()
        error = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
        where = model_line(exc)
        if "_local_scalar_dense" in text or "data-dependent" in text:
            # make_fx's own words name its internals; say what the torch side's trace says
            error = (f"the forward branches on a tensor's value at {where or '?'}, which make_fx cannot follow "
                     "(data-dependent control flow)")
            return {"ok": False, "error": error + ("; --eval traces it if that branch is for training only"
                                                    if train else "")}
        if where:
            error += f" (at {where})"
        if train and "requires_grad" in text:
            # make_fx's functionalization refuses a tensor made to require a gradient inside the
            # forward (transformers' DETR-style decoders do it in training only)
            error += "; --eval traces it if that line runs in training only"
        return {"ok": False, "error": error}


def _check_converted(job: dict) -> dict:
    """--strategy convert: the built model with runtime.convert's layers, traced under
    runtime.routed() (functional calls to the runtime), as verify's rewritten worker runs it."""
    from candle_port.runtime import convert, routed

    model, inputs = _build(job)
    with routed():
        return dict(_check(convert(model), inputs, job), changed=True, label="converted model (runtime.convert)")


def _check_rewritten(options: Any, job: dict, source: Any) -> dict:
    from .lines import map_result_locations
    from .runner import rewrite_entries
    from .workspace import make_rewritten_copy

    spec = parse_model_spec(options.model, options.cwd)
    with tempfile.TemporaryDirectory(prefix="candle-port-candle-") as tmp:
        rewritten = make_rewritten_copy(source, Path(tmp) / "rewritten", options.strategy,
                                        entries=rewrite_entries(options, spec, source))
        if not rewritten.changed:
            return {"ok": True, "changed": False, "note": "port-fix changed nothing: the original is the rewritten copy"}
        path = Path(tmp) / "job.json"
        path.write_text(json.dumps(dict(job, redirects=rewritten.modules)), encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "candle_port.verify.candle_check", str(path)],
                              capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            return {"ok": False, "error": f"the rewritten copy could not be run in candle: {tail}"}
        result = json.loads(done.stdout)
        # While the copy exists: its lines, mapped back to the user's files (as verify's graphs).
        map_result_locations(result, rewritten.root / source.path.name, source.path)
    return dict(result, changed=True)


def candle_check(options: Any, stage: Any = None) -> dict:
    """JSON-ready candle result for ``options`` (a VerifyOptions): the original's (top level, as
    before) and the rewritten copy's (``rewritten``). ``ok`` when port mode passes on both; ``ok``
    false with ``error`` when candle could not be run at all (no cargo, build failure,
    untraceable model). ``stage`` announces each long step (runner.Stage)."""
    from .runner import no_stage

    stage = stage or no_stage
    target = _target(options)  # resolved once: the job's package roots and the rewritten copy's tree
    job = _job(options, target)

    def original() -> dict:
        model, inputs = _build(job)
        return _check(model, inputs, job)

    with stage("running the original model in candle (trace, then native and port ops)"):
        result = _guarded(original, job["train"])
    if "port" not in result:
        return result
    rewritten = _check_converted if options.strategy == "convert" else (lambda job: _check_rewritten(options, job, target[1]))
    with stage("running the rewritten copy in candle (trace, then native and port ops)"):
        result["rewritten"] = _guarded(lambda: rewritten(job), job["train"])
    result["original_ok"] = result["ok"]
    result["ok"] = bool(result["ok"] and result["rewritten"].get("ok", False))
    return result


def candle_text(result: dict) -> str:
    """The text block printed after verify's tables."""
    if "error" in result and "port" not in result:
        return f"candle: could not run: {result['error']}"
    lines = ["candle, original model:"] + summary_lines(result)
    rewritten = result.get("rewritten")
    if rewritten is not None:
        if "port" in rewritten:
            lines += [f"candle, {rewritten.get('label', 'rewritten copy (port-fix)')}:"] + summary_lines(rewritten)
        else:
            lines.append(f"candle, rewritten copy: {rewritten.get('note') or 'could not run: ' + str(rewritten.get('error'))}")
    return "\n".join(lines)


def _child(job_path: str) -> None:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    model, inputs = _build(job)
    print(json.dumps(_check(model, inputs, job)))


if __name__ == "__main__":
    _child(sys.argv[1])
