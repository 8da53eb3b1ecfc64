"""verify's FAIL names `--strategy convert` when what is left in the rewritten graph is an op the
runtime's convert replaces (a layer built through a factory that no source rewrite sees), and only then."""

from __future__ import annotations

import pytest

from candle_port.verify.compare import Tolerance
from candle_port.verify.report import VerifyReport


def _report(strategy: str, lacking=(), wrong=(), allow_wrong: bool = False) -> VerifyReport:
    graph = {"lacking": [{"name": n} for n in lacking], "wrong": [{"name": n} for n in wrong]}
    return VerifyReport(
        model="m.py:Net", strategy=strategy, dtype="float32", seed=0, train=True, input_shapes=[[1, 3, 8, 8]],
        source_root="m.py", rewrite={"changed": []}, tolerance=Tolerance("reference"), new_parameters=[],
        dropped_state=[], rows=[], graph_original=graph, graph_rewritten=graph, allow_wrong_gradients=allow_wrong,
    )


def _hinted(report: VerifyReport) -> bool:
    return any("--strategy convert" in reason for reason in report.failures)


@pytest.mark.parametrize(("lacking", "wrong"), [(["upsample_bilinear2d"], []), ([], ["max_pool2d"]), (["grid_sampler_2d"], [])])
def test_a_layer_convert_replaces_left_in_the_graph_names_convert(lacking, wrong):
    assert _hinted(_report("runtime", lacking, wrong))
    assert not _hinted(_report("convert", lacking, wrong))  # convert was used: no advice to use it


def test_no_hint_for_ops_convert_does_not_replace_or_for_accepted_wrong_gradients():
    assert not _hinted(_report("runtime", ["_fft_r2c"]))
    report = _report("runtime", wrong=["max_pool2d"], allow_wrong=True)
    assert report.failures == [] and not _hinted(report)


def test_off_path_ops_candle_lacks_are_not_said_to_run_forward():
    """Off every gradient path candle only runs an op's forward: that holds for a bilinear resize
    of the raw input (candle has its forward), not for an op candle has no function for."""
    import io

    import torch
    from rich.console import Console

    from candle_port.verify.render_text import _graph_lines
    from candle_port.verify.trace import trace_model

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 3, 1)

        def forward(self, x):
            x = torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear")  # raw input: off the path
            mix = torch.kron(torch.eye(2), torch.ones(1, 1)).sum()  # constants: off the path
            return self.conv(x) * mix

    graph = trace_model(Net(), [torch.randn(1, 3, 4, 4)]).to_json()
    out = io.StringIO()
    _graph_lines("Rewritten", graph, Console(file=out, width=400, color_system=None))
    text = out.getvalue()
    forward_line = next(line for line in text.splitlines() if "candle runs only their forward" in line)
    absent_line = next(line for line in text.splitlines() if "no candle op (or not in the table)" in line)
    assert "upsample_bilinear2d" in forward_line and "kron" not in forward_line
    assert "kron x1" in absent_line


def _report_at(where: str, name: str = "upsample_nearest2d") -> VerifyReport:
    report = _report("runtime", [name])
    report.graph_rewritten["lacking"][0]["where"] = where
    return report


@pytest.mark.parametrize(("line", "direct"), [
    pytest.param("        y = F.interpolate(x, scale_factor=1.5, mode='nearest')", True, id="functional"),
    pytest.param("        y = interpolate(x, scale_factor=1.5)", True, id="imported-function"),
    pytest.param("        self.up = nn.Upsample(scale_factor=1.5)", True, id="layer-built-here"),
    pytest.param("        y = self.up(x)", False, id="layer-from-a-factory"),
    pytest.param("        y = self.upsample(x)", False, id="layer-attribute-named-like-the-op"),
])
def test_a_call_left_in_the_source_is_named_not_blamed_on_a_factory(tmp_path, line, direct):
    """A nearest interpolate port-fix leaves in the source was blamed on "a layer factory or
    registry"; the hint names the line when it calls the op itself."""
    source = tmp_path / "m.py"
    source.write_text("import torch\n" + line + "\n", encoding="utf-8")
    failures = "; ".join(_report_at(f"{source}:2").failures)
    assert ("calls in the source that port-fix did not rewrite" in failures) is direct, failures
    assert ("factory or registry" in failures) is not direct
    assert (f"{source}:2" in failures) is direct
