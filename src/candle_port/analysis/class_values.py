"""Layer classes candle cannot run whatever their arguments, handed around as values.

Layer factories build their layers from a class they receive or return, not from a name they
call: nnU-Net's `convert_dim_to_conv_op(3)` returns `nn.Conv3d`, its U-Nets take
`conv_op=nn.Conv3d` and call `conv_op(...)`, `get_matching_convtransp` returns
`nn.ConvTranspose3d`, timm's `conv_nd(n)` returns `[nn.Identity, ..., nn.Conv3d][n]`. No call
there names the API, so the call-site scan sees nothing, while every layer of the network is one
candle has no op for. For the classes whose verdict does not depend on their arguments (3-D
convolution and pooling, ConvTranspose1d: `unsupported_whatever_its_arguments`), the place the
class escapes as a value is a site of kind "value": returned, passed as an argument, a parameter's
default, stored in an attribute, a class attribute or a dict, or picked out of a literal list by a
computed index. port-fix swaps the reference for the runtime's class (a subclass of torch's, so
`issubclass(conv_op, nn.Conv3d)` still holds).

Not sites: a class used as a type (isinstance/issubclass arguments, comparisons, annotations, a
base class, tuples and sets, dict keys), `nn.Conv3d.forward`-style attribute access, a plain local
alias (`conv = nn.Conv3d`: its calls are call sites and where it escapes is the value site), and
what a call site already reports (`functools.partial(nn.Conv3d, ...)`, `[...][i](...)`).
"""

from __future__ import annotations

import ast
import bisect

from candle_port.analysis.apis import APIS_BY_QUALIFIED_NAME, Api
from candle_port.analysis.names import Alias, Import, Resolver, Scope, ScopeBuilder
from candle_port.analysis.values import Source, code_of

_TYPE_TESTS = frozenset({"isinstance", "issubclass", "super", "getattr", "hasattr", "setattr", "type"})


def unsupported_whatever_its_arguments(api: Api) -> bool:
    """3-D convolution and pooling (no candle op) and ConvTranspose1d (no candle backward)."""
    return api.family == "volumetric" or (api.family == "conv_transpose" and "1d" in api.name)


# Short names of the layer classes this module looks for: a file that holds none is not walked.
CLASS_NAMES = frozenset(
    name.rsplit(".", 1)[-1]
    for name, api in APIS_BY_QUALIFIED_NAME.items()
    if api.is_module and unsupported_whatever_its_arguments(api)
)


def may_pass_classes(text: str) -> bool:
    """Whether `text` names one of the classes at all (a cheap test before the walk)."""
    return any(name in text for name in CLASS_NAMES)


class ClassValue:
    """One reference to such a class where it escapes as a value: the node, its scope, how it is
    used (in words, for the message), and the subscript it is picked out of at run time, if any."""

    __slots__ = ("node", "scope", "used_as", "picked_from", "alias")

    def __init__(self, node: ast.expr, scope: Scope, used_as: str, picked_from: ast.Subscript | None = None) -> None:
        # `Conv = nn.Conv3d`: the name, kept only if the name is also used as a value somewhere
        self.alias = used_as.name if isinstance(used_as, _AliasUse) else None
        self.node = node
        self.scope = scope
        self.used_as = str(used_as)
        self.picked_from = picked_from


def class_values(tree: ast.Module, builder: ScopeBuilder, resolver: Resolver, source: Source, skip: set[int]) -> list[tuple[ClassValue, str, Api]]:
    """(reference, qualified name, API) for each such class escaping as a value in `tree`.

    `skip`: ids of nodes a call site already covers (a partial's first argument)."""
    body_scopes = {id(info.node): info.body_scope for info in builder.functions if info.body_scope is not None}
    escaped: set[str] = set()  # names used as values (returned, passed, stored), not only called
    found = _walk(tree, builder, resolver, source, skip, body_scopes, escaped, _spelled(builder, source.text))
    aliases = {item[0].alias for item in found if item[0].alias is not None} - escaped
    if aliases:  # where else the aliases are written: are they passed on?
        _walk(tree, builder, resolver, source, skip, body_scopes, escaped, aliases)
    # `Conv = nn.Conv3d` only called (`Conv(...)`, a call site) is an alias, not a class passed on;
    # rebound to another class, its calls build a layer chosen at run time: this is where to swap.
    kept = []
    for item in found:
        reference = item[0]
        if reference.alias is not None and reference.alias not in escaped:
            if not rebound_layer_aliases(reference.alias, reference.scope, resolver):
                continue
            reference.used_as = f"assigned to `{reference.alias}`, a name rebound to another class"
        kept.append(item)
    found = kept
    found.sort(key=lambda item: (item[0].node.lineno, item[0].node.col_offset))
    return found


