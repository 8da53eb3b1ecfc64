"""Build, run and trace one model in this process: ``python -m candle_port.verify.worker JOB.json``.

The verify command starts one worker for the original model and one for the rewritten copy, so
the two imports never share a module cache. The original writes the reference (state_dict,
inputs, loss weights) that the rewritten one loads; both write their outputs, gradients and
classified graph with ``torch.save``. A failure is written as ``<out>.error.json`` with a kind.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import time
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

WAIT_FOR_REFERENCE_S = 900.0


class WorkerError(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class _Redirect(importlib.abc.MetaPathFinder):
    """Import the named modules (and so their submodules) from the rewritten copy."""

    def __init__(self, modules: dict[str, str]):
        self.modules = modules

    def find_spec(self, fullname, path=None, target=None):
        location = self.modules.get(fullname)
        if location is None:
            return None
        if os.path.isdir(location) and not os.path.isfile(os.path.join(location, "__init__.py")):
            # a namespace package (no loader: Python's own), not one whose __init__.py is left out
            spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
            spec.submodule_search_locations = [location]
            return spec
        if os.path.isdir(location):
            return importlib.util.spec_from_file_location(
                fullname, os.path.join(location, "__init__.py"), submodule_search_locations=[location]
            )
        return importlib.util.spec_from_file_location(fullname, location)


class _NoCode(importlib.abc.Loader):
    """Loads a package as an empty module: its __init__.py does not run."""

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        module.__candle_port_bare__ = True  # what an import error names (spec.describe_import_error)


class _BarePackages(importlib.abc.MetaPathFinder):
    """The packages above the model's module, each an empty package over its directory
    (--skip-package-init): a model zoo's __init__.py that imports every model and all their
    dependencies does not run; the model's module and what it imports do."""

    def __init__(self, packages: dict[str, str]):
        self.packages = packages

    def find_spec(self, fullname, path=None, target=None):
        directory = self.packages.get(fullname)
        if directory is None:
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _NoCode(), is_package=True)
        spec.submodule_search_locations = [directory]
        return spec


def bare_packages(module: str, import_root: str, redirects: dict[str, str] | None) -> dict[str, str]:
    """Each package above `module` and its directory: in the rewritten copy where a redirect
    covers it, else under `import_root`."""
    parts = module.split(".")
    packages = {}
    for depth in range(1, len(parts)):
        name = ".".join(parts[:depth])
        directory = os.path.join(import_root, *parts[:depth])
        for root, location in (redirects or {}).items():
            if (name == root or name.startswith(root + ".")) and os.path.isdir(location):
                directory = os.path.join(location, *name.split(".")[root.count(".") + 1 :])
        packages[name] = directory
    return packages


def _package_dirs(names: list[str]) -> dict[str, str]:
    """The directory of each package of `names` (outermost first, each inside the one before),
    found on sys.path without importing it."""
    found: dict[str, str] = {}
    directory = None
    for name in names:
        if directory is None:
            spec = importlib.machinery.PathFinder.find_spec(name)
            if spec is None or not spec.submodule_search_locations:
                break
            directory = list(spec.submodule_search_locations)[0]
        else:
            # a subpackage, regular or namespace (no __init__.py): a directory in its parent's;
            # PathFinder would need the parent imported to build a namespace package's path
            directory = os.path.join(directory, name.rsplit(".", 1)[-1])
            if not os.path.isdir(directory):
                break
        found[name] = directory
    return found


