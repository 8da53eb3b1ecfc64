"""The nearest strategy: `mode='bilinear'` -> `mode='nearest'` (numerics change), align_corners dropped.

Only literal-bilinear upsampling with an integer, uniform scale_factor given by literals (candle's
nearest backward needs it); the callee stays torch's, so nothing is imported.
"""

from __future__ import annotations

from candle_port.analysis.consumers import second_consumer
from candle_port.analysis.sites import Site
from candle_port.rewriters.strategies.base import Strategy
from candle_port.rewriters.strategies.bilinear_only import bilinear_refusal

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:  # libcst only where a file is rewritten: port-check imports these refusals
    import libcst as cst

# Implied-mode APIs: rename the callee's attribute.
RENAMES = {"upsample_bilinear": "upsample_nearest", "UpsamplingBilinear2d": "UpsamplingNearest2d"}
WARNING = (
    "numerics change: nearest replaces bilinear interpolation, so outputs differ from the "
    "original model; fine-tune or re-train (pretrained weights were fitted to bilinear)"
)


class Nearest(Strategy):
    name = "nearest"
    fixed_codes = ("CP101",)
    help = "mode='nearest' (numerics change)"
    splices = False

    def site_refusal(self, site: Site) -> str | None:
        refused = bilinear_refusal(self.name, site)
        if refused is None:
            found = second_consumer(site)
            if found is not None and found.other_read:
                return (
                    f"its input `{found.input}` is also read at line {found.other_read}: candle's nearest backward "
                    "would overwrite that gradient (CP116); use --strategy runtime"
                )
        return refused

    def note(self, site: Site) -> str:
        return WARNING

    def rewrite_call(self, site: Site, original: cst.Call, call: cst.Call, alias: str | None) -> cst.Call:
        return nearest_call(site, original, call)


def _nearest_string(node: cst.BaseExpression) -> cst.SimpleString:
    import libcst as cst

    if isinstance(node, cst.SimpleString):
        quote = node.quote
        prefix = node.prefix.replace("b", "").replace("B", "")
        return cst.SimpleString(f"{prefix}{quote}nearest{quote}")
    return cst.SimpleString("'nearest'")


def _index_of(original: cst.Call, arg: cst.Arg) -> int:
    return next(i for i, a in enumerate(original.args) if a is arg)


def nearest_call(site: Site, original: cst.Call, call: cst.Call) -> cst.Call:
    import libcst as cst

    """`mode='bilinear'` -> `mode='nearest'` and `align_corners` removed (torch rejects it for nearest)."""
    args = list(call.args)
    if site.api.accepts_mode:
        index = _index_of(original, site.arguments["mode"])
        args[index] = args[index].with_changes(value=_nearest_string(args[index].value))
    else:
        func = call.func
        assert isinstance(func, cst.Attribute)  # eligibility refuses bare names
        call = call.with_changes(func=func.with_changes(attr=cst.Name(RENAMES[site.api.name])))
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


NEAREST = Nearest()
