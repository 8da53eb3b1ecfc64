"""A correct rewrite whose rounding puts a ReLU's input on the other side of 0 than the original's
changes every gradient upstream by a whole term: verify finds the crossing (verify/kinks.py),
runs the pair again on the next seed, and says so. A crossing on both seeds stays FAIL; a wrong
rewrite without one is never retried.
"""

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

pytest.importorskip("torch")

from candle_port.cli.verify import EXIT_FAIL, EXIT_PASS, verify_command  # noqa: E402
from candle_port.verify import kinks  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"
app = typer.Typer()
app.command()(verify_command)


def _plant(monkeypatch, name):
    import candle_port.verify.workspace as workspace

    text = (FIXTURES / "planted" / name).read_text(encoding="utf-8")
    monkeypatch.setattr(workspace, "fix_with_port_fix", lambda source, strategy, path: (text, True, 1, []))


def _verify(*args, output="json"):
    result = CliRunner().invoke(app, [*map(str, args), "--output-format", output])
    assert result.exit_code in (EXIT_PASS, EXIT_FAIL, 4), result.output
    return result


def test_a_crossing_on_seed_0_only_is_compared_on_seed_1_and_passes(monkeypatch):
    _plant(monkeypatch, "relu_kink.py")
    data = json.loads(_verify(f"{FIXTURES}/relu_kink.py:KinkedGate", "--input-shape", "1,1,4,4").stdout)
    assert data["kink"]["seed"] == 0 and data["kink"]["checked_seed"] == 1 and data["seed_compared"] == 1
    assert data["kink"]["outcome"] == "passed" and data["kink"]["crossed_seeds"] == [0]
    [flip] = data["kink"]["flips"]
    assert flip["module"] == "act" and flip["original"] > 0 and flip["rewritten"] == 0
    assert "compared on seed 1 instead" in data["kink"]["note"] and data["failures"] == []
    text = " ".join(_verify(f"{FIXTURES}/relu_kink.py:KinkedGate", "--input-shape", "1,1,4,4", output="text").stdout.split())
    assert "kink: seed 0: an input of act lies within float32 rounding of its kink at 0" in text


def test_a_crossing_on_every_seed_tried_stays_fail_and_says_so(monkeypatch):
    """Every element feeds the term: each seed rounds some of them across 0 (seed 1 only element
    11, which -1 puts above 0), so no seed tried is free of a crossing."""
    from candle_port.verify.runner import KINK_RETRIES

    _plant(monkeypatch, "relu_kink.py")
    result = _verify(f"{FIXTURES}/relu_kink.py:KinkedGate", "--input-shape", "1,1,4,4",
                     "--init-kwargs", '{"element": null, "sign": -1.0}')
    data = json.loads(result.stdout)
    assert result.exit_code == EXIT_FAIL and data["verdict"] == "fail"
    assert data["kink"]["outcome"] == "every seed crossed a kink" and data["kink"]["checked_seed"] is None
    assert data["kink"]["crossed_seeds"] == list(range(KINK_RETRIES + 1)) and data["seed_compared"] == KINK_RETRIES
    assert data["kink"]["flips"][0]["count"] == 3  # elements 3, 7 (now above 0) and 13 (below) of seed 0
    assert f"every seed tried crossed one: seed {KINK_RETRIES}'s comparison is shown" in data["kink"]["note"]


def test_a_wrong_rewrite_without_a_crossing_is_not_retried(monkeypatch):
    _plant(monkeypatch, "unet_align_corners_flipped.py")
    data = json.loads(_verify(f"{FIXTURES}/unet_bilinear.py:SmallUNet", "--input-shape", "2,3,32,32").stdout)
    assert data["verdict"] == "fail" and data["kink"] is None and data["seed_compared"] == 0


def test_record_finds_inputs_near_each_kink_and_flips_compares_their_sides():
    import torch

    relu, clamp = torch.nn.ReLU(), torch.nn.Hardtanh(-1.0, 1.0)
    model = torch.nn.ModuleDict({"relu": relu, "clamp": clamp})
    found, stop = kinks.record(model)
    relu(torch.tensor([3.0, 1e-7, -2.0, 0.5]))
    clamp(torch.tensor([1.0 + 1e-6, -0.5, -1.0, 0.0]))
    stop()
    assert sorted(found) == ["clamp#0@-1", "clamp#0@1", "relu#0@0"]
    assert found["relu#0@0"][0].tolist() == [1]  # within 1e-5 of the largest magnitude (3.0) from 0
    assert found["clamp#0@1"][0].tolist() == [0] and found["clamp#0@-1"][0].tolist() == [2]
    mirrored = {"relu#0@0": (torch.tensor([1]), torch.tensor([-1e-7], dtype=torch.float64))}
    assert kinks.flips(found, mirrored) == [
        {"module": "relu", "kink": 0.0, "original": pytest.approx(1e-7), "rewritten": -1e-7, "count": 1}
    ]
    assert kinks.flips(found, found) == []
    relu(torch.tensor([1e-7]))  # hooks removed: nothing more recorded
    assert sorted(found) == ["clamp#0@-1", "clamp#0@1", "relu#0@0"]