def install_import_hooks(job: dict) -> None:
    """sys.path and the finders a worker imports the model with: the rewritten copy's redirect,
    and with `skip_package_init` the packages above the model's module left bare."""
    sys.path.insert(0, job["import_root"])
    if job.get("redirects"):
        sys.meta_path.insert(0, _Redirect(job["redirects"]))
    if job.get("skip_package_init"):
        # The packages above MODEL's module, and for a driver script (its module is outside the
        # source root) each package of the source root and above it that it imports:
        # `--source-root zoo` or `zoo/models` for a factory importing zoo.models.net (SAM 2's
        # sam2/__init__.py starts hydra).
        redirects = job.get("redirects") or {}
        packages = bare_packages(job["module"], job["import_root"], redirects)
        for root in {*redirects, *job.get("package_roots", ())}:
            parts = root.split(".")
            for name, directory in _package_dirs([".".join(parts[:i]) for i in range(1, len(parts) + 1)]).items():
                packages.setdefault(name, directory)
            if root in packages and os.path.isdir(redirects.get(root, "")):
                packages[root] = redirects[root]  # the rewritten copy's, not the original's
        sys.meta_path.insert(0, _BarePackages(packages))


def _redirected_modules(redirects: dict[str, str]) -> list[str]:
    """The modules imported from the rewritten copy: proof that the model used the source root."""
    names = []
    for name, mod in list(sys.modules.items()):
        if any(name == root or name.startswith(root + ".") for root in redirects):
            if any(str(getattr(mod, "__file__", "") or "").startswith(loc) for loc in redirects.values()):
                names.append(name)
    return sorted(names)


def _load_target(job: dict) -> Any:
    install_import_hooks(job)
    try:
        module = importlib.import_module(job["module"])
    except Exception as exc:
        from .spec import describe_import_error

        raise WorkerError("import", describe_import_error(job["module"], exc, bool(job.get("skip_package_init")))) from exc
    obj: Any = module
    for part in job["attr"].split("."):
        if not hasattr(obj, part):
            raise WorkerError("import", f"{job['module']} has no attribute {job['attr']!r}")
        obj = getattr(obj, part)
    return module, obj


def _config_args(job: dict) -> tuple:
    """``(ConfigClass(**config_kwargs),)`` for --config-class (transformers' XModel(XConfig(...))), else ()."""
    if not job.get("config_class"):
        return ()
    from .spec import describe_import_error

    module_name, _, attr = job["config_class"].rpartition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise WorkerError("import", describe_import_error(module_name, exc, bool(job.get("skip_package_init")))) from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise WorkerError("import", f"{module_name} has no attribute {attr!r} (--config-class)")
        obj = getattr(obj, part)
    kwargs = job.get("config_kwargs") or {}
    try:
        return (obj(**kwargs),)
    except Exception as exc:
        raise WorkerError("build", f"--config-class {attr}(**{kwargs}) failed: {type(exc).__name__}: {exc}") from exc


