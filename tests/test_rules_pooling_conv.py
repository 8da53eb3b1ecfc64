"""CP106-CP110: pooling, transposed convolution, adaptive pooling and 3-D ops, as a table of cases."""

from __future__ import annotations

import pytest

from candle_port.api import check_source

NN = "from torch import nn\n"
F = "import torch.nn.functional as F\n"
NEW_CODES = {"CP106", "CP107", "CP108", "CP109", "CP110"}

REPORTED = [
    # CP106: kernel != stride, padding, dilation, ceil_mode
    pytest.param(NN + "m = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)\n", "CP106", id="MaxPool2d-k3-s2-p1"),
    pytest.param(NN + "m = nn.MaxPool2d(3, 2, 1)\n", "CP106", id="MaxPool2d-positional"),
    pytest.param(NN + "m = nn.MaxPool2d(3, 1)\n", "CP106", id="MaxPool2d-stride-1"),
    pytest.param(NN + "m = nn.MaxPool2d((2, 2), (2, 1))\n", "CP106", id="MaxPool2d-tuple-stride-differs"),
    pytest.param(NN + "m = nn.MaxPool2d(2, 2, 0, 1, False, True)\n", "CP106", id="MaxPool2d-ceil_mode-6th-positional"),
    pytest.param(NN + "m = nn.MaxPool2d(2, dilation=(1, 2))\n", "CP106", id="MaxPool2d-dilation"),
    pytest.param(NN + "m = nn.AvgPool2d(3, stride=1, padding=1)\n", "CP106", id="AvgPool2d-k3-s1-p1"),
    pytest.param(NN + "m = nn.AvgPool2d(2, 2, 0, True)\n", "CP106", id="AvgPool2d-ceil_mode-4th-positional"),
    pytest.param(F + "y = F.max_pool2d(x, 3, 2, 1)\n", "CP106", id="F.max_pool2d-positional"),
    pytest.param(F + "y = F.max_pool2d(x, 2, None, 0, 1, True)\n", "CP106", id="F.max_pool2d-ceil_mode-6th-positional"),
    pytest.param(F + "y = F.avg_pool2d(x, kernel_size=2, padding=(0, 1))\n", "CP106", id="F.avg_pool2d-padding-tuple"),
    pytest.param("from torch.nn.functional import avg_pool2d as ap\ny = ap(x, 3, 2)\n", "CP106", id="avg_pool2d-import-alias"),
    pytest.param("from torch.nn import MaxPool2d as MP\nm = MP(3, 2)\n", "CP106", id="MaxPool2d-import-alias"),
    pytest.param("import torch\nm = torch.nn.modules.pooling.AvgPool1d(3, 2)\n", "CP106", id="AvgPool1d-from-modules"),
    pytest.param(F + "y = F.max_pool1d(x, 3, padding=1)\n", "CP106", id="F.max_pool1d-padding"),
    pytest.param("import torch\ny = torch.max_pool2d(x, 3, 2)\n", "CP106", id="torch.max_pool2d"),
    pytest.param("import functools\n" + F + "p = functools.partial(F.avg_pool2d, kernel_size=3, stride=2)\n", "CP106", id="partial"),
    # CP107: every max pool CP106 does not report
    pytest.param(NN + "m = nn.MaxPool2d(2)\n", "CP107", id="MaxPool2d-2"),
    pytest.param(NN + "m = nn.MaxPool2d(2, 2, 0, 1, True)\n", "CP107", id="MaxPool2d-return_indices-5th"),
    pytest.param(NN + "m = nn.MaxPool2d(kernel_size=k, stride=s)\n", "CP107", id="MaxPool2d-dynamic"),
    pytest.param(F + "y = F.max_pool2d(x, (2, 2), stride=[2, 2])\n", "CP107", id="F.max_pool2d-tuple-equal"),
    pytest.param("from torch.nn.functional import max_pool2d as mp\ny = mp(x, 2)\n", "CP107", id="max_pool2d-import-alias"),
    pytest.param(NN + "class P(nn.MaxPool2d):\n    pass\nm = P(2)\n", "CP107", id="MaxPool2d-subclass"),
    pytest.param(F + "y = F.max_pool1d(x, 2)\n", "CP107", id="F.max_pool1d"),
    # CP108: conv_transpose1d always; 2-D with groups or output_padding >= stride
    pytest.param(NN + "m = nn.ConvTranspose1d(8, 8, 4, stride=2, padding=1)\n", "CP108", id="ConvTranspose1d"),
    pytest.param(F + "y = F.conv_transpose1d(x, w, b, 2)\n", "CP108", id="F.conv_transpose1d"),
    pytest.param("import torch\ny = torch.conv_transpose1d(x, w)\n", "CP108", id="torch.conv_transpose1d"),
    pytest.param(NN + "m = nn.ConvTranspose2d(64, 64, 4, 2, 1, 0, 64)\n", "CP108", id="ConvTranspose2d-groups-7th-positional"),
    pytest.param(NN + "m = nn.ConvTranspose2d(64, 64, 4, stride=2, groups=2)\n", "CP108", id="ConvTranspose2d-groups-keyword"),
    pytest.param(NN + "m = nn.ConvTranspose2d(8, 8, 3, output_padding=1)\n", "CP108", id="ConvTranspose2d-output_padding-default-stride"),
    pytest.param(NN + "m = nn.ConvTranspose2d(8, 8, 3, (2, 1), 1, (1, 1))\n", "CP108", id="ConvTranspose2d-output_padding-tuple"),
    pytest.param(F + "y = F.conv_transpose2d(x, w, None, 1, 0, 0, 4)\n", "CP108", id="F.conv_transpose2d-groups-positional"),
    pytest.param("from torch.nn import ConvTranspose1d as CT\nm = CT(4, 4, 3)\n", "CP108", id="ConvTranspose1d-import-alias"),
    # CP109: adaptive pooling to anything but 1
    pytest.param(NN + "m = nn.AdaptiveAvgPool2d((7, 7))\n", "CP109", id="AdaptiveAvgPool2d-7x7"),
    pytest.param(NN + "m = nn.AdaptiveMaxPool2d(output_size=2)\n", "CP109", id="AdaptiveMaxPool2d-2"),
    pytest.param(F + "y = F.adaptive_avg_pool2d(x, (1, 2))\n", "CP109", id="F.adaptive_avg_pool2d-1x2"),
    pytest.param(F + "y = F.adaptive_avg_pool2d(x, size)\n", "CP109", id="F.adaptive_avg_pool2d-dynamic"),
    pytest.param(F + "y = F.adaptive_max_pool1d(x, 4)\n", "CP109", id="F.adaptive_max_pool1d-4"),
    pytest.param("from torch.nn import AdaptiveAvgPool1d as AP\nm = AP(8)\n", "CP109", id="AdaptiveAvgPool1d-import-alias"),
    # CP108 on Lazy modules: in_channels is inferred, so groups is the 6th positional argument
    pytest.param(NN + "m = nn.LazyConvTranspose1d(8, 4, 2)\n", "CP108", id="LazyConvTranspose1d"),
    pytest.param(NN + "m = nn.LazyConvTranspose2d(8, 4, 2, 1, 0, 8)\n", "CP108", id="LazyConvTranspose2d-groups-6th-positional"),
    # CP110: every 3-D convolution and pooling
    pytest.param(NN + "m = nn.Conv3d(8, 8, 3, padding=1)\n", "CP110", id="Conv3d"),
    pytest.param(NN + "m = nn.ConvTranspose3d(8, 8, 2, stride=2)\n", "CP110", id="ConvTranspose3d"),
    pytest.param(NN + "m = nn.LazyConv3d(8, 3)\n", "CP110", id="LazyConv3d"),
    pytest.param(NN + "m = nn.MaxPool3d(2)\n", "CP110", id="MaxPool3d"),
    pytest.param(NN + "m = nn.AvgPool3d((1, 2, 2))\n", "CP110", id="AvgPool3d"),
    pytest.param(NN + "m = nn.AdaptiveAvgPool3d(1)\n", "CP110", id="AdaptiveAvgPool3d-even-global"),
    pytest.param(F + "y = F.conv3d(x, w, b, 1, 1)\n", "CP110", id="F.conv3d"),
    pytest.param(F + "y = F.avg_pool3d(x, 2)\n", "CP110", id="F.avg_pool3d"),
    pytest.param(F + "y = F.interpolate(F.max_pool3d(x, 2), scale_factor=2)\n", "CP110", id="F.max_pool3d-nested"),
    pytest.param("import torch\ny = torch.conv3d(x, w)\n", "CP110", id="torch.conv3d"),
    pytest.param("from torch.nn import Conv3d as C3\nm = C3(4, 4, 3)\n", "CP110", id="Conv3d-import-alias"),
    pytest.param(NN + "class CausalConv3d(nn.Conv3d):\n    pass\nm = CausalConv3d(4, 4, 3)\n", "CP110", id="Conv3d-subclass"),
    pytest.param(NN + "layers = nn.Sequential(nn.Conv3d(4, 4, 3), nn.ReLU())\n", "CP110", id="Conv3d-in-Sequential"),
]

