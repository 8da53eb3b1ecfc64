"""The forward graph of the runtime op touches the input only through ops candle can differentiate.

Traced with make_fx; every node whose value depends on the input (data flow from the placeholder)
must be an aten op in ALLOWED. Ops on tensors built from sizes alone (indices, weights) are free:
in candle they are computed on the host and uploaded as constants.
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from candle_port.runtime import interpolate, upsample_bilinear2d, upsample_linear1d

# aten op -> the candle op (with a backward, ../shared/candle-ops.md section 2.1) it maps to
ALLOWED = {
    "index_select": "index_select (Op::IndexSelect)",
    "gather": "gather (Op::Gather)",
    "mm": "matmul (Op::Matmul)",
    "bmm": "matmul (Op::Matmul)",
    "mul": "broadcast_mul (Op::Binary Mul)",
    "add": "broadcast_add (Op::Binary Add)",
    "div": "broadcast_div (Op::Binary Div; area divides window sums by constant widths)",
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
    "clone": "copy / contiguous (Op::Copy)",
    "_to_copy": "to_dtype (Op::ToDType)",
    "alias": "view (no op)",
}
FORBIDDEN_HINTS = ("upsample", "grid_sampler", "scatter", "interpolate", "index_put")

CASES_4D = [
    pytest.param(dict(scale_factor=2), None, torch.float32, False, id="x2-auto"),
    pytest.param(dict(scale_factor=2.5), None, torch.float32, False, id="x2.5-auto"),
    pytest.param(dict(size=(7, 300)), None, torch.float32, False, id="size-long-w-gather"),
    pytest.param(dict(size=(300, 9)), None, torch.float32, False, id="size-long-h-band"),
    pytest.param(dict(size=(300, 300)), ("band", "bandlast"), torch.float32, False, id="band-left-bandlast"),
    pytest.param(dict(scale_factor=(0.5, 3.0)), ("matmul", "matmul"), torch.float32, False, id="dense"),
    pytest.param(dict(scale_factor=(1.7, 0.6)), ("band", "gather"), torch.float32, False, id="band-gather"),
    pytest.param(dict(scale_factor=1.5), ("index", "index"), torch.float32, False, id="index"),
    pytest.param(dict(scale_factor=4), ("periodic", "periodic"), torch.float32, False, id="periodic-x4"),
    pytest.param(dict(scale_factor=2), ("periodic", "periodic"), torch.float32, True, id="periodic-cl"),
    pytest.param(dict(size=(12, 10)), None, torch.float32, True, id="channels-last"),
    pytest.param(dict(size=(12, 10)), ("band", "band"), torch.float32, True, id="channels-last-band"),
    pytest.param(dict(size=(12, 10)), ("index", "index"), torch.float32, True, id="channels-last-index"),
    pytest.param(dict(scale_factor=2), None, torch.float16, False, id="fp16"),
    pytest.param(dict(scale_factor=2), None, torch.bfloat16, False, id="bf16"),
    pytest.param(dict(scale_factor=2), None, torch.float64, False, id="fp64"),
    pytest.param(dict(size=(5, 8)), None, torch.float32, False, id="identity"),
    pytest.param(dict(size=(5, 20)), None, torch.float32, False, id="one-axis"),
    pytest.param(dict(size=(1, 1)), None, torch.float32, False, id="to-1x1"),
    pytest.param(dict(size=(2, 3), antialias=True), None, torch.float32, False, id="aa-down"),
    pytest.param(dict(scale_factor=(0.4, 2.5), antialias=True), None, torch.float32, False, id="aa-down-up"),
    pytest.param(dict(size=(3, 300), antialias=True), None, torch.float32, False, id="aa-long-w"),
    pytest.param(dict(size=(2, 3), antialias=True), None, torch.float32, True, id="aa-channels-last"),
    pytest.param(dict(scale_factor=0.5, antialias=True), None, torch.float64, False, id="aa-fp64"),
    pytest.param(dict(size=(5, 3), antialias=True), None, torch.float32, False, id="aa-one-axis"),
]


def _tainted_ops(gm: torch.fx.GraphModule) -> set[str]:
    """Names (overload packets) of the ops whose inputs depend on the first placeholder."""
    tainted: set[torch.fx.Node] = set()
    ops: set[str] = set()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            tainted.add(node)
            continue
        if node.op != "call_function":
            continue
        deps = node.all_input_nodes
        if any(d in tainted for d in deps):
            tainted.add(node)
            target = node.target
            name = getattr(getattr(target, "overloadpacket", None), "__name__", None) or str(target)
            ops.add(name)
    return ops


def _all_ops(gm: torch.fx.GraphModule) -> set[str]:
    return {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}


@pytest.mark.parametrize(("kwargs", "methods", "dtype", "channels_last"), CASES_4D)
@pytest.mark.parametrize("align_corners", [False, True], ids=["ac-false", "ac-true"])
def test_forward_graph_uses_only_allowed_ops(kwargs, methods, dtype, channels_last, align_corners):
    x = torch.rand(2, 3, 5, 8, dtype=dtype)
    if "size" in kwargs and kwargs["size"][0] == 300:
        x = torch.rand(1, 2, 150, 9, dtype=dtype)
    elif "size" in kwargs and kwargs["size"][1] == 300:
        x = torch.rand(1, 2, 7, 150, dtype=dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)

    def f(t):
        return upsample_bilinear2d(t, align_corners=align_corners, _methods=methods, **kwargs)

    gm = make_fx(f)(x)
    used = _tainted_ops(gm)
    assert used, "nothing traced"
    assert used <= set(ALLOWED), f"not candle-differentiable: {sorted(used - set(ALLOWED))}"
    assert not any(h in op for op in _all_ops(gm) for h in FORBIDDEN_HINTS)
    # eager with a gradient runs the traced composition (without one, a faster one that agrees
    # to a few ulps may run: tests/runtime/test_runtime_resize_paths.py)
    torch.testing.assert_close(gm(x), f(x.clone().requires_grad_()).detach(), rtol=0, atol=0)


@pytest.mark.parametrize(
    "kwargs",
    [dict(size=17), dict(scale_factor=0.5), dict(size=200), dict(scale_factor=3.3)],
    ids=["size", "down", "long", "x3.3"],
)
def test_linear1d_graph_uses_only_allowed_ops(kwargs):
    x = torch.rand(2, 3, 150)
    gm = make_fx(lambda t: upsample_linear1d(t, **kwargs))(x)
    assert _tainted_ops(gm) <= set(ALLOWED)


@pytest.mark.parametrize("antialias", [False, True], ids=["plain", "antialias"])
def test_interpolate_bilinear_is_traced_through_our_op(antialias):
    x = torch.rand(1, 2, 6, 6)
    gm = make_fx(lambda t: interpolate(t, scale_factor=2, mode="bilinear", antialias=antialias))(x)
    assert _tainted_ops(gm) <= set(ALLOWED)
    assert not any("upsample" in op for op in _all_ops(gm))


MODE_CASES = [
    pytest.param("nearest", (2, 3, 7), dict(scale_factor=2.5), False, id="nearest-1d"),
    pytest.param("nearest", (2, 3, 5, 6), dict(scale_factor=(1.7, 0.6)), False, id="nearest-2d"),
    pytest.param("nearest", (2, 3, 5, 6), dict(size=(11, 4)), True, id="nearest-2d-channels-last"),
    pytest.param("nearest", (1, 2, 3, 4, 5), dict(size=(7, 2, 9)), True, id="nearest-3d-channels-last"),
    pytest.param("nearest-exact", (2, 3, 5, 6), dict(scale_factor=2.3), False, id="nearest-exact-2d"),
    pytest.param("nearest-exact", (1, 2, 3, 4, 5), dict(scale_factor=(0.7, 1.5, 2)), False, id="nearest-exact-3d"),
    pytest.param("bicubic", (2, 3, 5, 6), dict(size=(9, 4)), False, id="bicubic"),
    pytest.param("bicubic", (2, 3, 5, 6), dict(scale_factor=2.2, align_corners=True), True, id="bicubic-ac-channels-last"),
    pytest.param("bicubic", (2, 3, 9, 8), dict(scale_factor=0.4, antialias=True), False, id="bicubic-aa"),
    pytest.param("trilinear", (1, 2, 3, 4, 5), dict(scale_factor=(1.5, 0.5, 2)), False, id="trilinear"),
    pytest.param("trilinear", (1, 2, 3, 4, 150), dict(size=(5, 5, 300)), True, id="trilinear-long-channels-last"),
    pytest.param("area", (2, 3, 7), dict(size=3), False, id="area-1d"),
    pytest.param("area", (2, 3, 7, 9), dict(size=(3, 4)), True, id="area-2d-channels-last"),
    pytest.param("area", (1, 2, 5, 7, 9), dict(size=(2, 3, 4)), False, id="area-3d"),
]


# antialias is float32 / float64 only (as torch's CPU kernel), so it is traced in float32 alone.
MODE_DTYPE_CASES = [
    pytest.param(*case.values, dtype, id=f"{case.id}-{name}")
    for case in MODE_CASES
    for dtype, name in ((torch.float32, "fp32"), (torch.float16, "fp16"))
    if dtype == torch.float32 or not case.values[2].get("antialias")
]


@pytest.mark.parametrize(("mode", "shape", "kwargs", "channels_last", "dtype"), MODE_DTYPE_CASES)
def test_every_mode_uses_only_allowed_ops(mode, shape, kwargs, channels_last, dtype):
    x = torch.rand(shape, dtype=dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)

    def f(t):
        return interpolate(t, mode=mode, **kwargs)

    gm = make_fx(f)(x)
    used = _tainted_ops(gm)
    assert used, "nothing traced"
    assert used <= set(ALLOWED), f"not candle-differentiable: {sorted(used - set(ALLOWED))}"
    assert not any(h in op for op in _all_ops(gm) for h in FORBIDDEN_HINTS)
    # eager with a gradient runs the traced composition (without one, a faster one that agrees
    # to a few ulps may run: tests/runtime/test_runtime_resize_paths.py)
    torch.testing.assert_close(gm(x), f(x.clone().requires_grad_()).detach(), rtol=0, atol=0)
