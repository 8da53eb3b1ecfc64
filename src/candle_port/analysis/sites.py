"""Find the call sites of the APIs in apis.py in a module, with their arguments bound.

A site is a call that resolves to one of the APIs in apis.py under any import form, a
`functools.partial` of one, or the construction of a local subclass of one of its modules
(`nn.Upsample`, `nn.MaxPool2d`, ...). Rules
(rules/) decide what is wrong with a site; rewriters (rewriters/) change it.
"""

from __future__ import annotations

import ast

from candle_port.analysis.apis import APIS_BY_QUALIFIED_NAME, PARTIAL_QUALIFIED_NAMES, TENSOR_UNFOLD, Api
from candle_port.analysis.class_values import class_values, may_pass_classes, rebound_layer_aliases, unsupported_whatever_its_arguments
from candle_port.analysis.grad_mode import no_grad_reason
from candle_port.analysis.names import Alias, ClassInfo, Collection, Import, Param, Resolver, Scope, ScopeBuilder, all_params, dotted_name
from candle_port.analysis.names import Value as Assigned
from candle_port.analysis.super_init import value_through_super
from candle_port.analysis.training import condition_holds, untrained_condition
from candle_port.analysis.values import Source, Value, code_of, evaluate, omitted, partial_literals

_DEFAULTS = {
    "size": None,
    "scale_factor": None,
    "align_corners": None,
    "recompute_scale_factor": None,
    "antialias": False,
    "padding_mode": "zeros",
}


