"""`candle-port reference` and `candle-port compare`: check a candle port against its PyTorch
original (docs/parity.md). Importing this module does not import torch; the commands do."""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from candle_port.cli import common
from candle_port.cli.verify import MODEL_PANEL, DType, _error, _json_object, parse_shape

EXIT_MATCH, EXIT_DIVERGES, EXIT_ERROR = 0, 1, 2


class Optimizer(str, enum.Enum):
    sgd = "sgd"
    adamw = "adamw"


class Loss(str, enum.Enum):
    linear = "linear"
    mse = "mse"


class CompareFormat(str, enum.Enum):
    text = "text"
    json = "json"


def _progress(message: str) -> None:
    print(f"candle-port reference: {message}", file=sys.stderr, flush=True)


def reference_command(
    model: Annotated[str, typer.Argument(help="path/to/file.py:ClassName or package.module:ClassName (a factory function also).", show_default=False)],
    input_shape: Annotated[list[str], typer.Option("--input-shape", help="Shape of one positional input, e.g. 1,3,64,64; repeat for several inputs.", rich_help_panel=MODEL_PANEL, show_default=False)],
    out: Annotated[Path, typer.Option("--out", help="The parity directory to write (created if missing).", show_default=False)],
    init_kwargs: Annotated[Optional[str], typer.Option("--init-kwargs", help="JSON object of keyword arguments for the class or factory.", rich_help_panel=MODEL_PANEL)] = None,
    config_class: Annotated[Optional[str], typer.Option("--config-class", help="package.module:ConfigClass, built with --config-kwargs and passed to MODEL first.", rich_help_panel=MODEL_PANEL)] = None,
    config_kwargs: Annotated[Optional[str], typer.Option("--config-kwargs", help="JSON object of keyword arguments for --config-class.", rich_help_panel=MODEL_PANEL)] = None,
    forward_kwargs: Annotated[Optional[str], typer.Option("--forward-kwargs", help="JSON object of keyword arguments every forward call gets.", rich_help_panel=MODEL_PANEL)] = None,
    dtype: Annotated[DType, typer.Option("--dtype", help="Parameter and input dtype.", case_sensitive=False, rich_help_panel=MODEL_PANEL)] = DType.float32,
    seed: Annotated[int, typer.Option("--seed", help="Seed for initialisation, inputs and the upstream gradient.")] = 0,
    eval_mode: Annotated[bool, typer.Option("--eval", help="Run the model in eval() mode (default train(); use --eval for ports whose forward is inference-mode BatchNorm or has dropout).", rich_help_panel=MODEL_PANEL)] = False,
    source_root: Annotated[Optional[str], typer.Option("--source-root", help="The package the model's code spans (for --skip-package-init).", rich_help_panel=MODEL_PANEL)] = None,
    skip_package_init: Annotated[bool, typer.Option("--skip-package-init", help="Import MODEL's module without running the __init__.py of the packages above it.", rich_help_panel=MODEL_PANEL)] = False,
    weights: Annotated[Optional[Path], typer.Option("--weights", help="Real weights to load: a state dict (torch.save) or a .safetensors file.", rich_help_panel=MODEL_PANEL)] = None,
    loss: Annotated[Loss, typer.Option("--loss", help="linear: sum(output * upstream), whose gradient is the upstream itself; mse: mean((output - upstream)^2), bounded below for --steps.", case_sensitive=False)] = Loss.linear,
    steps: Annotated[int, typer.Option("--steps", min=0, help="Also record the losses of N optimizer steps on the same loss.")] = 0,
    optimizer: Annotated[Optimizer, typer.Option("--optimizer", help="torch.optim.SGD or AdamW (betas 0.9/0.999, eps 1e-8), matched by candle-nn's.", case_sensitive=False)] = Optimizer.sgd,
    lr: Annotated[float, typer.Option("--lr", help="Learning rate of the steps.")] = 1e-3,
    weight_decay: Annotated[float, typer.Option("--weight-decay", help="AdamW's weight decay.")] = 0.01,
    rename: Annotated[Optional[list[str]], typer.Option("--rename", help="TORCH=PORT name pattern, e.g. 'encoder.layer.{i}.=blocks.{i}.' ({name} matches part of one dotted segment); repeat for several. The port's VarBuilder reads torch's weights through them.")] = None,
    no_noise: Annotated[bool, typer.Option("--no-noise", help="Skip measuring torch's own rounding (compare then needs --rtol).")] = False,
    version: common.VersionOption = None,
) -> None:
    """Write the torch side of a parity directory for a candle port's check.

    Weights, inputs, outputs, every submodule's output and every parameter gradient, for the
    crate candle-port-parity and `candle-port compare` (docs/parity.md).

    Exit codes: 0 written; 2 error (bad MODEL, import or forward failure).
    """
    from candle_port.parity.renames import RenameError, parse_rule

    try:
        shapes = [parse_shape(s) for s in input_shape]
        rules = [parse_rule(r) for r in rename or []]
    except (ValueError, RenameError) as exc:
        _error(str(exc))
    if config_kwargs and not config_class:
        _error("--config-kwargs needs --config-class")
    if weights is not None and not weights.is_file():
        _error(f"--weights {weights}: no such file")
    from candle_port.parity.reference import ReferenceError, ReferenceOptions, write_reference

    options = ReferenceOptions(
        model=model, input_shapes=shapes, out=out, init_kwargs=_json_object("--init-kwargs", init_kwargs),
        config_class=config_class, config_kwargs=_json_object("--config-kwargs", config_kwargs),
        forward_kwargs=_json_object("--forward-kwargs", forward_kwargs), dtype=dtype.value, seed=seed,
        train=not eval_mode, source_root=source_root, skip_package_init=skip_package_init, weights=weights,
        steps=steps, loss=loss.value, optimizer=optimizer.value, lr=lr, weight_decay=weight_decay, renames=rules, noise=not no_noise,
    )
    try:
        manifest = write_reference(options, _progress)
    except ReferenceError as exc:
        _error(str(exc))
    except OSError as exc:
        _error(f"{out}: {exc}")
    print(f"wrote {out}: {len(manifest['parameters'])} parameters, {len(manifest['modules'])} module outputs, "
          f"{len(manifest['outputs'])} outputs ({manifest['dtype']}, {manifest['mode']} mode)")


