"""`candle-port verify` end to end on the fixture models: two workers, port-fix, exit codes.

Each scenario runs once (module fixtures) and several tests read its result.
"""

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

pytest.importorskip("torch")

from candle_port.cli.verify import verify_command  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"
app = typer.Typer()
app.command()(verify_command)


def run(*args: str, env: dict | None = None):
    result = CliRunner().invoke(app, [str(a) for a in args], env=env)
    return result


def run_json(*args: str):
    result = run(*args, "--output-format", "json")
    data = json.loads(result.stdout) if result.exit_code in (0, 1) else None
    return result, data


def error_lines(stderr: str) -> list[str]:
    """stderr without verify's progress lines (each stage it reached says so on stderr)."""
    return [line for line in stderr.strip().splitlines() if not line.startswith("candle-port verify: ")]


def lacking(data, which):
    return sorted({r["name"] for r in data["graphs"][which]["lacking"]})


@pytest.fixture(scope="module")
def unet():
    return run_json(f"{FIXTURES}/unet_bilinear.py:SmallUNet", "--input-shape", "2,3,32,32")


def test_unet_passes(unet):
    result, data = unet
    assert result.exit_code == 0, result.output
    assert data["verdict"] == "pass" and data["rewrite"]["changed"] == ["unet_bilinear.py"]
    assert data["graphs"]["original"]["tracer"] == "torch.export"


def test_original_graph_lists_bilinear_as_lacking_candle_backward(unet):
    _, data = unet
    assert lacking(data, "original") == ["upsample_bilinear2d"]
    assert lacking(data, "rewritten") == []


def test_outputs_and_every_gradient_within_tolerance(unet):
    _, data = unet
    kinds = {row["kind"] for row in data["comparisons"]}
    assert kinds == {"output", "input grad", "param grad"}
    assert all(row["ok"] for row in data["comparisons"])
    tol = data["tolerance"]
    assert (tol["mode"], tol["method"], tol["factor"]) == ("reference", "float64", 50.0)
    assert all(row["rewrite_dist"] <= row["allowed"] and row["own_noise"] is not None for row in data["comparisons"])
    assert data["max_diffs"]["worst_ratio"] <= 50.0
    assert data["module_files"]["original"] != data["module_files"]["rewritten"]


def test_fpn_with_nn_upsample_text_output():
    result = run(f"{FIXTURES}/fpn_upsample.py:FPNHead", "--input-shape", "2,3,32,32", "--dtype", "float64")
    assert result.exit_code == 0, result.output
    assert "PASS" in result.stdout and "upsample_bilinear2d" in result.stdout  # the original's table
    text = " ".join(result.stdout.split())  # lines wrap at the console's width
    assert "50 x the original's own rounding" in text and "perturbed by" in text


def test_dynamic_mode_through_a_factory_with_gradcheck():
    result, data = run_json(f"{FIXTURES}/dynamic_mode.py:make_dynamic", "--input-shape", "1,3,16,16",
                            "--init-kwargs", '{"mode": "bilinear"}', "--gradcheck")
    assert result.exit_code == 0, result.output
    assert lacking(data, "original") == ["upsample_bilinear2d"] and lacking(data, "rewritten") == []
    assert data["gradcheck"]["ok"] and data["gradcheck"]["shapes"] == [[1, 3, 8, 8]]


@pytest.fixture(scope="module")
def twofile_default_root():
    return run_json(f"{FIXTURES}/twofile_pkg/model.py:TwoFileNet", "--input-shape", "1,3,16,16")


def test_two_files_need_the_package_as_source_root(twofile_default_root):
    result, data = twofile_default_root
    assert result.exit_code == 1
    assert data["rewrite"]["changed"] == []  # model.py has no site; blocks.py was not in the root
    assert lacking(data, "rewritten") == ["upsample_bilinear2d"]
    assert any("blocks.py" in w for r in data["graphs"]["rewritten"]["summary"] for w in r["where"])


def test_two_files_with_relative_import():
    result, data = run_json(f"{FIXTURES}/twofile_pkg/model.py:TwoFileNet", "--input-shape", "1,3,16,16",
                            "--source-root", FIXTURES / "twofile_pkg")
    assert result.exit_code == 0, result.output
    assert data["rewrite"]["changed"] == ["blocks.py"]
    assert lacking(data, "original") == ["upsample_bilinear2d"] and lacking(data, "rewritten") == []
    assert "/twofile_pkg/blocks.py" not in data["module_files"]["rewritten"]


def test_a_driver_outside_the_source_root_builds_the_rewritten_package():
    result, data = run_json(f"{FIXTURES}/driver_twofile.py:build", "--input-shape", "1,3,16,16",
                            "--source-root", FIXTURES / "twofile_pkg")
    assert result.exit_code == 0, result.output
    assert data["rewrite"]["changed"] == ["blocks.py"]
    assert lacking(data, "original") == ["upsample_bilinear2d"] and lacking(data, "rewritten") == []


