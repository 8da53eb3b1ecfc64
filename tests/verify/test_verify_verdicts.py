"""Each fixture model gets its verdict and exit code: PASS 0, FAIL 1, CHANGED 3, UNCHECKED 4.

A rewrite that changes the numbers is never PASS; a graph that candle would train with a wrong
gradient is FAIL (unless --allow-wrong-gradients); a correct rewrite that only rounds differently
passes on every tolerance path, and a planted wrong rewrite fails on each.
"""

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer
from typer.testing import CliRunner

pytest.importorskip("torch")

from candle_port.cli.verify import EXIT_CHANGED, EXIT_FAIL, EXIT_PASS, EXIT_UNCHECKED, verify_command  # noqa: E402
from candle_port.verify import report as report_module  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"
app = typer.Typer()
app.command()(verify_command)


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def run_json(*args):
    result = run(*args, "--output-format", "json")
    assert result.exit_code in (0, 1, 3, 4), result.output
    data = json.loads(result.stdout)
    assert data["exit_code"] == result.exit_code
    return result, data


def planted(name, refused=()):
    text = (FIXTURES / "planted" / name).read_text(encoding="utf-8")
    return lambda source, strategy, path: (text, True, 1, list(refused))


def plant(monkeypatch, name, refused=()):
    import candle_port.verify.workspace as workspace

    monkeypatch.setattr(workspace, "fix_with_port_fix", planted(name, refused))


def line_of(path: Path, marker: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if marker in line)


# --- CHANGED: a strategy that changes the numbers by design -------------------------------------

@pytest.fixture(scope="module")
def nearest():
    return run_json(f"{FIXTURES}/fpn_upsample.py:FPNHead", "--input-shape", "1,3,16,16", "--strategy", "nearest")


def test_nearest_strategy_is_changed_not_pass(nearest):
    result, data = nearest
    assert result.exit_code == EXIT_CHANGED and data["verdict"] == "changed"
    assert data["failures"] == [] and data["changed"].startswith("numerics changed as expected (nearest): max rel ")
    assert data["max_diffs"]["output_max_rel"] > 1e-3  # the numbers do change
    assert any(row["ok"] is False for row in data["comparisons"])


def test_nearest_strategy_text_never_says_matches():
    result = run(f"{FIXTURES}/fpn_upsample.py:FPNHead", "--input-shape", "1,3,16,16", "--strategy", "nearest")
    assert result.exit_code == EXIT_CHANGED
    assert "CHANGED: numerics changed as expected" in result.stdout
    assert "PASS" not in result.stdout and "matches" not in result.stdout
    assert "changed" in result.stdout  # the rows' status


def test_nearest_strategy_with_a_fixed_tolerance_fails():
    result, data = run_json(f"{FIXTURES}/fpn_upsample.py:FPNHead", "--input-shape", "1,3,16,16",
                            "--strategy", "nearest", "--rtol", "1e-5")
    assert result.exit_code == EXIT_FAIL and "differ beyond rtol=1e-05" in data["failures"][0]


# --- FAIL: wrong candle gradients ---------------------------------------------------------------

@pytest.fixture(scope="module")
def pool_default_root():
    return run_json(f"{FIXTURES}/pool_outside_root/model.py:PoolNet", "--input-shape", "1,3,8,8")


def test_max_pool_left_in_the_graph_fails_with_its_location(pool_default_root):
    result, data = pool_default_root
    assert result.exit_code == EXIT_FAIL
    assert all(row["ok"] for row in data["comparisons"])  # the numbers are fine: the gradient is not
    assert "wrong gradient: max_pool2d" in data["failures"][0]
    (wrong,) = data["graphs"]["rewritten"]["wrong"]
    blocks = FIXTURES / "pool_outside_root" / "blocks.py"
    assert wrong["where"] == f"{blocks}:{line_of(blocks, 'return self.pool(')}"
    assert "1/(kh*kw)" in wrong["wrong"]


def test_allow_wrong_gradients_downgrades_to_pass_and_says_so():
    result = run(f"{FIXTURES}/pool_outside_root/model.py:PoolNet", "--input-shape", "1,3,8,8", "--allow-wrong-gradients")
    assert result.exit_code == EXIT_PASS, result.output
    text = " ".join(result.stdout.split())
    assert "1 wrong candle gradient(s) accepted by --allow-wrong-gradients" in text
    assert "wrong gradient" in text and "blocks.py" in text  # still listed, with its file


def test_pool_passes_once_its_file_is_in_the_source_root():
    result, data = run_json(f"{FIXTURES}/pool_outside_root/model.py:PoolNet", "--input-shape", "1,3,8,8",
                            "--source-root", FIXTURES / "pool_outside_root")
    assert result.exit_code == EXIT_PASS, data["failures"]
    assert {r["name"] for r in data["graphs"]["original"]["wrong"]} == {"max_pool2d"}
    assert data["graphs"]["rewritten"]["wrong"] == []