class Site:
    """One call of an upsampling/sampling API, with its arguments bound to parameter names.

    `kind`: "call", "partial" (functools.partial of the API), "subclass" (local nn.Upsample
    subclass), "chosen" (a layer class indexed out of a literal collection at run time:
    `POOLS[dim - 1](...)`), "picked" (the same with a literal index: decided), "wrapper" (a call
    of a project function or class that passes one of its parameters through to the API's mode:
    `resize(x, mode='bilinear')`), "value" (a layer class candle cannot run whatever its
    arguments, escaping as a value: `return nn.Conv3d`, `conv_op=nn.Conv3d`; class_values.py;
    `used_as` says how, and `chosen_from` the subscript when picked out of a literal at run
    time). `rebound_classes`: for a "chosen" site called through a name bound to a conditional of
    classes or rebound from one class to another, the expressions that name this site's API
    (port-fix swaps them). `no_grad`: `with torch.no_grad()` / `@torch.inference_mode()` when the call runs with
    gradients off (grad_mode.py). `untrained`: why the site is on no training path, "" when it
    may be (training.py); `untrained_if`: what decides that, from this file alone
    (training.untrained_condition: the engine decides it again with the whole project index). `chosen_from`: `POOLS[dim - 1]`, for
    kinds "chosen" and "picked". `lookup` decides names from the project index (values.Lookup).
    For kind "wrapper": `wrapper`, the wrapper's qualified name, and `wrapper_default`, the mode
    its default gives when not passed."""

    __slots__ = (
        "call",
        "api",
        "qualified_name",
        "kind",
        "scope",
        "resolver",
        "arguments",
        "star_args",
        "star_kwargs",
        "subclass",
        "no_grad",
        "chosen_from",
        "source",
        "lookup",
        "wrapper",
        "wrapper_default",
        "subclass_name",
        "used_as",
        "rebound_classes",
        "untrained",
        "untrained_if",
    )

    def __init__(
        self,
        call: ast.Call,
        api: Api,
        qualified_name: str,
        kind: str,
        scope: Scope,
        resolver: Resolver,
        arguments: dict[str, ast.expr] | None = None,
        star_args: bool = False,
        star_kwargs: bool = False,
        subclass: ClassInfo | None = None,
        no_grad: str | None = None,
        chosen_from: str | None = None,
        source: Source | None = None,
        lookup: object = None,
        wrapper: str = "",
        wrapper_default: tuple | None = None,
        subclass_name: str = "",
        used_as: str = "",
        rebound_classes: tuple = (),
    ) -> None:
        self.call = call
        self.api = api
        self.qualified_name = qualified_name
        self.kind = kind
        self.scope = scope
        self.resolver = resolver
        self.arguments = {} if arguments is None else arguments
        self.star_args = star_args
        self.star_kwargs = star_kwargs
        self.subclass = subclass
        self.no_grad = no_grad
        self.chosen_from = chosen_from
        self.source = source
        self.lookup = lookup
        self.wrapper = wrapper
        self.wrapper_default = wrapper_default
        self.subclass_name = subclass_name
        self.used_as = used_as
        self.rebound_classes = rebound_classes
        self.untrained = ""
        self.untrained_if = None

    def replace(self, **changes) -> "Site":
        """A copy of this site with `changes` (port-fix moves a site onto its rewritten call)."""
        copy = Site.__new__(Site)
        for name in Site.__slots__:
            setattr(copy, name, changes.pop(name) if name in changes else getattr(self, name))
        if changes:
            raise TypeError(f"Site has no field {', '.join(sorted(changes))}")
        return copy

    def value(self, name: str) -> Value:
        """The static value of parameter `name` at this site (bound, implied or default)."""
        if name in self.api.implied:
            return omitted(self.api.implied[name])
        if self.kind == "wrapper":
            arg = self.arguments.get(name)
            if arg is not None:
                return evaluate(arg, self.source, self.lookup)
            if name == "mode" and self.wrapper_default is not None:
                return Value(True, self.wrapper_default, source=f"{self.wrapper}'s default", omitted=True)
            return Value(False, (), source=f"inside {self.wrapper}")
        own_init = self.subclass is not None and self.subclass.defines_init
        default = self.api.default_mode if name == "mode" else self.api.defaults.get(name, _DEFAULTS.get(name))
        if own_init:
            through = value_through_super(self, name, default)
            if through is not None:  # the base built with what the subclass passes it (super_init.py)
                return through
        if own_init and self.api.family not in ("interpolate", "grid_sample"):
            # A pooling/conv subclass with its own __init__: its arguments are not the API's.
            return Value(False, (), source=f"{self.subclass.node.name}.__init__")
        arg = self.arguments.get(name)
        if arg is not None:
            return evaluate(arg, self.source, self.lookup)
        if name == "mode" and own_init:
            return Value(False, (), source=f"{self.subclass.node.name}.__init__")
        if self.star_kwargs or (self.star_args and name in self.api.params):
            return Value(False, (), source="*args/**kwargs")
        return omitted(default)

    @property
    def mode(self) -> Value:
        return self.value("mode")

    def possible_modes(self) -> list:
        """Modes this site can run: every candidate when known, the literal branches otherwise."""
        mode = self.mode
        if mode.known:
            return list(mode.candidates)
        return partial_literals(mode.node, self.lookup)

    def describe_dynamic(self, name: str) -> str:
        """Where an unknown argument comes from, in words, with a literal default when there is one."""
        value = self.value(name)
        node = value.node
        if node is None:
            return f"`{value.source}`"
        if isinstance(node, ast.Name):
            found = self.resolver.parameter(node.id, self.scope)
            if found is not None:
                param, scope = found
                return f"`{node.id}`, a parameter of `{_scope_name(scope)}`{_default_text(param, self.source)}"
        if isinstance(node, ast.Attribute) and dotted_name(node) == f"self.{node.attr}":
            origin = _attribute_origin(node.attr, self.scope, self.source)
            if origin:
                return f"`self.{node.attr}`, {origin}"
        return f"`{value.source}`"


