"""What a new user hit on segment-anything and ultralytics (issue 12, item 3): each case, positive and negative."""

from __future__ import annotations

import pytest

from candle_port.api import check_source

NN = "from torch import nn\n"
F = "import torch.nn.functional as F\n"
SPPF = NN + "class SPPF(nn.Module):\n    def __init__(self, c1, c2, k=5):\n        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)\n"
SPP = NN + "class SPP(nn.Module):\n    def __init__(self, k=(5, 9, 13)):\n        self.m = [nn.MaxPool2d(kernel_size=x, stride=1, padding=x // 2) for x in k]\n"


def codes_and_severities(source: str) -> list[tuple[str, str]]:
    return [(f.code, f.severity.value) for f in check_source(source)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(SPPF, [("CP106", "error")], id="yolo-sppf-stride-1-kernel-parameter"),
        pytest.param(SPP, [("CP106", "error")], id="yolo-spp-stride-1-loop-variable"),
        pytest.param(NN + "def pool(k=3):\n    return nn.MaxPool2d(k, 2)\n", [("CP106", "warning")], id="default-kernel-3-stride-2"),
        pytest.param(NN + "def pool(k=2):\n    return nn.MaxPool2d(k, 2)\n", [("CP107", "warning")], id="default-kernel-equals-stride"),
        pytest.param(NN + "def pool(k):\n    return nn.MaxPool2d(k, 2)\n", [("CP107", "warning")], id="unknown-kernel-stride-2"),
        pytest.param(NN + "m = nn.MaxPool2d(1, 1)\n", [("CP107", "warning")], id="identity-pool-kernel-1-stride-1"),
        pytest.param(NN + "def pool(k):\n    return nn.AvgPool2d(k, stride=1)\n", [("CP106", "error")], id="avg-pool-stride-1"),
    ],
)
def test_pool_stride_1_is_cp106(source, expected):
    assert codes_and_severities(source) == expected


def test_pool_message_names_the_default_kernel():
    [finding] = check_source(SPPF)
    assert "kernel_size=k (default 5)" in finding.message and "stride=1" in finding.message


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(NN + "m = nn.ConvTranspose2d(c, c, 4, 2, 1, groups=c)\n", [("CP108", "warning")], id="groups-variable"),
        pytest.param(
            "import math\n" + NN + "m = nn.ConvTranspose2d(c1, c2, 4, 2, 1, groups=math.gcd(c1, c2))\n",
            [("CP108", "warning")],
            id="groups-gcd",
        ),
        pytest.param(F + "y = F.conv_transpose2d(x, w, None, 2, 1, 0, g)\n", [("CP108", "warning")], id="functional-groups-positional"),
        pytest.param(NN + "m = nn.ConvTranspose2d(c, c, 4, 2, 1, groups=4)\n", [("CP108", "error")], id="groups-literal-4"),
        pytest.param(NN + "m = nn.ConvTranspose2d(c, c, 4, 2, 1)\n", [], id="groups-omitted"),
        pytest.param(NN + "m = nn.ConvTranspose2d(c, c, 4, 2, 1, groups=1)\n", [], id="groups-literal-1"),
        pytest.param(NN + "m = nn.ConvTranspose2d(c, c, 4, 2, 1, **kw)\n", [], id="groups-in-kwargs-not-guessed"),
    ],
)
def test_conv_transpose_computed_groups_is_a_cp108_warning(source, expected):
    assert codes_and_severities(source) == expected


