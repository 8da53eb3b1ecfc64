"""Write a model's traced ATen graph, weights, inputs and torch's own results for candle-port-run.

The candle side (crates/candle-port-run) executes the graph in real candle and differentiates it;
this module is the Python half of that check: it traces with make_fx (the same tracing as
``trace.py``'s fallback, with stack traces recorded so every node names the user's source line)
and writes a directory:

- ``graph.json``: format ``candle-port-graph``, version ``GRAPH_FORMAT_VERSION`` (below).
- ``tensors.safetensors``: ``param.<name>`` (trainable parameters: candle ``Var``s),
  ``buffer.<name>`` (buffers and frozen parameters), ``input.<i>``,
  ``const.<node>`` (tensors the trace captured as constants) and ``upstream.<i>`` (the weight of
  output i in the loss).
- ``torch.safetensors``: torch's ``output.<i>`` and ``grad.<param name>`` for the same loss.

The loss is ``sum_i sum(output_i * upstream_i)`` over the floating-point outputs, with
``upstream_i`` drawn from the seed: every output element gets a distinct weight, so a gradient
that is wrong anywhere shows (a plain ``sum`` would hide errors that cancel).

graph.json, version 1::

    {"format": "candle-port-graph", "version": 1, "torch": "2.x", "dtype": "float64",
     "placeholders": [{"node": "arg0_1", "kind": "param"|"buffer"|"input"|"const", "name": "conv.weight"}],
     "nodes": [{"name": "convolution", "op": "aten.convolution.default",
                "args": [ARG...], "kwargs": {"k": ARG},
                "outputs": [{"shape": [2, 8, 17, 17], "dtype": "float64"}],
                "used": true, "location": "/path/model.py:30", "code": "d1 = self.down1(x)",
                "stack": ["/path/model.py:30 in forward", ...]}],
     "outputs": [{"node": "convolution_5", "index": 0, "upstream": "upstream.0"}],
     "reference_fixes": {"aten.hardsigmoid_backward.default": "why"},
     "replayed_draws": [{"op": "aten.bernoulli.p", "location": "/path/model.py:31"}]}

``replayed_draws`` (optional, ignored by the Rust side) names the random ops (training-mode
dropout, drop path) whose draws in torch's reference forward are in the graph as constants
(``replay_draws``). ``reference_fixes`` (optional, ignored by the Rust side) names the torch backward kernels whose
float64 result the reference replaced by the exact formula (``REFERENCE_FIXES`` below).

An ARG is a JSON literal (int, bool, string, null), a float (``{"float": "inf"}`` for the
non-finite ones), a list of ARGs, a tensor reference ``{"ref": "node_name"}`` or a torch enum
``{"dtype": "float32"}`` / ``{"device": "cpu"}`` / ``{"layout": ...}`` / ``{"memory_format": ...}``.
``as_strided``/``as_strided_`` nodes get a kwarg ``__index`` referring to a const: the flat
logical indices of the input that each output element reads (``as_strided_index``), which
candle (no storage, no strides) needs to run them.
A node whose op returns a tuple is read through the following ``getitem`` nodes
(``op: "getitem"``, args ``[{"ref": tuple_node}, index]``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

GRAPH_FORMAT = "candle-port-graph"
GRAPH_FORMAT_VERSION = 1
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\n\s*(?P<code>[^\n]*)')


@dataclass
class Frame:
    file: str
    line: int
    func: str
    code: str

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def parse_stack(stack_trace: str | None) -> list[Frame]:
    """Frames of an fx ``stack_trace``, outermost first."""
    if not stack_trace:
        return []
    return [Frame(m["file"], int(m["line"]), m["func"], m["code"].strip()) for m in _FRAME.finditer(stack_trace)]


@lru_cache(maxsize=1)
def _library_dirs() -> tuple[str, ...]:
    """torch's and candle-port's own package directories."""
    import torch

    import candle_port

    return (str(Path(torch.__file__).parent) + os.sep, str(Path(candle_port.__file__).parent) + os.sep)


def _is_library(path: str) -> bool:
    """Code that is not the user's: torch's and candle-port's (the runtime, the tracing call), the
    standard library's (not what is installed beside it) and pseudo-files (`<frozen ...>`)."""
    if path.startswith("<") or path.startswith(_library_dirs()):
        return True
    stdlib = os.path.dirname(os.__file__) + os.sep
    return path.startswith(stdlib) and "site-packages" not in path and "dist-packages" not in path