LEFT_ALONE = [
    pytest.param(NN + "m = nn.MaxPool2d(3, 2)\n", "CP107", id="CP107-not-with-CP106"),
    pytest.param(NN + "m = nn.AvgPool2d(2)\n", "CP106", id="AvgPool2d-2"),
    pytest.param(NN + "m = nn.AvgPool2d(2)\n", "CP107", id="AvgPool2d-not-max"),
    pytest.param(NN + "m = nn.AvgPool2d(kernel_size=(2, 2), stride=2, padding=0)\n", "CP106", id="AvgPool2d-tuple-equal"),
    pytest.param(NN + "m = nn.MaxPool2d(2, 2, 0, 1, True)\n", "CP106", id="MaxPool2d-return_indices-not-ceil_mode"),
    pytest.param(NN + "m = nn.AvgPool2d(2, 2, 0, False, False)\n", "CP106", id="AvgPool2d-count_include_pad"),
    pytest.param(NN + "m = nn.MaxPool2d(k, 2)\n", "CP106", id="MaxPool2d-kernel-dynamic"),
    pytest.param(NN + "m = nn.MaxPool2d(3, stride=s, padding=p)\n", "CP106", id="MaxPool2d-stride-padding-dynamic"),
    pytest.param(F + "y = F.avg_pool2d(x, 2, None)\n", "CP106", id="F.avg_pool2d-stride-None"),
    pytest.param(NN + "class P(nn.MaxPool2d):\n    def __init__(self, c, k):\n        super().__init__(k)\nm = P(64, 2)\n", "CP106", id="subclass-with-own-init"),
    pytest.param("from scipy.ndimage import maximum_filter as max_pool2d\ny = max_pool2d(x, 3, 2)\n", "CP107", id="look-alike-import"),
    pytest.param("def max_pool2d(x, k, s=None):\n    return x\ny = max_pool2d(x, 3, 2)\n", "CP106", id="look-alike-local-def"),
    pytest.param("import tensorflow as tf\ny = tf.nn.max_pool2d(x, 3, 2, 'SAME')\n", "CP106", id="look-alike-tensorflow"),
    pytest.param(NN + "# nn.MaxPool2d(3, 2)\ns = 'nn.ConvTranspose1d(1, 1, 1)'\n", "CP106", id="comment-and-string"),
    pytest.param(NN + "m = nn.ConvTranspose2d(64, 32, 2, stride=2)\n", "CP108", id="ConvTranspose2d-plain"),
    pytest.param(NN + "m = nn.ConvTranspose2d(64, 32, 3, 2, 1, 1)\n", "CP108", id="ConvTranspose2d-output_padding-1-stride-2"),
    pytest.param(NN + "m = nn.ConvTranspose2d(64, 32, 3, 2, 1, 1, 1, False, 2)\n", "CP108", id="ConvTranspose2d-groups-1-dilation-2"),
    pytest.param(NN + "m = nn.ConvTranspose2d(c, c, 4, 2, 1, groups=1)\n", "CP108", id="ConvTranspose2d-groups-1"),
    pytest.param(F + "y = F.conv_transpose2d(x, w, None, 2, 1, 1)\n", "CP108", id="F.conv_transpose2d-output_padding-lt-stride"),
    pytest.param(NN + "m = nn.Conv1d(8, 8, 3)\n", "CP108", id="Conv1d-not-transposed"),
    pytest.param(NN + "m = nn.Conv2d(8, 8, 3)\n", "CP110", id="Conv2d-not-3d"),
    pytest.param(NN + "m = nn.BatchNorm3d(8)\n", "CP110", id="BatchNorm3d-not-an-op-candle-lacks-here"),
    pytest.param("def conv3d(x, w):\n    return x\ny = conv3d(x, w)\n", "CP110", id="look-alike-local-conv3d"),
    pytest.param("import tensorflow as tf\ny = tf.nn.conv3d(x, w, [1] * 5, 'SAME')\n", "CP110", id="look-alike-tensorflow-conv3d"),
    pytest.param(NN + "# nn.Conv3d(1, 1, 1)\ns = 'nn.MaxPool3d(2)'\n", "CP110", id="conv3d-comment-and-string"),
    pytest.param(NN + "m = nn.AdaptiveAvgPool2d(1)\n", "CP109", id="AdaptiveAvgPool2d-1"),
    pytest.param(NN + "m = nn.AdaptiveAvgPool2d((1, 1))\n", "CP109", id="AdaptiveAvgPool2d-1x1"),
    pytest.param(NN + "m = nn.AdaptiveMaxPool2d(output_size=[1, 1])\n", "CP109", id="AdaptiveMaxPool2d-list-1x1"),
    pytest.param(F + "y = F.adaptive_avg_pool2d(x, 1)\n", "CP109", id="F.adaptive_avg_pool2d-1"),
    pytest.param(F + "y = F.adaptive_max_pool1d(x, 1)\n", "CP109", id="F.adaptive_max_pool1d-1"),
    pytest.param(NN + "m = nn.AdaptiveMaxPool2d(1)\n", "CP107", id="AdaptiveMaxPool2d-1-not-CP107"),
]


