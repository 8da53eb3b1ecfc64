"""The pooling runtime touches the input only through ops candle can differentiate.

Traced with make_fx, as tests/runtime/test_runtime_graph.py does for resize: every node whose value
depends on the input must be an aten op in ALLOWED. Ops on tensors built from sizes alone (index
tables, window matrices, divisors) are free: candle computes them on the host as constants. Ops
after ``detach`` carry no gradient in candle either (argmax / comparisons give integers); they are
allowed, but no max-type reduction may touch the input on the gradient path.

torch's make_fx drops ``detach`` nodes, so the gradient path is found from the graph itself: the
nodes that depend on the input and whose floating value reaches a floating output through
floating nodes only. A value that only feeds comparisons (bool) or integer index arithmetic
never carries a gradient, in torch or in candle (the max pools' choice of the element).
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from candle_port.runtime import pooling as P
from candle_port.runtime import pooling_modules as M

# aten op -> the candle op it maps to (../shared/candle-ops.md section 2.1)
ALLOWED = {
    "index_select": "index_select (Op::IndexSelect)",
    "gather": "gather (Op::Gather; backward scatter_add into zeros, correct)",
    "mm": "matmul (Op::Matmul)",
    "bmm": "matmul (Op::Matmul)",
    "mul": "broadcast_mul (Op::Binary Mul)",
    "add": "broadcast_add (Op::Binary Add)",
    "div": "broadcast_div (Op::Binary Div)",
    "expand": "broadcast_as (Op::Broadcast)",
    "view": "reshape (Op::Reshape)",
    "_unsafe_view": "reshape (Op::Reshape)",
    "reshape": "reshape (Op::Reshape)",
    "unsqueeze": "unsqueeze (Op::Reshape)",
    "squeeze": "squeeze (Op::Reshape)",
    "permute": "permute (Op::Permute)",
    "transpose": "transpose (Op::Transpose)",
    "t": "t (Op::Transpose)",
    "slice": "narrow (Op::Narrow)",
    "constant_pad_nd": "pad_with_zeros (cat with zeros; backward narrow, exact)",
    "clone": "copy / contiguous (Op::Copy)",
    "_to_copy": "to_dtype (Op::ToDType)",
    "alias": "view (no op)",
    # no gradient: the choice of the max-pool element
    "detach": "detach (no op recorded)",
    "argmax": "argmax_keepdim (Reduce ArgMax, never recorded)",
    "isnan": "ne(x, x) (Op::Cmp, u8, pruned)",
    "where": "where_cond on integer indices (no gradient)",
    "amax": "max_keepdim (Reduce Max) of the detached windows: the maximum to compare with",
    "eq": "eq (Op::Cmp, u8): which window elements equal the maximum",
    "ne": "ne (Op::Cmp, u8): x != x marks the NaN of a window",
    "gt": "gt (Op::Cmp, u8) on integer codes",
    "sub": "broadcast_sub on integer codes (u8 / u32 / i64)",
    "rsub": "broadcast_sub on integer codes (scalar minus codes)",
    "sum": "sum_keepdim (Reduce Sum; backward broadcasts, exact): tiled avg windows",
    "cat": "cat of per-batch-chunk integer choices",
}
FORBIDDEN_HINTS = ("pool", "scatter", "index_put", "im2col", "unfold")
FORBIDDEN = {"max", "maximum", "min", "amin", "sort", "topk"}  # anywhere in the graph
# ops allowed only off the gradient path (they would give candle a wrong or no gradient otherwise:
# candle's Reduce Max gives every tied element the full gradient)
NO_GRAD_ONLY = {"argmax", "isnan", "where", "amax", "eq", "ne", "gt", "rsub"}

CASES = [
    pytest.param(lambda x: P.max_pool2d(x, 3, 2, 1, return_indices=True), (2, 3, 9, 8), False, id="max2d"),
    pytest.param(lambda x: P.max_pool2d(x, 3, 2, 1), (2, 3, 9, 8), True, id="max2d-channels-last"),
    pytest.param(lambda x: P.max_pool2d(x, (2, 3), 1, 1, 2, True), (2, 3, 9, 8), False, id="max2d-dilated-ceil"),
    pytest.param(lambda x: P.max_pool2d(x, 2), (3, 9, 8), False, id="max2d-unbatched"),
    pytest.param(lambda x: P.max_pool1d(x, 3, 2, 1), (2, 3, 9), False, id="max1d"),
    pytest.param(lambda x: P.avg_pool2d(x, 3, 2, 1, True, False), (2, 3, 9, 8), False, id="avg2d"),
    pytest.param(lambda x: P.avg_pool2d(x, 3, 1, 1, divisor_override=2), (2, 3, 9, 8), True, id="avg2d-channels-last"),
    pytest.param(lambda x: P.avg_pool2d(x.half(), 2), (2, 3, 9, 8), False, id="avg2d-half"),
    pytest.param(lambda x: P.avg_pool1d(x, 3, 2, 1), (2, 3, 9), False, id="avg1d"),
    pytest.param(lambda x: P.adaptive_avg_pool2d(x, (4, 3)), (2, 3, 9, 8), False, id="adaptive-avg2d"),
    pytest.param(lambda x: P.adaptive_avg_pool2d(x, 1), (2, 3, 9, 8), True, id="adaptive-avg2d-global-cl"),
    pytest.param(lambda x: P.adaptive_avg_pool1d(x, 4), (2, 3, 9), False, id="adaptive-avg1d"),
    pytest.param(lambda x: P.adaptive_max_pool2d(x, (4, 3), True), (2, 3, 9, 8), False, id="adaptive-max2d"),
    pytest.param(lambda x: P.adaptive_max_pool1d(x, 4), (2, 3, 9), False, id="adaptive-max1d"),
    pytest.param(M.MaxPool2d(3, 2, 1), (2, 3, 9, 8), False, id="module-MaxPool2d"),
    pytest.param(M.AdaptiveAvgPool2d(7), (2, 3, 9, 8), False, id="module-AdaptiveAvgPool2d"),
]


def _name(target) -> str:
    return getattr(getattr(target, "overloadpacket", None), "__name__", None) or str(target)


def _floating(node: torch.fx.Node) -> bool:
    """Whether the node's value is floating point: integer and bool results (argmax, isnan, the
    indices they pick) carry no gradient in candle (sorted_nodes prunes them), whether or not the
    trace kept the ``detach`` before them (torch 2.14's make_fx drops it)."""
    val = node.meta.get("val")
    vals = val if isinstance(val, (tuple, list)) else (val,)
    tensors = [v for v in vals if isinstance(v, torch.Tensor)]
    return not tensors or any(v.is_floating_point() for v in tensors)


def _tainted(gm: torch.fx.GraphModule) -> tuple[set[str], set[str]]:
    """Names of the ops whose inputs depend on the first placeholder: (on the gradient path,
    off it). On the path: floating, and its value reaches a floating output through floating
    nodes only."""
    dep: set[torch.fx.Node] = set()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            if not dep:  # the first placeholder is the input
                dep.add(node)
        elif node.op == "call_function" and any(d in dep for d in node.all_input_nodes):
            dep.add(node)
    on_path: set[torch.fx.Node] = set()
    stack = [n for n in gm.graph.nodes if n.op == "output"]
    while stack:
        node = stack.pop()
        for d in node.all_input_nodes:
            if d not in on_path and d.op == "call_function" and _floating(d) and _name(d.target) != "detach":
                on_path.add(d)
                stack.append(d)
    grad_ops: set[str] = set()
    nograd_ops: set[str] = set()
    for node in gm.graph.nodes:
        if node.op != "call_function" or node not in dep:
            continue
        (grad_ops if node in on_path else nograd_ops).add(_name(node.target))
    return grad_ops, nograd_ops


@pytest.mark.parametrize(("fn", "shape", "channels_last"), CASES)
def test_forward_graph_uses_only_allowed_ops(fn, shape, channels_last):
    x = torch.rand(shape, dtype=torch.float64)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    gm = make_fx(fn)(x)
    grad_ops, nograd_ops = _tainted(gm)
    assert grad_ops, "nothing traced"
    on_path = set(ALLOWED) - NO_GRAD_ONLY
    assert grad_ops <= on_path, f"on the gradient path: {sorted(grad_ops - on_path)}"
    assert nograd_ops <= set(ALLOWED), f"not candle ops: {sorted(nograd_ops - set(ALLOWED))}"
    all_ops = {_name(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert not any(h in op for op in all_ops for h in FORBIDDEN_HINTS), sorted(all_ops)
    assert not all_ops & FORBIDDEN, sorted(all_ops & FORBIDDEN)
    got, want = gm(x), fn(x)
    if isinstance(want, tuple):
        assert all(torch.equal(a, b) for a, b in zip(got, want))
    else:
        assert torch.equal(got, want)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_torch_export_records_the_table_path_without_view_plan_constants(channels_last, monkeypatch):
    """Under torch.export (non-strict) the max pool records the table path; the strided-view plan
    (used outside tracing, for NCHW and channels_last input) is neither built nor recorded: the
    graph is the one traced with no view plan at all."""

    class Pool(torch.nn.Module):
        def forward(self, x):
            return P.max_pool2d(x, 3, 2, 1)

    def ops():
        x = torch.randn(1, 2, 6, 6).contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
        graph = torch.export.export(Pool(), (x.requires_grad_(),), strict=False).graph
        return [str(n.target) for n in graph.nodes if n.op == "call_function"]

    traced = ops()
    assert any("gather" in op for op in traced)
    assert not any("lerp" in op or "maximum" in op for op in traced)  # the view path's ops
    monkeypatch.setattr(P, "_pool_max_view_plan", lambda *args: None)
    assert traced == ops()
