"""Name resolution: every import form finds the site; look-alikes are left alone."""

from __future__ import annotations

import pytest

from candle_port.api import check_source

BILINEAR = "mode='bilinear'"

FOUND = [
    pytest.param("import torch.nn.functional as F\nF.interpolate(x, scale_factor=2, mode='bilinear')\n", id="import-as-F"),
    pytest.param("from torch.nn import functional as F\nF.interpolate(x, scale_factor=2, mode='bilinear')\n", id="from-nn-import-functional"),
    pytest.param("from torch.nn.functional import interpolate as up\nup(x, scale_factor=2, mode='bilinear')\n", id="from-functional-import-as"),
    pytest.param("from torch.nn.functional import interpolate\ninterpolate(x, scale_factor=2, mode='bilinear')\n", id="from-functional-import"),
    pytest.param("import torch\ntorch.nn.functional.interpolate(x, scale_factor=2, mode='bilinear')\n", id="fully-qualified"),
    pytest.param("import torch.nn\ntorch.nn.functional.interpolate(x, scale_factor=2, mode='bilinear')\n", id="import-submodule"),
    pytest.param("from torch import nn\nnn.functional.interpolate(x, scale_factor=2, mode='bilinear')\n", id="from-torch-import-nn"),
    pytest.param("import torch.nn as nn\nnn.functional.interpolate(x, scale_factor=2, mode='bilinear')\n", id="import-nn-as"),
    pytest.param("from torch.nn.functional import *\ninterpolate(x, scale_factor=2, mode='bilinear')\n", id="star-import"),
    pytest.param("import torch.nn.functional as F\nup = F.interpolate\nup(x, scale_factor=2, mode='bilinear')\n", id="alias-assignment"),
    pytest.param("import torch.nn.functional as F\nF.interpolate(x, None, 2, 'bilinear')\n", id="mode-by-position"),
    pytest.param("def f(x):\n    import torch.nn.functional as F\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n", id="function-level-import"),
    pytest.param("import torch.nn.functional as F\nclass M:\n    def forward(self, x):\n        return F.interpolate(x, scale_factor=2, mode='bilinear')\n", id="method"),
    pytest.param("import torch.nn.functional as F\nf = lambda x: F.interpolate(x, scale_factor=2, mode='bilinear')\n", id="lambda"),
    pytest.param("import torch.nn.functional as F\nys = [F.interpolate(x, scale_factor=2, mode='bilinear') for x in xs]\n", id="comprehension"),
    pytest.param("try:\n    from torch.nn.functional import interpolate\nexcept ImportError:\n    interpolate = None\ninterpolate(x, scale_factor=2, mode='bilinear')\n", id="try-import"),
    pytest.param("from torch import nn\nm = nn.Upsample(scale_factor=2, mode='bilinear')\n", id="Upsample-attribute"),
    pytest.param("from torch import nn\nm = nn.Sequential(nn.Conv2d(3, 3, 3), nn.Upsample(scale_factor=2, mode='bilinear'))\n", id="Upsample-in-Sequential"),
    pytest.param("from torch import nn\nlayers = {'up': nn.Upsample(scale_factor=2, mode='bilinear')}\n", id="Upsample-in-dict"),
    pytest.param("from torch import nn\ndef make():\n    return nn.Upsample(scale_factor=2, mode='bilinear')\n", id="Upsample-returned"),
    pytest.param("from torch.nn import Upsample\nm = Upsample(None, 2, 'bilinear')\n", id="Upsample-mode-by-position"),
    pytest.param("from torch.nn.modules.upsampling import Upsample\nm = Upsample(scale_factor=2, mode='bilinear')\n", id="Upsample-from-modules"),
    pytest.param("from torch.nn import UpsamplingBilinear2d\nm = UpsamplingBilinear2d(scale_factor=2)\n", id="UpsamplingBilinear2d"),
    pytest.param("import torch.nn.functional as F\nF.upsample_bilinear(x, scale_factor=2)\n", id="upsample_bilinear"),
    pytest.param("import torch.nn.functional as F\nF.upsample(x, scale_factor=2, mode='bilinear')\n", id="upsample"),
    pytest.param("from functools import partial\nimport torch.nn.functional as F\nup = partial(F.interpolate, mode='bilinear')\n", id="partial"),
    pytest.param("import functools\nfrom torch import nn\nclass Up(nn.Upsample):\n    pass\nm = Up(scale_factor=2, mode='bilinear')\n", id="subclass"),
    pytest.param("from torch import nn\nclass Up(nn.Upsample):\n    pass\nclass Up2(Up):\n    pass\nm = Up2(scale_factor=2, mode='bilinear')\n", id="subclass-of-subclass"),
]

