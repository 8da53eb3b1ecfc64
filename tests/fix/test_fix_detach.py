"""--strategy detach (issue 36): `x.detach()` before a resize; port-check then reports no
backward-only finding there (candle never differentiates it), and nothing else changes."""

from __future__ import annotations

import pytest

from candle_port.api import check_source, fix_source
from candle_port.config import ConfigError, load_config

HEADER = "import torch.nn.functional as F\n"


@pytest.mark.parametrize(
    ("call", "codes"),
    [
        pytest.param("F.interpolate(x.detach(), scale_factor=2, mode='bilinear')", [], id="bilinear-detached"),
        pytest.param("F.interpolate(x, scale_factor=2, mode='bilinear')", ["CP101"], id="bilinear"),
        pytest.param("F.interpolate(x.detach(), scale_factor=1.5)", [], id="nearest-scale-detached"),
        pytest.param("F.interpolate(x.detach(), scale_factor=2, mode='bicubic')", ["CP104"], id="no-forward-stays"),
        pytest.param("F.interpolate(x.detach(1), scale_factor=2, mode='bilinear')", ["CP101"], id="not-a-detach-call"),
    ],
)
def test_a_detached_input_has_no_backward_finding(call, codes):
    assert [f.code for f in check_source(HEADER + f"y = {call}\n")] == codes


def test_fixing_twice_is_fixing_once():
    text = HEADER + "def f(x, s):\n    return F.interpolate(x + s, scale_factor=2, mode='bilinear')\n"
    once = fix_source(text, strategy="detach")
    assert "F.interpolate((x + s).detach(), scale_factor=2, mode='bilinear')" in once.text
    assert not fix_source(once.text, strategy="detach").changed


def test_detach_is_a_configurable_strategy(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.candle-port]\nstrategy = "detach"\n')
    assert load_config(tmp_path / "pyproject.toml").strategy == "detach"
    (tmp_path / "pyproject.toml").write_text('[tool.candle-port]\nstrategy = "detached"\n')
    with pytest.raises(ConfigError, match="detach"):
        load_config(tmp_path / "pyproject.toml")