class Scan:
    """The sites of a module, and the scope analysis they came from. `summary`: what this module
    exports to the project index (index.ModuleSummary); `refs`: index.external_refs; `wrappers`:
    the names this module's own wrappers are called by."""

    __slots__ = ("sites", "builder", "resolver", "tree", "source", "summary", "refs", "wrappers")

    def __init__(
        self,
        sites: list[Site],
        builder: ScopeBuilder | None = None,
        resolver: Resolver | None = None,
        tree: ast.Module | None = None,
        source: Source | None = None,
        summary: object = None,
        refs: set | None = None,
        wrappers: list | None = None,
    ) -> None:
        self.sites = sites
        self.builder = builder
        self.resolver = resolver
        self.tree = tree
        self.source = source
        self.summary = summary
        self.refs = set() if refs is None else refs
        self.wrappers = [] if wrappers is None else wrappers


def find_sites(tree: ast.Module, text: str = "") -> list[Site]:
    """Every site in `tree`, in source order."""
    return scan_module(tree, text).sites


def scan_module(tree: ast.Module, text: str = "", index=None, package: str = "", module: str = "", path: str = "") -> Scan:
    """Every site of the module, in source order.

    `index` (analysis/index.py) holds what other modules of the checked tree define: module
    constants, enum members, subclasses and wrappers of the APIs; the module's own are added here.
    `package` resolves relative imports; `module` is this module's qualified name.
    """
    from candle_port.analysis.index import ProjectIndex, external_refs, summarize

    module = module or "__main__"
    source = Source(text)
    builder = ScopeBuilder(package, module).build(tree)
    holder: list = [index]
    resolver = Resolver(
        builder,
        lambda info, depth: _class_bases(info, resolver, depth),
        lambda name, depth: holder[0].external_names(name, depth) if holder[0] is not None else set(),
    )
    sites: list[Site] = []
    plain: list[tuple[ast.Call, Scope]] = []
    for call, scope in builder.calls:
        aliases = rebound_layer_aliases(call.func.id, scope, resolver) if isinstance(call.func, ast.Name) else None
        if aliases:  # a name rebound from one layer class to another: a layer chosen at run time
            found = _rebound_sites(call, scope, resolver, aliases)
        else:
            site = _site_for_call(call, scope, resolver)
            found = [site] if site is not None else _chosen_sites(call, scope, resolver, source)
        if not found:
            plain.append((call, scope))
        sites.extend(found)
    summary = summarize(module, path, builder, resolver, sites)
    sites.extend(_subclass_definition_sites(builder, resolver, sites))
    if not text or may_pass_classes(text):
        sites.extend(_class_value_sites(tree, builder, resolver, source, sites))
    local = holder[0] = (index or ProjectIndex([])).overlay(summary)
    resolver.forget()  # names resolved through the index may read this module's summary now
    if local.wrappers:
        for call, scope in plain:
            sites.extend(local.wrapper_sites(call, scope, resolver, module))
    for site in sites:
        site.source = source
        site.lookup = local.value_lookup(resolver, site.scope, module)
        contexts = builder.call_contexts.get(site.call)
        if contexts:
            site.no_grad = no_grad_reason(contexts, resolver, source)
        site.untrained_if = untrained_condition(site, resolver, module)
        site.untrained = condition_holds(site.untrained_if, local)
    sites.sort(key=lambda s: (s.call.lineno, s.call.col_offset))
    refs = external_refs(builder, resolver, module, sites, plain)
    return Scan(sites, builder, resolver, tree, source, summary, refs, local.own_wrapper_names(module))


def _class_bases(info: ClassInfo, resolver: Resolver, depth: int) -> set[str]:
    """A local class stands for the API it subclasses (so constructing it is a site)."""
    out: set[str] = set()
    for base in info.node.bases:
        for name in resolver.qualified_names(base, info.scope, depth):
            api = APIS_BY_QUALIFIED_NAME.get(name)
            if api is not None and api.is_module:
                out.add(name)
    return out


def reference_call(node: ast.expr) -> ast.Call:
    """A call-less site's stand-in call: `node` (a class reference: a subclass's base, a class
    passed as a value) as the callee, spanning exactly it, so positions and rewrites find it."""
    call = ast.copy_location(ast.Call(func=node, args=[], keywords=[]), node)
    call.end_lineno, call.end_col_offset = node.end_lineno, node.end_col_offset
    return call