LEFT_ALONE = [
    pytest.param("from scipy import interpolate\ninterpolate(x, None, 2, 'bilinear')\n", id="scipy-interpolate"),
    pytest.param("import scipy.interpolate\nscipy.interpolate.interp1d(x, y)\n", id="scipy-module"),
    pytest.param("import numpy as np\nnp.interp(x, xp, fp)\n", id="numpy-interp"),
    pytest.param("def interpolate(x, mode):\n    return x\ninterpolate(x, mode='bilinear')\n", id="local-def"),
    pytest.param("import torch.nn.functional as F\ndef f(F):\n    return F.interpolate(x, mode='bilinear')\n", id="parameter-shadows-F"),
    pytest.param("from torch.nn.functional import interpolate\ndef f():\n    interpolate = my_resize\n    return interpolate(x, mode='bilinear')\n", id="local-assignment-shadows"),
    pytest.param("import torch.nn.functional as F\n# F.interpolate(x, mode='bilinear')\n", id="comment"),
    pytest.param("def f():\n    \"\"\"F.interpolate(x, mode='bilinear')\"\"\"\n", id="docstring"),
    pytest.param("s = \"nn.Upsample(scale_factor=2, mode='bilinear')\"\n", id="string"),
    pytest.param("F.interpolate(x, mode='bilinear')\n", id="undefined-F"),
    pytest.param("from kornia.geometry import resize\nresize(x, (8, 8), interpolation='bilinear')\n", id="other-library"),
    pytest.param("class Upsample:\n    def __init__(self, **kw): pass\nm = Upsample(scale_factor=2, mode='bilinear')\n", id="own-Upsample-class"),
    pytest.param("import torch.nn.functional as F\nF.interpolate(x, scale_factor=2, mode='nearest')\n", id="nearest"),
    pytest.param("import torch.nn.functional as F\nF.interpolate(x, scale_factor=2)\n", id="default-nearest"),
    pytest.param("from torch import nn\nm = nn.Upsample(scale_factor=2)\n", id="Upsample-default-nearest"),
]


@pytest.mark.parametrize("source", FOUND)
def test_found_as_cp101(source):
    codes = [f.code for f in check_source(source)]
    assert "CP101" in codes


@pytest.mark.parametrize("source", LEFT_ALONE)
def test_left_alone(source):
    codes = [f.code for f in check_source(source)]
    assert "CP101" not in codes and "CP102" not in codes, codes


def test_finding_fields_point_at_the_start_of_the_call():
    source = "import torch.nn.functional as F\n\ndef f(x):\n    return (  # a comment\n        F.interpolate(\n            x, scale_factor=2, mode='bilinear'\n        )\n    )\n"
    (finding,) = check_source(source, path="model.py")
    assert (finding.code, finding.path, finding.line, finding.column) == ("CP101", "model.py", 5, 9)
    assert finding.severity.value == "error"
    assert finding.why and "upsample_bilinear2d" in finding.why
    assert finding.fixes == ("runtime", "nearest", "convtranspose")


def test_column_counts_characters_not_bytes():
    source = "import torch.nn.functional as F\ny = 'é'; z = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    (finding,) = check_source(source)
    assert finding.column == source.splitlines()[1].index("F.") + 1


@pytest.mark.parametrize(
    ("source", "fixes"),
    [
        pytest.param("import torch.nn.functional as F\nF.interpolate(x, size=(8, 8), mode='bilinear')\n", ("runtime",), id="size-only-runtime"),
        pytest.param("import torch.nn.functional as F\nF.interpolate(x, scale_factor=2, mode='bilinear', align_corners=True)\n", ("runtime", "nearest"), id="align-corners-true"),
        pytest.param("import torch.nn.functional as F\nF.interpolate(x, scale_factor=1.5, mode='bilinear')\n", ("runtime",), id="non-integer-scale"),
    ],
)
def test_fixes_listed_are_the_strategies_that_apply(source, fixes):
    (finding,) = check_source(source)
    assert finding.fixes == fixes


def test_dynamic_mode_names_the_parameter_default():
    source = "import torch.nn.functional as F\ndef up(x, mode='bilinear'):\n    return F.interpolate(x, scale_factor=2, mode=mode)\n"
    (finding,) = check_source(source)
    assert finding.code == "CP102" and finding.severity.value == "warning"
    assert "parameter of `up`" in finding.message and "default 'bilinear'" in finding.message


def test_dynamic_attribute_mode_traces_to_init_parameter():
    source = (
        "import torch.nn.functional as F\nclass M:\n    def __init__(self, upscale_mode='nearest'):\n"
        "        self.upscale_mode = upscale_mode\n    def forward(self, x):\n"
        "        return F.interpolate(x, scale_factor=2, mode=self.upscale_mode)\n"
    )
    (finding,) = check_source(source)
    assert "set in __init__ from parameter `upscale_mode`, default 'nearest'" in finding.message


def test_literal_conditional_mode_is_decided_by_its_values():
    source = "import torch.nn.functional as F\nF.interpolate(x, scale_factor=2, mode='nearest' if a else 'bicubic')\n"
    assert sorted(f.code for f in check_source(source)) == ["CP104"]


def test_suppression_comments():
    source = (
        "import torch.nn.functional as F\n"
        "a = F.interpolate(x, scale_factor=2, mode='bilinear')  # port: ignore\n"
        "b = F.interpolate(x, scale_factor=2, mode='bilinear')  # port: ignore[CP101]\n"
        "c = F.interpolate(x, scale_factor=2, mode='bilinear')  # port: ignore[CP102]\n"
        "d = F.interpolate(\n    x, scale_factor=2, mode='bilinear'\n)  # port: ignore[CP101, CP104]\n"
        "e = '# port: ignore'; f = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    )
    assert [f.line for f in check_source(source)] == [4, 8]