def test_wrong_gradient_location_is_the_users_line_not_the_copys():
    """port-fix adds an import line above the scatter_add; verify names the original line."""
    result, data = run_json(f"{FIXTURES}/scatter_after_resize.py:ScatterNet", "--input-shape", "1,3,8,8")
    assert result.exit_code == EXIT_FAIL
    source = FIXTURES / "scatter_after_resize.py"
    (wrong,) = data["graphs"]["rewritten"]["wrong"]
    assert wrong["name"] == "scatter_add" and wrong["where"] == f"{source}:{line_of(source, 'SCATTER_LINE')}"


# --- UNCHECKED: what could not be checked -------------------------------------------------------

def test_untraceable_model_keeps_its_comparison_and_is_unchecked():
    result, data = run_json(f"{FIXTURES}/untraceable.py:BranchyNet", "--input-shape", "1,3,8,8")
    assert result.exit_code == EXIT_UNCHECKED and data["verdict"] == "unchecked"
    assert data["comparisons"] and all(row["ok"] for row in data["comparisons"])
    assert "neither torch.export nor make_fx can follow" in data["trace_error"]
    assert "untraceable.py:15 (`if int(y.detach().abs().sum().item()) % 2 == 0:`)" in data["trace_error"]
    assert data["unchecked"][0].startswith("the candle op check did not run")


def test_no_trace_is_unchecked_and_says_why():
    result = run(f"{FIXTURES}/unet_bilinear.py:SmallUNet", "--input-shape", "1,3,16,16", "--no-trace")
    assert result.exit_code == EXIT_UNCHECKED, result.output
    assert "UNCHECKED: the numbers match; the candle op check did not run: --no-trace" in " ".join(result.stdout.split())


def test_no_gradient_is_unchecked():
    result, data = run_json(f"{FIXTURES}/no_gradient.py:Frozen", "--input-shape", "1,3,8,8")
    assert result.exit_code == EXIT_UNCHECKED
    assert any("no gradient flowed" in reason for reason in data["unchecked"])


# --- Tolerances: rounding passes, a planted wrong rewrite fails, on every path -----------------

def test_float32_uses_a_float64_reference_and_the_planted_flip_fails(monkeypatch):
    plant(monkeypatch, "unet_align_corners_flipped.py")
    result, data = run_json(f"{FIXTURES}/unet_bilinear.py:SmallUNet", "--input-shape", "1,3,16,16")
    assert result.exit_code == EXIT_FAIL
    assert data["tolerance"]["method"] == "float64"
    assert "x the original's own rounding" in data["failures"][0]
    assert data["max_diffs"]["worst_ratio"] > 1e3


def test_float64_uses_a_perturbed_reference_and_the_planted_flip_fails(monkeypatch):
    plant(monkeypatch, "unet_align_corners_flipped.py")
    result, data = run_json(f"{FIXTURES}/unet_bilinear.py:SmallUNet", "--input-shape", "1,3,16,16", "--dtype", "float64")
    assert result.exit_code == EXIT_FAIL and data["tolerance"]["method"] == "perturbed"


@pytest.fixture(scope="module")
def float32_inside():
    return run_json(f"{FIXTURES}/float32_inside.py:PosEmbedNet", "--input-shape", "1,3,8,8", "--dtype", "float64")


def test_float64_model_computing_in_float32_passes_on_its_float32_noise(float32_inside):
    """DINOv2/DepthAnything: a fixed float64 tolerance fails them; the measured noise does not."""
    result, data = float32_inside
    assert result.exit_code == EXIT_PASS, data["failures"]
    tol = data["tolerance"]
    assert tol["method"] == "perturbed" and "unit roundoff of float32" in tol["note"]
    assert data["max_diffs"]["rewrite_dist_max"] > 1e-10  # beyond the old fixed float64 tolerance
    fixed = run(f"{FIXTURES}/float32_inside.py:PosEmbedNet", "--input-shape", "1,3,8,8", "--dtype", "float64",
                "--rtol", "1e-10")
    assert fixed.exit_code == EXIT_FAIL


def test_a_float32_island_behind_a_layer_norm_widens_the_noise():
    """DINOv2 in float64 at sizes that resize its position embedding: the island was behind the
    final LayerNorm (a tuple-valued node in the trace), its float32 rounding was not measured, and
    every gradient was a MISMATCH at ~1e-9 of scale against a noise of ~1e-16."""
    result, data = run_json(f"{FIXTURES}/float32_inside.py:PosEmbedThenLayerNorm", "--input-shape", "1,3,8,8",
                            "--dtype", "float64")
    assert result.exit_code == EXIT_PASS, data["failures"]
    assert "unit roundoff of float32" in data["tolerance"]["note"]


