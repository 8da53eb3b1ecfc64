"""Whether a tracer is recording the ops, and size-only constants built outside it.

make_fx and FakeTensorMode (dispatch modes) and torch.compile record what the runtime does: there
the compositions must stay the traced ones (no in-place fast paths, no plan constants built from
fake tensors). The pools, the resizes and the transposed convolutions ask the same two things.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import _disable_current_modes


def recording() -> bool:
    """Whether a dispatch mode (make_fx, FakeTensorMode), torch.export or torch.compile is recording.
    (is_compiling first: Dynamo cannot trace the dispatch-stack query.)"""
    return torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack() > 0


def size_constant(builder, *key):
    """``builder(*key)`` from its lru_cache, as real tensors even under make_fx / FakeTensorMode.

    Under a dispatch mode (make_fx, FakeTensorMode, and torch.export's non-strict tracing, which
    also says it is compiling) the modes are switched off while building, so the constants are
    real tensors (they depend on sizes only; a builder may test their values) and the trace
    records them as constants; nothing made under such a mode is ever cached. Dynamo
    (torch.compile, strict export) traces the builder afresh."""
    if torch.compiler.is_dynamo_compiling():
        return builder.__wrapped__(*key)
    if torch._C._len_torch_dispatch_stack() > 0:
        with _disable_current_modes():
            return builder(*key)
    if torch.compiler.is_compiling():
        return builder.__wrapped__(*key)
    return builder(*key)
