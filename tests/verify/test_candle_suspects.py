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


class NearestBesideAnother(torch.nn.Module):
    """A nearest upsampling whose input has a second consumer: candle's nearest backward overwrites
    the gradient the other consumer gave instead of adding to it (a measured caveat of the op
    table, which the suspect search skipped: native was 0.97 off with nothing named)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        return F.interpolate(y, scale_factor=2, mode="nearest")[:, :, ::2, 1::2] * 0.5 + y


class NearestAlone(NearestBesideAnother):
    def forward(self, x):
        return F.interpolate(self.conv(x), scale_factor=2, mode="nearest")


@pytest.mark.slow
def test_a_nearest_upsampling_beside_another_consumer_is_named_in_native_mode(binary):
    from candle_port.verify.candle_run import check_in_candle, summary_lines

    torch.manual_seed(0)
    result = check_in_candle(NearestBesideAnother().double(), [torch.randn(2, 3, 5, 5, dtype=torch.float64)], binary=binary)
    assert result["port"]["ok"] and not result["native"]["ok"], summary_lines(result)
    suspects = result["native"]["suspects"]
    assert [s["op"] for s in suspects] == ["aten.upsample_nearest2d.vec"] or [s["op"] for s in suspects] == [
        "aten.upsample_nearest2d.default"], suspects
    assert "test_candle_suspects.py" in suspects[0]["location"] and "another consumer" in suspects[0]["measured"]
    torch.manual_seed(0)
    alone = check_in_candle(NearestAlone().double(), [torch.randn(2, 3, 5, 5, dtype=torch.float64)], binary=binary)
    assert alone["native"]["ok"] and alone["port"]["ok"], summary_lines(alone)


def test_twinned_resizes_and_adaptive_pools_are_named_when_native_differs(tmp_path):
    """The ops port mode runs by candle-port-ops twins (resize.rs: nearest and bilinear upsampling,
    adaptive average pooling, grid_sample) are what native and port mode run differently."""

    class Resizes(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 1)

        def forward(self, x):
            y = self.conv(x)
            return F.interpolate(y, scale_factor=2, mode="nearest").mean() + F.adaptive_avg_pool2d(y, 2).mean() * y

    graph = export_graph(Resizes().double(), [torch.randn(1, 3, 4, 4, dtype=torch.float64)], tmp_path)
    ops = {s["op"].split(".")[1] for s in mode_difference_suspects(graph)}
    assert {"upsample_nearest2d", "_adaptive_avg_pool2d"} <= ops, ops
