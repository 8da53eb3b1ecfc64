"""Tracing and classification, in process (torch, no subprocess)."""

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from candle_port.verify.compare import Tolerance, choose_tolerance, compare_results, compare_tensor  # noqa: E402
from candle_port.verify.lines import line_map, map_location  # noqa: E402
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

    with pytest.raises(TraceError, match="neither torch.export nor make_fx"):
        trace_model(DataDependent(), [torch.randn(2)])


@pytest.mark.parametrize("training", [True, False])
def test_a_branch_on_a_tensors_value_is_named_at_its_line(training):
    """The error names the model's own line that branches on a value (not torch's internals), and
    in train mode that --eval may trace it (a training-only check, as Mask2Former's isfinite)."""
    from candle_port.verify.trace import TraceError

    line = DataDependent.forward.__code__.co_firstlineno + 1
    with pytest.raises(TraceError) as caught:
        trace_model(DataDependent().train(training), [torch.randn(2)])
    text = str(caught.value)
    assert f"branches on a tensor's value at {__file__}:{line} (`return x * 2 if x.sum() > 0 else x`)" in text
    assert ("--eval traces it" in text) is training


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


class FlowWarp(nn.Module):
    """basicsr's flow_warp: a pixel grid from `arange(...).type_as(x)` and meshgrid, plus a flow."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))  # gradient paths start at parameters

    def forward(self, x, flow):
        x, flow = x * self.scale, flow * self.scale
        h, w = x.shape[-2:]
        grid_y, grid_x = torch.meshgrid(torch.arange(0, h).type_as(x), torch.arange(0, w).type_as(x), indexing="ij")
        grid = torch.stack((grid_x, grid_y), 2).float()
        return x.expand_as(x) * (grid + flow).sum() + flow.view_as(flow).sum()


@pytest.mark.parametrize("tracer", [trace_model, trace_with_make_fx])
def test_a_dtype_or_shape_argument_carries_no_gradient(tracer):
    """type_as/expand_as/view_as take a gradient from their first argument only: the grid built
    from `arange(h).type_as(x)` is off every gradient path, the flow added to it is on one."""
    report = tracer(FlowWarp(), [torch.randn(1, 3, 4, 5), torch.randn(1, 4, 5, 2)])
    paths: dict[str, set[bool]] = {}
    for record in report.ops:
        paths.setdefault(record.name, set()).add(record.on_grad_path)
    assert paths["stack"] == {False} and paths["arange"] == {False}  # the grid
    assert paths["mul"] == {True} and paths["add"] == {True}
    if tracer is trace_model:  # export keeps the composites; make_fx decomposes them
        assert paths["meshgrid"] == {False} and paths["type_as"] == {False}
        assert paths["expand_as"] == {True} and paths["view_as"] == {True}


def test_a_no_grad_block_export_keeps_whole_is_off_the_gradient_path():
    """Spectral norm's power iteration runs under torch.no_grad(); torch.export keeps it as one
    `wrap_with_set_grad_enabled(False, subgraph, ...)` call. Its ops are listed, off the gradient
    path (candle runs their forward); the normalised weight and the convolution are on it."""
    model = nn.Sequential(nn.utils.spectral_norm(nn.Conv2d(3, 4, 3))).train()
    report = trace_model(model, [torch.randn(1, 3, 8, 8)])
    names = [r.name for r in report.ops]
    assert "wrap_with_set_grad_enabled" not in names and lacking(report) == []
    assert {r.on_grad_path for r in report.ops if r.name == "linalg_vector_norm"} == {False}
    assert {r.on_grad_path for r in report.ops if r.name == "conv2d"} == {True}
    assert True in {r.on_grad_path for r in report.ops if r.name == "div"}  # weight / sigma


FIXED = Tolerance("fixed", rtol=1e-5, atol=0.0)


def test_compare_floors_analytically_zero_gradients():
    ref = torch.tensor([1e-7, -1e-7])
    new = torch.tensor([3e-7, 0.0])
    row = compare_tensor("param grad", "bias", ref, new, FIXED, floor=1.0)
    assert row.ok and row.rel_to_scale == pytest.approx(2e-7) and row.max_rel == pytest.approx(2.0)
    assert not compare_tensor("param grad", "bias", ref, new, FIXED).ok


FLOAT64_REF = Tolerance("reference", factor=50.0, floor=2.0 ** -24, method="float64")
PERTURBED_REF = Tolerance("reference", factor=50.0, floor=2.0 ** -53, method="perturbed")


@pytest.mark.parametrize(
    "tol, original, rewritten, reference, ok",
    [
        # float64 reference: each float32 run is measured against it; the rewrite may be 50x as far.
        pytest.param(FLOAT64_REF, [1.0, 2.0], [1.0 + 1e-5, 2.0], [1.0 + 1e-6, 2.0], True, id="f64-ref-rounding-passes"),
        pytest.param(FLOAT64_REF, [1.0, 2.0], [1.0 + 1e-3, 2.0], [1.0 + 1e-6, 2.0], False, id="f64-ref-wrong-fails"),
        # An exactly computed original: the floor is the unit roundoff (50 * 6e-8 = 3e-6 of the scale).
        pytest.param(FLOAT64_REF, [1.0, 2.0], [1.0 + 4e-6, 2.0], [1.0, 2.0], True, id="f64-ref-floor-passes"),
        pytest.param(FLOAT64_REF, [1.0, 2.0], [1.0 + 1e-5, 2.0], [1.0, 2.0], False, id="f64-ref-floor-fails"),
        # perturbed reference: the rewrite is measured against the original itself.
        pytest.param(PERTURBED_REF, [1.0, 2.0], [1.0 + 4e-7, 2.0], [1.0 + 1e-8, 2.0], True, id="perturbed-passes"),
        pytest.param(PERTURBED_REF, [1.0, 2.0], [1.0 + 4e-6, 2.0], [1.0 + 1e-8, 2.0], False, id="perturbed-fails"),
    ],
)
def test_reference_tolerance(tol, original, rewritten, reference, ok):
    f64 = torch.float64
    row = compare_tensor("output", "output", torch.tensor(original, dtype=f64), torch.tensor(rewritten, dtype=f64),
                         tol, noise_ref=torch.tensor(reference, dtype=f64))
    assert row.ok is ok
    assert row.allowed == pytest.approx(50.0 * max(row.own_noise, tol.floor))
    assert row.ratio == pytest.approx(row.rewrite_dist / max(row.own_noise, tol.floor))


def test_tolerance_choice():
    assert choose_tolerance("float32", {"method": "float64", "eps": 1e-16}, None, None).mode == "reference"
    fixed = choose_tolerance("float32", {"method": "float64"}, 1e-4, None)
    assert (fixed.mode, fixed.rtol, fixed.atol) == ("fixed", 1e-4, 0.0)
    fallback = choose_tolerance("float64", None, None, None)
    assert (fallback.mode, fallback.rtol) == ("fixed", 1e-10) and "no reference" in fallback.note


def test_a_float64_model_computing_in_float32_is_floored_at_float32_roundoff():
    """SAM 2's FPN (float32 interpolation in a float64 model): the lateral conv's bias gradient lies
    on a linear path, so the perturbed run does not move it (own noise 0), while the rewrite's
    float32 sums differ by 1e-8 of scale. The floor is the roundoff of the dtype it computes in."""
    mixed = choose_tolerance("float64", {"method": "perturbed", "eps": 2.0**-24, "lowest_dtype": "float32"}, None, None)
    assert mixed.floor == 2.0**-24
    f64 = torch.float64
    row = compare_tensor("param grad", "b", torch.tensor([1.0], dtype=f64), torch.tensor([1.0 + 1e-8], dtype=f64),
                         mixed, noise_ref=torch.tensor([1.0], dtype=f64))
    assert row.ok and row.own_noise == 0.0
    wrong = compare_tensor("param grad", "b", torch.tensor([1.0], dtype=f64), torch.tensor([1.0 + 1e-4], dtype=f64),
                           mixed, noise_ref=torch.tensor([1.0], dtype=f64))
    assert not wrong.ok
    pure = choose_tolerance("float64", {"method": "perturbed", "eps": 2.0**-53}, None, None)
    assert pure.floor == 2.0**-53


@pytest.mark.parametrize(
    "original, rewritten, expected",
    [
        pytest.param("a\nb\nc\n", "import x\na\nb\nc\n", [0, 0, 1, 2], id="import-line-added"),
        pytest.param("a\nf(x)\nc\n", "a\ng(\n    x)\nc\n", [0, 1, 1, 2], id="call-split-over-lines"),
        pytest.param("a\nb\n", "a\nb\n", [0, 1], id="unchanged"),
    ],
)
def test_line_map(original, rewritten, expected):
    assert line_map(original.splitlines(), rewritten.splitlines()) == expected


def test_map_location_points_into_the_users_tree(tmp_path):
    (tmp_path / "orig").mkdir()
    (tmp_path / "copy").mkdir()
    (tmp_path / "orig" / "m.py").write_text("a\nb\nc\n")
    (tmp_path / "copy" / "m.py").write_text("import x\na\nb\nc\n")
    assert map_location(f"{tmp_path}/copy/m.py:4", tmp_path / "copy", tmp_path / "orig") == f"{tmp_path}/orig/m.py:3"
    assert map_location("/elsewhere/n.py:4", tmp_path / "copy", tmp_path / "orig") == "/elsewhere/n.py:4"


def test_candle_results_of_the_rewritten_copy_point_into_the_users_tree(tmp_path):
    """verify --candle runs the rewritten copy in a temporary directory that is gone when the
    report is printed: every op location is mapped back to the user's file and line."""
    from candle_port.verify.lines import map_result_locations

    (tmp_path / "orig").mkdir()
    (tmp_path / "copy").mkdir()
    (tmp_path / "orig" / "m.py").write_text("a\nb\nc\n")
    (tmp_path / "copy" / "m.py").write_text("import x\na\nb\nc\n")
    result = {"port": {"failing_ops": [{"op": "aten.cumsum.default", "location": f"{tmp_path}/copy/m.py:4"}]},
              "suspects": [{"location": f"{tmp_path}/copy/m.py:2", "code": "a"}], "note": f"{tmp_path}/copy/m.py:3"}
    map_result_locations(result, tmp_path / "copy", tmp_path / "orig")
    assert result["port"]["failing_ops"][0]["location"] == f"{tmp_path}/orig/m.py:3"
    assert result["suspects"][0]["location"] == f"{tmp_path}/orig/m.py:1"
    assert result["note"] == f"{tmp_path}/copy/m.py:3"  # only locations