def frames_of(summaries: Any) -> list[Frame]:
    """Frames of a traceback's or a stack's `FrameSummary` list (traceback.extract_tb/extract_stack)."""
    return [Frame(f.filename, f.lineno or 0, f.name, (f.line or "").strip()) for f in summaries]


def user_frame(frames: list[Frame]) -> Frame | None:
    """The innermost frame in the user's code: the line to show, not torch's own module code nor
    candle-port's (the runtime, or the tracing call itself). None when torch recorded no user
    frame (a module that overrides `__call__` instead of `forward`: controlnet_aux's HED blocks)."""
    for frame in reversed(frames):
        if not _is_library(frame.file):
            return frame
    return None


def _encode(value: Any) -> Any:
    import torch
    import torch.fx

    if isinstance(value, torch.fx.Node):
        return {"ref": value.name}
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": str(value)}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, torch.layout):
        return {"layout": str(value).removeprefix("torch.")}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    return {"unsupported": type(value).__name__, "repr": repr(value)[:80]}


def _op_name(node: Any) -> str:
    target = node.target
    if getattr(target, "__name__", "") == "getitem":
        return "getitem"
    name = str(target)
    return name if name.startswith("aten.") else f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', name)}"


def _meta_outputs(node: Any) -> list[dict]:
    import torch

    val = node.meta.get("val")
    vals = val if isinstance(val, (list, tuple)) else [val]
    out = []
    for v in vals:
        if isinstance(v, torch.Tensor):
            out.append({"shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch.")})
        else:
            out.append(None)
    return out


def as_strided_index(node: Any) -> Any:
    """For ``as_strided(x, size, stride, offset)``: the flat logical indices of ``x`` that each
    output element reads, resolved against ``x``'s own strides and offset in torch (candle has
    logical tensors, not storage). ``None`` when the output reads storage that is not one of ``x``'s
    elements."""
    import torch

    src = node.args[0].meta.get("val")
    size, stride = list(node.args[1]), list(node.args[2])
    offset = node.args[3] if len(node.args) > 3 and node.args[3] is not None else src.storage_offset()

    def positions(shape, strides, start):
        pos = torch.full(tuple(shape), int(start), dtype=torch.long)
        for d, (n, st) in enumerate(zip(shape, strides)):
            view = [1] * len(shape)
            view[d] = n
            pos = pos + (torch.arange(n, dtype=torch.long) * st).view(view)
        return pos.flatten()

    src_pos = positions(src.shape, src.stride(), src.storage_offset())
    out_pos = positions(size, stride, offset)
    top = int(max(src_pos.max().item() if src_pos.numel() else 0, out_pos.max().item() if out_pos.numel() else 0))
    owner = torch.full((top + 1,), -1, dtype=torch.long)
    owner[src_pos] = torch.arange(src_pos.numel(), dtype=torch.long)
    index = owner[out_pos]
    return None if bool((index < 0).any()) else index


def _node_json(node: Any) -> dict:
    frames = parse_stack(node.meta.get("stack_trace"))
    frame = user_frame(frames)
    return {
        "name": node.name, "op": _op_name(node),
        "args": [_encode(a) for a in node.args], "kwargs": {k: _encode(v) for k, v in node.kwargs.items()},
        "outputs": _meta_outputs(node), "used": len(node.users) > 0,
        "location": frame.where() if frame else None, "code": frame.code if frame else None,
        "stack": [f"{f.where()} in {f.func}" for f in frames],
    }


