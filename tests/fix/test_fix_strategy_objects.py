"""Each port-fix strategy is one object (rewriters/strategies/<name>.py) and every entry point asks it."""

from __future__ import annotations

import ast
import pytest

from candle_port.analysis.sites import scan_module
from candle_port.cli.fix import Strategy as FixChoice
from candle_port.cli.verify import Strategy as VerifyChoice
from candle_port.rewriters import eligibility, strategies


def _site(source: str):
    return scan_module(ast.parse(source), source).sites[0]


def test_registry_names_each_strategy_once():
    assert strategies.STRATEGIES == ("runtime", "nearest", "convtranspose", "detach")
    assert strategies.LISTED_STRATEGIES == ("runtime", "nearest", "convtranspose")  # detach: opt-in, never suggested
    assert set(strategies.REGISTRY) == {"runtime", "nearest", "convtranspose", "detach", "convert"}
    for name, strategy in strategies.REGISTRY.items():
        assert strategy.name == name and type(strategy).__module__ == f"candle_port.rewriters.strategies.{name}"
    assert strategies.EXACT_STRATEGIES == ("runtime", "convert")
    assert {c.value for c in FixChoice} == set(strategies.STRATEGIES)  # port-fix rewrites source only
    assert {c.value for c in VerifyChoice} <= set(strategies.REGISTRY)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n",
         ("runtime", "nearest", "convtranspose")),
        ("import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=1.5, mode='bilinear')\n", ("runtime",)),
        ("import torch.nn.functional as F\ny = F.max_pool2d(x, 3, 2, 1)\n", ("runtime",)),
    ],
)
def test_eligibility_is_the_strategies_refusal(source, expected):
    site = _site(source)
    assert eligibility.applicable(site) == expected
    for name in strategies.STRATEGIES:
        assert eligibility.refusal(name, site) == strategies.get(name).refusal(site)


def test_nearest_refuses_pooling_with_its_reason():
    site = _site("import torch.nn.functional as F\ny = F.max_pool2d(x, 3, 2, 1)\n")
    assert strategies.get("nearest").refusal(site) == (
        "the nearest strategy only rewrites upsampling; use --strategy runtime for pooling"
    )


def test_convert_rewrites_no_source_and_names_itself():
    site = _site("import torch.nn.functional as F\ny = F.max_pool2d(x, 3, 2, 1)\n")
    convert = strategies.get("convert")
    assert not convert.rewrites_source and convert.exact
    assert "candle_port.runtime.convert(model)" in convert.refusal(site)