def test_suspect_locations_and_messages_of_the_rewritten_copy_point_into_the_users_tree(tmp_path):
    """A suspect names every location of its op (``locations``), and a candle error or a backward
    message names the line it stopped at: all of them are in the copy, deleted before the report
    is printed (they pointed to a temporary path that no longer exists)."""
    from candle_port.verify.lines import map_result_locations

    (tmp_path / "orig").mkdir()
    (tmp_path / "copy").mkdir()
    (tmp_path / "orig" / "m.py").write_text("a\nb\nc\n")
    (tmp_path / "copy" / "m.py").write_text("import x\na\nb\nc\n")
    copy = f"{tmp_path}/copy/m.py"
    result = {"native": {"suspects": [{"op": "aten.relu.default", "location": f"{copy}:3",
                                       "locations": [f"{copy}:3", f"{copy}:4"]}],
                         "backward": {"message": f"backward not supported (at {copy}:4)"}},
              "error": f"RuntimeError: boom (at {copy}:2 (`a`))"}
    map_result_locations(result, tmp_path / "copy", tmp_path / "orig")
    orig = f"{tmp_path}/orig/m.py"
    assert result["native"]["suspects"][0]["locations"] == [f"{orig}:2", f"{orig}:3"]
    assert result["native"]["backward"]["message"] == f"backward not supported (at {orig}:3)"
    assert result["error"] == f"RuntimeError: boom (at {orig}:1 (`a`))"


