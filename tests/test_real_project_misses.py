"""What a new user found port-check missing on projects nobody here wrote (issue 36): a str-Enum
of another module (monai's `InterpolateMode`), a subclass passing computed arguments through
`super().__init__` (ultralytics' `DWConvTranspose2d`), a mode kept on `self` and passed to a
resize helper (mmsegmentation's `Upsample`), and a nearest upsample whose input has a second
consumer (every U-Net, FPN and YOLO neck)."""

from __future__ import annotations

from pathlib import Path

import pytest

from candle_port.pipeline.engine import check_paths


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _codes(root: Path) -> list[tuple[str, str, str]]:
    report = check_paths([str(root)], jobs=1)
    assert not report.errors, report.errors
    return sorted((Path(f.path).relative_to(root).as_posix(), f.code, f.severity.value) for f in report.findings)


NET = (
    "import torch.nn as nn\nimport torch.nn.functional as F\n\nfrom pkg.{module} import InterpolateMode\n\n\n"
    "class Net(nn.Module):\n    def forward(self, x):\n        return F.interpolate(x, scale_factor=2, mode=InterpolateMode.BICUBIC{attr})\n"
)
STR_ENUM = "from enum import Enum\n\n\nclass StrEnum(str, Enum):\n    pass\n"
MODES = "class InterpolateMode(StrEnum):\n    NEAREST = 'nearest'\n    BICUBIC = 'bicubic'\n"


@pytest.mark.parametrize(
    "files",
    [
        pytest.param(
            {"pkg/__init__.py": "", "pkg/utils/__init__.py": "from .enums import InterpolateMode\n",
             "pkg/utils/enums.py": STR_ENUM + "\n\n" + MODES, "pkg/net.py": NET.format(module="utils", attr=".value")},
            id="re-exported-by-a-package-init",
        ),
        pytest.param(
            {"pkg/__init__.py": "", "pkg/base.py": STR_ENUM, "pkg/modes.py": "from pkg.base import StrEnum\n\n\n" + MODES,
             "pkg/net.py": NET.format(module="modes", attr=".value")},
            id="enum-base-in-another-module",
        ),
        pytest.param(
            {"pkg/__init__.py": "", "pkg/base.py": STR_ENUM, "pkg/modes.py": "from pkg.base import StrEnum\n\n\n" + MODES,
             "pkg/net.py": NET.format(module="modes", attr="")},
            id="str-member-without-value",
        ),
    ],
)
def test_str_enum_value_of_another_module_gives_the_real_mode(tmp_path, files):
    """`mode=InterpolateMode.BICUBIC.value` was CP102 (unknown): the enum's module names no API, so
    it was summarized only when the site's import named it directly, and its base `StrEnum` was
    recognized only in the same module."""
    assert _codes(_tree(tmp_path, files)) == [("pkg/net.py", "CP104", "error")]


def test_a_class_of_another_base_is_not_taken_for_an_enum(tmp_path):
    files = {
        "pkg/__init__.py": "", "pkg/base.py": "class Config:\n    pass\n",
        "pkg/modes.py": "from pkg.base import Config\n\n\nclass InterpolateMode(Config):\n    BICUBIC = 'bicubic'\n",
        "pkg/net.py": NET.format(module="modes", attr=".value"),
    }
    assert _codes(_tree(tmp_path, files)) == [("pkg/net.py", "CP102", "warning")]