def trace_for_candle(model: Any, inputs: Sequence[Any]):
    """Functionalized make_fx graph of ``forward(params, buffers, *inputs)``, stack traces on every node."""
    import torch
    from torch.func import functional_call, functionalize
    from torch.fx.experimental.proxy_tensor import make_fx

    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())

    def forward(params, buffers, *args):
        return functional_call(model, {**params, **buffers}, args)

    # functionalize: in-place ops (relu_, x += y, BatchNorm's running-stat updates) become their
    # pure forms, so every node is a value and a later read never sees a mutation candle lacks.
    # Fused attention has no single candle op: decompose it into matmul/softmax like torch's own
    # math path does. Circular padding is traced as cat of slices (_circular_pad_as_cat).
    from torch._decomp import get_decompositions

    table = get_decompositions([torch.ops.aten._scaled_dot_product_flash_attention_for_cpu])
    with _gradients_off_spy() as spy, _circular_pads_as_cat(), _kept_tensors(model), _old_style_functions_inlined():
        gm = make_fx(functionalize(forward, remove="mutations"), decomposition_table=table,
                     record_stack_traces=True)(params, buffers, *inputs)
    gm.meta["gradients_off"] = spy.where
    return gm, list(params), list(buffers)


@contextlib.contextmanager
def _kept_tensors(model: Any):
    """Put every parameter and buffer object back after tracing, under each name it has.

    functional_call restores a module reached by two attribute paths (nnU-Net's blocks keep
    `self.conv` and the same module inside `self.all_modules`) under one of them only; under
    make_fx and functionalize the other keeps the traced stand-in, a tensor whose storage is gone
    (safetensors then fails on "an invalid python storage"), and the model's own parameters were
    no longer its parameters."""
    kept = [
        (module, table, name, tensor)
        for module in model.modules()
        for table in (module._parameters, module._buffers)
        for name, tensor in table.items()
    ]
    try:
        yield
    finally:
        for module, table, name, tensor in kept:
            table[name] = tensor


class _TraceContext:
    """The `ctx` an old-style autograd.Function's forward gets while inlined: it saves nothing
    (candle differentiates the forward's own ops)."""

    needs_input_grad: tuple = ()
    materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        self.saved_tensors = tensors

    def mark_dirty(self, *tensors) -> None:
        pass

    def mark_non_differentiable(self, *tensors) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        pass


@contextlib.contextmanager
def _old_style_functions_inlined():
    """Run an old-style autograd.Function (forward takes `ctx`, no `setup_context`) as its forward.

    functionalize is a functorch transform, and torch refuses such a Function under one
    ("it must override the setup_context staticmethod"): pytorchvideo's X3D (`SwishFunction`),
    efficientnet_pytorch's memory-efficient Swish. The candle graph needs only the forward's ops;
    candle differentiates them, as a port does. A Function whose backward is not its forward's
    derivative (straight-through, gradient reversal) then differs from torch, and verify says so."""
    from torch.autograd.function import Function, _is_setup_context_defined

    original = Function.__dict__["apply"]

    def apply(cls, *args, **kwargs):
        if _is_setup_context_defined(cls.setup_context):
            return original.__get__(None, cls)(*args, **kwargs)
        return cls.forward(_TraceContext(), *args, **kwargs)

    Function.apply = classmethod(apply)
    try:
        yield
    finally:
        Function.apply = original


def _gradients_off_spy():
    """A TorchFunctionMode (torch is imported lazily here) that records where the forward turns
    gradients off."""
    from torch.overrides import TorchFunctionMode

    class GradientsOffSpy(TorchFunctionMode):
        """Where the forward turns gradients off (`torch.no_grad()`, spectral norm's power
        iteration): an ATen graph keeps no grad mode, so candle differentiates through that part."""

        def __init__(self) -> None:
            super().__init__()
            self.where: list[str] = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            import torch

            if func is torch._C._set_grad_enabled and args and args[0] is False:
                import traceback

                frame = user_frame(frames_of(traceback.extract_stack()))
                where = frame.where() if frame else "?"
                if where not in self.where:
                    self.where.append(where)
            return func(*args, **(kwargs or {}))

    return GradientsOffSpy()


