"""Which path a runtime op takes (runtime/_dispatch.py): torch's own kernel in plain eager mode,
the composition under any tracer, under ``composition()`` and under ``CANDLE_PORT_RUNTIME``.

tests/conftest.py sets ``CANDLE_PORT_RUNTIME=composition`` for the whole suite (so that the
parity tests judge the composition); these tests unset it to see the default choice.
"""

from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import candle_port.runtime as R
from candle_port.runtime._dispatch import use_native

ENV = "CANDLE_PORT_RUNTIME"
CL = torch.channels_last


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)


def _x(shape=(2, 3, 8, 8), fmt=CL):
    torch.manual_seed(0)
    return torch.randn(shape).contiguous(memory_format=fmt).requires_grad_()


# (runtime call, torch call, torch's backward node): the eager path is torch's kernel itself
OPS = [
    pytest.param(lambda x: R.max_pool2d(x, 3, 2, 1), lambda x: F.max_pool2d(x, 3, 2, 1),
                 "MaxPool2DWithIndicesBackward0", id="max_pool2d"),
    pytest.param(lambda x: R.MaxPool2d(2)(x), lambda x: F.max_pool2d(x, 2), "MaxPool2DWithIndicesBackward0",
                 id="MaxPool2d-module"),
    pytest.param(lambda x: R.max_pool2d(x, 2, return_indices=True)[0], lambda x: F.max_pool2d(x, 2),
                 "MaxPool2DWithIndicesBackward0", id="max_pool2d-indices"),
    pytest.param(lambda x: R.avg_pool2d(x, 3, 1, 1), lambda x: F.avg_pool2d(x, 3, 1, 1), "AvgPool2DBackward0",
                 id="avg_pool2d"),
    pytest.param(lambda x: R.adaptive_avg_pool2d(x, 3), lambda x: F.adaptive_avg_pool2d(x, 3),
                 "AdaptiveAvgPool2DBackward0", id="adaptive_avg_pool2d"),
    pytest.param(lambda x: R.AdaptiveMaxPool2d(4)(x), lambda x: F.adaptive_max_pool2d(x, 4),
                 "AdaptiveMaxPool2DBackward0", id="AdaptiveMaxPool2d-module"),
    pytest.param(lambda x: R.max_pool1d(x.flatten(2), 3), lambda x: F.max_pool1d(x.flatten(2), 3),
                 "MaxPool2DWithIndicesBackward0", id="max_pool1d"),
    pytest.param(lambda x: R.interpolate(x, scale_factor=2, mode="bilinear"),
                 lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), "UpsampleBilinear2DBackward0",
                 id="bilinear"),
    pytest.param(lambda x: R.Upsample(scale_factor=2, mode="bilinear", align_corners=True)(x),
                 lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
                 "UpsampleBilinear2DBackward0", id="Upsample-module"),
    pytest.param(lambda x: R.interpolate(x, scale_factor=2), lambda x: F.interpolate(x, scale_factor=2),
                 "UpsampleNearest2DBackward0", id="nearest"),
    pytest.param(lambda x: R.max_pool3d(x.unsqueeze(2).expand(-1, -1, 4, -1, -1), 2),
                 lambda x: F.max_pool3d(x.unsqueeze(2).expand(-1, -1, 4, -1, -1), 2),
                 "MaxPool3DWithIndicesBackward0", id="max_pool3d"),
    pytest.param(lambda x: R.avg_pool3d(x.unsqueeze(2).expand(-1, -1, 4, -1, -1), 2),
                 lambda x: F.avg_pool3d(x.unsqueeze(2).expand(-1, -1, 4, -1, -1), 2), "AvgPool3DBackward0",
                 id="avg_pool3d"),
    pytest.param(lambda x: R.conv1d(x.flatten(2), torch.ones(4, 3, 3)),
                 lambda x: F.conv1d(x.flatten(2), torch.ones(4, 3, 3)), "ConvolutionBackward0", id="conv1d"),
    pytest.param(lambda x: R.conv_transpose2d(x, torch.ones(3, 2, 3, 3), stride=2, groups=1),
                 lambda x: F.conv_transpose2d(x, torch.ones(3, 2, 3, 3), stride=2), "ConvolutionBackward0",
                 id="conv_transpose2d"),
    pytest.param(lambda x: R.grid_sample(x, torch.zeros(2, 4, 4, 2), align_corners=False),
                 lambda x: F.grid_sample(x, torch.zeros(2, 4, 4, 2), align_corners=False),
                 "GridSampler2DBackward0", id="grid_sample"),
]