@pytest.mark.parametrize(("source", "code"), REPORTED)
def test_reported(source, code):
    codes = [f.code for f in check_source(source)]
    assert code in codes, codes


@pytest.mark.parametrize(("source", "code"), LEFT_ALONE)
def test_left_alone(source, code):
    codes = [f.code for f in check_source(source)]
    assert code not in codes, codes


def test_cp106_and_cp107_never_both_on_one_site():
    for case in REPORTED:
        findings = check_source(case.values[0])
        lines = [f.line for f in findings if f.code in ("CP106", "CP107")]
        assert len(lines) == len(set(lines)), findings


def test_messages_name_the_values():
    [cp106] = check_source(NN + "m = nn.MaxPool2d(3, 2, 1)\n")
    assert "kernel_size=3" in cp106.message and "stride=2" in cp106.message and "padding=1" in cp106.message
    [cp107] = check_source(NN + "m = nn.MaxPool2d(2)\n")
    assert "silently" in cp107.message and "1/4" in cp107.message and cp107.severity.value == "warning"
    [cp108] = check_source(NN + "m = nn.ConvTranspose2d(8, 8, 4, 2, 1, 0, 8)\n")
    assert "groups=8" in cp108.message
    [cp109] = check_source(NN + "m = nn.AdaptiveAvgPool2d((7, 7))\n")
    assert "(7, 7)" in cp109.message


