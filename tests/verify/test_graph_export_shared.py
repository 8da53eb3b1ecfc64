"""A module reached by two attribute paths (nnU-Net keeps `self.conv` and the same module inside
`self.all_modules`) keeps its own parameters through the candle trace.

functional_call restored such a module under one path only; under make_fx and functionalize the
traced stand-ins stayed, so the model's parameters were no longer Parameters and exporting them
failed with safetensors' "invalid python storage"."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from candle_port.verify.graph_export import export_graph, trace_for_candle  # noqa: E402


class SharedTwice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.norm = nn.BatchNorm2d(2)
        self.all_modules = nn.Sequential(self.conv, self.norm, nn.ReLU())

    def forward(self, x):
        return self.all_modules(x)


def test_trace_keeps_the_parameter_and_buffer_objects():
    model = SharedTwice()
    before = {name: tensor for name, tensor in [*model.named_parameters(), *model.named_buffers()]}
    trace_for_candle(model, [torch.randn(1, 1, 6, 6)])
    after = {name: tensor for name, tensor in [*model.named_parameters(), *model.named_buffers()]}
    assert after.keys() == before.keys()
    assert all(after[name] is before[name] for name in before)
    assert isinstance(model.all_modules[0].weight, nn.Parameter)


def test_export_writes_the_shared_module_tensors(tmp_path):
    from safetensors.torch import load_file

    model = SharedTwice().double()
    weight = model.conv.weight.detach().clone()
    export_graph(model, [torch.randn(1, 1, 6, 6, dtype=torch.float64)], tmp_path)
    tensors = load_file(str(tmp_path / "tensors.safetensors"))
    assert torch.equal(tensors["param.conv.weight"], weight)
