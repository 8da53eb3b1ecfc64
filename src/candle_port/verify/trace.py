"""Trace a model's forward into ATen ops: torch.export first, make_fx when export fails.

Gradient paths start at the trainable parameters only: candle records an op only on a path from a
``Var`` (candle-ops.md section 2), so resizing the raw input, or a frozen parameter
(``requires_grad=False``, diffusers' Gaussian Fourier timestep projection), never needs a candle
backward.
"""

from __future__ import annotations

from typing import Any, Sequence

from .classify import GraphReport, classify_graph


class TraceError(RuntimeError):
    """Neither tracer could trace the forward."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def trace_with_export(model: Any, inputs: Sequence[Any]) -> GraphReport:
    import torch
    from torch.export.graph_signature import InputKind

    ep = torch.export.export(model, tuple(inputs), strict=False)
    # every name of a parameter a layer is registered under twice (neuralforecast's CausalConv1d keeps
    # `self.conv` and `Sequential(self.conv, ...)`): the export may use either
    trainable = {name for name, p in model.named_parameters(remove_duplicate=False) if p.requires_grad}
    sources = [spec.arg.name for spec in ep.graph_signature.input_specs
               if spec.kind == InputKind.PARAMETER and spec.target in trainable]
    return classify_graph(ep.graph, sources, "torch.export")


def trace_with_make_fx(model: Any, inputs: Sequence[Any]) -> GraphReport:
    from torch.func import functional_call
    from torch.fx.experimental.proxy_tensor import make_fx

    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())

    def forward(params, buffers, *args):
        return functional_call(model, {**params, **buffers}, args)

    gm = make_fx(forward)(params, buffers, *inputs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    sources = [n.name for n, p in zip(placeholders, params.values()) if p.requires_grad]
    return classify_graph(gm.graph, sources, "make_fx")


def trace_model(model: Any, inputs: Sequence[Any]) -> GraphReport:
    """Classified forward graph; says which tracer produced it and why export was not used."""
    try:
        return trace_with_export(model, inputs)
    except Exception as exc:
        reason = _first_line(exc)
        branch = _value_branch(exc)
    try:
        report = trace_with_make_fx(model, inputs)
    except Exception as exc:
        failed = f"torch.export failed ({reason}); make_fx failed ({_first_line(exc)})"
        if branch:  # the tracers' own messages name their internals, not the line to look at
            failed = (f"the forward branches on a tensor's value at {branch}, which neither torch.export nor "
                      f"make_fx can follow (data-dependent control flow)"
                      + ("; --eval traces it if that branch is for training only" if model.training else ""))
        raise TraceError(failed) from exc
    report.fallback_reason = f"torch.export failed ({reason})"
    return report


def _value_branch(exc: BaseException) -> str:
    """`file:line (code)` of the model's own line whose data-dependent branch stopped torch.export,
    or "" for another failure."""
    text = f"{type(exc).__name__} {exc}"
    if "DataDependent" not in text and "data-dependent" not in text:
        return ""
    return model_line(exc)


def model_line(exc: BaseException) -> str:
    """`file:line (code)` of the innermost frame of `exc` in the user's code (graph_export's
    user_frame: not torch's, candle-port's or the standard library's): the model's own line that a
    tracer stopped at ("" when there is none)."""
    import traceback

    from .graph_export import frames_of, user_frame

    frame = user_frame(frames_of(traceback.extract_tb(exc.__traceback__)))
    if frame is None:
        return ""
    return frame.where() + (f" (`{frame.code}`)" if frame.code else "")