SUBCLASSES = '''import math
from torch import nn


class DWConvTranspose2d(nn.ConvTranspose2d):
    def __init__(self, c1, c2, k=1, s=1, p1=0, p2=0):
        super().__init__(c1, c2, k, s, p1, p2, groups=math.gcd(c1, c2))


class Grouped(nn.ConvTranspose2d):
    def __init__(self, c, groups=4):
        nn.ConvTranspose2d.__init__(self, c, c, 4, 2, 1, groups=groups)


class Up(nn.Upsample):
    def __init__(self, factor=2, mode="bilinear"):
        super(Up, self).__init__(scale_factor=factor, mode=mode)


class Pool(nn.MaxPool2d):
    def __init__(self, k):
        super().__init__(k, stride=k)


class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a = DWConvTranspose2d(c, c, 2, 2)
        self.b = Grouped(c)
        self.c = Grouped(c, groups=1)
        self.d = Up()
        self.e = Up(mode="nearest")
        self.f = Pool(2)
        self.g = Pool(k=3)
'''


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(28, ("CP108", "warning", "groups not known statically (`math.gcd(c1, c2)`)"), id="computed-groups"),
        pytest.param(29, ("CP108", "error", "(groups=4)"), id="default-of-init-passed-on"),
        pytest.param(30, None, id="groups-1-passed-by-keyword"),
        pytest.param(31, ("CP101", "error", "(mode='bilinear')"), id="upsample-mode-default"),
        pytest.param(32, None, id="upsample-nearest-passed"),
        pytest.param(33, ("CP107", "warning", "1/4 of the true gradient"), id="pool-kernel-passed-on-by-position"),
        pytest.param(34, ("CP107", "warning", "1/9 of the true gradient"), id="pool-kernel-passed-on-by-keyword"),
    ],
)
def test_subclass_is_judged_by_what_it_passes_to_super_init(line, expected):
    """Before, a subclass with its own `__init__` had unknown arguments: no finding at all for the
    pooling and convolution families, CP102 (unknown mode) for nn.Upsample."""
    from candle_port.api import check_source

    found = [(f.code, f.severity.value, f.message) for f in check_source(SUBCLASSES, "neck.py") if f.line == line and f.code != "CP116"]
    if expected is None:
        assert found == []
    else:
        assert [(code, severity) for code, severity, _ in found] == [expected[:2]]
        assert expected[2] in found[0][2]


RESIZE = (
    "import torch.nn.functional as F\n\n\n"
    "def resize(input, size=None, scale_factor=None, mode='nearest', align_corners=None):\n"
    "    return F.interpolate(input, size, scale_factor, mode, align_corners)\n"
)
UPSAMPLE = (
    "import torch.nn as nn\n\nfrom .resize_fn import resize\n\n\n"
    "class Upsample(nn.Module):\n"
    "    def __init__(self, size=None, scale_factor=None, mode='nearest', align_corners=None):\n"
    "        super().__init__()\n        self.size = size\n        self.scale_factor = scale_factor\n"
    "        self.mode = mode\n        self.align_corners = align_corners\n\n"
    "    def forward(self, x):\n        return resize(x, self.size, self.scale_factor, self.mode, self.align_corners)\n"
)
HEAD = (
    "import torch.nn as nn\n\nfrom ..ops import Upsample\n\n\n"
    "class FPNHead(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.up = Upsample(scale_factor=2, mode='bilinear', align_corners=False)\n"
    "        self.near = Upsample(scale_factor=2)\n        self.cubic = Upsample(None, 2, 'bicubic')\n"
)


def test_mode_kept_on_self_and_passed_to_a_resize_helper_is_reported_where_built(tmp_path):
    """mmsegmentation's `Upsample` stores `mode` in `__init__` and passes `self.mode` to its
    `resize` in `forward`: its bilinear instances (HRNet, FPN and SETR heads) went unreported."""
    root = _tree(tmp_path, {
        "pkg/__init__.py": "", "pkg/heads/__init__.py": "",
        "pkg/ops/__init__.py": "from .wrappers import Upsample, resize\n",
        "pkg/ops/resize_fn.py": RESIZE, "pkg/ops/wrappers.py": UPSAMPLE, "pkg/heads/fpn.py": HEAD,
    })
    assert _codes(root) == [
        ("pkg/heads/fpn.py", "CP101", "error"),
        ("pkg/heads/fpn.py", "CP104", "error"),
        ("pkg/ops/resize_fn.py", "CP102", "warning"),
    ]


def _cp116(body: str) -> list[tuple[int, str]]:
    from candle_port.api import check_source

    text = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n" + body
    return [(f.line, f.severity.value) for f in check_source(text, "neck.py") if f.code == "CP116"]


