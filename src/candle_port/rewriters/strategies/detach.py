"""The detach strategy: stop the gradient at the resize, `F.interpolate(x.detach(), ...)`.

candle then never differentiates the resize (no gradient is asked of it), so any mode and any
scale train; what changes is the model's gradients, by design: the layers before the resize no
longer learn through that path (they still learn through their other consumers). It suits
fine-tuning a head on a frozen or separately trained backbone, or a resize of something that
needs no gradient (a mask, a target). Only functional calls: a layer (`nn.Upsample`) gets its input
where it is called, which is not this site. The forward is unchanged, so a mode candle has no
forward for (bicubic, CP104) is not fixed by it.
"""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.rewriters.strategies.base import Strategy

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:  # libcst only where a file is rewritten: port-check imports these refusals
    import libcst as cst

NOTE = (
    "gradients change by design: nothing before this resize learns through it (fine-tuning a head); "
    "the forward is unchanged"
)


class Detach(Strategy):
    name = "detach"
    fixed_codes = ("CP101", "CP102", "CP103", "CP116")
    help = "x.detach() before the resize (gradients change by design)"
    splices = False
    listed = False  # it changes what trains: chosen by the user, never suggested by a finding

    def site_refusal(self, site: Site) -> str | None:
        if site.api.family != "interpolate":
            return f"the detach strategy only rewrites resizes; use --strategy runtime for {site.api.name}"
        if site.api.is_module or site.kind != "call":
            return (
                "a layer (or a partial) gets its input where it is called: detach it there by hand "
                "(`self.up(x.detach())`), or use --strategy runtime"
            )
        first = site.call.args[0] if site.call.args else None
        if first is None or first.__class__.__name__ == "Starred":
            return "the input is not the first positional argument; detach it by hand"
        return None

    def note(self, site: Site) -> str:
        return NOTE

    def rewrite_call(self, site: Site, original: cst.Call, call: cst.Call, alias: str | None) -> cst.Call:
        import libcst as cst

        args = list(call.args)
        value = args[0].value
        if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not value.lpar:
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        detached = cst.Call(func=cst.Attribute(value=value, attr=cst.Name("detach")))
        args[0] = args[0].with_changes(value=detached)
        return call.with_changes(args=args)


DETACH = Detach()
