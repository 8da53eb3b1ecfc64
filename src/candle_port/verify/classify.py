"""Classify every ATen op of a traced forward graph against the candle op table.

Works on a ``torch.fx`` graph (from torch.export or make_fx) whose nodes carry ``meta['val']``.
An op matters only when its output depends on a parameter or a floating input (candle records
only ops on a path from a ``Var``, candle-ops.md section 2): ``on_grad_path`` says so, and only
such ops decide the verdict.
"""

from __future__ import annotations

import operator
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from .conditions import CONDITIONS, TensorInfo, conv1d_wrong_on_path
from .optable import BACKWARD, CONDITIONAL, FORWARD_ONLY, NO_OP, NOT_IN_TABLE, OpEntry, lookup

LACKS_BACKWARD = (FORWARD_ONLY, NO_OP, NOT_IN_TABLE)
# Graph bookkeeping that is no computation on tensors.
_IGNORED = {
    "_assert_tensor_metadata", "_assert_scalar", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
    "sym_constrain_range", "sym_constrain_range_for_size", "_assert_async", "_functional_assert_async",
    "_functional_sym_constrain_range", "_functional_sym_constrain_range_for_size", "set_grad_enabled",
}
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


@dataclass
class OpRecord:
    op: str  # full overload, e.g. aten::upsample_bilinear2d.vec
    name: str  # table key, e.g. upsample_bilinear2d
    cls: str  # backward / forward-only / conditional / no-op / not-in-table
    on_grad_path: bool
    ok: bool  # candle can differentiate this call (True when it needs no gradient)
    reason: str = ""
    warning: str = ""
    where: str = ""
    wrong: str = ""  # candle trains this call, but its gradient is silently wrong: why

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GraphReport:
    tracer: str  # "torch.export" or "make_fx"
    ops: list[OpRecord] = field(default_factory=list)
    fallback_reason: str = ""

    @property
    def lacking(self) -> list[OpRecord]:
        """Ops on a gradient path that candle cannot differentiate."""
        return [r for r in self.ops if r.on_grad_path and not r.ok]

    @property
    def wrong(self) -> list[OpRecord]:
        """Ops on a gradient path whose candle backward runs but gives a wrong gradient."""
        return [r for r in self.ops if r.on_grad_path and r.ok and r.wrong]

    def summary(self) -> list[dict[str, Any]]:
        """One row per (op, class, outcome), with counts, lacking ones first."""
        rows: dict[tuple, dict[str, Any]] = {}
        for r in self.ops:
            key = (r.name, r.cls, r.ok or not r.on_grad_path, r.reason, r.on_grad_path, r.wrong)
            row = rows.get(key)
            if row is None:
                row = rows[key] = {
                    "name": r.name, "class": r.cls, "count": 0, "on_grad_path": r.on_grad_path,
                    "ok": r.ok or not r.on_grad_path, "reason": r.reason, "warning": r.warning,
                    "wrong": r.wrong if r.on_grad_path else "", "where": [],
                }
            row["count"] += 1
            if r.where and r.where not in row["where"] and len(row["where"]) < 3:
                row["where"].append(r.where)
        return sorted(rows.values(), key=lambda row: (row["ok"], not row["wrong"], not row["on_grad_path"], row["name"]))

    def to_json(self) -> dict[str, Any]:
        return {
            "tracer": self.tracer,
            "fallback_reason": self.fallback_reason,
            "lacking": [r.to_json() for r in self.lacking],
            "wrong": [r.to_json() for r in self.wrong],
            "summary": self.summary(),
        }


def _info(value: Any) -> Any:
    val = value.meta.get("val") if hasattr(value, "meta") else None
    if val is not None and hasattr(val, "shape") and hasattr(val, "dtype"):
        try:
            return TensorInfo(tuple(int(s) for s in val.shape), str(val.dtype))
        except (TypeError, ValueError):  # symbolic sizes
            return TensorInfo((), str(val.dtype))
    if isinstance(value, (list, tuple)):
        return type(value)(_info(v) for v in value)
    return value


def _first_output(node: Any) -> TensorInfo | None:
    val = node.meta.get("val")
    if isinstance(val, (list, tuple)):
        val = val[0] if val else None
    if val is not None and hasattr(val, "shape"):
        try:
            return TensorInfo(tuple(int(s) for s in val.shape), str(val.dtype))
        except (TypeError, ValueError):
            return None
    return None


