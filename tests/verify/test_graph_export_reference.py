"""The exporter's torch reference uses exact backward formulas where torch's float64 kernels
round a constant to float32 (graph_export.REFERENCE_FIXES)."""

from __future__ import annotations

import torch
from safetensors.torch import load_file

from candle_port.verify.graph_export import export_graph


class Celu(torch.nn.Module):
    def __init__(self, alpha: float) -> None:
        super().__init__()
        self.alpha = alpha
        self.lin = torch.nn.Linear(4, 4).double()

    def forward(self, x):
        return torch.nn.functional.celu(self.lin(x), self.alpha)


def _exact_weight_gradient(model: Celu, x: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
    z = model.lin(x).detach()
    slope = torch.where(z > 0, torch.ones_like(z), torch.exp(z / model.alpha))
    return (upstream * slope).T @ x


def test_celu_gradient_in_the_reference_is_exact_in_float64(tmp_path):
    torch.manual_seed(0)
    model, x = Celu(0.7), torch.randn(6, 4, dtype=torch.float64)
    graph = export_graph(model, [x], tmp_path)
    reference = load_file(str(tmp_path / "torch.safetensors"))
    upstream = load_file(str(tmp_path / "tensors.safetensors"))["upstream.0"]
    exact = _exact_weight_gradient(model, x, upstream)
    assert torch.allclose(reference["grad.lin.weight"], exact, rtol=1e-14, atol=1e-15)
    assert "aten.elu_backward.default" in graph["reference_fixes"]


def test_an_elu_with_its_own_scales_is_left_to_torch(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ELU(0.7)).double()
    graph = export_graph(model, [torch.randn(6, 4, dtype=torch.float64)], tmp_path)
    assert graph["reference_fixes"] == {}
