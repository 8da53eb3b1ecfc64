"""Every rule's own VALID and INVALID examples, and the shape of the catalog."""

from __future__ import annotations

import re

import pytest

from candle_port.api import check_source
from candle_port.rules import all_rules

RULES = all_rules()
CASES = [
    pytest.param(rule, source, expected, id=f"{rule.code}-{'invalid' if expected else 'valid'}-{i}")
    for rule in RULES
    for expected, sources in ((True, rule.INVALID), (False, rule.VALID))
    for i, source in enumerate(sources)
]


@pytest.mark.parametrize(("rule", "source", "expected"), CASES)
def test_rule_example(rule, source, expected):
    codes = [f.code for f in check_source(source)]
    assert (rule.code in codes) is expected, codes


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_is_documented_and_has_examples(rule):
    assert re.fullmatch(r"CP\d{3}", rule.code)
    assert rule.INVALID and rule.VALID, f"{rule.code} needs VALID and INVALID examples"
    assert rule.__doc__ or type(rule).__module__, rule.code
    assert rule.summary and rule.why and rule.source


def test_catalog_has_the_fixed_codes():
    assert [r.code for r in RULES][:5] == ["CP101", "CP102", "CP103", "CP104", "CP105"]