class MaxPool(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)
        self.pool = nn.MaxPool2d(k)

    def forward(self, x):
        return self.pool(self.conv(x))


class NearestShared(nn.Module):
    def __init__(self, shared):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)
        self.shared = shared

    def forward(self, x):
        y = self.conv(x)
        up = F.interpolate(y, scale_factor=2, mode="nearest")
        return (up, y) if self.shared else up


class ScatterInto(nn.Module):
    def __init__(self, destination_needs_grad):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)
        self.destination_needs_grad = destination_needs_grad

    def forward(self, x):
        y = self.conv(x).flatten(1)
        dest = y * 2 if self.destination_needs_grad else torch.zeros_like(y)
        return dest.scatter_add(1, torch.zeros_like(y, dtype=torch.long), y)


@pytest.mark.parametrize(
    "model, wrong",
    [
        pytest.param(MaxPool(2), ["max_pool2d"], id="max-pool-kernel-eq-stride-quarter-gradient"),
        pytest.param(MaxPool(1), [], id="max-pool-kernel-1-exact"),
        pytest.param(NearestShared(True), ["upsample_nearest2d"], id="nearest-input-with-another-consumer"),
        pytest.param(NearestShared(False), [], id="nearest-only-consumer"),
        pytest.param(ScatterInto(True), ["scatter_add"], id="scatter-add-into-grad-tensor"),
        pytest.param(ScatterInto(False), [], id="scatter-add-into-constant"),
    ],
)
def test_wrong_candle_gradients_are_found(model, wrong):
    report = trace_model(model, [torch.randn(1, 3, 4, 4)])
    assert sorted({r.name for r in report.wrong}) == wrong
    assert report.lacking == []
    for record in report.wrong:
        assert record.wrong and record.where.endswith(tuple(f":{n}" for n in range(1, 10000)))
        assert "test_verify_trace.py" in record.where


