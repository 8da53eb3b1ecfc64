"""The tolerance of ``verify --candle`` (candle_run.py): per tensor ``max(CANDLE_RTOL, factor x
the original's own measured noise)``, ``--rtol``/``--atol`` overriding; each row says what judged
it and why. These need no cargo: they feed ``_compare`` torch tensors standing for candle's and
measure the noise of small models in torch."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from candle_port.verify.candle_run import (  # noqa: E402
    CANDLE_RTOL, NOISE_DRAWS, CandleTolerance, _compare, choose_candle_tolerance, measure_noise, summary_lines,
)
from candle_port.verify.compare import NOISE_FACTOR  # noqa: E402
from candle_port.verify.graph_export import export_graph  # noqa: E402

F64 = CANDLE_RTOL["float64"]
NOISE = CandleTolerance("noise", floor=F64, method="perturbed", eps=2.0 ** -53, note="test")


def _pair(rel: float, scale: float = 2.0):
    """A torch tensor of max |b| = scale, and one that differs from it by rel * scale."""
    ref = torch.tensor([scale, -0.5, 0.25], dtype=torch.float64)
    return ref, ref + torch.tensor([0.0, rel * scale, 0.0], dtype=torch.float64)


def _row(rel: float, noise_rel: list[float] | None, tol: CandleTolerance = NOISE) -> dict:
    ref, got = _pair(rel)
    runs = [{"grad.w": _pair(n)[1]} for n in noise_rel] if noise_rel is not None else []
    rows, ok = _compare({"grad.w": ref}, {"grad.w": got}, tol, runs)
    assert rows[0]["status"] == ("ok" if ok else "differs")
    return rows[0]


def test_noisy_tensor_is_judged_by_its_measured_noise():
    """efficientnet_b0 at 2x3x32x32: candle 1.7e-8 off on conv_stem.weight's gradient, the
    original's own noise 2.6e-8: passes by the noise, not by the 1e-9 floor."""
    row = _row(1.7e-8, [2.6e-8])
    assert row["status"] == "ok" and row["judged_by"] == "noise"
    assert row["own_noise"] == pytest.approx(2.6e-8) and row["allowed"] == pytest.approx(NOISE_FACTOR * 2.6e-8)
    assert "50 x the original's own noise 2.6e-08" in row["reason"]
    assert row["of_allowed"] == pytest.approx(1.7e-8 / (NOISE_FACTOR * 2.6e-8))


def test_noise_free_tensor_keeps_the_fixed_floor():
    """A model that computes a tensor (almost) exactly never gets a looser bound than 1e-9."""
    quiet = _row(2e-9, [1e-16])
    assert quiet["status"] == "differs" and quiet["judged_by"] == "floor" and quiet["allowed"] == F64
    assert "below it" in quiet["reason"]
    assert _row(5e-10, [1e-16])["status"] == "ok"
    exact = _row(2e-9, [0.0])
    assert exact["status"] == "differs" and exact["own_noise"] == 0.0


def test_a_wrong_gradient_fails_beside_large_noise():
    """TFeat's native max_pool2d gradient is 0.47 of scale off: even 1e-5 of noise (an
    ill-conditioned model) allows 5e-4, a thousand times less."""
    row = _row(0.47, [1e-5])
    assert row["status"] == "differs" and row["judged_by"] == "noise" and row["of_allowed"] > 900


def test_noise_is_the_largest_over_the_draws():
    row = _row(1e-8, [1e-12, 3e-9, 1e-11])
    assert row["own_noise"] == pytest.approx(3e-9) and row["status"] == "ok"


def test_without_noise_the_floor_judges_and_says_why():
    tol = choose_candle_tolerance("float64", {"method": "none", "error": "RuntimeError: boom"})
    assert tol.mode == "floor" and tol.floor == F64
    row = _row(2e-9, None, tol)
    assert row["status"] == "differs" and row["judged_by"] == "floor" and "RuntimeError: boom" in row["reason"]
    assert choose_candle_tolerance("float32", None).floor == CANDLE_RTOL["float32"]


