"""Which ops verify --candle names when native candle's gradients differ and port mode's do not."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from candle_port.verify.candle_run import mode_difference_suspects  # noqa: E402
from candle_port.verify.graph_export import export_graph  # noqa: E402


class Attention(torch.nn.Module):
    """diffusers' attention processor: projections, then F.scaled_dot_product_attention."""

    def __init__(self) -> None:
        super().__init__()
        self.to_q = torch.nn.Linear(8, 8)
        self.to_k = torch.nn.Linear(8, 8)
        self.to_v = torch.nn.Linear(8, 8)

    def forward(self, x):
        q, k, v = (layer(x).unflatten(-1, (2, 4)).transpose(1, 2) for layer in (self.to_q, self.to_k, self.to_v))
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(2)


def test_scaled_dot_product_attention_names_its_softmax_and_the_fused_kernels_cut(tmp_path):
    graph = export_graph(Attention().double(), [torch.randn(2, 5, 8, dtype=torch.float64)], tmp_path)
    suspects = mode_difference_suspects(graph)
    softmax = [s for s in suspects if "softmax" in s["op"]]
    assert softmax, [n["op"] for n in graph["nodes"]]
    assert "softmax_last_dim" in softmax[0]["measured"]
    assert softmax[0]["location"] and "test_candle_suspects.py" in softmax[0]["location"]
