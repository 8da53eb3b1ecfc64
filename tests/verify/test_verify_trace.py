"""Tracing and classification, in process (torch, no subprocess)."""

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from candle_port.verify.compare import compare_results, compare_tensor  # noqa: E402
from candle_port.verify.trace import trace_model, trace_with_make_fx  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lacking(report):
    return sorted({r.name for r in report.lacking})


@pytest.fixture(scope="module")
def unets():
    torch.manual_seed(0)
    original = load(FIXTURES / "unet_bilinear.py", "verify_fx_unet").SmallUNet()
    rewritten = load(FIXTURES / "rewritten" / "unet_bilinear.py", "verify_fx_unet_rw").SmallUNet()
    rewritten.load_state_dict(original.state_dict())
    return original, rewritten


def test_original_graph_lacks_bilinear_backward(unets):
    report = trace_model(unets[0], [torch.randn(1, 3, 16, 16)])
    assert report.tracer == "torch.export"
    assert lacking(report) == ["upsample_bilinear2d"]
    rows = [r for r in report.lacking if r.name == "upsample_bilinear2d"]
    assert all(r.cls == "forward-only" and "unet_bilinear.py:" in r.where for r in rows)


def test_rewritten_graph_lacks_nothing(unets):
    report = trace_model(unets[1], [torch.randn(1, 3, 16, 16)])
    assert lacking(report) == []
    names = {r.name for r in report.ops if r.on_grad_path}
    assert "upsample_bilinear2d" not in {r.name for r in report.ops}
    assert names & {"matmul", "mm", "bmm", "index_select", "gather"}


def test_make_fx_graph_agrees(unets):
    assert lacking(trace_with_make_fx(unets[0], [torch.randn(1, 3, 16, 16)])) == ["upsample_bilinear2d"]
    assert lacking(trace_with_make_fx(unets[1], [torch.randn(1, 3, 16, 16)])) == []


def test_falls_back_to_make_fx_and_says_why(unets, monkeypatch):
    import candle_port.verify.trace as trace

    def export_fails(model, inputs):
        raise RuntimeError("unsupported construct\nsecond line")

    monkeypatch.setattr(trace, "trace_with_export", export_fails)
    report = trace.trace_model(unets[0], [torch.randn(1, 3, 16, 16)])
    assert report.tracer == "make_fx"
    assert report.fallback_reason == "torch.export failed (RuntimeError: unsupported construct)"
    assert lacking(report) == ["upsample_bilinear2d"]


class DataDependent(nn.Module):
    def forward(self, x):
        return x * 2 if x.sum() > 0 else x


def test_untraceable_model_is_an_error():
    from candle_port.verify.trace import TraceError

    with pytest.raises(TraceError, match="make_fx failed"):
        trace_model(DataDependent(), [torch.randn(2)])


class Mixed(nn.Module):
    """Resizing the raw input needs no candle backward (no Var upstream); the pool and conv rules apply."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)

    def forward(self, x):
        x = F.interpolate(x, size=(7, 8), mode="bilinear")
        y = self.conv(x)  # 7x8 input, stride 2: residuals 0 and 1 differ
        return self.pool(y), F.grid_sample(y, torch.zeros(1, 2, 2, 2), align_corners=False)


def test_conditions_and_grad_paths():
    report = trace_model(Mixed(), [torch.randn(1, 3, 16, 16)])
    by_name = {r.name: r for r in report.ops}
    assert not by_name["upsample_bilinear2d"].on_grad_path
    assert lacking(report) == ["conv2d", "grid_sampler", "max_pool2d"]  # export keeps the composite name
    assert "residuals" in by_name["conv2d"].reason
    assert "kernel" in by_name["max_pool2d"].reason


def test_compare_floors_analytically_zero_gradients():
    ref = torch.tensor([1e-7, -1e-7])
    new = torch.tensor([3e-7, 0.0])
    row = compare_tensor("param grad", "bias", ref, new, rtol=1e-5, atol=0.0, floor=1.0)
    assert row.ok and row.rel_to_scale == pytest.approx(2e-7) and row.max_rel == pytest.approx(2.0)
    assert "judged against" in row.note
    assert not compare_tensor("param grad", "bias", ref, new, rtol=1e-5, atol=0.0).ok


def test_compare_reports_missing_gradients_and_new_parameters():
    original = {"outputs": {"output": torch.ones(2)}, "input_grads": {"input[0].grad": torch.ones(2)},
                "param_grads": {"w": torch.ones(2), "gone": torch.ones(1)}}
    rewritten = {"outputs": {"output": torch.ones(2)}, "input_grads": {"input[0].grad": torch.ones(2)},
                 "param_grads": {"w": None, "up.weight": torch.ones(3)}}
    rows = {r.name: r for r in compare_results(original, rewritten, 1e-5, 0.0, ["up.weight"])}
    assert rows["output"].ok and rows["w"].ok is False and rows["gone"].ok is False
    assert rows["up.weight"].kind == "new param" and rows["up.weight"].ok is None