def _build(job: dict) -> tuple[Any, Any]:
    import torch

    module, factory = _load_target(job)
    args = _config_args(job)
    torch.manual_seed(job["seed"])
    try:
        model = factory(*args, **job["init_kwargs"])
    except ImportError as exc:  # a factory that imports inside its body
        from .spec import describe_import_error

        skipping = bool(job.get("skip_package_init"))
        raise WorkerError("build", f"{job['attr']}: " + describe_import_error(job["module"], exc, skipping)) from exc
    except Exception as exc:
        raise WorkerError("build", f"{job['attr']}(**{job['init_kwargs']}) failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(model, torch.nn.Module):
        raise WorkerError("build", f"{job['attr']} returned {type(model).__name__}, not a torch.nn.Module")
    model = model.to(getattr(torch, job["dtype"]))
    model.train(job["train"])
    if job.get("convert"):  # --strategy convert: the built model is fixed, not its source
        from collections import Counter

        from candle_port.runtime import convert

        before = [type(m) for m in model.modules()]
        model = convert(model)
        job["converted"] = dict(Counter(type(m).__name__ for m, old in zip(model.modules(), before) if type(m) is not old))
    return module, with_forward_kwargs(model, job.get("forward_kwargs") or {})


def with_forward_kwargs(model: Any, kwargs: dict) -> Any:
    """`model` whose forward gets `kwargs` on every call (--forward-kwargs: a flag such as
    facexlib MODNet's `inference`), as a subclass of its own class: parameter names, deep copies
    and tracing see the same model."""
    if not kwargs:
        return model
    cls = type(model)

    def forward(self, *args, **given):
        return cls.forward(self, *args, **{**kwargs, **given})

    model.__class__ = type(cls.__name__, (cls,), {"forward": forward, "__module__": cls.__module__})
    return model


def _flat_outputs(out: Any) -> dict[str, Any]:
    import torch
    from torch.utils._pytree import keystr, tree_flatten_with_path

    leaves, _ = tree_flatten_with_path(out)
    flat = {}
    for path, leaf in leaves:
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
            flat["output" + keystr(path)] = leaf
    if not flat:
        raise WorkerError("forward", "the model returned no floating-point tensor")
    return flat


def _wait_for(path: Path) -> dict:
    import torch

    deadline = time.monotonic() + WAIT_FOR_REFERENCE_S
    while not path.exists():
        if time.monotonic() > deadline:
            raise WorkerError("timeout", "the original model's worker produced no reference")
        time.sleep(0.05)
    return torch.load(path, weights_only=True)


def _save(obj: Any, path: Path) -> None:
    import torch

    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def _gradcheck(model: Any, job: dict) -> dict:
    import copy

    import torch

    gen = torch.Generator().manual_seed(job["seed"] + 7)
    shapes = job["gradcheck_shapes"]
    inputs = [torch.randn(s, dtype=torch.float64, generator=gen).requires_grad_(True) for s in shapes]
    m = copy.deepcopy(model).double().eval()

    def fn(*xs):
        return tuple(_flat_outputs(m(*xs)).values())

    start = time.monotonic()
    try:
        ok = torch.autograd.gradcheck(fn, tuple(inputs), eps=1e-6, atol=1e-6, rtol=1e-4, fast_mode=True)
        message = ""
    except Exception as exc:
        ok, message = False, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return {"ok": bool(ok), "shapes": shapes, "message": message, "seconds": round(time.monotonic() - start, 2)}


def _mixes_float_widths(exc: BaseException) -> bool:
    """Whether torch refused to mix float32 and float64 operands."""
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        ("Double" in text and "Float" in text) or ("float" in text and "double" in text)
    )


# torch's error when a forward sets `requires_grad` on a tensor computed from an input that needs one
_LEAF_ONLY = "you can only change requires_grad flags of leaf variables"


class _NoGradient(Exception):
    """The loss does not depend on any input or parameter."""


def _forward_backward(model: Any, inputs: list, weights: dict | None, seed: int) -> tuple:
    """One forward and backward of ``sum(output * w)``; ``w`` is drawn here when not given."""
    import torch

    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    for p in model.parameters():
        p.grad = None
    torch.manual_seed(seed + 2)  # the same dropout masks in every run
    try:
        try:
            outputs = _flat_outputs(model(*leaves))
        except RuntimeError as exc:
            if _LEAF_ONLY not in str(exc):
                raise
            # the forward sets requires_grad on a view of its input (transformers' Wav2Vec2 feature
            # encoder, for gradient checkpointing): run it as users do, with inputs that need no
            # gradient; the input gradients are then compared as absent in every run
            leaves = [x.detach().clone() for x in inputs]
            torch.manual_seed(seed + 2)
            outputs = _flat_outputs(model(*leaves))
    except WorkerError:
        raise
    except Exception as exc:
        hint = ("; pass it with --forward-kwargs JSON" if isinstance(exc, TypeError) and "forward()" in str(exc)
                and "required" in str(exc) else "")
        if leaves and leaves[0].dtype == torch.float64 and _mixes_float_widths(exc):
            # torchvision's RAFT builds its coordinate grid in float32 inside the forward
            hint += ("; the model holds or makes float32 tensors that .double() does not convert (one built in "
                     "forward, a plain tensor attribute), so it cannot run in float64: verify it in float32 "
                     "(drop --dtype float64)")
        raise WorkerError("forward", f"forward failed: {type(exc).__name__}: {exc}{hint}") from exc
    if weights is None:
        gen = torch.Generator().manual_seed(seed + 3)
        weights = {k: torch.randn(v.shape, dtype=v.dtype, generator=gen) for k, v in outputs.items()}
    if {k: tuple(v.shape) for k, v in weights.items()} == {k: tuple(v.shape) for k, v in outputs.items()}:
        loss = sum((outputs[k] * weights[k].to(outputs[k].dtype)).sum() for k in outputs)
        try:
            if not loss.requires_grad:  # nothing to differentiate: the verdict says UNCHECKED
                raise _NoGradient
            loss.backward()
        except _NoGradient:
            pass
        except Exception as exc:
            raise WorkerError("backward", f"backward failed: {type(exc).__name__}: {exc}") from exc
    outputs = {k: v.detach() for k, v in outputs.items()}
    input_grads = {f"input[{i}].grad": x.grad for i, x in enumerate(leaves)}
    param_grads = {n: p.grad for n, p in model.named_parameters()}
    return outputs, input_grads, param_grads, weights