def _subclass_definition_sites(builder, resolver: Resolver, sites: list[Site]) -> list[Site]:
    """A site at the base of each local class that subclasses a layer candle cannot run or train
    whatever its arguments, where this module constructs no instance of it by name: a class
    passed around as a value (torchvision's video ResNets hand `Conv3DSimple(nn.Conv3d)` to their
    blocks as `conv_makers`) is otherwise never a site. port-fix rewrites the base, as for a
    constructed subclass. A subclass of a local subclass is covered by its parent's site."""
    constructed = {id(site.subclass) for site in sites if site.subclass is not None}
    found: list[Site] = []
    for info in builder.classes:
        if id(info) in constructed:
            continue
        for base in info.node.bases:
            if _subclass_of(base, info.scope, resolver) is not None:
                continue  # a local class: its own site covers it
            api_found = _api_of(base, info.scope, resolver)
            if api_found is None or not api_found[1].is_module or not unsupported_whatever_its_arguments(api_found[1]):
                continue
            site = Site(reference_call(base), api_found[1], api_found[0], "subclass", info.scope, resolver, subclass=info)
            site.subclass_name = info.node.name
            found.append(site)
            break
    return found


def _class_value_sites(tree: ast.Module, builder, resolver: Resolver, source: Source, sites: list[Site]) -> list[Site]:
    """A site of kind "value" where a layer class candle cannot run escapes as a value
    (class_values.py), each a call-less site at the reference, which port-fix swaps."""
    skip = {id(site.call.args[0]) for site in sites if site.kind == "partial" and site.call.args}
    found: list[Site] = []
    for reference, name, api in class_values(tree, builder, resolver, source, skip):
        node = reference.node
        site = Site(reference_call(node), api, name, "value", reference.scope, resolver, used_as=reference.used_as)
        if reference.picked_from is not None:
            site.chosen_from = code_of(reference.picked_from, source).strip()
        found.append(site)
    return found


def _api_of(func: ast.expr, scope: Scope, resolver: Resolver) -> tuple[str, Api] | None:
    for name in sorted(resolver.qualified_names(func, scope)):
        api = APIS_BY_QUALIFIED_NAME.get(name)
        if api is not None:
            return name, api
    return None


def _subclass_of(func: ast.expr, scope: Scope, resolver: Resolver) -> ClassInfo | None:
    if isinstance(func, ast.Name):
        for binding in resolver.lookup(func.id, scope) or ():
            if isinstance(binding, ClassInfo):
                return binding
    return None


def _imported_subclass(func: ast.expr, scope: Scope, resolver: Resolver) -> bool:
    if not isinstance(func, ast.Name):
        return False
    bindings = resolver.lookup(func.id, scope) or ()
    imports = [b for b in bindings if isinstance(b, Import)]
    return bool(imports) and not any(b.qualified_name in APIS_BY_QUALIFIED_NAME for b in imports)


def _site_for_call(call: ast.Call, scope: Scope, resolver: Resolver) -> Site | None:
    found = _api_of(call.func, scope, resolver)
    if found is not None:
        name, api = found
        site = Site(call, api, name, "call", scope, resolver, subclass=_subclass_of(call.func, scope, resolver))
        if site.subclass is not None:
            site.kind = "subclass"
            site.subclass_name = site.subclass.node.name
        elif _imported_subclass(call.func, scope, resolver):
            # A class from another module of the project that subclasses the API (project index).
            site.kind = "subclass"
            site.subclass_name = call.func.id
        _bind_arguments(site, call.args, call.keywords)
        return site
    unfold = _tensor_unfold(call, scope, resolver)
    if unfold is not None:
        return unfold
    if not call.args or isinstance(call.args[0], ast.Starred):
        return None
    if PARTIAL_QUALIFIED_NAMES & resolver.qualified_names(call.func, scope):
        found = _api_of(call.args[0], scope, resolver)
        if found is not None:
            name, api = found
            site = Site(call, api, name, "partial", scope, resolver)
            _bind_arguments(site, call.args[1:], call.keywords)
            return site
    return None


