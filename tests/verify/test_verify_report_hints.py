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
