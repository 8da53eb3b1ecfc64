"""A class swap never changes what a type check in the file answers (issue 32): refused where it would.

The runtime's classes subclass torch's, so `isinstance(m, nn.Conv3d)` keeps holding after the fix
(checked by running the fixed model); `type(m) == nn.Conv3d`, `is`, `in (...)` and a dict keyed by
the class would not, so those sites are refused. convtranspose's ConvTransposeUpsample is not an
nn.Upsample: there isinstance refuses too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from candle_port.api import fix_source

MODEL = '''import torch
import torch.nn as nn

INIT = {{nn.Conv3d: 0.5}}
KINDS = (nn.Conv3d, nn.Linear)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(1, 1, 3)
        self.apply(self._init)

    def _init(self, m):
        if {check}:
            nn.init.constant_(m.weight, 0.5)
'''
EXACT_CHECKS = {
    "type_eq": "type(m) == nn.Conv3d",
    "type_is": "type(m) is nn.Conv3d",
    "class_attr_eq": "m.__class__ == nn.Conv3d",
    "type_in_literal": "type(m) in (nn.Conv3d, nn.Conv2d)",
    "type_in_named_tuple": "type(m) in KINDS",
}


@pytest.mark.parametrize("check", EXACT_CHECKS.values(), ids=EXACT_CHECKS.keys())
def test_an_exact_type_check_of_the_swapped_class_refuses_the_swap(check: str):
    source = MODEL.format(check=check).replace("INIT = {nn.Conv3d: 0.5}\n", "")
    result = fix_source(source, path="net.py")
    assert not result.changed, result.text
    assert [r.code for r in result.refused] == ["CP110"]
    assert "checks the exact class nn.Conv3d" in result.refused[0].reason


def test_a_dict_keyed_by_the_class_refuses_the_swap():
    source = MODEL.format(check="INIT.get(type(m)) == 0.5")
    result = fix_source(source, path="net.py")
    assert not result.changed and [r.code for r in result.refused] == ["CP110"]


def test_isinstance_is_kept_by_the_runtime_swap_and_the_model_computes_the_same(tmp_path: Path):
    source = MODEL.format(check="isinstance(m, nn.Conv3d)").replace("INIT = {nn.Conv3d: 0.5}\n", "")
    result = fix_source(source, path="net.py")
    assert result.changed and [f.code for f in result.fixed] == ["CP110"] and not result.refused
    assert "candle_runtime.Conv3d(1, 1, 3)" in result.text
    (tmp_path / "fixed.py").write_text(result.text)
    (tmp_path / "original.py").write_text(source)
    code = (
        "import torch, fixed, original\n"
        "a, b = fixed.Net(), original.Net()\n"
        "assert type(a.conv) is not torch.nn.Conv3d and isinstance(a.conv, torch.nn.Conv3d)\n"
        "assert bool((a.conv.weight == 0.5).all()) and bool((b.conv.weight == 0.5).all())\n"
        "a.conv.bias.data.copy_(b.conv.bias.data)\n"
        "x = torch.randn(1, 1, 4, 4, 4)\n"
        "assert torch.allclose(a.conv(x), b.conv(x), atol=1e-6)\nprint('same')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "same", out.stderr


def test_the_class_checks_of_another_class_do_not_refuse():
    source = MODEL.format(check="type(m) == nn.Linear").replace("INIT = {nn.Conv3d: 0.5}\n", "")
    result = fix_source(source, path="net.py")
    assert result.changed and not result.refused


UPSAMPLE = '''import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear")

    def frozen(self):
        return [m for m in self.modules() if {check}]
'''


@pytest.mark.parametrize(
    ("strategy", "check", "refused"),
    [
        pytest.param("convtranspose", "isinstance(m, nn.Upsample)", True, id="convtranspose-isinstance-refused"),
        pytest.param("convtranspose", "isinstance(m, (nn.Upsample, nn.ReLU))", True, id="convtranspose-isinstance-tuple-refused"),
        pytest.param("runtime", "isinstance(m, nn.Upsample)", False, id="runtime-isinstance-fixed"),
        pytest.param("runtime", "type(m) is nn.Upsample", True, id="runtime-type-is-refused"),
        pytest.param("nearest", "type(m) is nn.Upsample", False, id="nearest-keeps-the-class"),
    ],
)
def test_which_strategy_changes_which_check(strategy: str, check: str, refused: bool):
    result = fix_source(UPSAMPLE.format(check=check), strategy=strategy, path="net.py")
    assert bool(result.refused) == refused and result.changed != refused