def _tensor_unfold(call: ast.Call, scope: Scope, resolver: Resolver) -> Site | None:
    """`x.unfold(dim, size, step)`: a tensor method (three arguments, on a value that is not a module
    or a class port-check knows), or `torch.Tensor.unfold(x, dim, size, step)`."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "unfold":
        return None
    args = list(call.args)
    names = resolver.qualified_names(func, scope)
    if "torch.Tensor.unfold" in names:
        args = args[1:]
    elif any(name.startswith("torch.") for name in names | resolver.qualified_names(func.value, scope)):
        return None  # a torch module's unfold (F.unfold is CP114's)
    keywords = {k.arg for k in call.keywords}
    if any(isinstance(a, ast.Starred) for a in args) or None in keywords:
        return None
    if len(args) + len(keywords & set(TENSOR_UNFOLD.params)) != 3 or not keywords <= set(TENSOR_UNFOLD.params):
        return None
    site = Site(call, TENSOR_UNFOLD, "torch.Tensor.unfold", "call", scope, resolver)
    _bind_arguments(site, args, call.keywords)
    return site


_LAYER_MODULES = ("torch.nn", "torch.nn.modules")


def _getattr_sites(call: ast.Call, scope: Scope, resolver: Resolver, source: Source) -> list[Site]:
    """`getattr(nn, pooling_mode)(k, k, ceil_mode=True)` (neuralforecast's N-HiTS): a torch.nn class
    picked by name. A literal name is that class; a name known only at run time is a layer chosen
    at run time, one site per layer class whose parameters take every keyword the call passes (at
    least one keyword: without any, the call could build any layer)."""
    getter = call.func
    if not (isinstance(getter, ast.Call) and len(getter.args) == 2 and not getter.keywords
            and "builtins.getattr" in resolver.qualified_names(getter.func, scope)):
        return []
    module_expr, name_expr = getter.args
    if not set(_LAYER_MODULES) & resolver.qualified_names(module_expr, scope):
        return []
    name = evaluate(name_expr)
    if name.known and len(name.candidates) == 1 and isinstance(name.single, str):
        names = [name.single]
        kind = "picked"
    else:
        keywords = {k.arg for k in call.keywords}
        if not keywords or None in keywords:
            return []
        names = sorted(n.rsplit(".", 1)[1] for n, api in APIS_BY_QUALIFIED_NAME.items()
                       if n.rsplit(".", 1)[0] == "torch.nn" and api.is_module and api.family in _CHOSEN_FAMILIES
                       and keywords <= set(api.params) and len(call.args) <= len(api.params))
        kind = "chosen"
    candidates = [ast.copy_location(ast.Attribute(value=module_expr, attr=n, ctx=ast.Load()), getter) for n in names]
    return _layer_sites(call, scope, resolver, candidates, scope, kind, code_of(getter, source).strip())


# Layer families looked for in literal collections; resize modules are left to the truth-checked rules.
_CHOSEN_FAMILIES = ("pool", "adaptive_pool", "conv_transpose", "volumetric", "conv1d")


def _chosen_sites(call: ast.Call, scope: Scope, resolver: Resolver, source: Source) -> list[Site]:
    """`POOLS[i](...)`, `{"max": nn.MaxPool2d}[k](...)`: one site per layer API the collection holds.

    A literal index picks its item (then the site is an ordinary call); any other index picks at
    run time, and each API it can pick is a site of kind "chosen".
    """
    func = call.func
    if isinstance(func, ast.Name):
        return _conditional_sites(call, scope, resolver, source)
    if isinstance(func, ast.Call):
        return _getattr_sites(call, scope, resolver, source)
    if not isinstance(func, ast.Subscript) or isinstance(func.slice, (ast.Slice, ast.Tuple)):
        return []
    found = _collection(func.value, scope, resolver)
    if found is None:
        return []
    collection, collection_scope = found
    items = _collection_items(collection)
    index = evaluate(func.slice)
    if index.known and len(index.candidates) == 1:
        picked = [value for key, value in items if key == index.single]
        items = [(None, picked[0])] if len(picked) == 1 else []
        kind = "picked"
    else:
        kind = "chosen"
    return _layer_sites(call, scope, resolver, [value for _, value in items], collection_scope, kind,
                        code_of(func, source).strip())


def _layer_sites(call: ast.Call, scope: Scope, resolver: Resolver, candidates, candidate_scope: Scope, kind: str,
                 chosen_from: str, skip_whatever_its_arguments: bool = False) -> list[Site]:
    """One site at `call` per pooling or transposed-convolution layer class among `candidates`
    (each API once), with the call's arguments bound."""
    sites: list[Site] = []
    seen: set[str] = set()
    for candidate in candidates:
        api_found = _api_of(candidate, candidate_scope, resolver)
        if api_found is None:
            continue
        name, api = api_found
        if not api.is_module or api.family not in _CHOSEN_FAMILIES or api.name in seen:
            continue
        if skip_whatever_its_arguments and unsupported_whatever_its_arguments(api):
            continue
        seen.add(api.name)
        site = Site(call, api, name, kind, scope, resolver)
        site.chosen_from = chosen_from
        _bind_arguments(site, call.args, call.keywords)
        sites.append(site)
    return sites


def _conditional_sites(call: ast.Call, scope: Scope, resolver: Resolver, source: Source) -> list[Site]:
    """`pool_op = nn.MaxPool2d if mode == "max" else nn.AvgPool2d; pool_op(k, s, p)` (timm's
    MViTv2): a name bound once to a conditional of layer classes is a layer chosen at run time,
    one site per pooling or transposed-convolution layer it can be. The classes candle cannot run
    whatever their arguments are reported where the conditional names them (class_values.py)."""
    bindings = resolver.lookup(call.func.id, scope) or []
    if len(bindings) != 1 or not isinstance(bindings[0], Assigned) or not isinstance(bindings[0].expression, (ast.IfExp, ast.BoolOp)):
        return []
    binding = bindings[0]
    leaves, pending = [], [binding.expression]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.IfExp):
            pending += [node.orelse, node.body]
        elif isinstance(node, ast.BoolOp):
            pending += reversed(node.values)
        else:
            leaves.append(node)
    return _swappable_layer_sites(call, scope, resolver, [(leaf, binding.scope) for leaf in leaves])