def test_conv_transpose_groups_message_says_not_known_statically():
    [finding] = check_source(NN + "def up(c, g=2):\n    return nn.ConvTranspose2d(c, c, 4, 2, 1, groups=g)\n")
    assert "groups not known statically" in finding.message and "default 2" in finding.message


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(F + "y = F.interpolate(x, size=skip.shape[2:])\n", [("CP103", "warning")], id="fpn-size-from-skip"),
        pytest.param(F + "y = F.interpolate(x, size=(h, w), mode='nearest')\n", [("CP103", "warning")], id="size-from-variables"),
        pytest.param(NN + "m = nn.Upsample(size=out_hw)\n", [("CP103", "warning")], id="Upsample-size-variable"),
        pytest.param(F + "y = F.interpolate(x, size=(8, 8))\n", [], id="literal-size"),
        pytest.param(F + "y = F.interpolate(x, scale_factor=2)\n", [], id="integer-scale"),
        pytest.param(F + "y = F.interpolate(x, size=skip.shape[2:], mode='bicubic')\n", [("CP104", "error")], id="not-nearest"),
    ],
)
def test_nearest_resize_to_a_computed_size_is_a_cp103_warning(source, expected):
    assert codes_and_severities(source) == expected


def test_nearest_computed_size_message():
    [finding] = check_source(F + "y = F.interpolate(x, size=skip.shape[2:])\n")
    assert "scale not known statically" in finding.message and "skip.shape[2:]" in finding.message


@pytest.mark.parametrize(
    ("source", "code", "hint_part"),
    [
        pytest.param(F + "y = F.grid_sample(x, grid)\n", "CP105", "gather", id="CP105-grid_sample"),
        pytest.param(NN + "m = nn.ConvTranspose1d(8, 8, 4, stride=2)\n", "CP108", "unsqueeze to 2-D", id="CP108-1d"),
        pytest.param(NN + "m = nn.ConvTranspose2d(8, 8, 4, 2, 1, groups=8)\n", "CP108", "one conv_transpose2d per group", id="CP108-groups"),
        pytest.param(NN + "m = nn.ConvTranspose2d(8, 8, 3, stride=2, output_padding=2)\n", "CP108", "output_padding < stride", id="CP108-output-padding"),
        pytest.param(NN + "m = nn.Conv3d(8, 8, 3)\n", "CP110", "fold the depth axis", id="CP110-conv3d"),
    ],
)
def test_findings_port_fix_rewrites_say_so_and_carry_the_hint_only_without_a_fix(source, code, hint_part, monkeypatch):
    """CP105, CP108 and CP110 sites are port-fix runtime's (issue 13): `[fix: runtime]`, no hand
    rewrite. Where the runtime strategy refuses a site, the hint says how to do it by hand."""
    [finding] = check_source(source)
    assert finding.code == code and finding.fixes == ("runtime",) and finding.hint == ""
    from candle_port.rewriters.strategies import get

    monkeypatch.setattr(type(get("runtime")), "refusal", lambda self, site: "refused here")
    [finding] = check_source(source)
    assert finding.code == code and not finding.fixes and hint_part in finding.hint


def test_findings_with_an_automatic_fix_carry_no_hint():
    [finding] = check_source(F + "y = F.interpolate(x, scale_factor=2, mode='bilinear')\n")
    assert finding.fixes and finding.hint == ""


def test_a_wrapper_call_carries_no_hand_rewrite_hint(tmp_path):
    """port-fix rewrites the wrapper, so its callers are told neither a fix nor a hand rewrite."""
    from candle_port.config import Config
    from candle_port.pipeline.engine import check_paths

    (tmp_path / "m.py").write_text(F + "def warp(x, g, mode='bilinear'):\n    return F.grid_sample(x, g, mode=mode)\n\ny = warp(x, g, mode='nearest')\n")
    findings = check_paths([str(tmp_path)], Config()).findings
    assert [(f.line, f.code, f.fixes, f.hint) for f in findings if f.wrapper] == [(5, "CP105", (), "")]
    assert [f.fixes for f in findings if not f.wrapper] == [("runtime",)]


