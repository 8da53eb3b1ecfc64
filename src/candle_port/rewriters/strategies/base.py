"""What every port-fix strategy shares: the Strategy interface and the site-level helpers.

A strategy is one object (one file under this package, like a rule): which findings it fixes,
where it refuses (and why), which module its replacement callees come from, how it rewrites one
call, and the note the user must read. The finder (a finding lists the strategies that apply) and
port-fix (which refuses with the same reason) both ask the strategy, so they never disagree.
"""

from __future__ import annotations

import ast
import math

from candle_port.analysis.class_values import rebound_layer_aliases
from candle_port.analysis.sites import Site
from candle_port.pipeline.records import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:  # libcst only where a file is rewritten: port-check imports these refusals
    import libcst as cst

RUNTIME_MODULE = "candle_port.runtime"
VENDORED_MODULE_NAME = "candle_port_runtime"
# API families the runtime had a drop-in for before grid_sample, transposed and 3-D ops joined;
# the others are rewritten only where the runtime exports the replacement (runtime.py).
RUNTIME_FAMILIES = ("interpolate", "pool", "adaptive_pool")
CONVERT_HINT = "or convert the built model with candle_port.runtime.convert (docs/convert.md)"


class Target(Record):
    """Where the replacement callees live: `import <module> as <alias>`, then `<alias>.<attr>`."""

    __slots__ = ("module", "preferred_alias")

    def __init__(self, module: str, preferred_alias: str) -> None:
        self.module = module
        self.preferred_alias = preferred_alias


class Strategy:
    """One port-fix strategy. Subclasses set the class attributes and override what differs."""

    name: str = ""
    fixed_codes: tuple[str, ...] = ()
    help: str = ""
    exact: bool = False  # computes what torch computes (verify judges it against the original)
    rewrites_source: bool = True  # False: works on the built model (convert), never on the source
    splices: bool = True  # the rewrite only swaps the callee, so the fast text splice applies
    # The class that replaces a layer class subclasses it, so isinstance checks still hold
    # (exact_type.py refuses where `type(m) == nn.X` would change either way).
    replacement_subclasses_api: bool = True
    listed: bool = True  # named in a finding's `[fix: ...]` and the rule catalog (detach is opt-in)

    def considers(self, site: Site) -> bool:
        """Whether the site is this strategy's to fix or refuse; others stay `unfixable` (with the rule's hint)."""
        from candle_port.rewriters.strategies.runtime import has_drop_in

        return has_drop_in(site)

    def refusal(self, site: Site) -> str | None:
        """None when this strategy can rewrite `site`; otherwise why not, in one sentence."""
        reason = common_refusal(site)
        return reason if reason is not None else self.site_refusal(site)

    def site_refusal(self, site: Site) -> str | None:
        return None

    def target(self, vendored_module: str | None) -> Target | None:
        """The import the rewrite needs (None when it only edits arguments)."""
        return None

    def replacement_name(self, site: Site) -> str:
        """The attribute of the target module that replaces the site's API."""
        raise NotImplementedError

    def note(self, site: Site) -> str:
        """What the user must know about a fixed site (numerics, new parameters), or ""."""
        return ""

    def rewrite_call(self, site: Site, original: cst.Call, call: cst.Call, alias: str | None) -> cst.Call:
        """The replacement of `call` (rebuilt from `original`, children may already be rewritten)."""
        return swap_callee(site, call, callee(alias, self.replacement_name(site)))

    def __repr__(self) -> str:
        return f"<strategy {self.name}>"


# -- shared refusals -----------------------------------------------------------------------------


def common_refusal(site: Site) -> str | None:
    """The refusals every strategy shares: indexed layers, APIs without a drop-in, rebound names."""
    from candle_port.rewriters.strategies.runtime import has_drop_in

    if site.kind == "wrapper":
        return f"the call passes its mode to {site.wrapper}, where the API is rewritten"
    if site.kind in ("chosen", "picked"):
        func = site.call.func
        if isinstance(func, ast.Name) and rebound_layer_aliases(func.id, site.scope, site.resolver):
            return (f"the layer is chosen at run time (`{func.id}` is assigned more than one class); rewrite "
                    "the assignments by hand, " + CONVERT_HINT)
        if isinstance(func, ast.Call) and site.kind == "picked":  # `getattr(nn, "MaxPool1d")(...)`
            return f"the layer class is looked up by a literal name ({site.chosen_from}); write the class itself"
        if isinstance(func, ast.Call):  # `getattr(nn, pooling_mode)(...)`
            return (f"the layer class is picked by name at run time ({site.chosen_from}); look the name up in "
                    "candle_port.runtime instead (`getattr(candle_runtime, name, None) or getattr(nn, name)`), "
                    + CONVERT_HINT)
        conditional = isinstance(func, ast.Name)  # `pool_op = A if c else B; pool_op(...)`
        how, what = ("chosen by a conditional", "conditional") if conditional else ("indexed out of a collection", "collection")
        return f"the layer is {how} ({site.chosen_from}); rewrite the {what} by hand, " + CONVERT_HINT
    if not has_drop_in(site):
        return f"{site.api.name} has no equivalent in candle; rewrite it by hand"
    return rebinding(site)


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


# -- callee and base-class swaps (runtime, convtranspose) -----------------------------------------


def callee(alias: str | None, attribute: str) -> cst.Attribute:
    import libcst as cst

    assert alias is not None
    return cst.Attribute(value=cst.Name(alias), attr=cst.Name(attribute))


def swap_callee(site: Site, call: cst.Call, new_callee: cst.BaseExpression) -> cst.Call:
    """The call with its callee (or, for functools.partial, its first argument) replaced."""
    if site.kind == "partial":
        first = call.args[0].with_changes(value=new_callee)
        return call.with_changes(args=(first, *call.args[1:]))
    return call.with_changes(func=new_callee)


def swap_base(classdef: cst.ClassDef, indices: set[int], new_bases: dict[int, cst.BaseExpression]) -> cst.ClassDef:
    bases = [
        base.with_changes(value=new_bases[i]) if i in indices else base for i, base in enumerate(classdef.bases)
    ]
    return classdef.with_changes(bases=bases)