def _rebound_sites(call: ast.Call, scope: Scope, resolver: Resolver, aliases: list[Alias]) -> list[Site]:
    """`klass_tr = nn.ConvTranspose1d; if freq: klass_tr = nn.ConvTranspose2d; klass_tr(...)`
    (demucs' HDemucs): a layer chosen at run time, one site per pooling, convolution or
    transposed-convolution class the name can hold, judged with the call's arguments, with the
    assignments that name it (`rebound_classes`: port-fix swaps them). The classes candle cannot
    run whatever their arguments are value sites where they are assigned (class_values.py)."""
    return _swappable_layer_sites(call, scope, resolver, [(alias.expression, alias.scope) for alias in aliases])


def _swappable_layer_sites(call: ast.Call, scope: Scope, resolver: Resolver, candidates) -> list[Site]:
    """One "chosen" site per layer API among `candidates` ((expression, scope) pairs naming a
    class), each with the expressions that name it (`rebound_classes`) when every candidate is a
    torch class (a swap must not leave a user's subclass of the API behind)."""
    sites: dict[str, Site] = {}
    # Swapped only when every candidate is one of torch's own classes: another (timm's AvgPool2dSame,
    # imported from another module) may subclass the API, and port-fix, checking one file, cannot
    # tell; a swap would then leave that class's site behind.
    torch_only = all(
        names and all(name.startswith("torch.") for name in names)
        for names in (resolver.qualified_names(expression, candidate_scope) for expression, candidate_scope in candidates)
    )
    for expression, candidate_scope in candidates:
        for site in _layer_sites(call, scope, resolver, [expression], candidate_scope, "chosen", call.func.id,
                                 skip_whatever_its_arguments=True):
            kept = sites.setdefault(site.api.name, site)
            if torch_only:
                kept.rebound_classes += (expression,)
    return list(sites.values())


