"""The rewrite strategies: pure functions from a matched call to its replacement.

Each function takes the Site (as found in the original module) and the call node as the
transformer has rebuilt it (its children may already be rewritten, e.g. a nested site), and returns
the replacement node. Whether a strategy may run at a site is eligibility.refusal's job, never
decided here; the only extra "not safe here" is a subclass whose base cannot be located.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from candle_port.analysis.apis import ADAPTIVE_FUNCTIONS, ADAPTIVE_MODULES, POOL_FUNCTIONS, POOL_MODULES
from candle_port.analysis.names import ClassInfo
from candle_port.analysis.sites import Site
from candle_port.rewriters.eligibility import CONVTRANSPOSE, NEAREST, RUNTIME

# Which findings each strategy fixes. The runtime drop-ins compute what torch computes for every
# interpolate mode (CP101-CP104) and for 1-D/2-D max, average and adaptive pooling (CP106, CP107,
# CP109), from ops candle differentiates. The other strategies need a literal 'bilinear'.
RUNTIME_CODES = ("CP101", "CP102", "CP103", "CP104", "CP106", "CP107", "CP109")
FIXED_CODES = {RUNTIME: RUNTIME_CODES, NEAREST: ("CP101",), CONVTRANSPOSE: ("CP101",)}
CONSIDERED_CODES = RUNTIME_CODES

RUNTIME_MODULE = "candle_port.runtime"
CONVTRANSPOSE_MODULE = "candle_port.runtime.convtranspose"
VENDORED_MODULE_NAME = "candle_port_runtime"

# API name -> attribute of the runtime drop-in with the same signature.
RUNTIME_NAMES = {
    "interpolate": "interpolate",
    "upsample": "upsample",
    "upsample_bilinear": "upsample_bilinear",
    "upsample_nearest": "upsample_nearest",
    "Upsample": "Upsample",
    "UpsamplingBilinear2d": "UpsamplingBilinear2d",
    "UpsamplingNearest2d": "UpsamplingNearest2d",
}
# The runtime has a drop-in of the same name and signature for every 1-D/2-D pooling API.
RUNTIME_NAMES.update(
    {name: name for table in (POOL_MODULES, POOL_FUNCTIONS, ADAPTIVE_MODULES, ADAPTIVE_FUNCTIONS) for name in table}
)
# torch.* aliases whose result differs from the F.* function of the same name: torch.adaptive_max_pool1d
# returns (values, indices) always, as F.adaptive_max_pool1d_with_indices does.
RUNTIME_QUALIFIED_NAMES = {"torch.adaptive_max_pool1d": "adaptive_max_pool1d_with_indices"}
# API name -> attribute of candle_port.runtime.convtranspose (same signature as the API).
CONVTRANSPOSE_NAMES = {
    "interpolate": "upsample_bilinear_convtranspose",
    "upsample": "upsample_bilinear_convtranspose",
    "Upsample": "ConvTransposeUpsample",
}
# Implied-mode APIs under the nearest strategy: rename the callee's attribute.
NEAREST_RENAMES = {"upsample_bilinear": "upsample_nearest", "UpsamplingBilinear2d": "UpsamplingNearest2d"}

NEAREST_WARNING = (
    "numerics change: nearest replaces bilinear interpolation, so outputs differ from the "
    "original model; fine-tune or re-train (pretrained weights were fitted to bilinear)"
)
CONVTRANSPOSE_MODULE_NOTE = (
    "new learnable parameter '<attribute>.weight' (1x1xKxK, exact bilinear at init): load old "
    "checkpoints with load_state_dict(..., strict=False)"
)
CONVTRANSPOSE_FUNCTION_NOTE = "fixed bilinear kernel: exact and differentiable in candle, not learnable"


@dataclass(frozen=True)
class Target:
    """Where the replacement callees live: `import <module> as <alias>`, then `<alias>.<attr>`."""

    module: str
    preferred_alias: str


def target_for(strategy: str, vendored_module: str | None) -> Target | None:
    """The import a strategy needs (None for nearest, which only edits arguments)."""
    if strategy == NEAREST:
        return None
    if vendored_module is not None:
        return Target(vendored_module, "candle_runtime")
    if strategy == CONVTRANSPOSE:
        return Target(CONVTRANSPOSE_MODULE, "candle_convtranspose")
    return Target(RUNTIME_MODULE, "candle_runtime")


def replacement_name(strategy: str, site: Site) -> str:
    """The attribute of the target module that replaces the site's API."""
    if strategy == CONVTRANSPOSE:
        return CONVTRANSPOSE_NAMES[site.api.name]
    return RUNTIME_QUALIFIED_NAMES.get(site.qualified_name) or RUNTIME_NAMES[site.api.name]


