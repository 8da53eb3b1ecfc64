"""port-fix --instrument (candle_port.rust.instrument): whole-file fixtures in
fixtures/fix/instrument/ (`CANDLE_PORT_REGENERATE=1` rewrites the .out.rs files after an intended
change), their invariants (the result parses, twice is once, every original byte kept: the rewrite
only inserts), what is left alone and why, and the command's wiring."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import pytest

from candle_port.rust import fixer
from candle_port.rust.instrument import instrument_rust_text
from candle_port.rust.parser import parse_rust
from tests.conftest import ROOT, run_tool

FIXTURES = ROOT / "fixtures" / "fix" / "instrument"
CASES = sorted(p.name[: -len(".in.rs")] for p in FIXTURES.glob("*.in.rs"))
REGENERATE = os.environ.get("CANDLE_PORT_REGENERATE") == "1"
RENAMES = {"candle": "candle_core"}


def instrument(text: str):
    """The splice alone (rustfmt's pass is the Rust fixer's, tested there)."""
    with mock.patch.object(fixer, "_formatted", lambda original, new, path: new):
        return instrument_rust_text(text, "model.rs", RENAMES)


def _only_inserts(original: str, new: str) -> bool:
    """Whether `original` is a subsequence of `new`: no byte of it changed or dropped."""
    rest = iter(new)
    return all(ch in rest for ch in original)


@pytest.mark.parametrize("case", CASES)
def test_fixture(case):
    source = (FIXTURES / f"{case}.in.rs").read_text()
    expected_path = FIXTURES / f"{case}.out.rs"
    result = instrument(source)
    if REGENERATE:
        expected_path.write_text(result.text)
    assert result.text == expected_path.read_text()
    assert not parse_rust(result.text.encode(), "model.rs").root_node.has_error
    assert _only_inserts(source, result.text)
    again = instrument(result.text)
    assert again.text == result.text and not again.fixed


def test_crlf_and_comments_are_kept():
    source = (FIXTURES / "module_and_inherent_forwards.in.rs").read_text().replace("\n", "\r\n")
    result = instrument(source)
    assert result.fixed and "\r\n" in result.text and "\n" not in result.text.replace("\r\n", "")
    assert _only_inserts(source, result.text)


def test_what_is_instrumented_and_how():
    result = instrument((FIXTURES / "module_and_inherent_forwards.in.rs").read_text())
    assert [f.api for f in result.fixed] == ["Mlp::forward", "Output::forward"]
    assert result.needs_parity_crate
    # read before `vb` is shadowed
    assert "let parity_name = vb.prefix();\n        let vb = vb.pp(\"output\");" in result.text


def test_early_returns_are_recorded_and_a_closure_return_is_not():
    result = instrument((FIXTURES / "early_returns_and_tail_match.in.rs").read_text())
    assert "return candle_port_parity::recorded(Ok(xs.clone()), &self.parity_name);" in result.text
    assert "{ return t.exp() }" in result.text


def test_a_file_that_cannot_be_instrumented_is_left_unchanged_with_the_reasons():
    source = (FIXTURES / "left_alone.in.rs").read_text()
    result = instrument(source)
    assert result.text == source and not result.fixed and not result.needs_parity_crate
    reasons = {s.reason.split(": ", 1)[0]: s.reason for s in result.skipped}
    assert "in a function without a candle-nn VarBuilder parameter" in reasons["Scale::forward"]
    assert "returns Result<(Tensor, Tensor)>, not Result<Tensor>" in reasons["Split::forward"]
    assert "QLinear is built at line" in reasons["QLinear::forward"]


LEFT_ALONE = [
    pytest.param("struct A { w: Tensor }\nimpl A { fn forward(self, xs: &Tensor) -> Result<Tensor> { Ok(xs.clone()) } }\n",
                 "takes self by value", id="self-by-value"),
    pytest.param("#[derive(Clone, Copy)]\nstruct A { w: usize }\nimpl A { fn new(vb: VarBuilder) -> Result<Self> { Ok(Self { w: 1 }) }\n"
                 "fn forward(&self, xs: &Tensor) -> Result<Tensor> { Ok(xs.clone()) } }\n",
                 "is Copy", id="copy"),
    pytest.param("pub struct A { pub w: Tensor }\nimpl A { fn new(vb: VarBuilder) -> Result<Self> { Ok(Self { w: vb.get(1, \"w\")? }) }\n"
                 "fn forward(&self, xs: &Tensor) -> Result<Tensor> { Ok(xs.clone()) } }\n",
                 "has public fields", id="public-fields"),
    pytest.param("impl Module for Other { fn forward(&self, xs: &Tensor) -> Result<Tensor> { Ok(xs.clone()) } }\n",
                 "not a struct defined in this module of this file", id="defined-elsewhere"),
]


@pytest.mark.parametrize("body, reason", LEFT_ALONE)
def test_left_alone(body, reason):
    source = "use candle_nn::{Module, VarBuilder};\n" + body
    result = instrument(source)
    assert result.text == source and not result.fixed
    assert reason in result.skipped[0].reason


def test_command_instruments_the_others_when_a_file_is_bad_and_adds_the_dependency(tmp_path):
    crate = tmp_path / "port"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "port"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ncandle-nn = "0.11"\n')
    (crate / "src" / "mlp.rs").write_text((FIXTURES / "module_and_inherent_forwards.in.rs").read_text())
    (crate / "src" / "bad.rs").write_bytes(b"fn forward() {} // VarBuilder \xff\n")
    done = run_tool("--instrument", str(crate), tool="fix")
    assert done.returncode == 3, done.stderr.decode()
    err = done.stderr.decode()
    assert "bad.rs" in err and "port-fix (instrument): 2 sites fixed" in err
    assert "candle_port_parity::recorded(" in (crate / "src" / "mlp.rs").read_text()
    assert "candle-port-parity = " in (crate / "Cargo.toml").read_text()
    assert run_tool("--instrument", "--check", str(crate / "src" / "mlp.rs"), tool="fix").returncode == 0


def test_parity_crate_needs_instrument(tmp_path):
    done = run_tool("--parity-crate", "0.2.0", str(tmp_path), tool="fix")
    assert done.returncode == 2 and "--instrument" in done.stderr.decode()
