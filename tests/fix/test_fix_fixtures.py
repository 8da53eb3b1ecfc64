"""Whole-file fixtures: fixtures/fix/<strategy>/<case>.in.py -> .out.py (+ .report.txt).

Regenerate after an intended change with `CANDLE_PORT_REGENERATE=1 pytest tests/fix`, then read
the diff. Every fixture also has to satisfy the invariants: the output parses, re-checking it finds
no fixed code except at refused/skipped sites, fixing twice equals fixing once, and every line the
rewrite does not touch is byte-identical (CRLF, BOM, encoding, trailing whitespace, comments).
"""

from __future__ import annotations

import ast
import difflib
import os
import re
from pathlib import Path

import pytest

from candle_port.api import fix_source
from candle_port.pipeline.checker import check_text
from candle_port.rewriters.strategies import FIXED_CODES
from candle_port.pipeline.sources import decode_source

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fix"
REGENERATE = os.environ.get("CANDLE_PORT_REGENERATE") == "1"
CASES = sorted(FIXTURES.glob("*/*.in.py"))
# A rewritten line holds a site: its callee, its mode or align_corners, or a class base.
SITE_WORDS = ("interpolate", "upsample", "Upsampl", "bilinear", "align_corners", "up(", "pool", "Pool", "grid_sample",
              "affine_grid", "sample(", "Conv", "conv")


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name[: -len('.in.py')]}"


def _fix(path: Path):
    source = decode_source(path.read_bytes())
    result = fix_source(source.text, strategy=path.parent.name, path=path.name)
    return source, result


def _report(result) -> str:
    lines = [f"fixed {f.code} {f.line}:{f.column} {f.api}" + (f" ({f.note})" if f.note else "") for f in result.fixed]
    lines += [f"refused {r.code} {r.line}:{r.column}: {r.reason}" for r in result.refused]
    lines += [f"skipped {s.code} {s.line}:{s.column}: {s.reason}" for s in result.skipped]
    lines += [f"unfixable {u.code} {u.line}:{u.column}: {u.reason}" for u in result.unfixable]
    return "".join(line + "\n" for line in lines)


def _removed_import(line: str, names: list[str]) -> bool:
    """A torch import line the fix made unused (issue 36): removed, or rewritten without those names."""
    return line.startswith(("import torch", "from torch")) and any(re.search(rf"\b{re.escape(n)}\b", line) for n in names)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_fixture_output(case: Path) -> None:
    source, result = _fix(case)
    assert result.error is None, result.error
    out_path = case.with_name(case.name.replace(".in.py", ".out.py"))
    report_path = case.with_name(case.name.replace(".in.py", ".report.txt"))
    data = source.encode(result.text)
    if REGENERATE:
        out_path.write_bytes(data)
        report_path.write_text(_report(result), encoding="utf-8")
    assert out_path.exists(), f"run CANDLE_PORT_REGENERATE=1 pytest {__file__} to create {out_path.name}"
    assert data == out_path.read_bytes()
    assert _report(result) == report_path.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_fixture_invariants(case: Path) -> None:
    strategy = case.parent.name
    source, result = _fix(case)
    # Parses, as Python and libcst see it.
    ast.parse(result.text)
    # Re-check: no fixed code left except at refused and skipped sites.
    codes = set(FIXED_CODES[strategy])
    # (one position per site: a layer chosen at run time is one finding per class it can be, one refusal)
    remaining = {(f.line, f.column) for f in check_text(result.text, case.name).findings if f.code in codes}
    kept = {(r.line, r.column) for r in (*result.refused, *result.skipped, *result.unfixable) if set(r.code.split(",")) & codes}
    assert len(remaining) <= len(kept)  # positions in the rewritten text move with the added import
    # Idempotent.
    again = fix_source(result.text, strategy=strategy, path=case.name)
    assert not again.changed and not again.fixed
    # Untouched lines are byte-identical; only site lines change; at most one import line is added.
    old = source.encode(source.text).splitlines(keepends=True)
    new = source.encode(result.text).splitlines(keepends=True)
    assert source.encode(result.text).startswith(b"\xef\xbb\xbf") == source.bom
    inserted = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            for line in old[i1:i2]:
                text = line.decode(source.encoding)
                assert any(word in text for word in SITE_WORDS) or _removed_import(text, result.imports_removed), (
                    f"changed a line with no site: {text!r}"
                )
        if tag == "insert":
            inserted += new[j1:j2]
    assert len(inserted) <= 1
    if inserted:
        assert inserted[0].decode().lstrip(" \t").startswith("import candle_port.runtime")  # inside a `try` it is indented
    if result.changed:
        newline = b"\r\n" if b"\r\n" in old[0] else b"\n"
        assert all(line.endswith(newline) for line in inserted)  # an added import takes the first line's newline
        if all(line.endswith(newline) for line in old if line.endswith(b"\n")):
            assert all(line.endswith(newline) for line in new if line.endswith(b"\n"))  # mixed files stay mixed


def test_every_strategy_and_api_has_fixtures() -> None:
    names = {_id(c) for c in CASES}
    for strategy in ("runtime", "nearest", "convtranspose"):
        for form in (
            "import_torch_nn_functional_as_F",
            "from_torch_nn_import_functional",
            "from_functional_import_interpolate_as_up",
            "torch_nn_functional_fully_qualified",
            "from_torch_import_nn",
            "api_upsample",
        ):
            assert f"{strategy}/{form}" in names
    for api in ("api_upsample_bilinear", "api_UpsamplingBilinear2d"):
        assert f"runtime/{api}" in names and f"nearest/{api}" in names
    assert "nearest/refusals" in names and "convtranspose/refusals" in names


@pytest.mark.parametrize("case", [c for c in CASES if c.parent.name != "nearest"], ids=_id)
def test_text_splice_equals_libcst_transformer(case: Path) -> None:
    """The fast path (splicing callee spans) and the libcst transformer produce the same text."""
    source = decode_source(case.read_bytes())
    fast = fix_source(source.text, strategy=case.parent.name, path=case.name)
    slow = fix_source(source.text, strategy=case.parent.name, path=case.name, fast=False)
    assert fast.text == slow.text
