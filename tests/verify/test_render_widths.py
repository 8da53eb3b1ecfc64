"""verify's text report stays readable on an 80-column terminal, a 200-column one and piped: no
line longer than the terminal, a parameter path never cut inside a part, every column kept, no
trailing padding when piped, and no column that reads as contradicting the status."""

from __future__ import annotations

import io
import re

import pytest

from candle_port.cli.report_console import report_console
from candle_port.verify.compare import Row, Tolerance
from candle_port.verify.render_text import class_label, wrap_dotted
from candle_port.verify.report import VerifyReport

LONG = "encoder.layer.11.attention.output.dense_projection.weight"
NOTE = "added by the rewrite; initialised, not loaded from the original"
GRAPH = {
    "tracer": "torch.export",
    "summary": [{"name": "grid_sampler_2d", "count": 1, "ok": False, "class": "no-op", "reason": "candle has no grid_sample",
                 "on_grad_path": True, "where": ["model.py:12"], "warning": "", "wrong": ""}],
    "by_op": [],
}


def _report() -> VerifyReport:
    rows = [
        Row("output", "output", (2, 8, 32, 32), 2.7e-7, 1.7e-7, True, rewrite_dist=4.0e-7, own_noise=4.0e-7, allowed=2e-5),
        # The largest entry of this gradient is near zero: its max_rel (1.55) is large, yet ok.
        Row("param grad", "decoder.blocks.0.bias", (8,), 1.0e-5, 1.55, True, rewrite_dist=7.5e-8, own_noise=1.1e-7,
            allowed=5.4e-6),
        Row("param grad", LONG, (768, 3072), 9.5e-6, 2.6e-7, True, rewrite_dist=2.7e-7, own_noise=3.1e-7, allowed=1.5e-5),
        Row("new param", "head.scale", (1,), None, None, None, note=NOTE),
    ]
    return VerifyReport(
        model="model.py:Net", strategy="runtime", dtype="float32", seed=0, train=True, input_shapes=[[2, 3, 32, 32]],
        source_root="model.py", rewrite={"changed": ["model.py"], "scanned": 1, "sites_fixed": 2},
        tolerance=Tolerance("reference", note="original and rewritten each against a float64 run of the original, "
                                              "a long explanation that wraps on a narrow terminal"),
        new_parameters=["head.scale"], dropped_state=[], rows=rows, graph_original=GRAPH, graph_rewritten=None,
        trace_error="not traced", seconds=1.0,
    )


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _render(width: int | None, monkeypatch) -> str:
    """The report as verify prints it: on a terminal of ``width`` columns, or piped (None)."""
    stream = _Terminal() if width else io.StringIO()
    if width:
        monkeypatch.setenv("COLUMNS", str(width))
    else:
        monkeypatch.delenv("COLUMNS", raising=False)
    with report_console(stream) as console:
        _report().render(console)
    return re.sub(r"\x1b\[[0-9;]*m", "", stream.getvalue())  # a terminal gets bold; the test reads text


@pytest.mark.parametrize("width", [80, 200, None], ids=["80-columns", "200-columns", "piped"])
def test_every_column_and_whole_names_at_each_width(width, monkeypatch):
    text = _render(width, monkeypatch)
    lines = text.splitlines()
    if width:
        assert max(map(len, lines)) <= width, text
    else:
        assert not [line for line in lines if line != line.rstrip()], "piped lines are padded"
    at = next(i for i, line in enumerate(lines) if "tensor" in line and "status" in line)
    header = lines[at - 1] + lines[at]  # narrow: numeric headers take two lines
    for column in ("shape", "rewrite", "own", "allowed"):
        assert column in header, (column, header)
    # A dotted name is cut only after a dot: joined back without spaces it is whole.
    table = "".join(line.split()[0] if line.split() else "" for line in lines)
    assert LONG in table or LONG in text, text
    for part in LONG.split("."):
        assert re.search(rf"(^|\.|\s){re.escape(part)}(\.|\s|$)", text, flags=re.M), (part, text)
    assert "max rel diff" not in text and "1.55" not in text
    assert NOTE in " ".join(text.split())
    assert "(no candle op)" in text and "(no-op)" not in text


def test_piped_sentences_are_not_broken(monkeypatch):
    text = _render(None, monkeypatch)
    assert "a long explanation that wraps on a narrow terminal)" in text
    assert "Original vs rewritten (outputs" in next(line for line in text.splitlines() if "a long explanation" in line)


@pytest.mark.parametrize("name, width, lines", [
    pytest.param("a.b.c", 10, ["a.b.c"], id="fits"),
    pytest.param("encoder.layer.0.weight", 14, ["encoder.layer.", "0.weight"], id="cut-after-dots"),
    pytest.param("averyveryverylongpart.x", 8, ["averyveryverylongpart.", "x"], id="long-part-kept-whole"),
])
def test_wrap_dotted(name, width, lines):
    assert wrap_dotted(name, width).split("\n") == lines


def test_class_labels_say_what_is_missing():
    assert class_label("no-op") == "no candle op"
    assert class_label("forward-only, not-in-table") == "forward-only, not in candle's op table"
