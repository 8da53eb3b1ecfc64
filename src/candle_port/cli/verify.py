"""`candle-port verify`: prove on the user's own model that the rewrite keeps outputs and gradients,
and that candle can differentiate every op left on the rewritten model's gradient paths.

Importing this module does not import torch; the command does, inside its body.
"""

from __future__ import annotations

import enum
import json
from typing import Annotated, Optional

import typer

from rich.markup import escape

from candle_port.cli import common

MODEL_PANEL = "Model"
CHECK_PANEL = "Check"
# The verify verdicts' exit codes (candle_port.verify.report, README "Verdict and exit codes").
EXIT_PASS, EXIT_FAIL, EXIT_ERROR, EXIT_CHANGED, EXIT_UNCHECKED = 0, 1, 2, 3, 4


class Strategy(str, enum.Enum):
    runtime = "runtime"
    nearest = "nearest"
    convtranspose = "convtranspose"
    detach = "detach"
    convert = "convert"  # no source change: candle_port.runtime.convert on the built model, under routed()


class DType(str, enum.Enum):
    float32 = "float32"
    float64 = "float64"


class VerifyFormat(str, enum.Enum):
    text = "text"
    json = "json"


def parse_shape(text: str) -> tuple[int, ...]:
    """``1,3,64,64`` (or ``1x3x64x64``) -> (1, 3, 64, 64)."""
    parts = [p for p in text.replace("x", ",").replace(" ", "").split(",") if p]
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError(f"--input-shape {text!r} is not a comma-separated list of integers") from None
    if not shape or any(d <= 0 for d in shape):
        raise ValueError(f"--input-shape {text!r} needs positive sizes")
    return shape