def _circular_pads_as_cat():
    """A TorchFunctionMode that traces `F.pad(mode="circular")` as `_circular_pad_as_cat`."""
    from torch.overrides import TorchFunctionMode

    class CircularPadsAsCat(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") == "pad":
                padded = _circular_pad_as_cat(*args, **(kwargs or {}))
                if padded is not None:
                    return padded
            return func(*args, **(kwargs or {}))

    return CircularPadsAsCat()


def _circular_pad_as_cat(x: Any, pad: Sequence[int], mode: str = "constant", value: Any = None) -> Any:
    """`F.pad(x, pad, mode="circular")` as `cat` of slices (the same copies, and a backward that adds
    them), or None for any other pad. torch 2.14 writes circular padding into a `new_empty` tensor
    with `copy_` into its slices, which functionalize keeps and a graph of values cannot express
    (Informer's and Autoformer's circular Conv1d token embeddings)."""
    import torch

    if mode != "circular" or not isinstance(x, torch.Tensor) or any(p < 0 or p > x.shape[-1 - i // 2] for i, p in enumerate(pad)):
        return None
    for i in range(0, len(pad), 2):
        dim, left, right = x.dim() - 1 - i // 2, pad[i], pad[i + 1]
        parts = ([x.narrow(dim, x.shape[dim] - left, left)] if left else []) + [x]
        parts += [x.narrow(dim, 0, right)] if right else []
        x = torch.cat(parts, dim) if len(parts) > 1 else x
    return x


# torch's own CPU backward kernels that are not float64-accurate (or not right at all), and what
# the reference does instead. hardsigmoid_backward multiplies by ``one_sixth(1.0f / 6.0f)``, a float32
# constant, in every dtype (aten/src/ATen/native/cpu/Activation.cpp): in float64 its gradient is
# 2**-25 (3.0e-8) relative off the derivative, which a model with squeeze-excite gates
# (timm's MobileNetV3) carries to every earlier parameter (measured: conv_stem 6.9e-9 of scale).
REFERENCE_FIXES = {
    "aten.hardsigmoid_backward.default":
        "torch's CPU kernel multiplies by the float32 constant 1.0f/6.0f in float64 (3.0e-8 relative off); "
        "the reference uses the exact 1/6",
    "aten.elu_backward.default":
        "torch's celu passes 1/alpha of alpha rounded to float32 as elu_backward's input_scale in float64 "
        "(1.4285714528998554 for alpha 0.7: 9e-9 relative off); the reference uses the exact 1/alpha",
    "aten.native_batch_norm_backward.default":
        "torch 2.14's CPU BatchNorm backward (eval and train, so instance_norm too) is wrong, about 1.7x scale "
        "off in every gradient, when a batch-1 incoming gradient has channels-last strides whose batch stride "
        "is not H*W*C (legal for a size-1 dim; RT-DETR's decoder input projection makes one); the reference "
        "runs it on contiguous copies",
}

# Backward kernels whose result depends on the strides of size-1 dims (tests/verify/
# test_graph_export_strides.py feeds each op family's backward such gradients: only BatchNorm's is
# wrong); the reference runs them on contiguous copies of their tensor arguments.
_STRIDE_SENSITIVE = ("aten.native_batch_norm_backward.default",)


def _canonical(t: Any) -> Any:
    """``t`` with the strides ``contiguous()`` would give it, size-1 dims included (``contiguous()``
    itself returns a tensor it calls contiguous unchanged, whatever its size-1 dims' strides)."""
    import torch

    if not isinstance(t, torch.Tensor) or t.stride() == torch.empty(t.shape, device="meta").stride():
        return t
    return torch.empty(t.shape, dtype=t.dtype, device=t.device).copy_(t)


def _canonical_args(args: tuple) -> tuple | None:
    """``args`` with every tensor canonical (``_canonical``), or None when they all were."""
    fixed = tuple(_canonical(a) for a in args)
    return fixed if any(f is not a for f, a in zip(fixed, args)) else None


def _celu_input_scale(alpha: Any, scale: Any, input_scale: Any) -> float | None:
    """The exact 1/alpha where an elu_backward call is celu's, whose input_scale torch computes from
    alpha rounded to float32 (`1.0 / alpha.toFloat()` in ATen's celu backward); None for any other
    call."""
    import struct

    exact = 1.0 / float(alpha)
    from_float32 = 1.0 / struct.unpack("f", struct.pack("f", float(alpha)))[0]
    if float(scale) == 1.0 and float(input_scale) == from_float32 != exact:
        return exact
    return None


def _exact_backward_mode(used: set[str]):
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class ExactBackward(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is torch.ops.aten.hardsigmoid_backward.default and args[1].dtype == torch.float64:
                grad, x = args[0], args[1]
                used.add(str(func))
                inside = (x > -3) & (x < 3)
                return torch.where(inside, grad / 6, torch.zeros_like(grad))
            if str(func) in _STRIDE_SENSITIVE and (fixed := _canonical_args(args)) is not None:
                used.add(str(func))
                return func(*fixed, **kwargs)
            if func is torch.ops.aten.elu_backward.default and args[0].dtype == torch.float64:
                exact = _celu_input_scale(*args[1:4])
                if exact is not None:
                    used.add(str(func))
                    return func(args[0], args[1], args[2], exact, *args[4:], **kwargs)
            return func(*args, **kwargs)

    return ExactBackward()


def _flat_tensors(out: Any) -> list[Any]:
    from torch.utils._pytree import tree_flatten

    return tree_flatten(out)[0]


# Ops whose value is not a function of their arguments: never computed at export time.
_NOT_FOLDABLE = ("rand", "bernoulli", "normal", "uniform", "dropout", "empty", "multinomial", "poisson",
                 "exponential", "geometric", "cauchy", "log_normal")


# Ops whose result depends on their tensor argument's shape and dtype only (`x.new_zeros(...)`).
_SHAPE_ONLY = frozenset({"new_zeros", "new_ones", "new_full", "zeros_like", "ones_like", "full_like"})


def shape_only(node: Any) -> bool:
    """Whether a graph node's value depends on its tensor arguments' shape and dtype only."""
    return str(node.target).removeprefix("aten.").split(".")[0] in _SHAPE_ONLY


def _stand_in(node: Any) -> Any:
    """A tensor with the shape and dtype the trace recorded for ``node`` (its values unread)."""
    import torch

    val = node.meta.get("val")
    return torch.zeros(tuple(val.shape), dtype=val.dtype) if isinstance(val, torch.Tensor) else None


def fold_constants(gm: Any, constants: dict, fixed: dict | None = None) -> set[str]:
    """Compute, at export, every node that depends on no input or trainable parameter: index tables
    and window weights built from sizes (the runtime's `arange` ramps), and what a model derives
    from its buffers and frozen parameters (`fixed`, by placeholder name: diffusers' Dance
    Diffusion builds a convolution kernel from a buffer with `index_put`). candle gets them as
    constants, as a port computes them once on the host, and needs no mapping for the ops that
    made them; `x.new_zeros(...)` needs only ``x``'s shape and dtype. An op that mutates its
    argument is never run here. Adds each folded tensor to
    `constants`; returns the folded node names."""
    from torch.fx.node import map_arg

    import torch

    values: dict[str, Any] = dict(constants)
    values.update({name: t.detach().clone() for name, t in (fixed or {}).items()})
    folded: set[str] = set()
    for n in gm.graph.nodes:
        if n.op != "call_function" or any(part in str(n.target) for part in _NOT_FOLDABLE):
            continue
        schema = getattr(n.target, "_schema", None)
        if schema is not None and schema.is_mutable:
            continue
        known = dict(values)
        if shape_only(n):  # the input gives a shape and dtype, not values
            known.update({inp.name: _stand_in(inp) for inp in n.all_input_nodes if inp.name not in values})
        if not all(inp.name in known for inp in n.all_input_nodes):
            continue
        try:
            value = n.target(*map_arg(n.args, lambda a: known[a.name]), **map_arg(n.kwargs, lambda a: known[a.name]))
        except Exception:  # noqa: BLE001 - left in the graph, as before folding
            continue
        if isinstance(value, torch.Tensor):
            values[n.name] = value
            constants[n.name] = value
            folded.add(n.name)
        elif isinstance(value, (tuple, list)) and all(isinstance(v, torch.Tensor) for v in value):
            values[n.name] = value  # its getitem nodes fold to tensors
            folded.add(n.name)
    return folded


# Ops that draw random numbers (training-mode dropout traces to `bernoulli`, drop path to `rand`).
_RANDOM = ("rand", "bernoulli", "normal", "uniform", "multinomial", "poisson", "exponential", "geometric", "cauchy",
           "log_normal", "randperm", "randint", "native_dropout")
# Ops whose first tensor argument gives a shape (and dtype) only, as far as their value goes.
_SHAPE_OF_FIRST = _SHAPE_ONLY | {"empty_like", "new_empty", "new_empty_strided", "rand_like", "randn_like",
                                 "randint_like", "bernoulli", "uniform", "normal", "exponential", "expand"}


def _random(node: Any) -> bool:
    name = str(node.target).removeprefix("aten.").split(".")[0]
    return node.op == "call_function" and name.rstrip("_") in _RANDOM


def _value_dependent(gm: Any, sources: set[str]) -> set[str]:
    """Names of the nodes whose values depend on the values of ``sources`` (placeholders): an op
    reading only the shape of its first argument (``new_empty``, ``bernoulli(x, p)`` with a number
    ``p``, an ``expand`` of such a tensor) does not pass the dependence on."""
    dependent: set[str] = set()
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            if n.name in sources:
                dependent.add(n.name)
            continue
        inputs = list(n.all_input_nodes)
        name = str(n.target).removeprefix("aten.").split(".")[0].rstrip("_")
        overload = str(n.target).rsplit(".", 1)[-1]
        if name in _SHAPE_OF_FIRST and inputs and (name != "bernoulli" or overload in ("p", "float")):
            inputs = inputs[1:] if name not in ("expand",) else inputs
        if name == "expand" and inputs and inputs[0].name not in dependent:
            continue
        if any(i.name in dependent for i in inputs):
            dependent.add(n.name)
    return dependent


def replay_draws(gm: Any, leaves: Sequence[Any], rng_start: Any, reference: dict) -> dict[str, Any]:
    """torch's random draws (training-mode dropout, drop path, ``torch.rand``) as constants for
    candle, so that ``--candle`` verifies training mode as it runs: the traced graph is run again
    from the RNG state the reference forward started from, and the value of each random node whose
    value depends on no parameter or input value (a mask drawn for a shape) is kept. Kept only when
    the replay reproduces the reference's outputs exactly (the same draws in the same order);
    {} otherwise, and the candle run names the random op as before."""
    import torch
    from torch.fx import Interpreter

    placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    randoms = [n for n in gm.graph.nodes if _random(n)]
    if not randoms:
        return {}
    dependent = _value_dependent(gm, set(placeholders))
    wanted = {n.name for n in randoms if n.name not in dependent}
    if len(wanted) != len(randoms):
        return {}  # a draw that depends on a value (bernoulli of computed probabilities)
    drawn: dict[str, Any] = {}

    class Recorder(Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            if n.name in wanted and isinstance(value, torch.Tensor):
                drawn[n.name] = value.detach().clone()
            return value

    saved = torch.get_rng_state()
    torch.set_rng_state(rng_start)
    try:
        with torch.no_grad():
            outs = _flat_tensors(Recorder(gm).run(*[t.detach().clone() for t in leaves]))
    except Exception:  # noqa: BLE001 - not replayable: the random ops stay in the graph
        return {}
    finally:
        torch.set_rng_state(saved)
    for i, out in enumerate(outs):
        ref = reference.get(f"output.{i}")
        if ref is not None and not (isinstance(out, torch.Tensor) and out.shape == ref.shape and torch.equal(out, ref)):
            return {}
    return drawn if len(drawn) == len(wanted) else {}


def export_graph(model: Any, inputs: Sequence[Any], out_dir: Path, seed: int = 0) -> dict:
    """Trace ``model(*inputs)``, write graph.json, tensors.safetensors and torch.safetensors.

    The model's state is restored after torch's own forward and after tracing (a training-mode
    BatchNorm updates its running statistics on each run), so candle starts from the same weights.
    Returns the graph as written.
    """
    import torch
    from safetensors.torch import save_file

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}

    model.zero_grad(set_to_none=True)
    rng_start = torch.get_rng_state()  # the reference forward's draws start here (replay_draws)
    outs = _flat_tensors(model(*inputs))
    gen = torch.Generator().manual_seed(seed + 3)
    upstream = {i: torch.randn(o.shape, dtype=o.dtype, generator=gen)
                for i, o in enumerate(outs) if isinstance(o, torch.Tensor) and o.is_floating_point()}
    loss = sum((outs[i] * u).sum() for i, u in upstream.items())
    fixes: set[str] = set()
    with _exact_backward_mode(fixes):
        loss.backward()
    reference = {f"output.{i}": o.detach().contiguous() for i, o in enumerate(outs) if isinstance(o, torch.Tensor)}
    for name, p in model.named_parameters():
        if p.grad is not None:
            reference[f"grad.{name}"] = p.grad.detach().contiguous()
    model.zero_grad(set_to_none=True)
    model.load_state_dict(state)

    gm, param_names, buffer_names = trace_for_candle(model, [x.detach() for x in inputs])
    model.load_state_dict(state)

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    named = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    # a frozen parameter goes as a buffer: a plain tensor in candle, not a Var (candle would
    # record, and fail to differentiate, what only it feeds)
    kinds = [("param" if named[n].requires_grad else "buffer", n) for n in param_names]
    kinds += [("buffer", n) for n in buffer_names] + [("input", str(i)) for i in range(len(inputs))]
    ph_json = [{"node": node.name, "kind": kind, "name": name} for node, (kind, name) in zip(placeholders, kinds)]
    state_of = {**named, **buffers}
    fixed = {node.name: state_of[name] for node, (kind, name) in zip(placeholders, kinds) if kind == "buffer"}
    constants = {n.name: getattr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr"}
    leaves = [named[n] for n in param_names] + [buffers[n] for n in buffer_names] + [x.detach() for x in inputs]
    draws = replay_draws(gm, leaves, rng_start, reference)
    model.load_state_dict(state)
    constants.update(draws)
    folded = fold_constants(gm, constants, fixed) | set(draws)
    nodes = []
    for n in gm.graph.nodes:
        if n.op != "call_function" or n.name in folded:
            continue
        entry = _node_json(n)
        if entry["op"] in ("aten.as_strided.default", "aten.as_strided_.default"):
            index = as_strided_index(n)
            if index is not None:
                constants[f"{n.name}__index"] = index
                entry["kwargs"]["__index"] = {"ref": f"{n.name}__index"}
        nodes.append(entry)
    ph_json += [{"node": name, "kind": "const", "name": name} for name in constants]
    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    graph_outs = _flat_tensors(output_node.args[0])
    outputs = [{"node": n.name if n is not None else None, "index": i,
                "upstream": f"upstream.{i}" if i in upstream else None} for i, n in enumerate(graph_outs)]
    graph = {
        "format": GRAPH_FORMAT, "version": GRAPH_FORMAT_VERSION, "torch": torch.__version__,
        "dtype": str(next(iter(state.values())).dtype).removeprefix("torch.") if state else "float32",
        "placeholders": ph_json,
        "nodes": nodes,
        "outputs": outputs,
        "reference_fixes": {op: REFERENCE_FIXES[op] for op in sorted(fixes)},
        # where the forward turned gradients off: the graph cannot say so (see trace_for_candle)
        "gradients_off": gm.meta.get("gradients_off", []),
        # the random ops whose draws in torch's reference forward candle gets as constants
        "replayed_draws": [{"op": _op_name(n), "location": _node_json(n)["location"]}
                           for n in gm.graph.nodes if n.name in draws],
    }
    tensors = {f"{kind}.{name}": state_of[name].detach().contiguous() for kind, name in kinds if kind != "input"}
    tensors.update({f"input.{i}": x.detach().contiguous() for i, x in enumerate(inputs)})
    tensors.update({f"upstream.{i}": u.contiguous() for i, u in upstream.items()})
    tensors.update({f"const.{k}": v.detach().contiguous() for k, v in constants.items()})
    # Tied weights and repeated constants share storage, which safetensors refuses: copy each.
    # candle has no bool dtype (its comparisons give u8) and cannot load a BOOL tensor: a bool
    # constant (a mask folded from a fixed grid, say) goes as the u8 candle uses for masks.
    tensors = {k: v.to(torch.uint8) if v.dtype == torch.bool else v.clone() for k, v in tensors.items()}
    save_file(tensors, str(out_dir / "tensors.safetensors"))
    save_file(reference, str(out_dir / "torch.safetensors"))
    (out_dir / "graph.json").write_text(json.dumps(graph, indent=1), encoding="utf-8")
    return graph
