"""`candle-port reference`: the torch side of a parity directory.

The model is built as `verify` builds it (same MODEL spec and flags), then run once with a
forward hook on every named submodule: the outputs, each submodule's output in the order the
modules finish, and every parameter's gradient of ``sum(output * upstream)`` for a fixed upstream.
Each tensor's own rounding noise is measured as verify measures it (a float32 run against the
same model in float64; a float64 run against one with inputs and parameters perturbed by the
unit roundoff), so `compare` judges a port by the noise torch itself has there.
"""

from __future__ import annotations

import copy
import inspect
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from candle_port.parity import FORMAT, tensor_files

OPTIMIZERS = ("sgd", "adamw")


class ReferenceError(Exception):
    """The model could not be built, loaded or run (exit code 2)."""


@dataclass
class ReferenceOptions:
    model: str
    input_shapes: list[tuple[int, ...]]
    out: Path
    init_kwargs: dict = field(default_factory=dict)
    config_class: str | None = None
    config_kwargs: dict = field(default_factory=dict)
    forward_kwargs: dict = field(default_factory=dict)
    dtype: str = "float32"
    seed: int = 0
    train: bool = True
    source_root: str | None = None
    skip_package_init: bool = False
    weights: Path | None = None
    steps: int = 0
    optimizer: str = "sgd"
    lr: float = 1e-3
    weight_decay: float = 0.01
    renames: list[tuple[str, str]] = field(default_factory=list)
    noise: bool = True


def _job(options: ReferenceOptions) -> dict:
    from candle_port.verify.spec import parse_model_spec, resolve_source_root

    spec = parse_model_spec(options.model)
    source = resolve_source_root(spec, options.source_root)
    return {
        "module": spec.module, "attr": spec.attr, "import_root": str(spec.import_root),
        "init_kwargs": options.init_kwargs, "dtype": options.dtype, "seed": options.seed,
        "train": options.train, "config_class": options.config_class, "config_kwargs": options.config_kwargs,
        "skip_package_init": options.skip_package_init, "package_roots": sorted(source.modules),
        "forward_kwargs": options.forward_kwargs,
    }


def build_model(options: ReferenceOptions) -> torch.nn.Module:
    from candle_port.verify.spec import SpecError
    from candle_port.verify.worker import WorkerError, _build

    try:
        _, model = _build(_job(options))
    except (SpecError, WorkerError) as exc:
        raise ReferenceError(str(exc)) from None
    if options.weights is not None:
        load_weights(model, options.weights)
    return model