def _json_object(flag: str, text: Optional[str]) -> dict:
    """The JSON object given to ``flag`` ({} when not given); a usage error otherwise."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        _error(f"{flag} is not valid JSON: {exc}")
    if not isinstance(value, dict):
        _error(f"{flag} must be a JSON object")
    return value


def _error(message: str) -> None:
    common.stderr_console().print(f"[bold red]error[/bold red]: {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_ERROR)


def verify_command(
    model: Annotated[str, typer.Argument(help="path/to/file.py:ClassName or package.module:ClassName (a factory function also).", show_default=False)],
    input_shape: Annotated[list[str], typer.Option("--input-shape", help="Shape of one positional input, e.g. 1,3,64,64; repeat for several inputs.", rich_help_panel=MODEL_PANEL, show_default=False)],
    strategy: Annotated[Strategy, typer.Option("--strategy", help="port-fix strategy to apply to the copy (convert: leave the source alone and convert the built model, see docs/convert.md).", case_sensitive=False)] = Strategy.runtime,
    init_kwargs: Annotated[Optional[str], typer.Option("--init-kwargs", help="JSON object of keyword arguments for the class or factory.", rich_help_panel=MODEL_PANEL)] = None,
    config_class: Annotated[Optional[str], typer.Option("--config-class", help="package.module:ConfigClass: build it with --config-kwargs and pass it to MODEL as its first argument (transformers: MODEL(ConfigClass(**kwargs))).", rich_help_panel=MODEL_PANEL)] = None,
    config_kwargs: Annotated[Optional[str], typer.Option("--config-kwargs", help="JSON object of keyword arguments for --config-class.", rich_help_panel=MODEL_PANEL)] = None,
    dtype: Annotated[DType, typer.Option("--dtype", help="Parameter and input dtype.", case_sensitive=False, rich_help_panel=MODEL_PANEL)] = DType.float32,
    forward_kwargs: Annotated[Optional[str], typer.Option("--forward-kwargs", help="JSON object of keyword arguments every forward call gets (a flag such as inference=false; inputs stay --input-shape tensors).", rich_help_panel=MODEL_PANEL)] = None,
    skip_package_init: Annotated[bool, typer.Option("--skip-package-init", help="Import MODEL's module without running the __init__.py of the packages above it (a model zoo whose __init__ imports every model and its dependencies).", rich_help_panel=MODEL_PANEL)] = False,
    source_root: Annotated[Optional[str], typer.Option("--source-root", help="The file or package to rewrite (default: the model's own file). Use the package directory when the model's code spans files.", rich_help_panel=MODEL_PANEL)] = None,
    eval_mode: Annotated[bool, typer.Option("--eval", help="Run the models in eval() mode (default: train(), as for training in candle).", rich_help_panel=MODEL_PANEL)] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed for initialisation, inputs and the loss weights.", rich_help_panel=CHECK_PANEL)] = 0,
    rtol: Annotated[Optional[float], typer.Option("--rtol", help="Fixed relative tolerance, replacing the one measured from the original's own rounding (then nearest/convtranspose are judged too).", rich_help_panel=CHECK_PANEL)] = None,
    atol: Annotated[Optional[float], typer.Option("--atol", help="Fixed absolute tolerance added to rtol * scale (default 0 when --rtol is given).", rich_help_panel=CHECK_PANEL)] = None,
    noise_factor: Annotated[float, typer.Option("--noise-factor", min=1.0, help="How many times the original model's own rounding the rewrite may differ by.", rich_help_panel=CHECK_PANEL)] = 50.0,
    no_trace: Annotated[bool, typer.Option("--no-trace", help="Skip tracing the graphs against candle's op table (verdict at best UNCHECKED).", rich_help_panel=CHECK_PANEL)] = False,
    allow_wrong_gradients: Annotated[bool, typer.Option("--allow-wrong-gradients", help="Do not fail on ops whose candle backward runs but gives a wrong gradient (max_pool2d, ...); they stay listed.", rich_help_panel=CHECK_PANEL)] = False,
    show_refusals: Annotated[bool, typer.Option("--show-refusals", help="List every site port-fix refused (default: counts per reason).", rich_help_panel=common.OUTPUT)] = False,
    gradcheck: Annotated[bool, typer.Option("--gradcheck", help="Also run torch.autograd.gradcheck on the rewritten model in float64 on a tiny input.", rich_help_panel=CHECK_PANEL)] = False,
    rewrite_all: Annotated[bool, typer.Option("--rewrite-all", help="Rewrite every file of the source root, not only the modules the model imports (found by reading import statements; an import by string is not seen).", rich_help_panel=MODEL_PANEL)] = False,
    candle: Annotated[bool, typer.Option("--candle", help="Also run the original model's traced graph in real candle (candle-port-run: its wheel, or built with cargo in a source checkout): native ops and candle-port-ops twins, compared with torch.", rich_help_panel=CHECK_PANEL)] = False,
    threads: Annotated[int, typer.Option("--threads", min=1, help="torch threads per worker process (two workers run at once).", rich_help_panel=CHECK_PANEL)] = 1,
    output_format: Annotated[VerifyFormat, typer.Option("--output-format", help="text (tables) or json (for CI).", case_sensitive=False, rich_help_panel=common.OUTPUT)] = VerifyFormat.text,
    version: common.VersionOption = None,
) -> None:
    """Check that the rewritten model matches the original and that candle can train what is left.

    It compares outputs and gradients of the original and the rewritten model, and traces the
    rewritten graph against candle's op table: nothing left may lack a correct candle backward.

    Exit codes:
    0 PASS;
    1 FAIL (numbers differ beyond tolerance, or ops without a correct candle backward remain);
    2 error (bad MODEL, import failure, shape mismatch);
    3 CHANGED (a strategy that changes the numbers by design);
    4 UNCHECKED (not traced, no gradient flowed, or --candle could not run candle).
    """
    try:
        shapes = [parse_shape(s) for s in input_shape]
    except ValueError as exc:
        _error(str(exc))
    kwargs = _json_object("--init-kwargs", init_kwargs)
    config = _json_object("--config-kwargs", config_kwargs)
    forward = _json_object("--forward-kwargs", forward_kwargs)
    if config_kwargs and not config_class:
        _error("--config-kwargs needs --config-class")
    from candle_port.verify.runner import VerifyError, VerifyOptions, run_verify

    options = VerifyOptions(
        model=model, input_shapes=shapes, strategy=strategy.value, init_kwargs=kwargs, dtype=dtype.value,
        source_root=source_root, seed=seed, rtol=rtol, atol=atol, gradcheck=gradcheck,
        train=not eval_mode, threads=threads, noise_factor=noise_factor, trace=not no_trace,
        allow_wrong_gradients=allow_wrong_gradients,
        config_class=config_class, config_kwargs=config, skip_package_init=skip_package_init, forward_kwargs=forward,
        rewrite_all=rewrite_all,
    )
    from candle_port.cli.stages import Stages

    stages = Stages("candle-port verify")
    try:
        report = run_verify(options, stage=stages.stage)
    except VerifyError as exc:
        _error(str(exc))
    candle_result = None
    if candle:
        from candle_port.verify.candle_check import candle_check, candle_text

        candle_result = candle_check(options, stage=stages.stage)
        report.candle = candle_result  # one verdict: the JSON's, the text's and the exit code
    if output_format is VerifyFormat.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        from candle_port.cli.report_console import report_console

        with report_console() as console:
            report.render(console, show_refusals)
            if candle_result is not None:
                console.print(candle_text(candle_result), markup=False)
    raise typer.Exit(report.exit_code)