LAYER = "class Neck(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.up = nn.Upsample(scale_factor=2)\n\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param("def f(x):\n    return torch.cat([F.interpolate(x, scale_factor=2), x], 1)\n", [(7, "error")], id="functional-input-read-again"),
        pytest.param("def f(x):\n    y = x * 2\n    return F.interpolate(x, scale_factor=2) + y\n", [(8, "error")], id="read-before-the-call"),
        pytest.param(LAYER + "    def forward(self, x):\n        return self.up(x) + x.mean()\n", [(9, "error")], id="layer-on-self"),
        pytest.param("def f(x):\n    up = nn.Upsample(scale_factor=2)\n    return up(x) - x\n", [(7, "error")], id="layer-on-a-local-name"),
        pytest.param("def f(x, mode):\n    return nn.Sequential(nn.Upsample(scale_factor=2), nn.Identity())\n", [(7, "warning")], id="first-in-a-sequential-undecided"),
        pytest.param(LAYER + "    def forward(self, x):\n        return x\n", [(9, "warning")], id="layer-called-nowhere-undecided"),
    ],
)
def test_nearest_with_a_second_consumer_is_reported(body, expected):
    assert _cp116(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("def f(x):\n    return F.interpolate(x, scale_factor=2)\n", id="one-consumer"),
        pytest.param("def f(x):\n    x = F.interpolate(x, scale_factor=2)\n    return x + 1\n", id="name-rebound-by-the-call"),
        pytest.param("def f(x, conv):\n    return F.interpolate(conv(x), scale_factor=2) + x\n", id="input-is-a-fresh-tensor"),
        pytest.param("def f(x):\n    if x.shape[-1] != 4 and x is not None:\n        x = F.interpolate(x, size=(4, 4))\n    return x\n", id="shape-read-only"),
        pytest.param("def f(x, c):\n    if c:\n        return x * 2\n    return F.interpolate(x, scale_factor=2)\n", id="read-in-a-branch-that-returns"),
        pytest.param("def f(x, c):\n    if c:\n        y = x * 2\n    else:\n        y = F.interpolate(x, scale_factor=2)\n    return y\n", id="read-in-the-other-branch"),
        pytest.param("def f(x):\n    return torch.cat([F.interpolate(x, scale_factor=2, mode='bilinear'), x], 1)\n", id="bilinear-is-cp101"),
        pytest.param("def f(x):\n    return torch.cat([F.interpolate(x, scale_factor=1.5), x], 1)\n", id="non-integer-scale-is-cp103"),
        pytest.param("def make():\n    return nn.Sequential(nn.Conv2d(8, 8, 3), nn.Upsample(scale_factor=2))\n", id="not-first-in-a-sequential"),
    ],
)
def test_nearest_with_one_consumer_is_left_alone(body):
    assert _cp116(body) == []


def test_second_consumer_of_a_layer_is_found_when_forward_names_no_api(tmp_path):
    """port-check leaves out bodies that name no API (relevance.py); `forward` calling `self.up`
    must still be read to judge the layer's input."""
    root = _tree(tmp_path, {"neck.py": "import torch\nfrom torch import nn\n\n\n" + LAYER.replace("class Neck", "class Neck") +
                            "    def forward(self, x):\n        return torch.cat([self.up(x), x], 1)\n"})
    assert _codes(root) == [("neck.py", "CP116", "error")]


def test_a_subclass_passing_its_arguments_through_reads_the_construction():
    """`super().__init__(*args, **kwargs)`: the construction's arguments are the base's, as before."""
    from candle_port.api import check_source

    text = (
        "from torch import nn\n\n\nclass Up(nn.Upsample):\n    def __init__(self, *args, **kwargs):\n"
        "        super().__init__(*args, **kwargs)\n\n\nm = Up(scale_factor=2, mode='bilinear')\n"
    )
    assert [(f.line, f.code) for f in check_source(text, "up.py")] == [(9, "CP101")]