def test_compare_reports_missing_gradients_and_new_parameters():
    original = {"outputs": {"output": torch.ones(2)}, "input_grads": {"input[0].grad": torch.ones(2)},
                "param_grads": {"w": torch.ones(2), "gone": torch.ones(1)}}
    rewritten = {"outputs": {"output": torch.ones(2)}, "input_grads": {"input[0].grad": torch.ones(2)},
                 "param_grads": {"w": None, "up.weight": torch.ones(3)}}
    rows = {r.name: r for r in compare_results(original, rewritten, FIXED, ["up.weight"])}
    assert rows["output"].ok and rows["w"].ok is False and rows["gone"].ok is False
    assert rows["up.weight"].kind == "new param" and rows["up.weight"].ok is None


class Quantizer(nn.Module):
    """VQ-VAE's nearest-codebook lookup: `cdist` only feeds `argmin`, whose integer result picks
    rows of the codebook; no gradient goes back through the distances."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.codebook = nn.Parameter(torch.randn(6, 4))

    def forward(self, x):
        z = self.proj(x)
        index = torch.cdist(z, self.codebook).argmin(-1)
        return z + (self.codebook[index] - z).detach(), index


def test_a_value_that_only_feeds_an_integer_result_is_off_the_gradient_path():
    report = trace_model(Quantizer(), [torch.randn(5, 4)])
    by_name = {r.name: r for r in report.ops}
    cdist = [r for r in report.ops if "cdist" in r.name]
    assert cdist and not any(r.on_grad_path for r in cdist)
    assert by_name["linear"].on_grad_path


class FrozenProjection(nn.Module):
    """diffusers' GaussianFourierProjection: a frozen random weight, broadcast, then sin/cos."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4), requires_grad=False)
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        proj = torch.broadcast_to(self.weight[None, :], (x.shape[0], 4)) * 6.28
        return self.out(torch.cat([proj.sin(), proj.cos()], dim=-1)) * x


def test_a_frozen_parameter_starts_no_gradient_path():
    for trace in (trace_model, trace_with_make_fx):
        report = trace(FrozenProjection(), [torch.randn(2, 3)])
        assert not any(r.on_grad_path for r in report.ops if r.name in ("sin", "cos", "expand", "broadcast_to")), trace
        assert any(r.on_grad_path for r in report.ops if r.name in ("addmm", "linear", "mm")), trace
    model = FrozenProjection()
    model.weight.requires_grad_(True)
    report = trace_with_make_fx(model, [torch.randn(2, 3)])
    assert any(r.on_grad_path for r in report.ops if r.name == "sin")