def test_the_hint_is_printed_in_text_json_and_sarif(tmp_path):
    import json

    from tests.conftest import run_tool

    # `nn` is rebound, so port-fix will not rewrite the call (it may not be torch's): the hint says how.
    (tmp_path / "m.py").write_text(NN + "for nn in layer_modules:\n    pass\nm = nn.Conv3d(8, 8, 3)\n")
    text = run_tool(str(tmp_path / "m.py")).stdout.decode()
    assert "[hint: fold the depth axis" in text
    [item] = json.loads(run_tool(str(tmp_path / "m.py"), "--output-format", "json").stdout)
    assert item["hint"].startswith("fold the depth axis")
    sarif = json.loads(run_tool(str(tmp_path / "m.py"), "--output-format", "sarif").stdout)
    assert "Fix by hand: fold the depth axis" in sarif["runs"][0]["results"][0]["message"]["text"]


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_directory_with_no_python_files_is_a_warning_for_both_commands(tmp_path, command):
    from tests.conftest import run_tool

    (tmp_path / "empty").mkdir()
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "m.py").write_text("x = 1\n")
    done = run_tool(str(tmp_path / "empty"), tool=command)
    assert done.returncode == 0 and f"no Python or Rust files found under {tmp_path / 'empty'}" in done.stderr.decode()
    done = run_tool(str(tmp_path / "code"), tool=command)
    assert done.returncode == 0 and "files found under" not in done.stderr.decode()


@pytest.mark.parametrize(
    ("source", "where", "reason"),
    [
        pytest.param(F + "def f(:\n    F.interpolate(x)\n", ":2:7:", "syntax error: invalid syntax", id="invalid-syntax"),
        pytest.param(F + "y = F.interpolate(\n    x, mode='bilinear'\n", ":2:18:", "'(' was never closed", id="never-closed"),
    ],
)
@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_syntax_error_is_one_short_line_at_the_right_place(tmp_path, source, where, reason, command):
    from tests.conftest import run_tool

    (tmp_path / "bad.py").write_text(source)
    done = run_tool(str(tmp_path / "bad.py"), tool=command)
    [line] = [text_line for text_line in done.stderr.decode().splitlines() if "bad.py" in text_line]
    assert done.returncode == 3 and where in line and line.endswith(reason) and len(line) < 80 + len(str(tmp_path))