def test_a_driver_that_never_imports_the_source_root_is_an_error():
    result = run(f"{FIXTURES}/driver_twofile.py:unrelated", "--input-shape", "1,3,16,16",
                 "--source-root", FIXTURES / "twofile_pkg")
    assert result.exit_code == 2
    assert "imported nothing from it" in result.output


def planted(name):
    text = (FIXTURES / "planted" / name).read_text(encoding="utf-8")
    return lambda source, strategy, path: (text, True)


def test_planted_wrong_rewrite_fails_with_a_table(monkeypatch):
    import candle_port.verify.workspace as workspace

    monkeypatch.setattr(workspace, "fix_with_port_fix", planted("unet_align_corners_flipped.py"))
    result = run(f"{FIXTURES}/unet_bilinear.py:SmallUNet", "--input-shape", "2,3,32,32")
    assert result.exit_code == 1, result.output
    assert "MISMATCH" in result.stdout and "FAIL" in result.stdout
    assert "differ beyond 50 x the original's own rounding" in " ".join(result.stdout.split())
    line = next(row for row in result.stdout.splitlines() if "output" in row and "MISMATCH" in row)
    assert "2x2x32x32" in line


def test_output_shape_change_is_an_error(monkeypatch):
    import candle_port.verify.workspace as workspace

    monkeypatch.setattr(workspace, "fix_with_port_fix", planted("dynamic_wrong_scale.py"))
    result = run(f"{FIXTURES}/dynamic_mode.py:DynamicUp", "--input-shape", "1,3,8,8")
    assert result.exit_code == 2
    assert "shape error" in result.stderr and "outputs differ" in result.stderr
    assert len(error_lines(result.stderr)) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(["nonsense", "--input-shape", "1,3"], "MODEL must be", id="bad-spec"),
        pytest.param([f"{FIXTURES}/unet_bilinear.py:SmallUNet", "--input-shape", "1,a"], "comma-separated", id="bad-shape"),
        pytest.param([f"{FIXTURES}/unet_bilinear.py:SmallUNet", "--input-shape", "1,3,8,8", "--init-kwargs", "[1]"], "JSON object", id="bad-kwargs"),
        pytest.param([f"{FIXTURES}/unet_bilinear.py:NoSuchClass", "--input-shape", "1,3,8,8"], "import error", id="missing-class"),
    ],
)
def test_errors_exit_2_with_one_line(args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.stderr and len(error_lines(result.stderr)) == 1


def test_importing_the_command_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, candle_port.cli.verify, candle_port.verify.runner; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_eval_seed_threads_and_tolerance_options_are_applied():
    result, data = run_json(
        f"{FIXTURES}/unet_bilinear.py:SmallUNet", "--input-shape", "1,3,16,16",
        "--eval", "--seed", "3", "--threads", "1", "--rtol", "0", "--atol", "1e-3",
    )
    assert result.exit_code == 0, result.output
    assert (data["mode"], data["seed"]) == ("eval", 3)
    assert (data["tolerance"]["mode"], data["tolerance"]["rtol"], data["tolerance"]["atol"]) == ("fixed", 0.0, 1e-3)
    # An absolute tolerance of zero with no relative one fails on float32 rounding noise.
    strict, strict_data = run_json(
        f"{FIXTURES}/unet_bilinear.py:SmallUNet", "--input-shape", "1,3,16,16", "--rtol", "0", "--atol", "0",
    )
    assert strict.exit_code == (0 if strict_data["max_diffs"]["grad_max_abs"] == 0 else 1)


def test_bundled_example_passes_and_names_the_max_pool_caveat_it_removed():
    """examples/unet.py (the README's demo): bilinear and MaxPool2d(2) rewritten, verify passes;
    the max pool's scaled candle gradient is shown for the original graph only, once. On an
    80-column terminal no line is longer, and a file:line is never split."""
    example = Path(__file__).resolve().parents[2] / "examples" / "unet.py"
    result = run(f"{example}:UNet", "--input-shape", "1,3,32,32", env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80, result.stdout
    text = " ".join(result.stdout.split())
    assert "port-fix: 3 site(s) rewritten" in text
    # The original graph's ops without a correct candle backward, each with its lines in one piece.
    assert "upsample_bilinear2d x2 (forward-only) at " in text and "unet.py:33, :35" in result.stdout
    assert "max_pool2d x2 (wrong gradient) at " in text and "unet.py:31, :32" in result.stdout
    assert "candle's max_pool2d gradient is wrong" in text
    assert text.count("candle's max_pool2d gradient is wrong") == 1  # not repeated as a caveat
    assert "23 of 27 traced ops have a candle backward (85.2%)" in text
    assert "traced ops have a candle backward (100.0%)" in text  # the rewritten graph
    assert "docs/candle-measured.md" not in text and "shared/" not in text and "(2.3" not in text
    assert "PASS" in text


def test_a_missing_optional_import_is_one_line_naming_it_its_importer_and_what_to_do():
    result = run(f"{FIXTURES}/optional_dep_pkg/models/net.py:Net", "--input-shape", "1,3,8,8")
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "module 'candle_port_fixture_not_installed' is not installed" in text
    assert "imported by optional_dep_pkg.extras" in text and "extras.py:1)" in text
    assert "pip install candle_port_fixture_not_installed" in text
    # The failing import is in the package's __init__.py, which runs before the model's module.
    assert "--skip-package-init imports optional_dep_pkg.models.net without running optional_dep_pkg's __init__.py" in text
    assert "Traceback" not in result.output


@pytest.mark.parametrize("source_root", [None, "optional_dep_pkg/models"])
def test_skip_package_init_imports_the_model_without_the_packages_init(source_root):
    """A model zoo's __init__.py imports every model and all their dependencies; the model's own
    module needs none of them. With --skip-package-init the packages above it are imported bare,
    in both workers and from the rewritten copy where the source root covers them."""
    args = ["--source-root", f"{FIXTURES}/{source_root}"] if source_root else []
    result = run(f"{FIXTURES}/optional_dep_pkg/models/net.py:Net", "--input-shape", "1,3,8,8", "--skip-package-init", *args)
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output and "upsample_bilinear2d x1" in result.output  # the original's, now rewritten


@pytest.mark.parametrize("source_root", ["optional_dep_pkg/models", "optional_dep_pkg"])
def test_skip_package_init_covers_the_packages_a_driver_imports(source_root):
    """A factory script imports the zoo's subpackage by name: the source root's package and those
    above it are imported bare for it (the zoo's __init__ imports a module that is not installed),
    whether the source root is the subpackage or the zoo itself (SAM 2: `--source-root sam2`)."""
    args = ["--input-shape", "1,3,8,8", "--source-root", f"{FIXTURES}/{source_root}"]
    failed = run(f"{FIXTURES}/driver_optional_dep.py:build", *args)
    assert failed.exit_code == 2
    assert ("--skip-package-init with --source-root on optional_dep_pkg or the subpackage the model needs"
            in " ".join(failed.output.split()))
    result = run(f"{FIXTURES}/driver_optional_dep.py:build", *args, "--skip-package-init")
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output


@pytest.mark.parametrize("flags", [[], ["--skip-package-init"]])
def test_a_namespace_package_is_found_and_rewritten_as_the_source_root(monkeypatch, flags):
    """facenet_pytorch/models has no __init__.py: `facenet_pytorch.models.mtcnn` was "not on
    sys.path", and as --source-root the directory was taken for a folder of top-level modules."""
    monkeypatch.syspath_prepend(str(FIXTURES))
    result, data = run_json("nsroot_pkg.models.net:Net", "--input-shape", "1,3,8,8",
                            "--source-root", f"{FIXTURES}/nsroot_pkg/models", *flags)
    assert result.exit_code == 0, result.output
    assert data["verdict"] == "pass" and data["rewrite"]["changed"]
    assert lacking(data, "original") == ["upsample_bilinear2d"] and lacking(data, "rewritten") == []


def test_a_name_from_a_package_init_left_out_says_to_run_without_the_flag():
    """ultralytics.utils imports `__version__` from ultralytics: with --skip-package-init the old
    hint recommended the flag already given; the line now says the __init__.py is needed."""
    failed = run(f"{FIXTURES}/needs_init_pkg/net.py:Net", "--input-shape", "1,3,8,8", "--skip-package-init")
    assert failed.exit_code == 2
    text = " ".join(failed.output.split())
    assert "cannot import name '__version__' from 'needs_init_pkg'" in text
    assert "needs_init_pkg's __init__.py defines it, and --skip-package-init does not run it; verify without --skip-package-init" in text
    assert run(f"{FIXTURES}/needs_init_pkg/net.py:Net", "--input-shape", "1,3,8,8").exit_code == 0


def test_an_import_error_with_skip_package_init_given_does_not_recommend_it():
    """DAC: dac.model.dac imports dac.nn.layers, whose package's __init__.py imports losses that need
    a missing package. The flag leaves out only the packages above the model's module: the error
    says so and names the __init__.py that ran, instead of recommending the flag already given."""
    failed = run(f"{FIXTURES}/sibling_init_pkg/model/net.py:Net", "--input-shape", "1,2,8", "--skip-package-init")
    assert failed.exit_code == 2
    text = " ".join(failed.output.split())
    assert "module 'candle_port_missing_audio_dependency' is not installed" in text
    assert "install what sibling_init_pkg.layers's __init__.py imports" in text
    assert "--skip-package-init, given, leaves out only" in text and "--skip-package-init imports" not in text


def test_a_model_making_float32_tensors_in_float64_says_to_verify_in_float32():
    """torchvision's RAFT in float64: "expected scalar type Double but found Float" came alone."""
    failed = run(f"{FIXTURES}/float32_made.py:MadeInFloat32", "--input-shape", "1,3,8,8", "--dtype", "float64")
    assert failed.exit_code == 2
    assert "cannot run in float64: verify it in float32 (drop --dtype float64)" in " ".join(failed.output.split())
    assert run(f"{FIXTURES}/float32_made.py:MadeInFloat32", "--input-shape", "1,3,8,8").exit_code == 0


def test_a_load_state_dict_override_that_returns_nothing_loads():
    """demucs' Demucs: "cannot unpack non-iterable NoneType object" stopped verify at the state_dict.
    At batch 2 the Conv1d is fixed too (CP111: candle's conv1d weight gradient is wrong there)."""
    result, data = run_json(f"{FIXTURES}/state_dict_override.py:RenamingLoader", "--input-shape", "2,2,18")
    assert result.exit_code == 0, result.output
    assert data["verdict"] == "pass"


def test_forward_kwargs_reach_every_forward_call():
    """facexlib's MODNet-style `forward(img, inference)`: without the flag the forward fails and
    the error names --forward-kwargs; with it both models run (and are traced) with it."""
    failed = run(f"{FIXTURES}/forward_flag.py:FlagNet", "--input-shape", "1,3,8,8")
    assert failed.exit_code == 2 and "pass it with --forward-kwargs JSON" in " ".join(failed.output.split())
    result, data = run_json(f"{FIXTURES}/forward_flag.py:FlagNet", "--input-shape", "1,3,8,8",
                            "--forward-kwargs", '{"inference": false}')
    assert result.exit_code == 0, result.output
    assert data["verdict"] == "pass"
    # the head runs only with inference false: its gradients were compared
    assert {"head.weight", "head.bias"} <= {row["name"] for row in data["comparisons"]}


def test_bare_packages_point_into_the_rewritten_copy_where_a_redirect_covers_them(tmp_path):
    from candle_port.verify.worker import bare_packages

    copy = tmp_path / "copy"
    (copy / "models").mkdir(parents=True)
    packages = bare_packages("zoo.models.net", "/src", {"zoo": str(copy)})
    assert packages == {"zoo": str(copy), "zoo.models": str(copy / "models")}
    assert bare_packages("zoo.models.net", "/src", {}) == {"zoo": "/src/zoo", "zoo.models": "/src/zoo/models"}
    assert bare_packages("net", "/src", None) == {}


def test_an_error_outside_the_packages_init_keeps_the_source_root_hint():
    from candle_port.verify.spec import describe_import_error

    text = describe_import_error("zoo.models.net", ModuleNotFoundError("No module named 'cv2'", name="cv2"))
    assert "--source-root on its subpackage" in text and "--skip-package-init" not in text


@pytest.mark.parametrize("args, message", [
    pytest.param(["--config-kwargs", "{}"], "--config-kwargs needs --config-class", id="kwargs-alone"),
    pytest.param(["--config-class", "nocolon"], "--config-class must be package.module:ClassName", id="bad-spec"),
    pytest.param(["--config-class", "collections:OrderedDict", "--config-kwargs", "[]"], "must be a JSON object", id="bad-json"),
])
def test_config_class_usage_errors(args, message):
    result = run(f"{FIXTURES}/unet_bilinear.py:SmallUNet", "--input-shape", "1,3,8,8", *args)
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output


@pytest.mark.parametrize(("module", "distribution"), [("cv2", "opencv-python"), ("PIL.Image", "Pillow"), ("sklearn", "scikit-learn"), ("einops", "einops")])
def test_a_missing_module_names_the_package_pip_installs(module: str, distribution: str):
    """cv2 is not on PyPI as cv2: the hint names what to install, not the module."""
    from candle_port.verify.spec import describe_import_error

    text = describe_import_error("net", ModuleNotFoundError(f"No module named {module!r}", name=module))
    assert f"module {module!r} is not installed" in text and f"(pip install {distribution})" in text


def test_a_forward_that_sets_requires_grad_on_a_view_of_its_input_runs_without_input_gradients():
    result, data = run_json(f"{FIXTURES}/input_view_requires_grad.py:FeatureEncoder", "--input-shape", "2,40",
                            "--dtype", "float64")
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in data["comparisons"]}
    assert rows["input[0].grad"]["ok"] and rows["input[0].grad"]["note"] == "no gradient in either"
    assert rows["conv.weight"]["ok"] and rows["conv.weight"]["max_abs"] is not None
