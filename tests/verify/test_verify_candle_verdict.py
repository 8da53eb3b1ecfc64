"""verify --candle gives one verdict: the JSON's ``verdict`` and ``exit_code``, the text's last
line and the process's exit code all say the same (a failing candle run used to exit 1 while the
JSON said pass/0, and candle not running at all exited 2 with the JSON still saying pass)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

pytest.importorskip("torch")

from candle_port.cli.verify import EXIT_FAIL, EXIT_PASS, EXIT_UNCHECKED, verify_command  # noqa: E402
from candle_port.verify.compare import Tolerance  # noqa: E402
from candle_port.verify.report import VerifyReport  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
app = typer.Typer()
app.command()(verify_command)

PORT_FAILS = {"ok": False, "original_ok": False, "port": {"ok": False}, "native": {"ok": False},
              "rewritten": {"ok": True, "changed": False}}
REWRITTEN_FAILS = {"ok": False, "original_ok": True, "port": {"ok": True}, "native": {"ok": False},
                   "rewritten": {"ok": False, "error": "the rewritten copy could not be run in candle: boom"}}
PASSES = {"ok": True, "original_ok": True, "port": {"ok": True}, "native": {"ok": False}, "rewritten": {"ok": True}}
NOT_RUN = {"ok": False, "error": "--candle needs cargo to build candle-port-run"}


def _report(candle=None) -> VerifyReport:
    return VerifyReport(
        model="m.py:Net", strategy="runtime", dtype="float64", seed=0, train=True, input_shapes=[[1, 3, 8, 8]],
        source_root="m.py", rewrite={"changed": []}, tolerance=Tolerance("reference"), new_parameters=[],
        dropped_state=[], rows=[], graph_original={"lacking": [], "wrong": [], "summary": []},
        graph_rewritten={"lacking": [], "wrong": [], "summary": []}, candle=candle)


@pytest.mark.parametrize(("candle", "verdict", "words"), [
    pytest.param(None, "pass", "", id="no-candle"),
    pytest.param(PASSES, "pass", "", id="candle-passes"),
    pytest.param(PORT_FAILS, "fail", "the original model fails in real candle in port mode", id="original-port-fails"),
    pytest.param(REWRITTEN_FAILS, "fail", "the rewritten copy fails in real candle (--candle): the rewritten copy could",
                 id="rewritten-copy-fails"),
    pytest.param(NOT_RUN, "unchecked", "--candle could not run candle: --candle needs cargo", id="candle-not-run"),
])
def test_the_candle_result_is_part_of_the_one_verdict(candle, verdict, words):
    report = _report(candle)
    data = report.to_json()
    assert report.verdict == data["verdict"] == verdict
    assert report.exit_code == data["exit_code"]
    assert words in "; ".join(report.failures + report.unchecked)
    if candle is not None:  # the run's result, where the op table's candle pin is without --candle
        assert data["candle"] is candle


@pytest.mark.parametrize(("candle", "code"), [(PORT_FAILS, EXIT_FAIL), (NOT_RUN, EXIT_UNCHECKED), (PASSES, EXIT_PASS)],
                         ids=["port-fails", "not-run", "passes"])
def test_the_process_exits_with_the_jsons_exit_code(monkeypatch, candle, code):
    import candle_port.verify.candle_check as candle_check

    monkeypatch.setattr(candle_check, "candle_check", lambda options, stage=None: json.loads(json.dumps(candle)))
    result = CliRunner().invoke(app, [f"{ROOT / 'examples' / 'unet.py'}:UNet", "--input-shape", "1,3,9,9",
                                      "--dtype", "float64", "--candle", "--output-format", "json"])
    data = json.loads(result.stdout)
    assert result.exit_code == data["exit_code"] == code, result.output
    assert data["candle"]["ok"] is candle["ok"]


def test_a_value_branch_in_the_candle_trace_says_what_the_torch_side_says(tmp_path):
    """make_fx's raw `_local_scalar_dense` message named its internals; the candle side now names
    the model's line and --eval, as the torch side's trace does."""
    import torch

    from candle_port.verify.candle_check import _guarded
    from candle_port.verify.graph_export import export_graph

    class Branchy(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 1)

        def forward(self, x):
            y = self.conv(x)
            if self.training and not torch.isfinite(y).all():  # the line named
                y = y * 0
            return y

    result = _guarded(lambda: export_graph(Branchy().train(), [torch.randn(1, 3, 4, 4)], tmp_path), train=True)
    assert "_local_scalar_dense" not in result["error"]
    assert "branches on a tensor's value at" in result["error"] and "# the line named" in result["error"]
    assert result["error"].endswith("--eval traces it if that branch is for training only")