def rebound_layer_aliases(name: str, scope: Scope, resolver: Resolver) -> list[Alias] | None:
    """The bindings of `name` when it is rebound from one layer class to another (demucs' HDemucs:
    `klass_tr = nn.ConvTranspose1d`, then `if freq: klass_tr = nn.ConvTranspose2d`), else None.

    Every binding is a plain alias and they name at least two APIs, one a layer class: its calls
    build a layer chosen at run time (sites.py judges each class with the call's arguments), and a
    class candle cannot run whatever its arguments is swapped where it is assigned (a value site).
    """
    bindings = resolver.lookup(name, scope) or []
    if len(bindings) < 2 or not all(isinstance(b, Alias) for b in bindings):
        return None
    names: set[str] = set()
    for binding in bindings:
        names |= resolver.qualified_names(binding.expression, binding.scope)
    apis = [APIS_BY_QUALIFIED_NAME.get(n) for n in names]
    if len(names) < 2 or not any(api is not None and api.is_module for api in apis):
        return None
    return bindings  # type: ignore[return-value]


def _spelled(builder: ScopeBuilder, text: str) -> set[str]:
    """The words a reference to such a class is written with: the class names in the text and
    the module's own names for them (`from torch.nn import Conv3d as C3`)."""
    words = {name for name in CLASS_NAMES if name in text}
    for name, bindings in builder.module_scope.bindings.items():
        if any(isinstance(b, Import) and b.qualified_name.rsplit(".", 1)[-1] in CLASS_NAMES for b in bindings):
            words.add(name)
    return words


def _lines_with(source: Source, words: set[str]) -> list[int]:
    """The sorted numbers of the lines that hold any of `words` (a substring test: more, never fewer)."""
    text, starts = source.text, source.starts
    lines: set[int] = set()
    for word in words:
        at = text.find(word)
        while at != -1:
            lines.add(bisect.bisect_right(starts, at))
            at = text.find(word, at + len(word))
    return sorted(lines)


def _walk(tree, builder, resolver, source, skip, body_scopes, escaped: set[str], words: set[str]):
    """One pass over the statements whose lines hold one of `words` (others cannot hold a
    reference spelled so): the references found, and the names seen used as values into `escaped`."""
    lines = _lines_with(source, words)
    found: list[tuple[ClassValue, str, Api]] = []
    if not lines:
        return found
    stack: list[tuple[ast.AST, Scope, str | None, ast.Subscript | None]] = [(tree, builder.module_scope, None, None)]
    while stack:
        node, scope, use, picked = stack.pop()
        if isinstance(node, ast.stmt):
            i = bisect.bisect_left(lines, node.lineno)
            if i == len(lines) or lines[i] > (node.end_lineno or node.lineno):
                continue  # no line of it names such a class
        kind = type(node)
        if kind is ast.Name or kind is ast.Attribute:
            if use is not None and kind is ast.Name:
                escaped.add(node.id)
            if use is not None and id(node) not in skip:
                hit = _api_named(node, scope, resolver)
                if hit is not None:
                    found.append((ClassValue(node, scope, use, picked), *hit))
            if kind is ast.Attribute:
                stack.append((node.value, scope, None, None))  # `nn.Conv3d.forward`: not the class escaping
            continue
        for child in _children(node, scope, use, picked, body_scopes, source):
            stack.append(child)
    return found


def _api_named(node: ast.expr, scope: Scope, resolver: Resolver) -> tuple[str, Api] | None:
    """The API `node` spells: `nn.Conv3d`, `torch.nn.Conv3d` or a name imported as one. A local
    alias or subclass is not followed: where it is called is a call site, where a subclass is
    defined a subclass site, and an alias may hold another class on another path."""
    if isinstance(node, ast.Attribute):
        if node.attr not in CLASS_NAMES:
            return None
        names = sorted(resolver.qualified_names(node, scope))
    else:
        names = sorted(b.qualified_name for b in resolver.lookup(node.id, scope) or () if isinstance(b, Import))
    for name in names:
        api = APIS_BY_QUALIFIED_NAME.get(name)
        if api is not None and api.is_module and unsupported_whatever_its_arguments(api):
            return name, api
    return None


