"""Which path a runtime op takes: torch's own kernel in plain eager mode, the composition otherwise.

torch itself keeps fused kernels for eager mode and decompositions for graph capture; the runtime
does the same. In plain eager PyTorch the value the user gets is torch's anyway, so each op that
replaces a ``torch.nn.functional`` function calls that function (same output, gradient, strides,
errors, bitwise). The composition (ops candle can differentiate) runs whenever something records
what the op does, and wherever a caller asks for it:

* a dispatch mode is active: make_fx, FakeTensorMode, torch.export's tracing, functionalization;
* torch.compile / Dynamo (and strict torch.export) is tracing;
* a functorch transform is active (vmap, grad, functionalize, jacrev ...);
* ONNX export records through one of these or through ``torch.jit.trace`` (below), so it needs
  no test of its own (``torch.onnx.is_in_onnx_export()`` costs a microsecond per call);
* the input is not a plain ``torch.Tensor`` (FakeTensor, FunctionalTensor, any subclass);
* the switch is on: ``with composition(): ...`` in this thread / task, or the environment
  variable ``CANDLE_PORT_RUNTIME=composition`` (read at each call, so vendored copies of the
  runtime and child processes follow it too). ``composition(False)`` turns it off again inside
  a block, whatever the variable says.

``torch.jit.script`` compiles the modules' and ``interpolate``'s ``is_scripting()`` branch
(torch's op), and ``torch.jit.trace`` hands every op to torch's op (so a traced model keeps its
output sizes a function of the input's): neither changes here.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Optional

import torch

_COMPOSITION_ENV = "CANDLE_PORT_RUNTIME"
_COMPOSITION_ENV_VALUES = {"": False, "auto": False, "composition": True}
# None: follow the environment variable; True / False: set by composition() in this context.
_composition_forced: ContextVar[Optional[bool]] = ContextVar("candle_port_runtime_composition", default=None)
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


@contextmanager
def composition(enabled: bool = True) -> Iterator[None]:
    """``with composition(): ...``: every runtime op called inside runs its composition, in eager
    mode too (what verify and candle-port's own tests judge, and what a port to candle runs).

    ``composition(False)``: the default choice inside the block (torch's own kernel in plain eager
    mode, the composition under any tracer), even where ``CANDLE_PORT_RUNTIME=composition`` is set.
    Per thread and per asyncio task (a ``contextvars.ContextVar``); nests, and restores the outer
    setting on exit, also on an exception. Usable as a decorator.
    """
    token = _composition_forced.set(bool(enabled))
    try:
        yield
    finally:
        _composition_forced.reset(token)


def composition_forced() -> bool:
    """Whether the switch asks for the composition here: ``composition()``, else the variable."""
    forced = _composition_forced.get()
    if forced is not None:
        return forced
    value = os.environ.get(_COMPOSITION_ENV, "").strip().lower()
    try:
        return _COMPOSITION_ENV_VALUES[value]
    except KeyError:
        raise ValueError(
            f"{_COMPOSITION_ENV}={os.environ[_COMPOSITION_ENV]!r}: expected 'composition' or 'auto' (or unset)"
        ) from None


def use_native(x) -> bool:
    """Whether an op called on ``x`` runs torch's own kernel: plain eager mode, no switch (see the
    module docstring). Cheap enough for every call (a few attribute reads)."""
    if torch.compiler.is_compiling():  # first: Dynamo cannot trace the queries below
        return False
    if type(x) not in _PLAIN_TENSORS:
        return False
    if torch._C._len_torch_dispatch_stack() > 0 or torch._C._are_functorch_transforms_active():
        return False
    return not composition_forced()
