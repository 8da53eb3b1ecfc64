"""Rename rules: the Python side reads them as the crate does (crates/candle-port-parity/src/renames.rs
has the same cases), and `compare` suggests rules from the names that miss."""

from __future__ import annotations

import pytest

from candle_port.parity.renames import RenameError, Renames, parse_rule, suggest


def test_placeholders_take_part_of_one_segment_and_the_rest_is_kept():
    r = Renames([("layers.{i}.attn.{w}", "blocks.{i}.{w}_attn")])
    assert r.to_torch("blocks.12.q_attn.weight") == "layers.12.attn.q.weight"
    assert r.to_torch("blocks..q_attn.weight") == "blocks..q_attn.weight"


def test_the_first_rule_that_applies_wins():
    r = Renames([("a.", "x.y."), ("b.", "x.")])
    assert r.to_torch("x.y.w") == "a.w"
    assert r.to_torch("x.z.w") == "b.z.w"


def test_a_placeholder_used_twice_matches_the_same_text():
    r = Renames([("t.{i}.", "p.{i}.{i}.")])
    assert r.to_torch("p.1.1.w") == "t.1.w"
    assert r.to_torch("p.1.2.w") == "p.1.2.w"


@pytest.mark.parametrize("text", ["a.b", "=b", "a{.=b", "a.{}=b"])
def test_malformed_rules_are_usage_errors(text):
    with pytest.raises(RenameError):
        parse_rule(text)


def test_suggested_rules_map_transformers_5_vit_names_onto_candles():
    torch_names = [(f"vit.layers.{i}.attention.{p}_proj.{w}", (4, 4) if w == "weight" else (4,))
                   for i in range(2) for p in "qkvo" for w in ("weight", "bias")]
    long = {"q": "attention.attention.query", "k": "attention.attention.key", "v": "attention.attention.value",
            "o": "attention.output.dense"}
    port_names = [(f"vit.encoder.layer.{i}.{long[p]}.{w}", (4, 4) if w == "weight" else (4,))
                  for i in range(2) for p in "qkvo" for w in ("weight", "bias")]
    rules = suggest(port_names, torch_names)
    assert "vit.layers.{i}.attention.q_proj.=vit.encoder.layer.{i}.attention.attention.query." in rules
    mapped = Renames([tuple(r.split("=")) for r in rules])
    assert {mapped.to_torch(n) for n, _ in port_names} == {n for n, _ in torch_names}