TORCH = "import torch\n" + F
BILINEAR = "F.interpolate(x, scale_factor=2, mode='bilinear')"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(TORCH + f"with torch.no_grad():\n    y = {BILINEAR}\n", [("CP101", "warning")], id="with-no_grad"),
        pytest.param(TORCH + f"@torch.no_grad()\ndef f(x):\n    return {BILINEAR}\n", [("CP101", "warning")], id="decorator-no_grad-call"),
        pytest.param(TORCH + f"@torch.inference_mode\ndef f(x):\n    return {BILINEAR}\n", [("CP101", "warning")], id="decorator-inference_mode-bare"),
        pytest.param(
            "from torch import no_grad\n" + F + f"with no_grad(), open(p):\n    y = {BILINEAR}\n", [("CP101", "warning")], id="imported-no_grad-two-items"
        ),
        pytest.param(TORCH + f"with torch.set_grad_enabled(False):\n    y = {BILINEAR}\n", [("CP101", "warning")], id="set_grad_enabled-False"),
        pytest.param(TORCH + "with torch.no_grad():\n    y = F.max_pool2d(x, 2)\n", [("CP107", "warning")], id="max-pool-gradient"),
        pytest.param(TORCH + "with torch.no_grad():\n    y = F.max_pool2d(x, 3, 2)\n", [("CP106", "warning")], id="pool-stride-backward-only"),
        # still errors: candle has no forward for these, gradients or not
        pytest.param(TORCH + "with torch.no_grad():\n    y = F.max_pool2d(x, 3, 2, 1)\n", [("CP106", "error")], id="pool-padding-has-no-forward"),
        pytest.param(TORCH + "with torch.no_grad():\n    y = F.interpolate(x, size=8, mode='bicubic')\n", [("CP104", "error")], id="bicubic-has-no-forward"),
        pytest.param(TORCH + "with torch.no_grad():\n    y = F.grid_sample(x, g)\n", [("CP105", "error")], id="grid_sample-has-no-forward"),
        # gradients back on, or not under the context when it runs
        pytest.param(TORCH + f"y = {BILINEAR}\n", [("CP101", "error")], id="no-context"),
        pytest.param(TORCH + f"with torch.inference_mode(False):\n    y = {BILINEAR}\n", [("CP101", "error")], id="inference_mode-False"),
        pytest.param(TORCH + f"with torch.no_grad():\n    with torch.enable_grad():\n        y = {BILINEAR}\n", [("CP101", "error")], id="enable_grad-inside"),
        pytest.param(TORCH + f"with torch.set_grad_enabled(training):\n    y = {BILINEAR}\n", [("CP101", "error")], id="set_grad_enabled-dynamic"),
        pytest.param(TORCH + f"with torch.no_grad():\n    def f(x):\n        return {BILINEAR}\n", [("CP101", "error")], id="function-defined-under-no_grad"),
        pytest.param(F + f"with no_grad():\n    y = {BILINEAR}\n", [("CP101", "error")], id="local-lookalike-no_grad"),
        pytest.param(TORCH + f"with torch.no_grad():\n    f = lambda x: {BILINEAR}\n", [("CP101", "error")], id="lambda-defined-under-no_grad"),
    ],
)
def test_sites_under_no_grad_are_a_lower_severity_with_the_reason(source, expected):
    findings = check_source(source)
    assert [(f.code, f.severity.value) for f in findings] == expected
    lowered = [f for f in findings if f.severity.value == "warning"]
    assert all("not on a gradient path" in f.message for f in lowered)


def test_port_fix_leaves_no_grad_sites_alone_unless_asked():
    from candle_port.api import fix_source
    from candle_port.config import Config

    source = TORCH + f"with torch.no_grad():\n    y = {BILINEAR}\nz = {BILINEAR}\n"
    default = fix_source(source, strategy="runtime")
    assert [f.line for f in default.fixed] == [5] and [s.line for s in default.skipped] == [4]
    assert "--include-no-grad" in default.skipped[0].reason and "    y = F.interpolate" in default.text
    included = fix_source(source, strategy="runtime", config=Config(include_no_grad=True))
    assert [f.line for f in included.fixed] == [4, 5] and not included.skipped


