"""The exporter computes what depends on no input (index tables built from sizes) as constants."""

from __future__ import annotations

import torch

from candle_port.verify.graph_export import export_graph, fold_constants, trace_for_candle


class Ramped(torch.nn.Module):
    """Builds an index ramp during forward (as the runtime's pools do), then uses it on the input."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(2.0, dtype=torch.float64))

    def forward(self, x):
        ramp = torch.arange(x.shape[-1] - 1, -1, -1) * 2 + 1  # arange.start_step, mul, add: no input
        noise = torch.rand(3)  # random: never computed at export
        return x.index_select(-1, ramp // 2) * self.scale + noise.sum() * 0


def test_a_ramp_built_from_sizes_is_a_constant_and_the_input_path_is_not():
    model = Ramped()
    x = torch.arange(8, dtype=torch.float64).reshape(2, 4)
    gm, _, _ = trace_for_candle(model, [x])
    constants: dict = {}
    folded = fold_constants(gm, constants)
    ops = {n.name: str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert any("arange" in ops[name] for name in folded)
    ramp = [constants[name] for name in folded if "floor_divide" in ops[name] or "div" in ops[name]]
    assert ramp and torch.equal(ramp[0], torch.tensor([3, 2, 1, 0]))
    assert not any("index_select" in ops[name] or "rand" in ops[name] for name in folded)


def test_the_exported_graph_has_no_arange_node(tmp_path):
    graph = export_graph(Ramped(), [torch.ones(2, 4, dtype=torch.float64)], tmp_path)
    ops = [node["op"] for node in graph["nodes"]]
    assert not any("arange" in op for op in ops), ops
    assert any("index_select" in op for op in ops)
    assert any(p["kind"] == "const" for p in graph["placeholders"])