def test_float64_model_computing_in_float32_planted_flip_fails(monkeypatch):
    plant(monkeypatch, "float32_inside_align_corners_flipped.py")
    result, data = run_json(f"{FIXTURES}/float32_inside.py:PosEmbedNet", "--input-shape", "1,3,8,8", "--dtype", "float64")
    assert result.exit_code == EXIT_FAIL


def test_model_without_float64_measures_its_noise_in_float32():
    result, data = run_json(f"{FIXTURES}/float32_only.py:Float32Only", "--input-shape", "1,3,8,8")
    assert result.exit_code == EXIT_PASS, data["failures"]
    assert data["tolerance"]["method"] == "perturbed" and "float64 failed" in data["tolerance"]["note"]


def test_model_without_float64_planted_wrong_scale_fails(monkeypatch):
    plant(monkeypatch, "float32_only_wrong_scale.py")
    result, data = run_json(f"{FIXTURES}/float32_only.py:Float32Only", "--input-shape", "1,3,8,8")
    assert result.exit_code == EXIT_FAIL  # a 0.1% error is far beyond float32 rounding


def test_batchnorm_over_two_values_passes_on_the_originals_own_noise():
    """MobileViT: gradients before a BatchNorm over two values are rounding noise, amplified."""
    result, data = run_json(f"{FIXTURES}/batchnorm_two_values.py:TwoValueNorm", "--input-shape", "1,3,8,8",
                            "--noise-factor", "50")
    assert result.exit_code == EXIT_PASS, data["failures"]
    assert data["tolerance"]["factor"] == 50.0
    assert 1.0 < data["max_diffs"]["worst_ratio"] < 50.0  # the rewrite rounds differently, within the factor
    strict = run(f"{FIXTURES}/batchnorm_two_values.py:TwoValueNorm", "--input-shape", "1,3,8,8", "--noise-factor", "1")
    assert strict.exit_code == EXIT_FAIL  # the factor is what lets it pass: it is needed, and applied


# --- What the text says about the rewrite ------------------------------------------------------

def test_refusals_are_summarised_per_reason_and_listed_with_show_refusals(monkeypatch):
    refused = [f"{n}: mode is not a literal" for n in range(10, 22)] + ["40: antialias=True"]
    plant(monkeypatch, "unet_align_corners_flipped.py", refused)
    args = (f"{FIXTURES}/unet_bilinear.py:SmallUNet", "--input-shape", "1,3,8,8", "--no-trace")
    text = " ".join(run(*args).stdout.split())
    assert "port-fix refused 13 site(s) (2 reason(s); all: --show-refusals)" in text
    assert "12 x mode is not a literal (e.g. unet_bilinear.py:10, unet_bilinear.py:11, unet_bilinear.py:12)" in text
    assert text.count("port-fix refused") == 1
    full = run(*args, "--show-refusals").stdout
    assert full.count("port-fix refused") == 13


def test_changed_files_give_the_total():
    from rich.console import Console

    from candle_port.verify.render_text import _rewrite_lines

    names = [f"m{i}.py" for i in range(11)]
    report = SimpleNamespace(rewrite={"changed": names, "scanned": 20, "refused": []}, source_root="pkg")
    console = Console(record=True, width=300)
    _rewrite_lines(report, console, False)
    text = console.export_text()
    assert "rewrite: 11 of 20 file(s) changed under pkg: m0.py" in text and "m7.py (+3 more)" in text


def test_gradcheck_says_it_covers_the_input_gradient_only():
    result = run(f"{FIXTURES}/dynamic_mode.py:make_dynamic", "--input-shape", "1,3,8,8",
                 "--init-kwargs", '{"mode": "bilinear"}', "--gradcheck")
    assert result.exit_code == EXIT_PASS, result.output
    assert "input gradient only: parameters are not gradchecked" in " ".join(result.stdout.split())


def test_exit_codes_are_distinct_and_documented():
    codes = report_module.VERDICT_EXIT
    assert codes == {"pass": 0, "fail": 1, "changed": 3, "unchecked": 4} and report_module.EXIT_ERROR == 2
    doc = (Path(__file__).resolve().parents[2] / "docs" / "verify.md").read_text(encoding="utf-8")
    section = doc.split("Verdict and exit codes", 1)[1][:3000]
    for code, verdict in ((0, "PASS"), (1, "FAIL"), (2, "error"), (3, "CHANGED"), (4, "UNCHECKED")):
        assert re.search(rf"\| {code} \| {verdict}", section), (code, verdict)


def test_float32_constants_and_integer_chains_keep_float64s_tolerance():
    result, data = run_json(f"{FIXTURES}/float32_constants.py:Float32Constants", "--input-shape", "1,3,8,8",
                            "--dtype", "float64")
    assert result.exit_code == 0, result.output
    assert data["tolerance"]["method"] == "perturbed" and "unit roundoff of float64" in data["tolerance"]["note"]
    assert data["tolerance"]["floor"] < 1e-15