def load_weights(model: torch.nn.Module, path: Path) -> None:
    """A state dict (torch.save) or a safetensors file, loaded into `model`; names that match
    nothing are an error, partial matches are loaded and the rest left at their init."""
    try:
        if path.suffix == ".safetensors":
            state = tensor_files.read(path)
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, ValueError) as exc:
        raise ReferenceError(f"--weights {path}: {exc}") from None
    for key in ("state_dict", "model", "model_state_dict"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    if not isinstance(state, dict):
        raise ReferenceError(f"--weights {path}: not a state dict")
    own = model.state_dict()
    matched = [k for k in state if k in own]
    if not matched:
        raise ReferenceError(f"--weights {path}: none of its {len(state)} names is a name of the model's state_dict "
                             f"(the file's first: {next(iter(state), '-')}, the model's: {next(iter(own), '-')})")
    dtype = next((p.dtype for p in model.parameters()), torch.float32)
    model.load_state_dict({k: (v.to(dtype) if v.is_floating_point() else v) for k, v in state.items() if k in own}, strict=False)


def _source(module: torch.nn.Module) -> str:
    cls = type(module)
    try:
        file = inspect.getsourcefile(cls) or ""
        line = inspect.getsourcelines(cls)[1]
    except (OSError, TypeError):
        return ""
    return f"{file}:{line}"


def _leaves(value: Any) -> list[torch.Tensor]:
    """The floating tensors of a module's output, in pytree order."""
    from torch.utils._pytree import tree_leaves

    return [v for v in tree_leaves(value) if isinstance(v, torch.Tensor) and v.is_floating_point()]


class _ModuleOutputs:
    """Forward hooks on every named submodule: each output under the module's name (a second call
    as name#2), extra floating leaves as name[K], in the order the modules finish."""

    def __init__(self, model: torch.nn.Module):
        self.tensors: dict[str, torch.Tensor] = {}
        self.order: list[dict] = []
        self._calls: dict[str, int] = {}
        self._handles = [m.register_forward_hook(self._hook(name, m)) for name, m in model.named_modules() if name]

    def _hook(self, name: str, module: torch.nn.Module):
        def hook(_module, _args, output):
            leaves = _leaves(output)
            if not leaves:
                return
            n = self._calls[name] = self._calls.get(name, 0) + 1
            key = name if n == 1 else f"{name}#{n}"
            for i, leaf in enumerate(leaves):
                self.tensors[key if i == 0 else f"{key}[{i}]"] = leaf.detach().clone()
            self.order.append({"name": key, "class": type(module).__name__, "source": _source(module),
                               "outputs": len(leaves)})
        return hook

    def remove(self) -> None:
        for h in self._handles:
            h.remove()


@dataclass
class _Run:
    outputs: dict[str, torch.Tensor]
    modules: dict[str, torch.Tensor]
    order: list[dict]
    grads: dict[str, torch.Tensor]


def _run(model: torch.nn.Module, inputs: list[torch.Tensor], upstream: list[torch.Tensor] | None, seed: int) -> tuple[_Run, list[torch.Tensor]]:
    from candle_port.verify.worker import WorkerError, _flat_outputs

    for p in model.parameters():
        p.grad = None
    hooks = _ModuleOutputs(model)
    torch.manual_seed(seed + 2)
    try:
        out = _flat_outputs(model(*inputs))
    except WorkerError as exc:
        raise ReferenceError(str(exc)) from None
    except Exception as exc:
        raise ReferenceError(f"forward failed: {type(exc).__name__}: {exc}") from None
    finally:
        hooks.remove()
    outputs = list(out.values())
    if upstream is None:
        gen = torch.Generator().manual_seed(seed + 3)
        upstream = [torch.randn(o.shape, dtype=torch.float64, generator=gen).to(o.dtype) for o in outputs]
    loss = sum((o * u.to(o.dtype)).sum() for o, u in zip(outputs, upstream))
    if loss.requires_grad:
        try:
            loss.backward()
        except Exception as exc:
            raise ReferenceError(f"backward failed: {type(exc).__name__}: {exc}") from None
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters(remove_duplicate=False) if p.grad is not None}
    named = {f"output.{i}": o.detach() for i, o in enumerate(outputs)}
    return _Run(named, hooks.tensors, hooks.order, grads), upstream


def _max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    if a.shape != b.shape:
        return float("nan")
    d = (a.to(torch.float64) - b.to(torch.float64)).abs()
    both_nan = torch.isnan(a) & torch.isnan(b)
    same_inf = torch.isinf(a) & (a.to(torch.float64) == b.to(torch.float64))
    d = torch.where(both_nan | same_inf, torch.zeros_like(d), d)
    return float(d.max()) if d.numel() else 0.0


def _noise(model_copy: torch.nn.Module, run: _Run, inputs: list[torch.Tensor], upstream: list[torch.Tensor], options: ReferenceOptions) -> tuple[str, dict[str, float]]:
    """Each tensor's own rounding noise, as an absolute figure: |run - float64 run| for float32,
    |run - perturbed run| for float64 (or a model that does not run in float64)."""
    if options.dtype != "float64":
        try:
            wide = model_copy.to(torch.float64)
            ref, _ = _run(wide, [x.to(torch.float64) for x in inputs], [u.to(torch.float64) for u in upstream], options.seed)
            method = "float64"
        except ReferenceError:
            ref, method = None, ""
    else:
        ref, method = None, ""
    if ref is None:
        eps = torch.finfo(inputs[0].dtype if inputs and inputs[0].is_floating_point() else torch.float64).eps / 2
        gen = torch.Generator().manual_seed(options.seed + 11)

        def perturb(t: torch.Tensor) -> torch.Tensor:
            u = torch.rand(t.shape, dtype=torch.float64, generator=gen) * 2 - 1
            return (t.detach().to(torch.float64) * (1 + eps * u)).to(t.dtype)

        with torch.no_grad():
            for p in model_copy.parameters():
                p.copy_(perturb(p))
        ref, _ = _run(model_copy, [perturb(x) if x.is_floating_point() else x for x in inputs], upstream, options.seed)
        method = "perturbed"
    noise = {}
    for kind, mine, theirs in (("", run.outputs, ref.outputs), ("module:", run.modules, ref.modules), ("grad:", run.grads, ref.grads)):
        for name, t in mine.items():
            if name in theirs:
                noise[kind + name] = _max_abs_diff(t, theirs[name])
    return method, noise


