"""Trace a model's forward into ATen ops: torch.export first, make_fx when export fails."""

from __future__ import annotations

from typing import Any, Sequence

from .classify import GraphReport, classify_graph


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def trace_with_export(model: Any, inputs: Sequence[Any]) -> GraphReport:
    import torch
    from torch.export.graph_signature import InputKind

    ep = torch.export.export(model, tuple(inputs), strict=False)
    floating_inputs = iter([x.is_floating_point() for x in inputs])
    sources = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.PARAMETER:
            sources.append(spec.arg.name)
        elif spec.kind == InputKind.USER_INPUT and next(floating_inputs, False):
            sources.append(spec.arg.name)
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
    n_params, n_buffers = len(params), len(buffers)
    sources = [n.name for n in placeholders[:n_params]]
    for node, x in zip(placeholders[n_params + n_buffers :], inputs):
        if x.is_floating_point():
            sources.append(node.name)
    return classify_graph(gm.graph, sources, "make_fx")


def trace_model(model: Any, inputs: Sequence[Any]) -> GraphReport:
    """Classified forward graph; says which tracer produced it and why export was not used."""
    try:
        return trace_with_export(model, inputs)
    except Exception as exc:
        reason = _first_line(exc)
    report = trace_with_make_fx(model, inputs)
    report.fallback_reason = f"torch.export failed ({reason})"
    return report