def _collection(node: ast.expr, scope: Scope, resolver: Resolver):
    if isinstance(node, (ast.Tuple, ast.List, ast.Dict)):
        return node, scope
    if isinstance(node, ast.Name):
        bindings = resolver.lookup(node.id, scope) or []
        if len(bindings) == 1 and isinstance(bindings[0], Collection):
            return bindings[0].expression, bindings[0].scope
    return None


def _collection_items(collection) -> list[tuple[object, ast.expr]]:
    """(key, value) pairs: the position for a tuple/list, the literal key (or None) for a dict."""
    if isinstance(collection, ast.Dict):
        out = []
        for key_node, value in zip(collection.keys, collection.values):
            if key_node is None:
                continue  # `**other`
            key = evaluate(key_node)
            out.append((key.single if key.known else None, value))
        return out
    return [(i, element) for i, element in enumerate(collection.elts) if not isinstance(element, ast.Starred)]


def _bind_arguments(site: Site, args, keywords) -> None:
    position = 0
    for arg in args:
        if isinstance(arg, ast.Starred):
            site.star_args = True
            continue
        if position < len(site.api.params):
            site.arguments[site.api.params[position]] = arg
        position += 1
    for keyword in keywords:
        if keyword.arg is None:
            site.star_kwargs = True
        else:
            site.arguments[keyword.arg] = keyword.value


def _scope_name(scope: Scope) -> str:
    node = scope.node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name
    return "<lambda>"


def _default_text(param: Param, source: Source | None) -> str:
    if param.default is None:
        return ", no default"
    value = evaluate(param.default, source)
    if value.known:
        return f", default {value.source.strip()}"
    return f", default `{value.source.strip()}`"


def _enclosing_class(scope: Scope | None) -> ast.ClassDef | None:
    while scope is not None:
        if scope.kind == "class" and isinstance(scope.node, ast.ClassDef):
            return scope.node
        scope = scope.parent
    return None


def self_assignments(cls: ast.ClassDef, attribute: str | None = None):
    """(method, attribute, value) for each `self.<attribute> = value` in the methods of `cls`
    (not in nested classes), in source order."""
    found = []
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        stack = list(reversed(method.body))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                        and (attribute is None or target.attr == attribute)
                    ):
                        found.append((method, target.attr, node.value))
            if isinstance(node, ast.stmt):
                stack.extend(reversed([c for c in ast.iter_child_nodes(node) if isinstance(c, (ast.stmt, ast.excepthandler, ast.match_case))]))
            elif isinstance(node, (ast.excepthandler, ast.match_case)):
                stack.extend(reversed(node.body))
    return found


def _attribute_origin(attribute: str, scope: Scope, source: Source | None) -> str | None:
    """How `self.<attribute>` gets its value in the enclosing class, in words."""
    cls = _enclosing_class(scope)
    if cls is None:
        return None
    found = self_assignments(cls, attribute)
    if not found:
        return None
    parts = []
    for method, _attr, value in found:
        params = {p.name: p for p in all_params(method.args)}
        if isinstance(value, ast.Name) and value.id in params:
            parts.append(
                f"set in {method.name} from parameter `{value.id}`{_default_text(params[value.id], source)}"
            )
        else:
            parts.append(f"set in {method.name} to `{code_of(value, source).strip()}`")
    return "; ".join(parts)