def _last_name(node: ast.expr) -> str:
    """`Conv3d` of `nn.Conv3d`, `isinstance` of `isinstance`, "" for other callees."""
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _children(node, scope: Scope, use: str | None, picked, body_scopes: dict, source: Source):
    """(child, scope, use, picked) for the children of `node`, each with how its value is used."""
    kind = type(node)
    if kind is ast.Return:
        if node.value is not None:
            yield node.value, scope, f"returned from `{_function_name(scope)}`", None
        return
    if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
        yield from _function_parts(node, scope, body_scopes)
        return
    if kind is ast.ClassDef:
        for decorator in node.decorator_list:
            yield decorator, scope, None, None
        for statement in node.body:  # bases and keywords: a base class is a subclass site (sites.py)
            yield statement, scope, f"class attribute of `{node.name}`", None
        return
    if kind is ast.Call:
        yield from _call_parts(node, scope, source)
        return
    if kind is ast.Assign or kind is ast.AnnAssign:
        targets = node.targets if kind is ast.Assign else [node.target]
        if node.value is not None:
            yield node.value, scope, _assignment_use(targets, node.value, use, source), None
        for target in targets:
            yield target, scope, None, None
        return  # an annotation is a type
    if kind is ast.Dict:
        for key, value in zip(node.keys, node.values):
            if key is not None:
                yield key, scope, None, None  # `{nn.Conv3d: handler}`: a type as a key
            yield value, scope, "a value in a dict", None  # a config or registry: built where it is looked up
        return
    if kind is ast.Subscript:
        value = node.value
        if isinstance(value, (ast.List, ast.Tuple, ast.Dict)):
            # `[nn.Conv2d, nn.Conv3d][n]` escaping as a value; called at once, it is a call site
            # of kind "chosen" (sites.py), so its items are not values here.
            item_use = f"picked out of `{code_of(node, source).strip()}` at run time" if use is not None else None
            items = value.values if isinstance(value, ast.Dict) else value.elts
            for item in items:
                yield item, scope, item_use, node if use is not None else None
            for key in value.keys if isinstance(value, ast.Dict) else ():
                if key is not None:
                    yield key, scope, None, None
        else:
            yield value, scope, None, None
        yield node.slice, scope, None, None
        return
    if kind is ast.List or kind is ast.Starred or kind is ast.BinOp:
        for child in ast.iter_child_nodes(node):
            yield child, scope, use, picked  # `conv_makers=[Conv] * 4`: each element is passed on
        return
    if kind is ast.IfExp:
        yield node.test, scope, None, None
        yield node.body, scope, use, picked
        yield node.orelse, scope, use, picked
        return
    if kind is ast.BoolOp:
        for value in node.values:
            yield value, scope, use, picked  # `conv_op or nn.Conv3d`
        return
    if kind is ast.keyword:
        yield node.value, scope, use, picked
        return
    # Statements and other expressions: tuples, sets and comparisons hold types, not layers to build.
    for child in ast.iter_child_nodes(node):
        yield child, scope, None, None


def _function_parts(node, scope: Scope, body_scopes: dict):
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    for param, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
        yield default, scope, f"the default of parameter `{param.arg}`", None
    for param, default in zip(args.kwonlyargs, args.kw_defaults):
        if default is not None:
            yield default, scope, f"the default of parameter `{param.arg}`", None
    if isinstance(node, ast.Lambda):
        yield node.body, scope, "returned from a lambda", None
        return
    for decorator in node.decorator_list:
        yield decorator, scope, None, None
    inner = body_scopes.get(id(node), scope)
    for statement in node.body:
        yield statement, inner, None, None


def _call_parts(node: ast.Call, scope: Scope, source: Source):
    func = node.func
    yield func, scope, None, None
    if _last_name(func) in _TYPE_TESTS:
        return  # `isinstance(m, nn.Conv3d)`: a type test, not a layer to build
    use = f"passed to `{code_of(func, source).strip()}`"
    for arg in node.args:
        yield arg, scope, use, None
    for keyword in node.keywords:
        yield keyword.value, scope, use if keyword.arg is None else f"{use} as `{keyword.arg}`", None


class _AliasUse(str):
    """How a class assigned to a plain name is used ("assigned to `Conv`"), knowing the name."""

    name: str

    def __new__(cls, name: str) -> "_AliasUse":
        use = super().__new__(cls, f"assigned to `{name}`")
        use.name = name
        return use


def _assignment_use(targets: list[ast.expr], value: ast.expr, use: str | None, source: Source) -> str | None:
    """How an assigned class is used: stored in an attribute, a subscript, a class attribute or a
    name. A name assigned the class itself is an alias: its calls are call sites, and it is
    reported here only if it is also used as a value (class_values filters on `alias`)."""
    for target in targets:
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            return f"assigned to `{code_of(target, source).strip()}`"
    if use is not None and use.startswith("class attribute"):
        return use
    names = [target.id for target in targets if isinstance(target, ast.Name)]
    if not names:
        return None
    if isinstance(value, (ast.Name, ast.Attribute)):
        return _AliasUse(names[0])
    return f"assigned to `{names[0]}`"


def _function_name(scope: Scope) -> str:
    node = scope.node
    return getattr(node, "name", "<lambda>")