def compare_command(
    directory: Annotated[Path, typer.Argument(help="A parity directory: `candle-port reference --out DIR`, then the port's check.", show_default=False)],
    noise_factor: Annotated[float, typer.Option("--noise-factor", min=1.0, help="How many times torch's own rounding the port may differ by.")] = 50.0,
    rtol: Annotated[Optional[float], typer.Option("--rtol", help="Fixed relative tolerance instead of the measured noise.")] = None,
    atol: Annotated[Optional[float], typer.Option("--atol", help="Fixed absolute tolerance added to rtol * scale.")] = None,
    output_format: Annotated[CompareFormat, typer.Option("--output-format", help="text or json.", case_sensitive=False, rich_help_panel=common.OUTPUT)] = CompareFormat.text,
    verbose: Annotated[bool, typer.Option("--verbose", help="List every module and gradient, not only those that diverge.", rich_help_panel=common.OUTPUT)] = False,
    version: common.VersionOption = None,
) -> None:
    """Compare a candle port's side of DIR with torch's, naming the first divergence.

    The first divergent module, every parameter gradient, weights never loaded, shape and dtype
    mismatches, loss curves.

    Exit codes: 0 the port matches; 1 it diverges; 2 error (missing or unreadable files).
    """
    from candle_port.parity.compare import CompareError, compare
    from candle_port.parity.render import render

    try:
        result = compare(directory, factor=noise_factor, rtol=rtol, atol=atol)
    except CompareError as exc:
        _error(str(exc))
    if output_format is CompareFormat.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(render(result, verbose))
    raise typer.Exit(result.exit_code)
