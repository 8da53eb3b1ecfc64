"""``candle-port verify MODEL ... --candle``: the user's original model, run in real candle.

Builds the original model in this process with verify's seed rules (the same init, inputs and
dtype as the original worker), exports its traced graph and runs it through candle-port-run in
both modes (candle_run.py). Native mode shows which op a straightforward port cannot train, at
which source line; port mode shows whether candle-port-ops' twins fix it.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from .candle_run import CandleRunError, check_in_candle, summary_lines
from .spec import parse_model_spec


def _build_original(options: Any):
    import torch

    spec = parse_model_spec(options.model, options.cwd)
    sys.path.insert(0, str(spec.import_root))
    obj: Any = importlib.import_module(spec.module)
    for part in spec.attr.split("."):
        obj = getattr(obj, part)
    dtype = getattr(torch, options.dtype)
    torch.manual_seed(options.seed)
    model = obj(**options.init_kwargs).to(dtype)
    model.train(options.train)
    gen = torch.Generator().manual_seed(options.seed + 1)
    inputs = [torch.randn(s, dtype=dtype, generator=gen) for s in options.input_shapes]
    return model, inputs


def candle_check(options: Any) -> dict:
    """JSON-ready candle result for ``options`` (a VerifyOptions); ``ok`` false with ``error``
    when candle could not be run at all (no cargo, build failure, untraceable model)."""
    try:
        model, inputs = _build_original(options)
        return check_in_candle(model, inputs, seed=options.seed)
    except CandleRunError as exc:
        return {"ok": False, "error": str(exc)}
    except Exception as exc:  # the user's model failing to build or trace is a result, not a crash
        return {"ok": False, "error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"}


def candle_text(result: dict) -> str:
    """The text block printed after verify's tables."""
    if "error" in result and "port" not in result:
        return f"candle: could not run: {result['error']}"
    return "\n".join(summary_lines(result))
