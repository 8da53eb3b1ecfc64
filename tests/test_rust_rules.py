"""Every Rust rule's own VALID and INVALID examples (judged at candle 0.11.0, the measured
table's version), and the shape of the CP2xx catalog."""

from __future__ import annotations

import re

import pytest

from candle_port.rust.checker import check_rust_source
from candle_port.rust_rules import all_rust_rules, rust_rule_codes

RULES = all_rust_rules()
CASES = [
    pytest.param(rule, source, expected, id=f"{rule.code}-{'invalid' if expected else 'valid'}-{i}")
    for rule in RULES
    for expected, sources in ((True, rule.INVALID), (False, rule.VALID))
    for i, source in enumerate(sources)
]


@pytest.mark.parametrize(("rule", "source", "expected"), CASES)
def test_rust_rule_example(rule, source, expected):
    result = check_rust_source(source, "model.rs", candle_version="0.11.0")
    assert result.error is None, result.error
    codes = [f.code for f in result.findings]
    assert (rule.code in codes) is expected, codes


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rust_rule_is_documented_and_has_examples(rule):
    assert re.fullmatch(r"CP2\d\d", rule.code)
    assert rule.INVALID and rule.VALID, f"{rule.code} needs VALID and INVALID examples"
    assert rule.summary and rule.why and rule.source and rule.fix_hint


def test_rust_rule_codes_from_module_names_are_the_rules_codes():
    assert rust_rule_codes() == tuple(rule.code for rule in RULES)
    assert len(RULES) >= 9