def test_port_fix_include_no_grad_flag(tmp_path):
    from tests.conftest import run_tool

    path = tmp_path / "m.py"
    path.write_text(TORCH + f"with torch.no_grad():\n    y = {BILINEAR}\n")
    done = run_tool(str(path), "--diff", tool="fix")
    assert done.returncode == 0 and not done.stdout and "skipped CP101" in done.stderr.decode()
    done = run_tool(str(path), "--diff", "--include-no-grad", tool="fix")
    assert done.returncode == 0 and "+    y = candle_runtime.interpolate" in done.stdout.decode()


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(NN + "pool_type = nn.MaxPool2d\nm = pool_type(3, 2, 1)\n", [("CP106", "error")], id="alias-is-the-class"),
        pytest.param(
            NN + "POOLS = (nn.MaxPool1d, nn.MaxPool2d)\nm = POOLS[dim - 1](3, 2)\n",
            [("CP106", "warning"), ("CP106", "warning")],
            id="tuple-indexed-at-run-time",
        ),
        pytest.param(
            NN + "m = {'max': nn.MaxPool2d, 'avg': nn.AvgPool2d}[kind](2)\n", [("CP107", "warning")], id="dict-indexed-at-run-time"
        ),
        pytest.param(NN + "m = {'max': nn.MaxPool2d, 'avg': nn.AvgPool2d}['avg'](3, 2)\n", [("CP106", "error")], id="dict-literal-key-decided"),
        pytest.param(NN + "m = [nn.ConvTranspose1d, nn.ConvTranspose2d][1](8, 8, 4, 2, 1, groups=8)\n", [("CP108", "error")], id="list-literal-index-decided"),
        pytest.param(NN + "m = {'max': nn.MaxPool2d, 'avg': nn.AvgPool2d}['avg'](2)\n", [], id="decided-and-fine"),
        pytest.param(NN + "m = (nn.Conv2d, nn.Identity)[k](8, 8, 3)\n", [], id="no-candle-problem-in-the-collection"),
        pytest.param("m = (str, int)[k](2)\n", [], id="not-layers"),
        pytest.param(NN + "m = layers[k](3, 2)\n", [], id="unknown-collection"),
        # demucs' HDemucs: a name rebound from one layer class to another builds a layer chosen at run time
        pytest.param(
            NN + "pool = nn.MaxPool2d\nif c:\n    pool = nn.AvgPool2d\nm = pool(3, 1)\n",
            [("CP106", "warning"), ("CP106", "warning")],
            id="rebound-name-each-class-judged",
        ),
        pytest.param(
            NN + "k = nn.ConvTranspose1d\nif c:\n    k = nn.ConvTranspose2d\nm = k(8, 8, (4, 1), (2, 1))\n",
            [("CP108", "error")],
            id="rebound-name-unsupported-class-is-a-value-site",
        ),
        pytest.param(NN + "k = nn.ConvTranspose1d\nm = k(8, 8, 4, 2)\n", [("CP108", "error")], id="bound-once-call-site"),
        pytest.param(NN + "act = nn.ReLU\nif c:\n    act = nn.GELU\nm = act()\n", [], id="rebound-not-our-layers"),
        # HDemucs' `klass = nn.Conv1d; if freq: klass = nn.Conv2d`: the 1-D one is judged at the call (CP111)
        pytest.param(NN + "k = nn.Conv1d\nif c:\n    k = nn.Conv2d\nm = k(8, 16, 3)\n", [("CP111", "warning")], id="rebound-conv1d"),
        pytest.param(NN + "k = nn.Conv1d\nif c:\n    k = nn.Conv2d\nm = k(8, 8, 3, groups=8)\n", [], id="rebound-conv1d-depthwise"),
    ],
)
def test_layer_classes_reached_through_a_name_a_tuple_or_a_dict(source, expected):
    assert codes_and_severities(source) == expected


def test_layer_chosen_at_run_time_is_said_and_refused_by_port_fix():
    from candle_port.api import fix_source

    source = NN + "POOLS = (nn.MaxPool1d, nn.MaxPool2d)\nm = POOLS[dim - 1](3, 2)\n"
    findings = check_source(source)
    assert all("POOLS[dim - 1], layer chosen at run time" in f.message and not f.fixes for f in findings)
    result = fix_source(source, strategy="runtime")
    assert result.text == source and not result.fixed and "rewrite the collection by hand" in result.refused[0].reason


def test_a_name_rebound_to_another_class_is_swapped_where_assigned():
    """demucs' HDemucs: `klass_tr = nn.ConvTranspose1d`, then `if freq: klass_tr = nn.ConvTranspose2d`.
    The class candle cannot run whatever its arguments is reported and swapped where it is assigned
    (not refused at the call as a rebound name); the other class is judged at the call."""
    from candle_port.api import fix_source

    source = NN + "klass_tr = nn.ConvTranspose1d\nif freq:\n    klass_tr = nn.ConvTranspose2d\nm = klass_tr(8, 8, 4, 2)\n"
    [finding] = check_source(source)
    assert (finding.line, finding.code) == (2, "CP108") and "a name rebound to another class" in finding.message
    result = fix_source(source, strategy="runtime")
    assert "klass_tr = candle_runtime.ConvTranspose1d\n" in result.text and not result.refused
    assert "klass_tr = nn.ConvTranspose2d\n" in result.text and "m = klass_tr(8, 8, 4, 2)\n" in result.text
    assert check_source(result.text) == []