def callee(alias: str, attribute: str) -> cst.Attribute:
    return cst.Attribute(value=cst.Name(alias), attr=cst.Name(attribute))


def note_for(strategy: str, site: Site) -> str:
    if strategy == NEAREST:
        return NEAREST_WARNING
    if strategy == CONVTRANSPOSE:
        return CONVTRANSPOSE_MODULE_NOTE if site.api.is_module else CONVTRANSPOSE_FUNCTION_NOTE
    return ""


# -- runtime and convtranspose: only the callee changes ------------------------------------------


def swap_callee(site: Site, call: cst.Call, new_callee: cst.BaseExpression) -> cst.Call:
    """The call with its callee (or, for functools.partial, its first argument) replaced."""
    if site.kind == "partial":
        first = call.args[0].with_changes(value=new_callee)
        return call.with_changes(args=(first, *call.args[1:]))
    return call.with_changes(func=new_callee)


def subclass_base(site: Site) -> tuple[cst.ClassDef, int] | None:
    """The local class and the index of its base that is the torch API (through local subclasses)."""
    info: ClassInfo | None = site.subclass
    seen: set[int] = set()
    while info is not None and id(info) not in seen:
        seen.add(id(info))
        next_info = None
        for index, base in enumerate(info.node.bases):
            if site.qualified_name not in site.resolver.qualified_names(base.value, info.scope):
                continue
            local = None
            if isinstance(base.value, cst.Name):
                bindings = site.resolver.lookup(base.value.value, info.scope) or ()
                local = next((b for b in bindings if isinstance(b, ClassInfo)), None)
            if local is None:
                return info.node, index
            next_info = local
            break
        info = next_info
    return None


def swap_base(classdef: cst.ClassDef, indices: set[int], new_bases: dict[int, cst.BaseExpression]) -> cst.ClassDef:
    bases = [
        base.with_changes(value=new_bases[i]) if i in indices else base for i, base in enumerate(classdef.bases)
    ]
    return classdef.with_changes(bases=bases)


# -- nearest: mode='bilinear' -> 'nearest', align_corners dropped --------------------------------


def _nearest_string(node: cst.BaseExpression) -> cst.SimpleString:
    if isinstance(node, cst.SimpleString):
        quote = node.quote
        prefix = node.prefix.replace("b", "").replace("B", "")
        return cst.SimpleString(f"{prefix}{quote}nearest{quote}")
    return cst.SimpleString("'nearest'")


def _index_of(original: cst.Call, arg: cst.Arg) -> int:
    return next(i for i, a in enumerate(original.args) if a is arg)


def nearest_call(site: Site, original: cst.Call, call: cst.Call) -> cst.Call:
    """`mode='bilinear'` -> `mode='nearest'` and `align_corners` removed (torch rejects it for nearest)."""
    args = list(call.args)
    if site.api.accepts_mode:
        index = _index_of(original, site.arguments["mode"])
        args[index] = args[index].with_changes(value=_nearest_string(args[index].value))
    else:
        func = call.func
        assert isinstance(func, cst.Attribute)  # eligibility refuses bare names
        call = call.with_changes(func=func.with_changes(attr=cst.Name(NEAREST_RENAMES[site.api.name])))
    align = site.arguments.get("align_corners")
    if align is not None:
        index = _index_of(original, align)
        if args[index].keyword is None:
            # Positional: removing it would shift the arguments after it.
            args[index] = args[index].with_changes(value=cst.Name("None"))
        elif _has_comment(args[index].comma) and (index == 0 or _has_comment(args[index - 1].comma)):
            # Nowhere to move its comment to: keep the argument, as None (which torch accepts).
            args[index] = args[index].with_changes(value=cst.Name("None"))
        else:
            removed = args.pop(index)
            if index == len(args) and args:
                # It was the last argument: the new last one takes its comma and trailing space.
                args[-1] = args[-1].with_changes(comma=removed.comma, whitespace_after_arg=removed.whitespace_after_arg)
            elif _has_comment(removed.comma):
                # `align_corners=False,  # why` on its own line: the comment moves to the line before.
                args[index - 1] = args[index - 1].with_changes(comma=removed.comma)
    return call.with_changes(args=args)


def _has_comment(comma) -> bool:
    """Whether a comma is followed by a comment (`x,  # note`), which removing it would lose."""
    after = getattr(comma, "whitespace_after", None)
    first_line = getattr(after, "first_line", None)
    return first_line is not None and first_line.comment is not None