class MutatedThroughAView(nn.Module):
    """An in-place op on a view of a parameter's result, read later through the base tensor: the
    graph links the later read to the base, not to the in-place op."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        y[:, :2].relu_()
        return y * 2


def test_an_in_place_op_stays_on_the_gradient_path():
    report = trace_with_make_fx(MutatedThroughAView(), [torch.randn(3, 4)])
    relu = [r for r in report.ops if r.name.startswith("relu")]
    assert relu and all(r.on_grad_path for r in relu)


class FrozenConv1d(nn.Module):
    """Wav2Vec2's frozen feature extractor: a conv1d whose weight needs no gradient, between layers
    that do; candle's wrong conv1d gradients matter only for the operands on a gradient path."""

    def __init__(self, padding: int) -> None:
        super().__init__()
        self.pre = nn.Conv1d(2, 4, 1, padding=0)
        self.conv = nn.Conv1d(4, 8, 3, padding=padding)
        self.conv.weight.requires_grad_(False)

    def forward(self, x):
        return self.conv(self.pre(x))


def _conv_records(model, shape):
    report = trace_with_make_fx(model, [torch.randn(*shape)])
    return [r for r in report.ops if r.name == "convolution"]


def test_a_frozen_conv1d_weight_leaves_only_its_input_gradient_wrong():
    unpadded = _conv_records(FrozenConv1d(padding=0), (2, 2, 10))
    assert "input gradient is wrong" in unpadded[1].wrong and "weight" not in unpadded[1].wrong
    padded = _conv_records(FrozenConv1d(padding=1), (2, 2, 10))
    assert padded[1].wrong == ""
    # the first layer reads the raw input: only its weight gradient can be wrong
    assert "weight gradient is wrong" in padded[0].wrong and "input" not in padded[0].wrong


class SpectrumMean(nn.Module):
    """Autoformer's auto-correlation in small: a gradient flows through an FFT's complex values."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.fft.rfft(self.lin(x), dim=1).abs().mean(1)


def test_complex_values_carry_the_gradient_path():
    for trace in (trace_model, trace_with_make_fx):
        report = trace(SpectrumMean(), [torch.randn(2, 16, 4)])
        fft = [r for r in report.ops if "fft" in r.name]
        assert fft and all(r.on_grad_path and not r.ok for r in fft), trace
        assert any(r.on_grad_path for r in report.ops if r.name == "abs"), trace


class SharedLayer(nn.Module):
    """neuralforecast's CausalConv1d: the conv is registered as `conv` and inside `seq`."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(2, 3, 3, padding=1)
        self.seq = nn.Sequential(self.conv)

    def forward(self, x):
        return self.seq(x)


def test_a_parameter_registered_under_two_names_is_a_gradient_source():
    for trace in (trace_model, trace_with_make_fx):
        report = trace(SharedLayer(), [torch.randn(2, 2, 8)])
        assert [r.on_grad_path for r in report.ops if r.name in ("conv1d", "convolution")] == [True], trace


class _AfterConv(nn.Module):
    """A 1x1 convolution (the parameter that puts the op on a gradient path), then the op."""

    def __init__(self, op):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)
        self.op = op

    def forward(self, x):
        return self.op(self.conv(x))


@pytest.mark.parametrize(("op", "trains"), [
    pytest.param(lambda y: torch.repeat_interleave(y, 2, dim=1), True, id="repeat_interleave-int"),
    pytest.param(lambda y: torch.repeat_interleave(y, torch.tensor([1, 2, 0, 1]), dim=1), True,
                 id="repeat_interleave-tensor"),
    pytest.param(lambda y: F.interpolate(y, scale_factor=1.5, mode="bilinear"), False, id="bilinear-vec"),
    pytest.param(lambda y: F.conv_transpose1d(y.flatten(2), torch.ones(4, 2, 3)), False, id="conv_transpose1d"),
])
def test_a_composite_op_is_judged_by_what_torch_decomposes_it_into(op, trains):
    """torch.export keeps `repeat_interleave` (the table: no candle op), but torch implements it as
    unsqueeze/expand/clone/view (or index_select by a repeats tensor), which is what make_fx, the
    candle run and a port see, and candle trains those (SAM's mask decoder FAILed for it). A
    composite op that decomposes into an op candle cannot train stays lacking."""
    report = trace_model(_AfterConv(op), [torch.randn(1, 3, 4, 4)])
    assert (report.lacking == []) is trains, [(r.name, r.reason) for r in report.lacking]
    if trains:
        record = next(r for r in report.ops if r.name == "repeat_interleave" and r.on_grad_path)
        assert record.cls == "backward" and "torch decomposes it into" in record.reason
