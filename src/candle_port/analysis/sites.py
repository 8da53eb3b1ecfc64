"""Find the call sites of the APIs in apis.py in a module, with their arguments bound.

A site is a call that resolves to one of the APIs in apis.py under any import form, a
`functools.partial` of one, or the construction of a local subclass of one of its modules
(`nn.Upsample`, `nn.MaxPool2d`, ...). Rules
(rules/) decide what is wrong with a site; rewriters (rewriters/) change it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from candle_port.analysis.apis import APIS_BY_QUALIFIED_NAME, PARTIAL_QUALIFIED_NAMES, Api
from candle_port.analysis.grad_mode import no_grad_reason
from candle_port.analysis.names import ClassInfo, Collection, Resolver, Scope, ScopeBuilder, dotted_name
from candle_port.analysis.values import Value, code_of, evaluate, omitted, partial_literals

_DEFAULTS = {
    "size": None,
    "scale_factor": None,
    "align_corners": None,
    "recompute_scale_factor": None,
    "antialias": False,
    "padding_mode": "zeros",
}


@dataclass
class Site:
    """One call of an upsampling/sampling API, with its arguments bound to parameter names."""

    call: cst.Call
    api: Api
    qualified_name: str
    # "call", "partial" (functools.partial of the API), "subclass" (local nn.Upsample subclass),
    # "chosen" (a layer class indexed out of a literal collection at run time: `POOLS[dim - 1](...)`),
    # "picked" (the same with a literal index: decided)
    kind: str
    scope: Scope
    resolver: Resolver
    arguments: dict[str, cst.Arg] = field(default_factory=dict)
    star_args: bool = False
    star_kwargs: bool = False
    subclass: ClassInfo | None = None
    # `with torch.no_grad()` / `@torch.inference_mode()` when the call runs with gradients off (grad_mode.py).
    no_grad: str | None = None
    chosen_from: str | None = None  # `POOLS[dim - 1]`, for kinds "chosen" and "picked"

    def value(self, name: str) -> Value:
        """The static value of parameter `name` at this site (bound, implied or default)."""
        if name in self.api.implied:
            return omitted(self.api.implied[name])
        own_init = self.subclass is not None and self.subclass.defines_init
        if own_init and self.api.family not in ("interpolate", "grid_sample"):
            # A pooling/conv subclass with its own __init__: its arguments are not the API's.
            return Value(False, (), source=f"{self.subclass.node.name.value}.__init__")
        arg = self.arguments.get(name)
        if arg is not None:
            return evaluate(arg.value)
        if name == "mode" and own_init:
            return Value(False, (), source=f"{self.subclass.node.name.value}.__init__")
        if self.star_kwargs or (self.star_args and name in self.api.params):
            return Value(False, (), source="*args/**kwargs")
        default = self.api.default_mode if name == "mode" else self.api.defaults.get(name, _DEFAULTS.get(name))
        return omitted(default)

    @property
    def mode(self) -> Value:
        return self.value("mode")

    def possible_modes(self) -> list:
        """Modes this site can run: every candidate when known, the literal branches otherwise."""
        mode = self.mode
        if mode.known:
            return list(mode.candidates)
        return partial_literals(mode.node)

    def describe_dynamic(self, name: str) -> str:
        """Where an unknown argument comes from, in words, with a literal default when there is one."""
        value = self.value(name)
        node = value.node
        if node is None:
            return f"`{value.source}`"
        if isinstance(node, cst.Name):
            found = self.resolver.parameter(node.value, self.scope)
            if found is not None:
                param, scope = found
                return f"`{node.value}`, a parameter of `{_scope_name(scope)}`{_default_text(param)}"
        if isinstance(node, cst.Attribute) and dotted_name(node) == f"self.{node.attr.value}":
            origin = _attribute_origin(node.attr.value, self.scope)
            if origin:
                return f"`self.{node.attr.value}`, {origin}"
        return f"`{value.source}`"

    def line_span(self) -> tuple[cst.CSTNode, cst.CSTNode]:
        return self.call, self.call


@dataclass
class Scan:
    """The sites of a module, and every call in it in source order (for positions.py)."""

    sites: list[Site]
    calls: list[cst.Call]


def find_sites(module: cst.Module) -> list[Site]:
    """Every site in `module`, in source order."""
    return scan_module(module).sites


def scan_module(module: cst.Module) -> Scan:
    builder = ScopeBuilder().build(module)
    resolver = Resolver(builder, lambda info, depth: _class_bases(info, resolver, depth))
    sites: list[Site] = []
    for call, scope in builder.calls:
        site = _site_for_call(call, scope, resolver)
        found = [site] if site is not None else _chosen_sites(call, scope, resolver)
        for site in found:
            contexts = builder.call_contexts.get(call)
            if contexts:
                site.no_grad = no_grad_reason(contexts, resolver)
            sites.append(site)
    return Scan(sites, [call for call, _ in builder.calls])


def _class_bases(info: ClassInfo, resolver: Resolver, depth: int) -> set[str]:
    """A local class stands for the API it subclasses (so constructing it is a site)."""
    out: set[str] = set()
    for base in info.node.bases:
        for name in resolver.qualified_names(base.value, info.scope, depth):
            api = APIS_BY_QUALIFIED_NAME.get(name)
            if api is not None and api.is_module:
                out.add(name)
    return out


def _api_of(func: cst.BaseExpression, scope: Scope, resolver: Resolver) -> tuple[str, Api] | None:
    for name in sorted(resolver.qualified_names(func, scope)):
        api = APIS_BY_QUALIFIED_NAME.get(name)
        if api is not None:
            return name, api
    return None


def _subclass_of(func: cst.BaseExpression, scope: Scope, resolver: Resolver) -> ClassInfo | None:
    if isinstance(func, cst.Name):
        for binding in resolver.lookup(func.value, scope) or ():
            if isinstance(binding, ClassInfo):
                return binding
    return None


def _site_for_call(call: cst.Call, scope: Scope, resolver: Resolver) -> Site | None:
    found = _api_of(call.func, scope, resolver)
    if found is not None:
        name, api = found
        site = Site(call, api, name, "call", scope, resolver, subclass=_subclass_of(call.func, scope, resolver))
        if site.subclass is not None:
            site.kind = "subclass"
        _bind_arguments(site, call.args)
        return site
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return None
    if PARTIAL_QUALIFIED_NAMES & resolver.qualified_names(call.func, scope):
        found = _api_of(call.args[0].value, scope, resolver)
        if found is not None:
            name, api = found
            site = Site(call, api, name, "partial", scope, resolver)
            _bind_arguments(site, call.args[1:])
            return site
    return None


# Layer families looked for in literal collections; resize modules are left to the truth-checked rules.
_CHOSEN_FAMILIES = ("pool", "adaptive_pool", "conv_transpose", "volumetric")


def _chosen_sites(call: cst.Call, scope: Scope, resolver: Resolver) -> list[Site]:
    """`POOLS[i](...)`, `{"max": nn.MaxPool2d}[k](...)`: one site per layer API the collection holds.

    A literal index picks its item (then the site is an ordinary call); any other index picks at
    run time, and each API it can pick is a site of kind "chosen".
    """
    func = call.func
    if not isinstance(func, cst.Subscript) or len(func.slice) != 1 or not isinstance(func.slice[0].slice, cst.Index):
        return []
    found = _collection(func.value, scope, resolver)
    if found is None:
        return []
    collection, collection_scope = found
    items = _collection_items(collection)
    index = evaluate(func.slice[0].slice.value)
    if index.known and len(index.candidates) == 1:
        picked = [value for key, value in items if key == index.single]
        items = [(None, picked[0])] if len(picked) == 1 else []
        kind = "picked"
    else:
        kind = "chosen"
    sites: list[Site] = []
    seen: set[str] = set()
    for _, value in items:
        api_found = _api_of(value, collection_scope, resolver)
        if api_found is None:
            continue
        name, api = api_found
        if not api.is_module or api.family not in _CHOSEN_FAMILIES or api.name in seen:
            continue
        seen.add(api.name)
        site = Site(call, api, name, kind, scope, resolver)
        site.chosen_from = code_of(func).strip()
        _bind_arguments(site, call.args)
        sites.append(site)
    return sites


def _collection(node: cst.BaseExpression, scope: Scope, resolver: Resolver):
    if isinstance(node, (cst.Tuple, cst.List, cst.Dict)):
        return node, scope
    if isinstance(node, cst.Name):
        bindings = resolver.lookup(node.value, scope) or []
        if len(bindings) == 1 and isinstance(bindings[0], Collection):
            return bindings[0].expression, bindings[0].scope
    return None


def _collection_items(collection) -> list[tuple[object, cst.BaseExpression]]:
    """(key, value) pairs: the position for a tuple/list, the literal key (or None) for a dict."""
    if isinstance(collection, cst.Dict):
        out = []
        for element in collection.elements:
            if isinstance(element, cst.DictElement):
                key = evaluate(element.key)
                out.append((key.single if key.known else None, element.value))
        return out
    return [(i, element.value) for i, element in enumerate(collection.elements) if isinstance(element, cst.Element)]


def _bind_arguments(site: Site, args) -> None:
    position = 0
    for arg in args:
        if arg.star == "*":
            site.star_args = True
        elif arg.star == "**":
            site.star_kwargs = True
        elif arg.keyword is not None:
            site.arguments[arg.keyword.value] = arg
        else:
            if position < len(site.api.params):
                site.arguments[site.api.params[position]] = arg
            position += 1


def _scope_name(scope: Scope) -> str:
    node = scope.node
    if isinstance(node, cst.FunctionDef):
        return node.name.value
    return "<lambda>"


def _default_text(param: cst.Param) -> str:
    if param.default is None:
        return ", no default"
    value = evaluate(param.default)
    if value.known:
        return f", default {code_of(param.default).strip()}"
    return f", default `{code_of(param.default).strip()}`"


def _enclosing_class(scope: Scope | None) -> cst.ClassDef | None:
    while scope is not None:
        if scope.kind == "class" and isinstance(scope.node, cst.ClassDef):
            return scope.node
        scope = scope.parent
    return None


def _attribute_origin(attribute: str, scope: Scope) -> str | None:
    """How `self.<attribute>` gets its value in the enclosing class, in words."""
    cls = _enclosing_class(scope)
    if cls is None:
        return None
    finder = _SelfAssignments(attribute)
    cls.visit(finder)
    if not finder.found:
        return None
    parts = []
    for method, value in finder.found:
        params = _params_by_name(method)
        if isinstance(value, cst.Name) and value.value in params:
            parts.append(
                f"set in {method.name.value} from parameter `{value.value}`{_default_text(params[value.value])}"
            )
        else:
            parts.append(f"set in {method.name.value} to `{code_of(value).strip()}`")
    return "; ".join(parts)


def _params_by_name(method: cst.FunctionDef) -> dict[str, cst.Param]:
    p = method.params
    return {param.name.value: param for param in (*p.posonly_params, *p.params, *p.kwonly_params)}


class _SelfAssignments(cst.CSTVisitor):
    def __init__(self, attribute: str) -> None:
        self.attribute = attribute
        self.found: list[tuple[cst.FunctionDef, cst.BaseExpression]] = []
        self._methods: list[cst.FunctionDef] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._methods.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._methods.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return not self._methods  # only the outer class, not nested ones

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self._methods and dotted_name(target.target) == f"self.{self.attribute}":
                self.found.append((self._methods[-1], node.value))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and self._methods and dotted_name(node.target) == f"self.{self.attribute}":
            self.found.append((self._methods[-1], node.value))
