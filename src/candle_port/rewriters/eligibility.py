"""Whether each fix strategy is safe at a site, and if not, the reason the user sees.

Shared by the finder (a finding lists the strategies that apply) and by port-fix (which refuses
a site with the same reason), so the two never disagree.
"""

from __future__ import annotations

import math

import ast

from candle_port.analysis.sites import Site

RUNTIME = "runtime"
NEAREST = "nearest"
CONVTRANSPOSE = "convtranspose"
STRATEGIES = (RUNTIME, NEAREST, CONVTRANSPOSE)
# API families the runtime has a drop-in for; grid_sample, conv_transpose and volumetric have none.
RUNTIME_FAMILIES = ("interpolate", "pool", "adaptive_pool")


def integer_scale(site: Site) -> int | None:
    """The scale factor when literals prove it is one integer >= 1 for both axes, else None."""
    scale = site.value("scale_factor")
    if not scale.known or len(scale.candidates) != 1 or site.value("size").single is not None:
        return None
    value = scale.candidates[0]
    values = list(value) if isinstance(value, (tuple, list)) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
        return None
    if len(set(values)) != 1 or not math.isfinite(values[0]) or float(values[0]) != int(values[0]) or values[0] < 1:
        return None
    return int(values[0])


def _callee_root(site: Site) -> str | None:
    node = site.call.args[0] if site.kind == "partial" and site.call.args else site.call.func
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def rebinding(site: Site) -> str | None:
    """Why the callee's name cannot be trusted to be torch's at this site, or None.

    Names are resolved without control flow: every binding of the name in its scope counts. When
    one of them is something other than the torch import (`del F; import my_ops as F`, `for F in`,
    `with ... as F`, `case F:`), the call may not be torch's where it stands, so it is not
    rewritten. A `F = None` fallback (optional torch) is harmless and allowed.
    """
    if site.kind == "subclass":
        return None
    root = _callee_root(site)
    if root is None:
        return None
    bindings = site.resolver.lookup(root, site.scope)
    if not bindings or len(bindings) < 2:
        return None
    for binding in bindings:
        names = _names_of(site, binding)
        if names == {"builtins.None"}:
            continue
        if not any(site.qualified_name == n or site.qualified_name.startswith(n + ".") for n in names):
            return (
                f"`{root}` is also bound to something else in this scope (rebound, a loop, `with` or "
                "`case` target), so this call may not be torch's; rewrite it by hand"
            )
    return None


def _names_of(site: Site, binding) -> set[str]:
    from candle_port.analysis.names import Alias, Import, Value

    if isinstance(binding, Value) and isinstance(binding.expression, ast.Constant) and binding.expression.value is None:
        return {"builtins.None"}
    if isinstance(binding, Import):
        return {binding.qualified_name}
    if isinstance(binding, Alias):
        return site.resolver.qualified_names(binding.expression, binding.scope)
    return set()


def refusal(strategy: str, site: Site) -> str | None:
    """None when `strategy` can rewrite `site`; otherwise why not, in one sentence."""
    if site.kind == "wrapper":
        return f"the call passes its mode to {site.wrapper}, where the API is rewritten"
    if site.kind in ("chosen", "picked"):
        return f"the layer is indexed out of a collection ({site.chosen_from}); rewrite the collection by hand"
    if site.api.family not in RUNTIME_FAMILIES:
        return f"{site.api.name} has no equivalent in candle; rewrite it by hand"
    rebound = rebinding(site)
    if rebound is not None:
        return rebound
    if strategy == RUNTIME:
        return None  # the drop-ins are exact for every mode, antialias value and pooling setting
    if site.api.family != "interpolate":
        return f"the {strategy} strategy only rewrites upsampling; use --strategy runtime for pooling"
    if site.kind == "partial":
        return f"the {strategy} strategy does not rewrite functools.partial sites; use --strategy runtime"
    if site.kind == "subclass":
        return f"the {strategy} strategy does not rewrite subclasses of nn.Upsample; use --strategy runtime"
    if site.mode.single != "bilinear":
        return f"the {strategy} strategy only rewrites sites whose mode is literally 'bilinear'"
    antialias = site.value("antialias")
    if not antialias.known or antialias.single not in (False, None):
        return "antialias must be False for this strategy"
    if strategy == NEAREST and not site.api.accepts_mode and not isinstance(site.call.func, ast.Attribute):
        # UpsamplingBilinear2d -> UpsamplingNearest2d renames the attribute; a bare imported name
        # would need a new import of the nearest API.
        qualified = ("nn." if site.api.is_module else "F.") + site.api.name
        return (
            f"{site.api.name} is imported under its own name; call it as {qualified} "
            "or use --strategy runtime"
        )
    if strategy == CONVTRANSPOSE:
        align = site.value("align_corners")
        if not align.known or align.single not in (False, None):
            return "align_corners=True cannot be reproduced exactly by a transposed convolution"
    size = site.value("size")
    if not size.known or size.single is not None:
        return (
            "size=... sets the output size, not a scale; needs an integer, uniform scale_factor "
            "given by literals"
        )
    if integer_scale(site) is None:
        return (
            "needs an integer, uniform scale_factor given by literals "
            "(candle's nearest backward and a stride-s transposed conv need it)"
        )
    if strategy == CONVTRANSPOSE:
        if site.value("recompute_scale_factor").single not in (None, False, True):
            return "recompute_scale_factor must be a literal"
    return None


def applicable(site: Site, strategies=STRATEGIES) -> tuple[str, ...]:
    return tuple(s for s in strategies if refusal(s, site) is None)