def test_a_float64_model_computing_in_float32_is_floored_at_float32_roundoff():
    """SAM 2's FPN interpolates in float32 inside a float64 model: a gradient on a linear path
    after it does not move under the perturbation (own noise 0), yet candle's float32 sums differ
    from torch's by about 1e-8 of scale. The floor is the unit roundoff the forward computes in."""
    eps32 = 2.0**-24
    tol = choose_candle_tolerance("float64", {"method": "perturbed", "eps": eps32, "note": "float32 inside"})
    assert tol.floor == eps32
    assert _row(1.08e-8, [0.0], tol)["status"] == "ok"
    assert _row(1e-6, [0.0], tol)["status"] == "differs"  # a real error is still far above it
    all64 = choose_candle_tolerance("float64", {"method": "perturbed", "eps": 2.0**-53, "note": "n"})
    assert all64.floor == F64  # a forward all in float64 keeps the 1e-9 floor


def test_given_rtol_atol_override_the_noise():
    tol = choose_candle_tolerance("float64", {"method": "perturbed", "eps": 1e-16, "note": "n"}, rtol=1e-12)
    assert (tol.mode, tol.rtol, tol.atol) == ("given", 1e-12, 0.0)
    row = _row(1e-10, [1e-3], tol)  # large noise, but the user's rtol judges
    assert row["status"] == "differs" and row["judged_by"] == "given" and "--rtol/--atol" in row["reason"]
    loose = choose_candle_tolerance("float64", None, atol=1.0)
    assert _row(0.1, None, loose)["status"] == "ok"


def test_a_plain_float_is_the_old_fixed_rtol():
    ref, got = _pair(2e-9)
    rows, ok = _compare({"output.0": ref}, {"output.0": got}, 1e-9)
    assert not ok and rows[0]["judged_by"] == "floor"


def _fixture():
    """fixtures/verify/batchnorm_two_close.py: a BatchNorm over two nearly equal values."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "fixtures" / "verify" / "batchnorm_two_close.py"
    spec = importlib.util.spec_from_file_location("batchnorm_two_close", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_measure_noise_sees_the_ill_conditioning_and_restores_the_model(tmp_path):
    torch.manual_seed(0)
    fixture = _fixture()
    model = fixture.TwoValueNorm().double().train()
    x = fixture.two_close()
    rng = torch.get_rng_state()
    export_graph(model, [x], tmp_path, seed=0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng_before = torch.get_rng_state()
    noise = measure_noise(model, [x], tmp_path, 0, rng)
    assert noise["method"] == "perturbed" and len(noise["runs"]) == NOISE_DRAWS
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters()) and torch.equal(torch.get_rng_state(), rng_before)
    from safetensors.torch import load_file

    reference = load_file(str(tmp_path / "torch.safetensors"))
    rows, _ = _compare(reference, reference, NOISE, noise["runs"])
    by = {r["kind"] + "." + r["name"]: r for r in rows}
    # before the BatchNorm the gradient is amplified rounding (measured 1.8e-6 of scale); after
    # it the model is well conditioned (1.2e-11) and the 1e-9 floor judges
    assert by["grad.conv.weight"]["own_noise"] > 1e-7 and by["grad.conv.weight"]["judged_by"] == "noise"
    assert by["grad.head.weight"]["own_noise"] < 1e-10 and by["grad.head.weight"]["judged_by"] == "floor"


def test_measure_noise_of_a_float32_model_runs_it_in_float64(tmp_path):
    torch.manual_seed(0)
    fixture = _fixture()
    model = fixture.TwoValueNorm().train()
    x = fixture.two_close(torch.float32, 1e-3)
    rng = torch.get_rng_state()
    export_graph(model, [x], tmp_path, seed=0)
    noise = measure_noise(model, [x], tmp_path, 0, rng)
    assert noise["method"] == "float64" and len(noise["runs"]) == 1
    assert next(iter(noise["runs"][0].values())).dtype == torch.float64
    assert next(model.parameters()).dtype == torch.float32


def test_text_report_names_the_rule_for_the_worst_tensor():
    ref, got = _pair(1.7e-8)
    rows, ok = _compare({"grad.conv_stem.weight": ref}, {"grad.conv_stem.weight": got}, NOISE,
                        [{"grad.conv_stem.weight": _pair(2.6e-8)[1]}])
    worst = dict(rows[0])
    mode = {"ok": ok, "worst_rel_to_scale": rows[0]["rel_to_scale"], "tensors": rows, "failing_ops": [],
            "missing_gradients": [], "worst": worst, "closest": worst}
    bad_rows, _ = _compare({"grad.w": ref}, {"grad.w": _pair(0.47)[1]}, NOISE, [{"grad.w": _pair(1e-12)[1]}])
    native = {"ok": False, "worst_rel_to_scale": 0.47, "tensors": bad_rows, "failing_ops": [],
              "missing_gradients": [], "worst": bad_rows[0], "closest": bad_rows[0]}
    text = "\n".join(summary_lines({"tolerance": NOISE.to_json(), "port": mode, "native": native}))
    assert "tolerance per tensor: max(1e-09, 50 x the original's own noise)" in text
    assert ("candle port: PASS (worst difference 1.70e-08 of scale, grad.conv_stem.weight; allowed there 1.30e-06: "
            "50 x the original's own noise 2.6e-08") in text
    assert "candle native: FAIL" in text and "grad.w: 4.70e-01 of scale > allowed 1.00e-09: fixed floor 1e-09" in text


def test_verify_options_reach_the_candle_check(monkeypatch):
    """verify's --rtol/--atol/--noise-factor judge candle's numbers too, in the original's check
    and in the rewritten copy's child (the job carries them)."""
    from candle_port.verify import candle_check
    from candle_port.verify.runner import VerifyOptions

    root = Path(__file__).resolve().parents[2]
    options = VerifyOptions(model=f"{root / 'examples' / 'unet.py'}:UNet", input_shapes=[(1, 3, 9, 9)],
                            rtol=1e-7, noise_factor=10.0)
    job = candle_check._job(options)
    assert (job["rtol"], job["atol"], job["noise_factor"]) == (1e-7, None, 10.0)
    seen = {}
    monkeypatch.setattr(candle_check, "check_in_candle", lambda model, inputs, **kw: seen.update(kw) or {})
    candle_check._check(None, [], job)
    assert seen == {"seed": 0, "rtol": 1e-7, "atol": None, "factor": 10.0}


