"""`candle-port verify --strategy convert`: layers built by a factory, a registry or a config dict
(fixtures/verify/factory_*.py) are out of port-fix's reach, so verify FAILs them with the runtime
strategy (max_pool2d, upsample_bilinear2d, adaptive/avg pooling left in the graph) and PASSes them
with convert (candle_port.runtime.convert on the built model, runtime.routed() around its runs).

Four verify runs, ~30 s each on one core (two workers per run).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

pytest.importorskip("torch")

from candle_port.cli.verify import EXIT_FAIL, EXIT_PASS, verify_command  # noqa: E402

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"
MODELS = {
    "factory_monai.py:FactoryUNet": {"MaxPool2d", "Upsample", "AdaptiveAvgPool2d"},
    "factory_config.py:ConfigNeck": {"MaxPool2d", "Upsample", "AvgPool2d"},
}
app = typer.Typer()
app.command()(verify_command)


def _verify(model: str, strategy: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, [f"{FIXTURES}/{model}", "--input-shape", "2,3,16,16", "--strategy", strategy,
                                      "--output-format", "json"])
    assert result.exit_code in (EXIT_PASS, EXIT_FAIL), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_factory_model_fails_without_convert(model):
    code, data = _verify(model, "runtime")
    assert code == EXIT_FAIL and data["verdict"] == "fail"
    assert data["rewrite"]["changed"] == []  # port-fix found nothing to rewrite
    assert any("max_pool2d" in failure for failure in data["failures"]), data["failures"]
    assert any("upsample_bilinear2d" in failure for failure in data["failures"]), data["failures"]
    assert any("--strategy convert" in failure for failure in data["failures"]), data["failures"]  # the way out, named


@pytest.mark.parametrize("model", sorted(MODELS))
def test_factory_model_passes_with_convert(model):
    code, data = _verify(model, "convert")
    assert code == EXIT_PASS and data["verdict"] == "pass", data["failures"]
    assert data["strategy"] == "convert" and data["rewrite"]["changed"] == []  # the source is left alone
    assert set(data["rewrite"]["converted"]) == MODELS[model]
    assert data["state_dict"] == {"new_parameters": [], "not_loaded": []}  # state_dict keys unchanged
    assert all(row["ok"] for row in data["comparisons"])