def _backward_nodes(y) -> set[str]:
    names, stack = set(), [y.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is not None and fn.name() not in names:
            names.add(fn.name())
            stack += [f for f, _ in fn.next_functions]
    return names


@pytest.mark.parametrize("ours, theirs, node", OPS)
def test_eager_runs_torchs_kernel(ours, theirs, node):
    x = _x()
    y = ours(x)
    assert node in _backward_nodes(y)
    assert _backward_nodes(y) == _backward_nodes(theirs(x))
    torch.testing.assert_close(y, theirs(x), rtol=0, atol=0)
    assert y.stride() == theirs(x).stride()


@pytest.mark.parametrize("ours, theirs, node", OPS)
def test_composition_switch_runs_the_composition(ours, theirs, node):
    x = _x()
    with R.composition():
        y = ours(x)
    assert _backward_nodes(y) != _backward_nodes(theirs(x))
    if node != "ConvolutionBackward0":  # the convolutions' compositions are conv2d too
        assert node not in _backward_nodes(y)
    torch.testing.assert_close(y, theirs(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("value, native", [
    pytest.param("composition", False, id="composition"),
    pytest.param("COMPOSITION ", False, id="case-and-space"),
    pytest.param("auto", True, id="auto"),
    pytest.param("", True, id="empty"),
])
def test_environment_variable(monkeypatch, value, native):
    monkeypatch.setenv(ENV, value)
    assert use_native(_x()) is native
    assert ("MaxPool2DWithIndicesBackward0" in _backward_nodes(R.max_pool2d(_x(), 2))) is native


def test_unknown_environment_value_raises(monkeypatch):
    monkeypatch.setenv(ENV, "fast")
    with pytest.raises(ValueError, match="CANDLE_PORT_RUNTIME='fast'"):
        R.max_pool2d(_x(), 2)


def test_composition_false_overrides_the_variable(monkeypatch):
    monkeypatch.setenv(ENV, "composition")
    x = _x()
    with R.composition(False):
        assert use_native(x)
    assert not use_native(x)


def test_nesting_and_exceptions_restore_the_outer_setting():
    x = _x()
    assert use_native(x)
    with R.composition():
        assert not use_native(x)
        with R.composition(False):
            assert use_native(x)
        assert not use_native(x)
        with pytest.raises(KeyError):
            with R.composition(False):
                raise KeyError
        assert not use_native(x)
    assert use_native(x)


def test_decorator():
    @R.composition()
    def inside():
        return use_native(_x())

    assert inside() is False
    assert use_native(_x())


def test_switch_is_per_thread():
    x = _x()
    seen = {}
    entered, release = threading.Event(), threading.Event()

    def other():
        with R.composition():
            entered.set()
            release.wait(10)
            seen["other, inside its block"] = use_native(x)

    thread = threading.Thread(target=other)
    thread.start()
    entered.wait(10)
    seen["main, while the other is inside"] = use_native(x)
    release.set()
    thread.join()
    with R.composition():
        probe = threading.Thread(target=lambda: seen.update({"new thread, main inside": use_native(x)}))
        probe.start()
        probe.join()
    assert seen == {"main, while the other is inside": True, "other, inside its block": False,
                    "new thread, main inside": True}


# ops torch's kernels dispatch to: none may reach a traced graph, whatever the switch says
NATIVE_ATEN = ("max_pool", "avg_pool", "adaptive", "upsample", "grid_sampler", "convolution")


def _traced_targets(fn, x):
    graph = make_fx(fn)(x.detach())
    return {str(n.target) for n in graph.graph.nodes if n.op == "call_function"}


@pytest.mark.parametrize("ours, theirs, node", [p for p in OPS if p.id not in ("conv1d", "conv_transpose2d")])
def test_make_fx_records_the_composition_not_torchs_op(ours, theirs, node):
    """What verify traces (make_fx; torch.export below) in plain eager mode, no switch: the
    composition. Fails if the eager dispatch ever leaks torch's kernel into a traced graph."""
    native = _traced_targets(theirs, _x())
    assert any(any(k in t for k in NATIVE_ATEN) for t in native), native  # the check can see them
    ours_targets = _traced_targets(ours, _x())
    assert not [t for t in ours_targets if any(k in t for k in NATIVE_ATEN)], ours_targets


def test_torch_export_records_the_composition():
    class Net(torch.nn.Module):
        def forward(self, x):
            return R.interpolate(R.max_pool2d(x, 3, 2, 1), scale_factor=2, mode="bilinear")

    ep = torch.export.export(Net(), (torch.randn(1, 3, 8, 8),), strict=False)
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert not [t for t in targets if any(k in t for k in NATIVE_ATEN)], targets


def test_fake_tensors_functorch_and_subclasses_take_the_composition():
    from torch._subclasses.fake_tensor import FakeTensorMode

    seen = []
    with FakeTensorMode() as mode:
        seen.append(use_native(mode.from_tensor(torch.ones(1, 1, 4, 4))))

    def probe(t):
        seen.append(use_native(t))
        return t

    torch.func.vmap(probe)(torch.ones(2, 1, 1, 4, 4))
    torch.func.grad(lambda t: probe(t).sum())(torch.ones(1, 1, 4, 4))

    class Sub(torch.Tensor):
        pass

    seen.append(use_native(torch.ones(1, 1, 4, 4).as_subclass(Sub)))
    assert seen == [False, False, False, False]


def test_no_grad_and_parameters_are_eager():
    with torch.no_grad():
        assert use_native(torch.ones(1, 1, 4, 4))
    assert use_native(torch.nn.Parameter(torch.ones(1, 1, 4, 4)))


def test_jit_trace_keeps_torchs_op_either_way():
    """torch.jit.trace records torch's op on both paths (its output sizes stay a function of the
    input's; docs/performance-runtime.md, TorchScript)."""
    for switch in (False, True):
        with R.composition(switch):
            traced = torch.jit.trace(lambda t: R.max_pool2d(t, 2), torch.randn(1, 2, 8, 8))
        assert "max_pool2d" in str(traced.graph), switch


def test_jit_script_of_the_modules():
    scripted = torch.jit.script(torch.nn.Sequential(R.MaxPool2d(2), R.Upsample(scale_factor=2, mode="bilinear")))
    x = torch.randn(1, 2, 8, 8)
    torch.testing.assert_close(scripted(x), F.interpolate(F.max_pool2d(x, 2), scale_factor=2, mode="bilinear"))


def test_verify_worker_runs_the_composition(monkeypatch):
    """verify's workers judge what candle will run: the composition, with no switch set outside."""
    from candle_port.verify import worker

    seen = []
    monkeypatch.setattr(worker, "_run", lambda job: seen.append(R.max_pool2d(_x(), 2).grad_fn.name()))
    worker.run({})
    assert seen and seen[0] != "MaxPool2DWithIndicesBackward0"
    assert use_native(_x())  # restored after the job


def test_vendored_copy_follows_the_variable(monkeypatch, tmp_path):
    """port-fix --vendor's single-file runtime has its own switch; the variable reaches it."""
    import importlib.util
    import warnings

    from candle_port.rewriters.vendor import build_vendored_source

    path = tmp_path / "candle_port_runtime.py"
    path.write_text(build_vendored_source(), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("candle_port_runtime_dispatch_test", path)
    vendored = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec.loader.exec_module(vendored)
    assert "MaxPool2DWithIndicesBackward0" in _backward_nodes(vendored.max_pool2d(_x(), 2))
    monkeypatch.setenv(ENV, "composition")
    assert "MaxPool2DWithIndicesBackward0" not in _backward_nodes(vendored.max_pool2d(_x(), 2))
    with vendored.composition(False):
        assert "MaxPool2DWithIndicesBackward0" in _backward_nodes(vendored.max_pool2d(_x(), 2))


def test_verify_candle_check_runs_the_composition(monkeypatch):
    """`verify --candle`'s torch side (export, reference values) runs the composition too."""
    from candle_port.verify import candle_check

    seen = []
    monkeypatch.setattr(candle_check, "check_in_candle",
                        lambda model, inputs, **_: seen.append(model(*inputs).grad_fn.name()) or {})
    candle_check._check(lambda x: R.max_pool2d(x, 2), [_x()], {"seed": 0})
    assert seen and seen[0] != "MaxPool2DWithIndicesBackward0"
    assert use_native(_x())


def test_torch_compile_records_the_composition():
    graphs = []

    def on_meta(node) -> bool:  # the argument check: torch's op on a meta copy (pooling._pool_meta)
        first = node.args[0] if node.args else None
        value = getattr(first, "meta", {}).get("example_value")
        return isinstance(value, torch.Tensor) and value.device.type == "meta"

    def backend(gm, example_inputs):
        graphs.append({str(n.target) for n in gm.graph.nodes if n.op == "call_function" and not on_meta(n)})
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(lambda t: R.max_pool2d(t, 2), backend=backend, fullgraph=False)
    torch.testing.assert_close(compiled(torch.randn(1, 2, 8, 8)).shape, torch.Size([1, 2, 4, 4]))
    targets = set().union(*graphs)
    assert targets and not [t for t in targets if "pool" in t], targets


def test_routed_functional_calls_take_torchs_kernel_in_eager_mode():
    x = _x()
    with R.routed():
        y = F.max_pool2d(x, 2)
    assert "MaxPool2DWithIndicesBackward0" in _backward_nodes(y)
    with R.routed(), R.composition():
        y = F.max_pool2d(x, 2)
    assert "MaxPool2DWithIndicesBackward0" not in _backward_nodes(y)