def test_text_report_counts_missing_gradients_instead_of_a_zero_difference():
    ref, got = _pair(1e-16)
    rows, _ = _compare({"output.0": ref}, {"output.0": got}, NOISE, [{"output.0": _pair(1e-12)[1]}])
    rows.append({"kind": "grad", "name": "conv.weight", "status": "missing"})
    native = {"ok": False, "worst_rel_to_scale": 0.0, "tensors": rows, "failing_ops": [], "missing_gradients": [],
              "worst": rows[0], "closest": rows[0]}
    text = "\n".join(summary_lines({"tolerance": NOISE.to_json(), "native": native}))
    assert "candle native: FAIL (1 of 2 tensors missing (candle computed no gradient); among the rest, worst" in text
    assert "grad.conv.weight: missing" in text


def test_a_disagreement_with_no_suspect_names_the_side_further_from_float64():
    """A float32 model whose candle and torch results disagree with no op to blame: each differing
    tensor is compared with the model run in float64, and the side further from it is named."""
    import torch

    from candle_port.verify.candle_run import wrong_side

    exact = {"grad.w": torch.tensor([1.0, 2.0], dtype=torch.float64), "output.0": torch.tensor([3.0], dtype=torch.float64)}
    torch_side = {"grad.w": torch.tensor([1.1, 2.0]), "output.0": torch.tensor([3.2])}
    candle_side = {"grad.w": torch.tensor([1.0, 2.0]), "output.0": torch.tensor([3.0])}
    judged = wrong_side(torch_side, candle_side, exact, ["grad.w", "output.0"])
    assert judged["side"] == "torch" and judged["tensors"]["grad.w"]["wrong"] == "torch"
    assert "torch's own float32 kernels" in judged["note"] and "2 of 2" in judged["note"]
    assert wrong_side(candle_side, torch_side, exact, ["grad.w", "output.0"])["side"] == "candle"
    assert wrong_side(torch_side, candle_side, {}, ["grad.w"]) is None
