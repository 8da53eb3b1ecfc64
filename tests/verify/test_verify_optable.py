"""The op table as data and the conditions of its conditional ops (pure Python, no torch)."""

import json
from importlib import resources

import pytest

from candle_port.verify.conditions import CONDITIONS, TensorInfo
from candle_port.verify.optable import CLASSES, candle_pin, load_table, lookup, normalize


def test_table_records_the_candle_commit():
    pin = candle_pin()
    assert pin["commit"] == "2a13b0f3ff62f7e67013597f2996f764c5735e21"
    assert pin["version"] == "0.11.0"


def test_table_is_package_data():
    text = resources.files("candle_port.verify").joinpath("candle_ops.json").read_text(encoding="utf-8")
    assert json.loads(text)["ops"]


def test_every_entry_is_well_formed():
    for name, entry in load_table()["ops"].items():
        assert entry["class"] in CLASSES and entry["class"] != "not-in-table", name
        if entry["class"] == "conditional":
            assert entry["condition"] in CONDITIONS, name


@pytest.mark.parametrize(
    "name, cls",
    [
        pytest.param("upsample_bilinear2d", "forward-only", id="bilinear-no-backward"),
        pytest.param("aten::upsample_bilinear2d.vec", "forward-only", id="overload-spelling"),
        pytest.param("conv_transpose1d", "forward-only", id="conv-transpose1d"),
        pytest.param("grid_sampler_2d", "no-op", id="grid-sample"),
        pytest.param("upsample_bicubic2d", "no-op", id="bicubic"),
        pytest.param("_upsample_bilinear2d_aa", "no-op", id="antialias"),
        pytest.param("im2col", "no-op", id="unfold"),
        pytest.param("upsample_nearest2d", "conditional", id="nearest"),
        pytest.param("max_pool2d_with_indices", "conditional", id="maxpool"),
        pytest.param("convolution", "conditional", id="convolution"),
        pytest.param("mm", "backward", id="mm"),
        pytest.param("add_", "backward", id="inplace-add"),
        pytest.param("_native_batch_norm_legit_functional", "backward", id="batchnorm"),
        pytest.param("index_select", "backward", id="index-select"),
        pytest.param("arange", "backward", id="creation"),
        pytest.param("some_new_op", "not-in-table", id="unknown"),
    ],
)
def test_lookup(name, cls):
    assert lookup(name).cls == cls


def test_normalize():
    assert normalize("aten::add_.Tensor") == "add"
    assert normalize("aten.upsample_nearest2d.vec") == "upsample_nearest2d"
    assert normalize("_to_copy") == "_to_copy"


def t(*shape):
    return TensorInfo(tuple(shape), "torch.float32")


