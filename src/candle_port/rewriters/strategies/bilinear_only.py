"""The refusals of the strategies that replace literal-bilinear upsampling (nearest, convtranspose)."""

from __future__ import annotations

import ast

from candle_port.analysis.sites import Site
from candle_port.rewriters.strategies.base import integer_scale


def bilinear_refusal(strategy: str, site: Site) -> str | None:
    """Why `strategy` (nearest or convtranspose) cannot rewrite `site`, after the shared refusals."""
    if site.api.family in ("pool", "adaptive_pool"):
        return f"the {strategy} strategy only rewrites upsampling; use --strategy runtime for pooling"
    if site.api.family != "interpolate":
        return f"the {strategy} strategy only rewrites upsampling; use --strategy runtime for {site.api.name}"
    if site.kind == "partial":
        return f"the {strategy} strategy does not rewrite functools.partial sites; use --strategy runtime"
    if site.kind == "subclass":
        return f"the {strategy} strategy does not rewrite subclasses of nn.Upsample; use --strategy runtime"
    if site.mode.single != "bilinear":
        return f"the {strategy} strategy only rewrites sites whose mode is literally 'bilinear'"
    antialias = site.value("antialias")
    if not antialias.known or antialias.single not in (False, None):
        return "antialias must be False for this strategy"
    if strategy == "nearest" and not site.api.accepts_mode and not isinstance(site.call.func, ast.Attribute):
        # UpsamplingBilinear2d -> UpsamplingNearest2d renames the attribute; a bare imported name
        # would need a new import of the nearest API.
        qualified = ("nn." if site.api.is_module else "F.") + site.api.name
        return (
            f"{site.api.name} is imported under its own name; call it as {qualified} "
            "or use --strategy runtime"
        )
    if strategy == "convtranspose":
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
    if strategy == "convtranspose":
        if site.value("recompute_scale_factor").single not in (None, False, True):
            return "recompute_scale_factor must be a literal"
    return None
