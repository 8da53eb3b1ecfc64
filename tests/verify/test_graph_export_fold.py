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


class KernelFromBuffer(torch.nn.Module):
    """Dance Diffusion's down/upsampler: a convolution kernel built from a buffer with index_put,
    and a frozen projection (Gaussian Fourier features) expanded before use."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("taps", torch.tensor([0.25, 0.5, 0.25], dtype=torch.float64))
        self.frozen = torch.nn.Parameter(torch.tensor([1.5, -2.0], dtype=torch.float64), requires_grad=False)
        self.gain = torch.nn.Parameter(torch.tensor(3.0, dtype=torch.float64))

    def forward(self, x):
        kernel = x.new_zeros(2, 2, 3)
        index = torch.arange(2)
        kernel[index, index] = self.taps  # index_put of the buffer on the diagonal
        bias = self.frozen[None, :].expand(x.shape[0], 2)
        y = torch.nn.functional.conv1d(x, kernel, padding=1) * self.gain
        return y + bias[:, :, None]


def test_what_only_buffers_and_frozen_parameters_feed_is_a_constant(tmp_path):
    graph = export_graph(KernelFromBuffer(), [torch.randn(2, 2, 5, dtype=torch.float64)], tmp_path)
    ops = [node["op"] for node in graph["nodes"]]
    assert not any("index_put" in op or "expand" in op for op in ops), ops
    assert any("convolution" in op for op in ops)
    kinds = {p["name"]: p["kind"] for p in graph["placeholders"]}
    assert kinds["gain"] == "param" and kinds["frozen"] == "buffer" and kinds["taps"] == "buffer"


def test_folding_never_runs_an_op_that_mutates_its_argument():
    class Counting(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("seen", torch.zeros((), dtype=torch.int64))
            self.w = torch.nn.Parameter(torch.ones(2, dtype=torch.float64))

        def forward(self, x):
            self.seen += 1  # functionalized into add + copy_ back into the buffer
            return x * self.w

    model = Counting()
    gm, params, buffers = trace_for_candle(model, [torch.ones(2, dtype=torch.float64)])
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    fixed = {placeholders[len(params)].name: model.seen}
    before = int(model.seen)
    constants: dict = {}
    folded = fold_constants(gm, constants, fixed)
    ops = {n.name: str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert any("add" in ops[name] for name in folded)
    assert not any("copy_" in ops[name] for name in folded)
    assert int(model.seen) == before


class CircularConv(torch.nn.Module):
    """Informer's token embedding: a Conv1d with circular padding."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv1d(4, 4, 3, padding=1, padding_mode="circular").double()

    def forward(self, x):
        return self.conv(x) + torch.nn.functional.pad(x, (2, 3), mode="circular")[..., :7]


def test_circular_padding_exports_as_values(tmp_path):
    """torch writes circular padding into new_empty with copy_ into slices, which a graph of values
    cannot hold: the export traces it as cat of slices, with torch's numbers."""
    model, x = CircularConv(), torch.randn(2, 4, 7, dtype=torch.float64)
    graph = export_graph(model, [x], tmp_path)
    ops = [node["op"] for node in graph["nodes"]]
    assert not any("copy_" in op or "new_empty" in op for op in ops), ops
    assert any("cat" in op for op in ops)
    gm, _, _ = trace_for_candle(model, [x])
    params = dict(model.named_parameters())
    assert torch.equal(gm(params, {}, x), model(x))