def _floating(val: Any) -> bool:
    """Floating point or complex: a gradient flows through an FFT's complex values (Autoformer)."""
    if isinstance(val, (list, tuple)):
        return any(_floating(v) for v in val)
    dtype = getattr(val, "dtype", None)
    return bool(dtype is not None and (getattr(dtype, "is_floating_point", False) or getattr(dtype, "is_complex", False)))


def bind_args(target: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Arguments of an OpOverload call by schema name (``self`` is called ``input``), defaults filled."""
    bound: dict[str, Any] = {}
    schema = getattr(target, "_schema", None)
    if schema is None:
        return bound
    for i, arg in enumerate(schema.arguments):
        if i < len(args):
            value = args[i]
        elif arg.name in kwargs:
            value = kwargs[arg.name]
        elif arg.has_default_value():
            value = arg.default_value
        else:
            value = None
        bound["input" if arg.name == "self" else arg.name] = _info(value)
    return bound


def _library_dirs() -> tuple[str, ...]:
    import os
    import sys

    torch = sys.modules.get("torch")
    return (os.path.dirname(torch.__file__) + os.sep,) if torch is not None and torch.__file__ else ()


def _where(node: Any) -> str:
    """The innermost frame of the node's stack trace outside torch itself (the user's call)."""
    trace = node.meta.get("stack_trace") or ""
    frames = _FRAME.findall(trace)
    skip = _library_dirs()
    user = [f for f in frames if not f[0].startswith(skip)] if skip else frames
    if not (user or frames):
        return ""
    path, line, _ = (user or frames)[-1]
    return f"{path}:{line}"


def _op_name(target: Any) -> str | None:
    """``aten::add.Tensor`` for an OpOverload; None for graph bookkeeping (getitem, sym ops)."""
    if target is operator.getitem or getattr(target, "__module__", "") in ("_operator", "operator"):
        return None
    schema = getattr(target, "_schema", None)
    if schema is not None:
        overload = f".{schema.overload_name}" if schema.overload_name else ""
        return f"{schema.name}{overload}"
    name = getattr(target, "__name__", None) or str(target)
    return f"python::{name}"


def classify_node(node: Any, on_grad_path: bool) -> OpRecord | None:
    op = _op_name(node.target)
    if op is None:
        return None
    namespace, _, rest = op.partition("::")
    entry = lookup(rest)
    if entry.name in _IGNORED:
        return None
    if namespace not in ("aten", "prims", "torchvision"):
        entry = OpEntry(rest.split(".")[0], NOT_IN_TABLE)
    record = OpRecord(op=op, name=entry.name, cls=entry.cls, on_grad_path=on_grad_path, ok=True,
                      warning=entry.warning, where=_where(node))
    if entry.cls == BACKWARD:
        record.reason = entry.note
    elif entry.cls == CONDITIONAL and entry.condition in CONDITIONS:
        args = bind_args(node.target, tuple(node.args), dict(node.kwargs))
        args["__op__"] = entry.name
        outcome = CONDITIONS[entry.condition](args, _first_output(node))
        record.ok = outcome.ok
        record.reason = outcome.reason
        record.warning = outcome.warning or (entry.warning if outcome.ok else "")
        if outcome.ok and outcome.wrong:
            record.wrong = record.warning
    elif entry.cls == NOT_IN_TABLE:
        record.ok = False
        record.reason = "not in the candle op table: check by hand"
    else:
        record.ok = False
        record.reason = entry.note
    if not on_grad_path:
        record.warning = record.wrong = ""
    return record


def _conv1d_operands_in_context(node: Any, record: OpRecord, marked: set[str]) -> None:
    """A conv1d's wrong candle gradients are the weight's, and where it is unpadded the input's:
    keep only those of operands on a gradient path (conditions.conv1d_wrong_on_path). A frozen
    feature extractor's conv (Wav2Vec2) has no weight gradient to get wrong, a first layer on the
    raw input no input gradient."""
    weight_on = len(node.args) > 1 and getattr(node.args[1], "name", None) in marked
    input_on = bool(node.args) and getattr(node.args[0], "name", None) in marked
    text = conv1d_wrong_on_path(record.wrong, weight_on, input_on)
    if text is not None and text != record.wrong:
        record.wrong = text
        record.warning = text or record.warning


def _grad_users(node: Any, marked: set[str]) -> list[Any]:
    """The consumers that send a gradient back to ``node``: ops on a gradient path, and the output."""
    return [u for u in node.users if u.name in marked or u.op == "output"]


def wrong_in_context(node: Any, record: OpRecord, marked: set[str]) -> str:
    """The wrong-gradient cases that depend on the rest of the graph (optable ``wrong_gradient``)."""
    when = lookup(record.name).wrong_gradient
    first = node.args[0] if node.args else None
    if when == "always":
        return record.warning or "candle's gradient for this op is wrong (measured)"
    if when == "destination" and getattr(first, "name", None) in marked:
        return record.warning or "candle's gradient for the scattered-into tensor is wrong"
    if when == "shared_input" and getattr(first, "name", None) in marked:
        others = [u for u in _grad_users(first, marked) if u is not node]
        if others:
            return ("candle's nearest backward overwrites the gradient its input gets from its other "
                    f"consumer(s) ({', '.join(u.name for u in others[:3])}) instead of adding to it "
                    "(order dependent; measured: docs/candle-measured.md)")
    return ""


# Ops whose result takes a gradient from their first argument only: the second gives a dtype or a
# shape (`torch.arange(h).type_as(x)` builds a grid that no gradient reaches).
_GRADIENT_FROM_FIRST_ONLY = frozenset({"type_as", "expand_as", "view_as", "reshape_as"})


def grad_path_nodes(graph: Any, grad_sources: Iterable[str]) -> set[str]:
    """Names of the nodes on a gradient path: floating-point values that depend on a grad source
    and that the output depends on through ops passing a gradient back. A value that only feeds
    an integer result (VQ-VAE's `cdist` whose `argmin` picks a codebook row) or nothing sends no
    gradient: candle never runs its backward."""
    return _reaching_the_output(graph, _depending_on_sources(graph, grad_sources))


def _depending_on_sources(graph: Any, grad_sources: Iterable[str]) -> set[str]:
    """Names of the nodes whose value depends on a grad source and is floating point."""
    sources = set(grad_sources)
    marked: set[str] = set()
    for node in graph.nodes:
        if node.op == "placeholder":
            if node.name in sources:
                marked.add(node.name)
            continue
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        if not any(inp.name in marked for inp in node.all_input_nodes):
            continue
        name = _op_name(node.target) if node.op == "call_function" else None
        if name is not None and lookup(name.partition("::")[2] or name).no_grad:
            continue
        if _without_gradient(node):
            continue
        if name is not None and (name.partition("::")[2] or name).partition(".")[0] in _GRADIENT_FROM_FIRST_ONLY:
            first = node.args[0] if node.args else None
            if getattr(first, "name", None) not in marked:
                continue
        val = node.meta.get("val")
        if val is None or _floating(val):
            marked.add(node.name)
    return marked


def _reaching_the_output(graph: Any, marked: set[str]) -> set[str]:
    """The marked nodes that a marked consumer or the output takes a gradient from. An in-place op
    (and what it mutates) always counts: a later read may see the mutation through an alias the
    graph does not link to it."""
    reaching: set[str] = set()
    for node in reversed(list(graph.nodes)):
        if node.name not in marked:
            continue
        if _mutates(node) or any(_sends_gradient(user, node, reaching) for user in node.users):
            reaching.add(node.name)
    return reaching


def _sends_gradient(user: Any, node: Any, reaching: set[str]) -> bool:
    if user.op == "output" or (_mutates(user) and user.args and user.args[0] is node):
        return True
    if user.name not in reaching:
        return False
    name = _op_name(user.target) if user.op == "call_function" else None
    if name is not None and (name.partition("::")[2] or name).partition(".")[0] in _GRADIENT_FROM_FIRST_ONLY:
        return bool(user.args) and user.args[0] is node
    return True


def _mutates(node: Any) -> bool:
    schema = getattr(node.target, "_schema", None)
    return bool(schema is not None and schema.is_mutable)


def _without_gradient(node: Any) -> bool:
    """A `with torch.no_grad():` block torch.export keeps as one call of a subgraph (spectral
    norm's power iteration): nothing it computes carries a gradient."""
    return getattr(node.target, "__name__", "") == "wrap_with_set_grad_enabled" and bool(node.args) and node.args[0] is False


def _records_without_gradient(graph: Any, node: Any) -> list[OpRecord]:
    """The ops of a no-grad block's subgraph, each off every gradient path (candle runs their forward)."""
    owner = getattr(graph, "owning_module", None)
    target = getattr(node.args[1], "target", None) if len(node.args) > 1 else None
    sub = getattr(owner, target, None) if owner is not None and isinstance(target, str) else None
    if sub is None or not hasattr(sub, "graph"):
        return []
    records = []
    for inner in sub.graph.nodes:
        if inner.op != "call_function":
            continue
        if _without_gradient(inner):
            records.extend(_records_without_gradient(sub.graph, inner))
        elif (record := classify_node(inner, False)) is not None:
            records.append(record)
    return records


def _composite(target: Any) -> bool:
    """Whether torch implements an op as a composition of other ATen ops (a
    CompositeImplicitAutograd kernel): make_fx, which ``--candle`` and candle ports trace with,
    never keeps it, only what it decomposes into."""
    import torch

    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(target.name(), "CompositeImplicitAutograd"))
    except (AttributeError, RuntimeError):
        return False


def _stand_in(value: Any) -> Any:
    """A real tensor shaped like a graph value (zeros: only which ops run matters), or the value."""
    import torch

    val = value.meta.get("val") if hasattr(value, "meta") else None
    if isinstance(val, torch.Tensor):
        return torch.zeros(tuple(int(s) for s in val.shape), dtype=val.dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_stand_in(v) for v in value)
    return value


def decomposed_records(node: Any) -> list[OpRecord] | None:
    """The ops a composite op (``_composite``) decomposes into on this node's shapes, classified,
    those on a gradient path from its floating-point tensor arguments marked; None when it is not
    composite or cannot be decomposed here. ``torch.repeat_interleave(x, 2, dim)`` is
    unsqueeze/expand/clone/view, which candle trains, though candle has no repeat_interleave."""
    if not _composite(node.target):
        return None
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    args, kwargs = _stand_in(tuple(node.args)), {k: _stand_in(v) for k, v in node.kwargs.items()}
    tensors = [a for a in args if isinstance(a, torch.Tensor)]

    def run(*flat):
        it = iter(flat)
        return node.target(*[next(it) if isinstance(a, torch.Tensor) else a for a in args], **kwargs)

    try:
        gm = make_fx(run)(*tensors)
    except Exception:  # noqa: BLE001 - symbolic or data-dependent shapes: keep the table's class
        return None
    sources = [p.name for p, t in zip((n for n in gm.graph.nodes if n.op == "placeholder"), tensors)
               if t.is_floating_point()]
    marked = grad_path_nodes(gm.graph, sources)
    records = []
    for inner in gm.graph.nodes:
        if inner.op == "call_function" and (record := classify_node(inner, inner.name in marked)) is not None:
            records.append(record)
    return records


def _judged_by_decomposition(node: Any, record: OpRecord) -> None:
    """An op the table says candle cannot train, that torch decomposes into ops candle trains,
    trains in candle (as make_fx traces it): judged by its parts, in place."""
    parts = decomposed_records(node)
    if parts is None:
        return
    on_path = [p for p in parts if p.on_grad_path]
    if any(p.name == record.name for p in on_path) or not all(p.ok for p in on_path):
        return  # it decomposes into itself, or into ops candle cannot train either
    names = ", ".join(dict.fromkeys(p.name for p in parts)) or "no op"
    record.cls, record.ok = BACKWARD, True
    record.reason = f"torch decomposes it into {names} (as make_fx traces it), which candle trains"
    record.wrong = "; ".join(dict.fromkeys(p.wrong for p in on_path if p.wrong))
    record.warning = record.wrong or record.warning


def classify_graph(graph: Any, grad_sources: Iterable[str], tracer: str, fallback_reason: str = "") -> GraphReport:
    marked = grad_path_nodes(graph, grad_sources)
    report = GraphReport(tracer=tracer, fallback_reason=fallback_reason)
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if _without_gradient(node):
            report.ops.extend(_records_without_gradient(graph, node))
            continue
        record = classify_node(node, node.name in marked)
        if record is None:
            continue
        if record.on_grad_path and not record.ok and record.cls in (FORWARD_ONLY, NO_OP):
            _judged_by_decomposition(node, record)
        if record.on_grad_path and record.ok and not record.wrong:
            record.wrong = wrong_in_context(node, record, marked)
        elif record.wrong:
            _conv1d_operands_in_context(node, record, marked)
        report.ops.append(record)
    return report


__all__ = ["OpRecord", "GraphReport", "classify_graph", "classify_node", "grad_path_nodes", "bind_args",
           "LACKS_BACKWARD", "BACKWARD", "CONDITIONAL"]
