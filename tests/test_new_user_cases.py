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
