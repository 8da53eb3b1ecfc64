"""`candle-port reference`'s options (--weights, --steps with AdamW, --rename) and `compare
--verbose`, on the small port."""

from __future__ import annotations

import json

import torch

from candle_port.parity import tensor_files
from tests.parity.conftest import SMALL, candle_port, port_side, write_reference


def _small_state() -> dict:
    import sys

    sys.path.insert(0, "fixtures/parity")
    from small_net import SmallNet

    torch.manual_seed(123)
    return SmallNet().state_dict()


def test_weights_from_a_state_dict_and_from_safetensors_are_what_the_port_reads(tmp_path):
    state = _small_state()
    torch.save(state, tmp_path / "w.pt")
    tensor_files.write(tmp_path / "w.safetensors", state)
    for name in ("w.pt", "w.safetensors"):
        out = write_reference(tmp_path / f"dir-{name}", SMALL, "--input-shape", "1,3,8,8", "--eval", "--no-noise",
                              "--weights", str(tmp_path / name))
        written = tensor_files.read(out / "weights.safetensors")
        assert torch.equal(written["head.weight"], state["head.weight"])
        assert torch.equal(written["bn.running_var"], state["bn.running_var"])


def test_weights_that_name_nothing_of_the_model_are_a_one_line_error(tmp_path):
    torch.save({"encoder.w": torch.zeros(2)}, tmp_path / "other.pt")
    done = candle_port("reference", SMALL, "--input-shape", "1,3,8,8", "--out", str(tmp_path / "d"),
                       "--weights", str(tmp_path / "other.pt"))
    assert done.returncode == 2
    assert "none of its 1 names is a name of the model's state_dict" in done.stderr


def test_adamw_steps_in_candle_follow_torchs_loss_curve(parity_ports, tmp_path):
    """candle-nn's AdamW is torch's update rule: decoupled weight decay, bias-corrected moments."""
    out = write_reference(tmp_path / "t", SMALL, "--input-shape", "2,3,12,12", "--dtype", "float64", "--eval",
                          "--steps", "4", "--optimizer", "adamw", "--lr", "0.01", "--weight-decay", "0.1")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["steps"]["optimizer"] == "adamw" and manifest["steps"]["weight_decay"] == 0.1
    done = candle_port("compare", str(port_side(parity_ports, "small", out, tmp_path / "c", "none")), "--output-format", "json")
    result = json.loads(done.stdout)
    assert result["losses"]["follows"], result["losses"]
    losses = [s["torch"] for s in result["losses"]["steps"]]
    assert losses[-1] < losses[0]  # it trains


def test_verbose_lists_every_module_and_gradient(parity_ports, small_f64, tmp_path):
    directory = port_side(parity_ports, "small", small_f64, tmp_path / "d", "none")
    short = candle_port("compare", str(directory)).stdout
    verbose = candle_port("compare", str(directory), "--verbose").stdout
    assert "stem.weight: " not in short and "stem.weight: " in verbose
    assert "    up: " in verbose and verbose.count(" ok") >= 8 + 10 + 1


def test_a_rename_rule_lets_a_port_with_other_names_read_torchs_weights(parity_ports, tmp_path):
    """The port asks for `head.*`; torch's model is the same with the head stored as `classifier`
    (a subclass), and `--rename classifier.=head.` maps one onto the other in both directions."""
    out = write_reference(tmp_path / "t", "fixtures/parity/small_net.py:SmallNetClassifier", "--input-shape",
                          "2,3,12,12", "--dtype", "float64", "--eval", "--rename", "classifier.=head.")
    result = json.loads(candle_port("compare", str(port_side(parity_ports, "small", out, tmp_path / "c", "none")),
                                    "--output-format", "json").stdout)
    assert result["verdict"] == "match", result
    assert [g["name"] for g in result["gradients"]][-2:] == ["classifier.weight", "classifier.bias"]