def test_cp107_says_when_the_stride_is_not_known_to_be_the_kernel():
    """efficientnet_pytorch's `F.max_pool2d(x, self.kernel_size, self.stride, ...)` and
    `partial(MaxPool2dStaticSamePadding, image_size=...)`: with the stride unknown, candle's
    backward is wrong or missing, and the message no longer asserts the kernel == stride case."""
    unknown = [
        F + "y = F.max_pool2d(x, 3, stride=s)\n",
        "import functools\n" + NN + "pool = functools.partial(nn.MaxPool2d, padding=0)\n",
    ]
    for source in unknown:
        [finding] = check_source(source)
        assert finding.code == "CP107" and "the stride is not known statically" in finding.message, source
        assert "missing otherwise" in finding.message
    known = [NN + "m = nn.MaxPool2d(2)\n", F + "y = F.max_pool2d(x, 2, 2)\n",
             "import functools\n" + NN + "pool = functools.partial(nn.MaxPool2d, 2, 2)\n"]
    for source in known:
        [finding] = check_source(source)
        assert finding.code == "CP107" and "silently wrong (no error)" in finding.message, source
        assert "not known statically" not in finding.message


def test_cp109_is_an_error_when_proven_and_a_warning_when_the_size_is_not_known():
    [proven] = check_source(NN + "m = nn.AdaptiveAvgPool2d(7)\n")
    [guessed] = check_source(F + "def pool(x, size=1):\n    return F.adaptive_avg_pool2d(x, size)\n")
    assert proven.severity.value == "error"
    assert guessed.severity.value == "warning" and "default 1" in guessed.message


def test_configured_severity_overrides_the_per_site_one():
    from candle_port.config import Config

    config = Config(severity=(("CP109", "error"),))
    [guessed] = check_source(F + "y = F.adaptive_avg_pool2d(x, size)\n", config=config)
    assert guessed.severity.value == "error"


def test_interpolation_rules_ignore_the_new_apis():
    source = NN + F + "a = nn.MaxPool2d(3, 2)\nb = nn.ConvTranspose1d(1, 1, 1)\nc = F.adaptive_avg_pool2d(x, m)\n"
    assert {f.code for f in check_source(source)} <= NEW_CODES