def test_a_layer_chosen_through_a_rebound_name_is_fixed_where_it_is_assigned():
    """HDemucs: `klass = nn.Conv1d; if freq: klass = nn.Conv2d`, then two calls `klass(...)`. The
    runtime's Conv1d equals torch's for any arguments, so the assignment's reference is swapped
    once (both calls fixed) instead of refusing the calls; a strategy without the drop-in refuses."""
    from candle_port.api import fix_source

    source = NN + (
        "klass = nn.Conv1d\nif freq:\n    klass = nn.Conv2d\n"
        "a = klass(8, 16, 3)\nb = klass(16, 32, 1)\n"
    )
    assert [f.code for f in check_source(source)] == ["CP111", "CP111"]
    result = fix_source(source, strategy="runtime")
    assert not result.refused and len(result.fixed) == 2
    assert result.text.count("candle_runtime.Conv1d") == 1 and "klass = nn.Conv2d\n" in result.text
    assert "a = klass(8, 16, 3)\n" in result.text and check_source(result.text) == []
    assert fix_source(result.text, strategy="runtime").text == result.text
    refused = fix_source(source, strategy="nearest")
    assert refused.text == source and len(refused.refused) == 2
    # timm's ResNet: `avg_pool_fn = AvgPool2dSame if ... else nn.AvgPool2d`. The imported class may
    # subclass nn.AvgPool2d (it does), which one file cannot show: not swapped, refused.
    timm_style = NN + "from timm.layers import AvgPool2dSame\npool_fn = AvgPool2dSame if d > 1 else nn.AvgPool2d\nm = pool_fn(2, s, ceil_mode=True)\n"
    kept = fix_source(timm_style, strategy="runtime")
    assert kept.text == timm_style and "chosen by a conditional" in kept.refused[0].reason


def test_upsampling_bilinear2d_is_described_by_what_it_implies_not_a_mode_argument():
    """nn.UpsamplingBilinear2d has no `mode` parameter; it is bilinear with align_corners=True."""
    [finding] = check_source(NN + "m = nn.UpsamplingBilinear2d(scale_factor=2)\n")
    assert finding.code == "CP101" and finding.message.startswith("nn.UpsamplingBilinear2d (bilinear, align_corners=True) has no backward")
    [finding] = check_source(NN + "m = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)\n")
    assert finding.message.startswith("nn.Upsample(mode='bilinear', align_corners=True) has no backward")


def test_a_subclass_of_an_unsupported_layer_passed_as_a_value_is_reported_at_its_base():
    """torchvision's video ResNets hand `Conv3DSimple(nn.Conv3d)` to their blocks as a value;
    no construction of it is written, so its base is the site. A construction written by name is
    the site instead (not both); a 2-D pool subclass depends on its arguments: nothing without one."""
    source = (
        NN
        + "class Conv3DSimple(nn.Conv3d):\n    pass\n\n"
        + "class Deeper(Conv3DSimple):\n    pass\n\n"
        + "class Built(nn.Conv3d):\n    pass\n\n"
        + "class Up1d(nn.ConvTranspose1d):\n    pass\n\n"
        + "class Pool(nn.MaxPool2d):\n    pass\n\n"
        + "makers = [Conv3DSimple, Deeper, Pool]\nb = Built(4, 4, 3)\n"
    )
    found = [(f.line, f.column, f.code, f.message.split(":")[0]) for f in check_source(source)]
    assert found == [
        (2, 20, "CP110", "Conv3DSimple (a subclass of nn.Conv3d)"),
        (11, 12, "CP108", "Up1d (a subclass of nn.ConvTranspose1d)"),
        (18, 5, "CP110", "Built (a subclass of nn.Conv3d)"),
    ]