def _pristine_copy(model: Any) -> Any:
    """The model before its first forward (train-mode BatchNorm updates its running stats)."""
    import copy

    try:
        return copy.deepcopy(model)
    except Exception:  # some modules cannot be deep-copied; the reference then is skipped
        return None


def _lowest_float_dtype(model: Any, inputs: list) -> Any:
    """The least precise floating dtype the forward computes in where it matters: a value that
    depends on an input or a parameter and reaches a floating output (a float64 model that resizes
    its position embedding in float32 computes at float32 precision there). A float32 constant
    (EnCodec's `torch.full((), 0.0)`) or a float32 chain that ends in an integer (WavLM's
    relative-position buckets) does not: both runs compute it alike. Read off the make_fx graph;
    every op of the forward counts when the model cannot be traced."""
    import torch

    try:
        traced = _traced_float_dtypes(model, inputs)
    except Exception:  # noqa: BLE001 - untraceable forward: the conservative reading below
        traced = None
    if traced is not None:
        return max(traced, key=lambda d: torch.finfo(d).eps) if traced else inputs[0].dtype
    return _every_float_dtype(model, inputs)


def _traced_float_dtypes(model: Any, inputs: list) -> set:
    """The floating dtypes of the graph nodes that depend on a placeholder (parameters, buffers,
    inputs) and from which a floating output is computed through floating values only."""
    import torch
    from torch.func import functional_call
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils._pytree import tree_leaves

    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}

    def forward(state, *args):
        return functional_call(model, state, args)

    with torch.no_grad():
        gm = make_fx(forward)(state, *[x.detach() for x in inputs])

    def float_dtypes(node) -> set:
        """The floating dtypes of a node's value, a tuple's elements included (native_layer_norm's
        output and statistics: a walk that stopped at a tuple never reached DINOv2's float32
        position-embedding resize behind its final LayerNorm)."""
        val = node.meta.get("val")
        vals = val if isinstance(val, (list, tuple)) else [val]
        return {v.dtype for v in vals if isinstance(v, torch.Tensor) and v.is_floating_point()}

    def floating(node) -> bool:
        return bool(float_dtypes(node))

    from .graph_export import shape_only

    depends: set = set()
    for node in gm.graph.nodes:  # zeros_like(x) takes x's shape, not its value
        if node.op == "placeholder" or (not shape_only(node) and any(inp in depends for inp in node.all_input_nodes)):
            depends.add(node)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    pending = [n for n in tree_leaves(output.args[0]) if isinstance(n, torch.fx.Node) and floating(n)]
    reached: set = set()
    while pending:
        node = pending.pop()
        if node in reached:
            continue
        reached.add(node)
        pending.extend(inp for inp in node.all_input_nodes if floating(inp))
    return {dtype for node in reached & depends for dtype in float_dtypes(node)}