CASES = [
    # (condition, args, output shape, ok)
    pytest.param("nearest_upscale", {"input": t(1, 3, 8, 8)}, t(1, 3, 16, 16), True, id="nearest-x2"),
    pytest.param("nearest_upscale", {"input": t(1, 3, 8, 8)}, t(1, 3, 12, 12), False, id="nearest-x1.5"),
    pytest.param("nearest_upscale", {"input": t(1, 3, 8, 8)}, t(1, 3, 16, 24), False, id="nearest-non-uniform"),
    pytest.param("nearest_upscale", {"input": t(1, 3, 8, 8)}, t(1, 3, 4, 4), False, id="nearest-downscale"),
    pytest.param("max_pool", {"input": t(1, 3, 8, 8), "kernel_size": [2, 2], "stride": [2, 2]}, None, True, id="maxpool-k2s2"),
    pytest.param("max_pool", {"input": t(1, 3, 8, 8), "kernel_size": [2, 2], "stride": []}, None, True, id="maxpool-default-stride"),
    pytest.param("max_pool", {"input": t(1, 3, 8, 8), "kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1]}, None, False, id="maxpool-resnet-stem"),
    pytest.param("max_pool", {"input": t(1, 3, 8, 8), "kernel_size": [2], "stride": [2], "ceil_mode": True}, None, False, id="maxpool-ceil"),
    pytest.param("avg_pool", {"input": t(1, 3, 8, 8), "kernel_size": [3, 3], "stride": [1, 1]}, None, False, id="avgpool-k3s1"),
    pytest.param("adaptive_avg_pool", {"input": t(1, 3, 8, 8)}, t(1, 3, 1, 1), True, id="adaptive-global"),
    pytest.param("adaptive_avg_pool", {"input": t(1, 3, 8, 8)}, t(1, 3, 3, 3), False, id="adaptive-uneven"),
    pytest.param("adaptive_max_pool", {"input": t(1, 3, 8, 8)}, t(1, 3, 2, 2), False, id="adaptive-max-2x2"),
    pytest.param("convolution", {"input": t(1, 3, 7, 8), "weight": t(4, 3, 3, 3), "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1]}, None, False, id="conv2d-residual-parity-7x8"),
    pytest.param("convolution", {"input": t(1, 3, 8, 8), "weight": t(4, 3, 3, 3), "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1]}, None, True, id="conv2d-square-stride2"),
    pytest.param("convolution", {"input": t(1, 3, 8, 8), "weight": t(4, 3, 3, 3), "stride": [1, 2], "padding": [1, 1]}, None, False, id="conv2d-non-uniform-stride"),
    pytest.param("convolution", {"input": t(1, 3, 8), "weight": t(3, 4, 4), "stride": [2], "padding": [1], "transposed": True, "output_padding": [0]}, None, False, id="conv-transpose1d"),
    pytest.param("convolution", {"input": t(1, 4, 8, 8), "weight": t(4, 1, 4, 4), "stride": [2, 2], "padding": [1, 1], "transposed": True, "output_padding": [0, 0], "groups": 4}, None, False, id="conv-transpose2d-grouped"),
    pytest.param("convolution", {"input": t(1, 4, 8, 8), "weight": t(4, 2, 4, 4), "stride": [2, 2], "padding": [1, 1], "transposed": True, "output_padding": [0, 0]}, None, True, id="conv-transpose2d"),
    pytest.param("convolution", {"input": t(1, 3, 4, 8, 8), "weight": t(4, 3, 3, 3, 3)}, None, False, id="conv3d"),
    # Measured in crates/candle-port-ops/tests/candle_native.rs (docs/candle-measured.md):
    pytest.param("convolution", {"input": t(1, 2, 4, 5), "weight": t(2, 3, 3, 3), "stride": [1, 1], "padding": [0, 0], "dilation": [2, 2], "transposed": True, "output_padding": [1, 1]}, None, False, id="conv-transpose2d-output-padding-ge-stride"),
    pytest.param("convolution", {"input": t(1, 2, 4, 5), "weight": t(2, 3, 3, 3), "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1], "transposed": True, "output_padding": [1, 1]}, None, True, id="conv-transpose2d-output-padding-lt-stride"),
    pytest.param("scatter_add", {"input": t(1, 4), "index": t(1, 1), "src": t(1, 1)}, None, False, id="scatter-add-small-index"),
    pytest.param("scatter_add", {"input": t(1, 4), "index": t(1, 4), "src": t(1, 4)}, None, True, id="scatter-add-full-index"),
]


@pytest.mark.parametrize("condition, args, out, ok", CASES)
def test_conditions(condition, args, out, ok):
    outcome = CONDITIONS[condition](dict(args), out)
    assert outcome.ok is ok
    assert outcome.ok or outcome.reason


def test_maxpool_allowed_still_warns_about_candles_gradient():
    entry = lookup("max_pool2d_with_indices")
    assert "wrong" in entry.warning


@pytest.mark.parametrize(
    "condition, needle",
    [
        pytest.param("max_pool", "misses most maxima", id="max-pool-misses-maxima"),
        pytest.param("avg_pool", "wrong rows", id="avg-pool-wrong-rows"),
    ],
)
def test_pool_on_sizes_the_kernel_does_not_divide_warns(condition, needle):
    # 5x7 with k=2 (measured: crates/candle-port-ops/tests/candle_native.rs)
    outcome = CONDITIONS[condition]({"input": t(1, 2, 5, 7), "kernel_size": [2, 2], "stride": [2, 2]}, None)
    assert outcome.ok and needle in outcome.warning


def test_scatter_add_is_conditional_and_warns_about_the_destination_gradient():
    entry = lookup("scatter_add")
    assert entry.cls == "conditional" and "destination" in entry.warning


def _info(value):
    return TensorInfo(tuple(value)) if isinstance(value, list) and all(isinstance(v, int) for v in value) else value


def _measured_cases():
    for name, entry in load_table()["ops"].items():
        if entry["class"] != "conditional":
            continue
        for m in entry["measured"]:
            if m["role"] == "verdict":
                yield pytest.param(entry["condition"], m, entry.get("wrong_gradient", ""), id=f"{name}-{m['probe']}")


@pytest.mark.parametrize("condition, measured, context", list(_measured_cases()))
def test_conditions_agree_with_the_measured_cases(condition, measured, context):
    """Each case candle-port-run measured (crates/candle-port-run/src/measure.rs) gets the same
    verdict from the condition verify evaluates per node."""
    case = dict(measured["case"])
    out = TensorInfo(tuple(case.pop("output"))) if "output" in case else None
    args = {k: (_info(v) if k in ("input", "weight", "index") else v) for k, v in case.items()}
    outcome = CONDITIONS[condition](args, out)
    # a wrong gradient scoped by the graph (destination, shared_input) is told apart by classify.py
    wrong = (True, False) if context else (True, True)
    expected = {"backward": (True, False), "wrong-gradient": wrong}.get(measured["verdict"], (False, False))
    assert (outcome.ok, outcome.wrong) == expected, (measured, outcome)


def test_every_verdict_is_measured():
    for name, entry in load_table()["ops"].items():
        assert entry["measured"] and all(m["verdict"] for m in entry["measured"]), name
    assert "generated by scripts/gen_optable.py" in candle_pin()["source"]


def test_committed_table_equals_the_generated_one(tmp_path):
    """Runs the probes in real candle (about 3 s with the dev binary) and regenerates the table."""
    import importlib.util
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    if not shutil.which("cargo"):
        if os.environ.get("CANDLE_PORT_REQUIRE_CARGO"):
            pytest.fail("cargo not found and CANDLE_PORT_REQUIRE_CARGO is set")
        pytest.skip("cargo not found: the measurements need Rust")
    from candle_port.verify.candle_run import find_binary

    root = Path(__file__).resolve().parents[2]
    binary = find_binary(profile="dev")
    out = tmp_path / "measurements.json"
    subprocess.run([str(binary), "--measure-ops", str(out)], check=True, capture_output=True, timeout=300)
    spec = importlib.util.spec_from_file_location("gen_optable", root / "scripts" / "gen_optable.py")
    gen = importlib.util.module_from_spec(spec)
    sys.modules["gen_optable"] = gen
    spec.loader.exec_module(gen)
    table = gen.generate(json.loads(out.read_text(encoding="utf-8")), json.loads(gen.NOTES.read_text(encoding="utf-8")),
                         gen.candle_sources())
    committed = resources.files("candle_port.verify").joinpath("candle_ops.json").read_text(encoding="utf-8")
    assert gen.render(table) == committed, "run: python scripts/gen_optable.py"


@pytest.mark.parametrize(
    "args, which",
    [
        # no padding, stride 1: conv_transpose1d's col2im path computes the input gradient
        pytest.param({"input": t(2, 1, 10), "weight": t(2, 1, 3)}, "weight and input gradients are", id="no-padding"),
        pytest.param({"input": t(2, 1, 10), "weight": t(2, 1, 3), "padding": [1]}, "weight gradient is", id="padding"),
        # stride 2: the derived output padding is (L - k) % 2; 0 takes the col2im path
        pytest.param({"input": t(2, 4, 11), "weight": t(8, 4, 3), "stride": [2]}, "weight and input gradients are",
                     id="stride-2-even"),
        pytest.param({"input": t(2, 4, 10), "weight": t(8, 4, 3), "stride": [2]}, "weight gradient is",
                     id="stride-2-odd"),
    ],
)
def test_conv1d_names_the_input_gradient_where_candle_gets_it_wrong_too(args, which):
    outcome = CONDITIONS["conv1d"](dict(args), None)
    assert outcome.ok and outcome.wrong and f"candle 0.11.0's {which} wrong" in outcome.warning


def test_conv1d_at_batch_one_is_right():
    outcome = CONDITIONS["conv1d"]({"input": t(1, 1, 10), "weight": t(2, 1, 3)}, None)
    assert outcome.ok and not outcome.wrong


def test_conv1d_same_padding_of_a_one_wide_kernel_is_no_padding():
    outcome = CONDITIONS["conv1d"]({"input": t(2, 4, 10), "weight": t(8, 4, 1), "padding": "same"}, None)
    assert "weight and input gradients are" in outcome.warning
    outcome = CONDITIONS["conv1d"]({"input": t(2, 4, 10), "weight": t(8, 4, 3), "padding": "same"}, None)
    assert "weight gradient is" in outcome.warning
