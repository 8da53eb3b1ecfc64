"""Whether a site runs with gradients off: under `torch.no_grad()` / `torch.inference_mode()`.

candle records an op for backward only when an input is reachable from a trainable variable; code
under `no_grad` (a `with` block or a decorator) builds no graph in torch either, so it cannot be on
a training gradient path and a missing or wrong candle backward does not matter there.
"""

from __future__ import annotations

import ast

from candle_port.analysis.names import Resolver, Scope
from candle_port.analysis.values import Source, code_of, evaluate

# Calls (or bare decorators) that turn gradients off; `set_grad_enabled` only with a literal False.
_NO_GRAD = {
    "torch.no_grad",
    "torch.autograd.no_grad",
    "torch.autograd.grad_mode.no_grad",
    "torch.inference_mode",
    "torch.autograd.inference_mode",
    "torch.autograd.grad_mode.inference_mode",
}
_INFERENCE_MODE = {name for name in _NO_GRAD if name.endswith("inference_mode")}
_ENABLE_GRAD = {"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"}
_SET_GRAD_ENABLED = {"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"}


def no_grad_reason(contexts, resolver: Resolver, source: Source | None = None) -> str | None:
    """How the innermost grad-mode context is written (`with torch.no_grad()`) when it turns gradients
    off; None when there is none or it turns them on (`inference_mode(False)`, `set_grad_enabled(True)`)."""
    for kind, expression, scope in reversed(contexts):
        off = _gradients_off(expression, scope, resolver)
        if off is None:
            continue
        if not off:
            return None
        shown = code_of(expression, source).strip()
        return f"with {shown}" if kind == "with" else f"@{shown}"
    return None


def _gradients_off(expression: ast.expr, scope: Scope, resolver: Resolver) -> bool | None:
    """True/False when `expression` sets the grad mode off/on, None when it is no grad-mode context."""
    func = expression.func if isinstance(expression, ast.Call) else expression
    names = resolver.qualified_names(func, scope)
    args = expression.args if isinstance(expression, ast.Call) else ()
    first = evaluate(args[0]) if args and not isinstance(args[0], ast.Starred) else None
    if names & _ENABLE_GRAD:
        return False
    if names & _NO_GRAD:
        if names & _INFERENCE_MODE and first is not None and first.single is False:
            return False
        return True
    if names & _SET_GRAD_ENABLED:
        if first is not None and first.known and len(first.candidates) == 1:
            return first.single is False
        return False  # not known statically: it may be on
    return None