def _every_float_dtype(model: Any, inputs: list) -> Any:
    """The least precise floating dtype any op of the forward produces."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    seen: set = set()

    class _Dtypes(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for leaf in tree_leaves(out):
                if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
                    seen.add(leaf.dtype)
            return out

    with torch.no_grad(), _Dtypes():
        model(*[x.detach() for x in inputs])
    return max(seen, key=lambda d: torch.finfo(d).eps) if seen else inputs[0].dtype


def _perturbed(tensor: Any, eps: float, gen: Any) -> Any:
    import torch

    u = torch.rand(tensor.shape, dtype=torch.float64, generator=gen) * 2 - 1
    return (tensor.detach().to(torch.float64) * (1 + eps * u)).to(tensor.dtype)


def _noise_reference(pristine: Any, inputs: list, weights: dict, job: dict) -> dict | None:
    """What the original model's own rounding amounts to, for the tolerance (see compare.py).

    float32: the original run in float64 (the rewrite and the original are each measured against
    it). float64, or a model that does not run in float64: the original run again with inputs and
    parameters perturbed by the unit roundoff of the least precise dtype its forward computes in."""
    import copy

    import torch

    if pristine is None:
        return None
    if job["dtype"] != "float64":
        try:
            m = pristine.to(torch.float64)
            run = _forward_backward(m, [x.to(torch.float64) for x in inputs],
                                    {k: v.to(torch.float64) for k, v in weights.items()}, job["seed"])
            return {"method": "float64", "eps": torch.finfo(torch.float64).eps / 2,
                    "outputs": run[0], "input_grads": run[1], "param_grads": run[2]}
        except Exception as exc:  # the model does not run in float64: measure its noise in place
            failed = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:200]
            pristine = pristine.to(inputs[0].dtype)
        else:
            failed = ""
    else:
        failed = ""
    try:
        lowest = _lowest_float_dtype(copy.deepcopy(pristine), inputs)
        eps = torch.finfo(lowest).eps / 2
        gen = torch.Generator().manual_seed(job["seed"] + 11)
        with torch.no_grad():
            for p in pristine.parameters():
                p.copy_(_perturbed(p, eps, gen))
        run = _forward_backward(pristine, [_perturbed(x, eps, gen) for x in inputs], weights, job["seed"])
    except Exception as exc:
        return {"method": "none", "error": f"{type(exc).__name__}: {exc}"[:200]}
    return {"method": "perturbed", "eps": eps, "lowest_dtype": str(lowest).replace("torch.", ""),
            "float64_error": failed, "outputs": run[0], "input_grads": run[1], "param_grads": run[2]}


RUNTIME_PATH_ENV = "CANDLE_PORT_RUNTIME"


@contextmanager
def runtime_composition() -> Iterator[None]:
    """The runtime's compositions, not torch's kernels, inside the block (and in the processes it
    starts): in plain eager mode the runtime's ops call torch's own kernel (runtime/_dispatch.py),
    and verify judges what candle will run. By the environment variable, so that a vendored copy
    of the runtime (its own module) follows it too."""
    before = os.environ.get(RUNTIME_PATH_ENV)
    os.environ[RUNTIME_PATH_ENV] = "composition"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(RUNTIME_PATH_ENV, None)
        else:
            os.environ[RUNTIME_PATH_ENV] = before


def run(job: dict) -> None:
    """One worker's job, with the runtime's compositions (see runtime_composition); with
    ``convert`` set, everything the model runs goes through runtime.routed()."""
    with runtime_composition():
        if job.get("convert"):
            from candle_port.runtime import routed

            with routed():
                return _run(job)
        return _run(job)


def _key_difference(model, state: dict) -> tuple[list[str], list[str]]:
    """(missing, unexpected) keys, for a `load_state_dict` override that returns nothing (demucs'
    Demucs renames old keys, then calls torch's and drops its result)."""
    own, given = set(model.state_dict()), set(state)
    return sorted(own - given), sorted(given - own)


def _run(job: dict) -> None:
    import torch

    torch.set_num_threads(max(1, int(job.get("threads", 1))))
    out_path = Path(job["out"])
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    module, model = _build(job)
    timings["build"] = time.monotonic() - t0
    dtype = getattr(torch, job["dtype"])
    result: dict[str, Any] = {"module_file": str(getattr(module, "__file__", "")), "role": job["role"]}
    if job.get("redirects"):
        result["redirected"] = _redirected_modules(job["redirects"])
    if job.get("convert"):
        result["converted"] = job.get("converted", {})
    if job["role"] == "original":
        gen = torch.Generator().manual_seed(job["seed"] + 1)
        inputs = [torch.randn(s, dtype=dtype, generator=gen) for s in job["input_shapes"]]
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        ref = None
    else:
        ref = _wait_for(Path(job["reference"]))
        inputs = ref["inputs"]
        try:
            loaded = model.load_state_dict(ref["state_dict"], strict=False)
        except Exception as exc:
            raise WorkerError("state_dict", f"the original's state_dict does not load: {str(exc).strip().splitlines()[0]}") from exc
        missing, unexpected = loaded if loaded is not None else _key_difference(model, ref["state_dict"])
        result["load"] = {"missing": list(missing), "unexpected": list(unexpected)}
    pristine = _pristine_copy(model) if job["role"] == "original" else None
    t0 = time.monotonic()
    weights = None if job["role"] == "original" else ref["loss_weights"]
    from .kinks import record

    kinks, stop_recording = record(model)  # activation inputs near a kink (kinks.py)
    try:
        outputs, input_grads, param_grads, weights = _forward_backward(model, inputs, weights, job["seed"])
    finally:
        stop_recording()
    result["kinks"] = kinks
    if job["role"] != "original":
        theirs = {k: tuple(v.shape) for k, v in weights.items()}
        ours = {k: tuple(v.shape) for k, v in outputs.items()}
        if theirs != ours:
            raise WorkerError("shape", f"outputs differ in structure or shape: original {theirs}, rewritten {ours}")
    timings["forward_backward"] = time.monotonic() - t0
    result["outputs"], result["input_grads"], result["param_grads"] = outputs, input_grads, param_grads
    if job["role"] == "original":
        _save({"state_dict": state, "inputs": inputs, "loss_weights": weights}, Path(job["reference_out"]))
        t0 = time.monotonic()
        result["reference"] = _noise_reference(pristine, inputs, weights, job)
        timings["reference"] = time.monotonic() - t0
    if job.get("trace", True):
        from .trace import TraceError, trace_model

        t0 = time.monotonic()
        fresh = [x.detach().clone() for x in inputs]
        try:
            result["graph"] = trace_model(model, fresh).to_json()
        except TraceError as exc:  # the numbers are still compared; the verdict says what was not checked
            result["trace_error"] = str(exc)
        timings["trace"] = time.monotonic() - t0
    if job.get("gradcheck_shapes"):
        result["gradcheck"] = _gradcheck(model, job)
    result["timings"] = {k: round(v, 2) for k, v in timings.items()}
    _save(result, out_path)


def entry(job_path: str, log_path: str) -> None:
    """Process target: the user's prints go to a log file, never into verify's own stdout."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.chdir(os.path.dirname(job_path))
    code = main([job_path])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    error_path = Path(job["out"] + ".error.json")
    try:
        run(job)
        return 0
    except WorkerError as exc:
        error = {"kind": exc.kind, "message": str(exc)}
    except Exception as exc:  # an unexpected failure is still reported as one line, with the trace for --debug
        error = {"kind": "internal", "message": f"{type(exc).__name__}: {exc}"}
    error["traceback"] = traceback.format_exc(limit=8)
    error_path.write_text(json.dumps(error), encoding="utf-8")
    return 3


if __name__ == "__main__":
    sys.exit(main())