def _steps(model: torch.nn.Module, inputs: list[torch.Tensor], upstream: list[torch.Tensor], options: ReferenceOptions) -> list[float]:
    """The loss of each of `options.steps` optimizer steps on sum(output * upstream)."""
    from candle_port.verify.worker import _flat_outputs

    params = [p for p in model.parameters() if p.requires_grad]
    if options.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=options.lr)
    else:
        opt = torch.optim.AdamW(params, lr=options.lr, weight_decay=options.weight_decay, betas=(0.9, 0.999), eps=1e-8)
    losses = []
    for _ in range(options.steps):
        opt.zero_grad()
        outputs = list(_flat_outputs(model(*inputs)).values())
        loss = sum((o * u.to(o.dtype)).to(torch.float64).sum() for o, u in zip(outputs, upstream))
        losses.append(float(loss))
        loss.backward()
        opt.step()
    return losses


def write_reference(options: ReferenceOptions, progress=lambda message: None) -> dict:
    """Build, run and write the torch side into `options.out`; returns the manifest."""
    if options.optimizer not in OPTIMIZERS:
        raise ReferenceError(f"--optimizer {options.optimizer!r}: one of {', '.join(OPTIMIZERS)}")
    progress("building the model")
    model = build_model(options)
    dtype = getattr(torch, options.dtype)
    pristine = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(options.seed)
    inputs = [torch.randn(shape, dtype=torch.float64, generator=gen).to(dtype) for shape in options.input_shapes]
    progress("forward and backward")
    run, upstream = _run(model, inputs, None, options.seed)
    method, noise = ("none", {})
    if options.noise:
        progress("measuring torch's own rounding noise")
        method, noise = _noise(copy.deepcopy(pristine), run, inputs, upstream, options)
    losses = []
    if options.steps:
        progress(f"{options.steps} {options.optimizer} steps")
        losses = _steps(copy.deepcopy(pristine), inputs, upstream, options)
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("candle.json", "candle.safetensors"):
        (out / stale).unlink(missing_ok=True)
    state = {k: v for k, v in pristine.state_dict().items()}
    parameters = [n for n, _ in pristine.named_parameters(remove_duplicate=False)]
    progress(f"writing {out}")
    tensor_files.write(out / "weights.safetensors", state)
    tensor_files.write(out / "inputs.safetensors", {
        **{f"input.{i}": x for i, x in enumerate(inputs)}, **{f"upstream.{i}": u for i, u in enumerate(upstream)}})
    tensor_files.write(out / "torch.safetensors", {
        **run.outputs, **{f"module:{k}": v for k, v in run.modules.items()}, **{f"grad:{k}": v for k, v in run.grads.items()}})
    manifest = {
        "format": FORMAT,
        "model": options.model,
        "dtype": options.dtype,
        "seed": options.seed,
        "mode": "train" if options.train else "eval",
        "torch": torch.__version__,
        "inputs": [f"input.{i}" for i in range(len(inputs))],
        "input_shapes": [list(s) for s in options.input_shapes],
        "outputs": list(run.outputs),
        "output_shapes": [list(t.shape) for t in run.outputs.values()],
        "parameters": parameters,
        "buffers": [n for n, _ in pristine.named_buffers()],
        "shapes": {k: list(v.shape) for k, v in state.items()},
        "modules": run.order,
        "noise_method": method,
        "noise": noise,
        "renames": [list(r) for r in options.renames],
        "steps": ({"count": options.steps, "optimizer": options.optimizer, "lr": options.lr,
                   "weight_decay": options.weight_decay if options.optimizer == "adamw" else 0.0,
                   "betas": [0.9, 0.999], "eps": 1e-8, "losses": losses} if options.steps else None),
    }
    tmp = out / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    os.replace(tmp, out / "manifest.json")
    return manifest
