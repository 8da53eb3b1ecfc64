"""Scope-correct resolution of what a call refers to, on CPython's own `ast`.

One pass over the module records every binding (imports, assignments, defs, parameters, loop and
`with` targets) in the scope where Python puts it, and every call with the scope it sits in. Names
are resolved afterwards, so a binding later in a function body still shadows (as in Python). A name
may have several bindings (an import in `try`, a fallback in `except`); resolution returns all the
qualified names it may hold. Attribute chains extend them: `F.interpolate` with
`F -> torch.nn.functional` is `torch.nn.functional.interpolate`.

The walk uses an explicit stack, never Python recursion: valid code with a 500-term `x+x+...`, 500
`elif`s or a 1,200-deep call chain is analysed like any other file.
"""

from __future__ import annotations

import ast

from candle_port.pipeline.records import Record

_MAX_ALIAS_DEPTH = 8


class ClassInfo:
    """A class defined in this module: its bases (resolved later) and whether it has __init__."""

    __slots__ = ("node", "scope", "defines_init")

    def __init__(self, node: ast.ClassDef, scope: "Scope", defines_init: bool) -> None:
        self.node = node
        self.scope = scope
        self.defines_init = defines_init


class Import(Record):
    """`import a.b` / `from a import b`: the name holds the module or object `qualified_name`."""

    __slots__ = ("qualified_name",)

    def __init__(self, qualified_name: str) -> None:
        self.qualified_name = qualified_name


class _Assigned:
    """A name bound by an assignment: the expression and the scope it is evaluated in."""

    __slots__ = ("expression", "scope")

    def __init__(self, expression: ast.expr, scope: "Scope") -> None:
        self.expression = expression
        self.scope = scope


class Alias(_Assigned):
    """`x = <dotted expression>`: x holds whatever the expression resolves to."""

    __slots__ = ()


class _Local:
    """A binding we cannot follow (a parameter, a def, a computed value): shadows, matches nothing."""

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "LOCAL"


LOCAL = _Local()


class Collection(_Assigned):
    """`x = (a, b)` / `[a, b]` / `{"k": a}`: a literal collection, whose items may be layer classes
    (`POOLS[dim - 1](...)` picks one at run time)."""

    __slots__ = ()


class Value(_Assigned):
    """`x = <any other expression>` (a literal, a call): kept so that module constants can be read."""

    __slots__ = ()


class FunctionInfo:
    """A function or method defined in this module (a wrapper candidate): `scope` is where it is
    defined, `body_scope` the scope of its body."""

    __slots__ = ("node", "scope", "body_scope")

    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: "Scope", body_scope: "Scope | None" = None) -> None:
        self.node = node
        self.scope = scope
        self.body_scope = body_scope


Binding = Import | Alias | ClassInfo | Collection | Value | FunctionInfo | _Local


class Param(Record):
    """A function parameter: its name and literal-or-not default expression."""

    __slots__ = ("name", "default", "node")

    def __init__(self, name: str, default: ast.expr | None, node: ast.arg) -> None:
        self.name = name
        self.default = default
        self.node = node


class Scope:
    """Where names are bound: `kind` is "module", "class", "function" or "comprehension"."""

    __slots__ = ("kind", "parent", "node", "bindings", "global_names", "star_imports", "parameters")

    def __init__(self, kind: str, parent: "Scope | None", node: ast.AST | None = None) -> None:
        self.kind = kind
        self.parent = parent
        self.node = node
        self.bindings: dict[str, list[Binding]] = {}
        self.global_names: set[str] = set()
        self.star_imports: list[str] = []
        self.parameters: dict[str, Param] = {}

    def bind(self, name: str, binding: Binding) -> None:
        target = self.module() if name in self.global_names else self
        target.bindings.setdefault(name, []).append(binding)

    def module(self) -> "Scope":
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


def dotted_name(node) -> str | None:
    """`a.b.c` as text, or None when the expression is not a plain dotted name.

    Takes an `ast` expression, or a libcst one (port-fix's import helpers still hold libcst nodes).
    """
    parts: list[str] = []
    if isinstance(node, ast.AST):
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        return None
    while type(node).__name__ == "Attribute":  # libcst
        parts.append(node.attr.value)
        node = node.value
    if type(node).__name__ == "Name":
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


ast_dotted = dotted_name


def all_params(args: ast.arguments) -> list[Param]:
    """Every parameter with its default, in source order."""
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = [Param(a.arg, d, a) for a, d in zip(positional, defaults)]
    if args.vararg is not None:
        out.append(Param(args.vararg.arg, None, args.vararg))
    out.extend(Param(a.arg, d, a) for a, d in zip(args.kwonlyargs, args.kw_defaults))
    if args.kwarg is not None:
        out.append(Param(args.kwarg.arg, None, args.kwarg))
    return out


Contexts = tuple  # ((kind, expression, scope), ...): `with` items and decorators, innermost last

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# The most common nodes that bind nothing, with their child fields (all single nodes or None).
_SIMPLE = {
    ast.Attribute: ("value",),
    ast.keyword: ("value",),
    ast.Expr: ("value",),
    ast.Return: ("value",),
    ast.Subscript: ("value", "slice"),
    ast.BinOp: ("left", "right"),
    ast.UnaryOp: ("operand",),
    ast.Starred: ("value",),
    ast.Slice: ("lower", "upper", "step"),
    ast.IfExp: ("test", "body", "orelse"),
    ast.FormattedValue: ("value", "format_spec"),
    ast.Raise: ("exc", "cause"),
    ast.Assert: ("test", "msg"),
    ast.Await: ("value",),
    ast.Yield: ("value",),
    ast.YieldFrom: ("value",),
}
# Common nodes that bind nothing and hold lists: (single-node fields, list fields), in `_fields`
# order as ast.iter_child_nodes walks them, but without the operator and context leaves.
_WITH_LISTS = {
    ast.Tuple: ((), ("elts",)),
    ast.List: ((), ("elts",)),
    ast.Set: ((), ("elts",)),
    ast.Compare: (("left",), ("comparators",)),
    ast.BoolOp: ((), ("values",)),
    ast.If: (("test",), ("body", "orelse")),
    ast.While: (("test",), ("body", "orelse")),
    ast.JoinedStr: ((), ("values",)),
    ast.Dict: ((), ("keys", "values")),
    ast.Delete: ((), ("targets",)),
    ast.Try: ((), ("body", "handlers", "orelse", "finalbody")),
}
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


_LEAVES = frozenset({ast.Name, ast.Constant})


class ScopeBuilder:
    """Collects bindings per scope and every call with the scope it sits in, iteratively."""

    def __init__(self, package: str = "", module: str = "") -> None:
        # The package relative imports start from (`a.b` for a/b/c.py and for a/b/__init__.py).
        self.package = package
        self.module = module  # this module's qualified name: its functions and classes are `module.name`
        self.module_scope = Scope("module", None)
        self.calls: list[tuple[ast.Call, Scope]] = []
        # The `with` items and decorators a call runs under, innermost last, each with the scope it
        # is evaluated in (grad_mode.py decides which of them turn gradients off).
        self.call_contexts: dict[ast.Call, Contexts] = {}
        self.functions: list[FunctionInfo] = []
        self.classes: list[ClassInfo] = []

    def build(self, module: ast.Module) -> "ScopeBuilder":
        self.module_scope.node = module
        stack: list[tuple[object, Scope, Contexts]] = [(module, self.module_scope, ())]
        pop, push = stack.pop, stack.append
        while stack:
            node, scope, contexts = pop()
            if isinstance(node, tuple):  # a deferred binding action
                node[0](*node[1:])
                continue
            children = self._visit(node, scope, contexts, push)
            if children is None:
                continue
            for child in reversed(children):
                # A name or a constant binds nothing and holds no call (_visit skips it): half of
                # the nodes, never pushed.
                if type(child) not in _LEAVES:
                    push((child, scope, contexts))
        return self

    def release(self) -> None:
        """Unlink scopes, bindings and the tree once the file is checked.

        Scopes and their bindings point at each other (a function's info names the scope that binds
        it), and through them at every node, so without this the whole tree waits for a cycle
        collection, which walks it again (about 8% of port-check's time on the corpus)."""
        scopes: dict[int, Scope] = {id(self.module_scope): self.module_scope}
        for _, scope in self.calls:
            scopes[id(scope)] = scope
        for info in self.functions:
            for scope in (info.scope, info.body_scope):
                if scope is not None:
                    scopes[id(scope)] = scope
        for info in self.classes:
            scopes[id(info.scope)] = info.scope
        for scope in scopes.values():
            scope.bindings.clear()
            scope.parameters.clear()
            scope.node = None
        self.calls.clear()
        self.call_contexts.clear()
        self.functions.clear()
        self.classes.clear()

    def _absolute(self, level: int, module: str) -> str:
        if not level:
            return module
        parts = self.package.split(".") if self.package else []
        if not parts or level - 1 >= len(parts):
            return "." * level + module  # outside the checked tree: left relative, resolves to nothing
        base = parts[: len(parts) - (level - 1)]
        return ".".join(base + ([module] if module else []))

    def _visit(self, node, scope: Scope, contexts: Contexts, push):
        """Handle `node`; return the children still to walk in the same scope, or None."""
        kind = type(node)
        if kind is ast.Call:
            self.calls.append((node, scope))
            if contexts:
                self.call_contexts[node] = contexts
            return [node.func, *node.args, *node.keywords]
        if kind is ast.Name or kind is ast.Constant:
            return None
        simple = _SIMPLE.get(kind)
        if simple is not None:
            return [child for name in simple if (child := getattr(node, name)) is not None]
        with_lists = _WITH_LISTS.get(kind)
        if with_lists is not None:
            singles, lists = with_lists
            out = [getattr(node, name) for name in singles]
            for name in lists:
                out.extend(getattr(node, name))
            return [child for child in out if child is not None] if kind is ast.Dict else out
        if kind in _FUNCTIONS:
            info = FunctionInfo(node, scope)
            scope.bind(node.name, info)
            self.functions.append(info)
            inner = Scope("function", scope, node)
            info.body_scope = inner
            for param in all_params(node.args):
                inner.bind(param.name, LOCAL)
                inner.parameters[param.name] = param
            body_contexts = tuple(("decorator", d, scope) for d in node.decorator_list)
            for statement in reversed(node.body):
                push((statement, inner, body_contexts))
            outer = [*node.decorator_list, *_param_expressions(node.args)]
            if node.returns is not None:
                outer.append(node.returns)
            return outer
        if kind is ast.Lambda:
            inner = Scope("function", scope, node)
            for param in all_params(node.args):
                inner.bind(param.name, LOCAL)
                inner.parameters[param.name] = param
            push((node.body, inner, ()))  # the body runs when called, not here
            return _param_expressions(node.args)
        if kind is ast.ClassDef:
            info = ClassInfo(node, scope, any(isinstance(s, _FUNCTIONS) and s.name == "__init__" for s in node.body))
            scope.bind(node.name, info)
            self.classes.append(info)
            inner = Scope("class", scope, node)
            for statement in reversed(node.body):
                push((statement, inner, contexts))
            return [*node.decorator_list, *node.bases, *node.keywords]
        if kind in _COMPREHENSIONS:
            inner = Scope("comprehension", scope, node)
            elements = [node.key, node.value] if kind is ast.DictComp else [node.elt]
            for item in reversed([*elements, *node.generators]):
                push((item, inner, contexts))
            return None
        if kind is ast.comprehension:
            _bind_target(node.target, LOCAL, scope)
            return [node.target, node.iter, *node.ifs]
        if kind is ast.ExceptHandler:
            if node.name:
                scope.bind(node.name, LOCAL)
            return [node.type, *node.body] if node.type is not None else node.body
        if kind is ast.Global:
            scope.global_names.update(node.names)
            return None
        if kind is ast.Import:
            for alias in node.names:
                if alias.asname is not None:
                    scope.bind(alias.asname, Import(alias.name))
                else:
                    top = alias.name.split(".")[0]
                    scope.bind(top, Import(top))
            return None
        if kind is ast.ImportFrom:
            module = self._absolute(node.level or 0, node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    scope.star_imports.append(module)
                    continue
                sep = "" if module.endswith(".") else "."
                scope.bind(alias.asname or alias.name, Import(f"{module}{sep}{alias.name}" if module else alias.name))
            return None
        if kind is ast.Assign:
            binding = _value_binding(node.value, scope)
            for target in node.targets:
                _bind_target(target, binding, scope)
            return [*node.targets, node.value]
        if kind is ast.AnnAssign:
            if node.value is not None:
                _bind_target(node.target, _value_binding(node.value, scope), scope)
                return [node.target, node.annotation, node.value]
            return [node.target, node.annotation]
        if kind is ast.AugAssign:
            _bind_target(node.target, LOCAL, scope)
            return [node.target, node.value]
        if kind is ast.NamedExpr:
            target_scope = scope
            while target_scope.kind == "comprehension" and target_scope.parent is not None:
                target_scope = target_scope.parent  # PEP 572: the walrus binds in the enclosing function
            if isinstance(node.target, ast.Name):
                target_scope.bind(node.target.id, _value_binding(node.value, scope))
            return [node.value]
        if kind is ast.For or kind is ast.AsyncFor:
            _bind_target(node.target, LOCAL, scope)
            return [node.target, node.iter, *node.body, *node.orelse]
        if kind is ast.With or kind is ast.AsyncWith:
            inner_contexts = contexts + tuple(("with", item.context_expr, scope) for item in node.items)
            for statement in reversed(node.body):
                push((statement, scope, inner_contexts))
            out = []
            for item in node.items:
                out.append(item.context_expr)
                if item.optional_vars is not None:
                    _bind_target(item.optional_vars, LOCAL, scope)
                    out.append(item.optional_vars)
            return out
        if kind is ast.MatchAs or kind is ast.MatchStar:
            if node.name is not None:
                scope.bind(node.name, LOCAL)
        elif kind is ast.MatchMapping and node.rest is not None:
            scope.bind(node.rest, LOCAL)
        return list(ast.iter_child_nodes(node))


def _param_expressions(args: ast.arguments) -> list[ast.expr]:
    """Defaults and annotations: evaluated in the enclosing scope."""
    out: list[ast.expr] = []
    for arg in (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg):
        if arg is not None and arg.annotation is not None:
            out.append(arg.annotation)
    out.extend(args.defaults)
    out.extend(d for d in args.kw_defaults if d is not None)
    return out


def _bind_target(target: ast.expr, binding: Binding, scope: Scope) -> None:
    stack = [(target, binding)]
    while stack:
        node, bound = stack.pop()
        if isinstance(node, ast.Name):
            scope.bind(node.id, bound)
        elif isinstance(node, (ast.Tuple, ast.List)):
            stack.extend((element, LOCAL) for element in node.elts)
        elif isinstance(node, ast.Starred):
            stack.append((node.value, LOCAL))
        # Attributes and subscripts bind no name.


def _value_binding(value: ast.expr, scope: Scope) -> Binding:
    if isinstance(value, (ast.Tuple, ast.List, ast.Dict)):
        return Collection(value, scope)
    if dotted_name(value) is not None:
        return Alias(value, scope)
    return Value(value, scope)


class Resolver:
    """Answers "which qualified names may this expression hold?" after a ScopeBuilder pass.

    `external(qualified_name)` (the project index) maps a name imported from another module of the
    checked tree to what it is there: e.g. `pkg.layers.Upsample` -> `torch.nn.Upsample` for a subclass.
    """

    def __init__(self, builder: ScopeBuilder, base_of_class, external=None) -> None:
        self._builder = builder
        # Called with a ClassInfo; returns the qualified names that class stands for (for a
        # subclass of a known API, that API), or an empty set.
        self._base_of_class = base_of_class
        self._external = external
        # qualified_names by (node, scope, depth): a call is resolved for its site, its summary
        # and its external refs in turn. forget() when what `external` answers changes.
        self._names: dict[tuple[int, int, int], tuple[ast.expr, frozenset[str]]] = {}

    def forget(self) -> None:
        self._names.clear()

    def lookup(self, name: str, scope: Scope) -> list[Binding] | None:
        start = scope
        while scope is not None:
            skip = scope.kind == "class" and scope is not start
            if not skip:
                if name in scope.global_names and scope.parent is not None:
                    scope = scope.module()
                    continue
                found = scope.bindings.get(name)
                if found:
                    return found
                if scope.kind == "module" and scope.star_imports:
                    return [Import(f"{m}.{name}") for m in scope.star_imports]
            scope = scope.parent
        return None

    def qualified_names(self, node: ast.expr, scope: Scope, depth: int = 0) -> frozenset[str]:
        key = (id(node), id(scope), depth)
        found = self._names.get(key)
        if found is None or found[0] is not node:
            # The node is kept with its answer: a node made for one question (sites._getattr_sites'
            # `nn.MaxPool1d` for `getattr(nn, "MaxPool1d")`) and freed would leave its id to the next.
            found = self._names[key] = (node, frozenset(self._qualified_names(node, scope, depth)))
        return found[1]

    def _qualified_names(self, node: ast.expr, scope: Scope, depth: int) -> set[str]:
        if depth > _MAX_ALIAS_DEPTH:
            return set()
        attrs: list[str] = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return set()
        suffix = "".join(f".{a}" for a in reversed(attrs))
        bindings = self.lookup(node.id, scope)
        if bindings is None:
            return {f"builtins.{node.id}{suffix}"}
        out: set[str] = set()
        for binding in bindings:
            if isinstance(binding, Import):
                out.add(binding.qualified_name + suffix)
                if self._external is not None:
                    out |= {name + suffix for name in self._external(binding.qualified_name, depth + 1)}
            elif isinstance(binding, Alias):
                out |= {n + suffix for n in self.qualified_names(binding.expression, binding.scope, depth + 1)}
            elif isinstance(binding, ClassInfo):
                if not suffix:
                    out |= self._base_of_class(binding, depth + 1)
                if binding.scope.kind == "module" and self._builder.module:
                    out.add(f"{self._builder.module}.{node.id}{suffix}")
            elif isinstance(binding, FunctionInfo) and binding.scope.kind == "module" and self._builder.module:
                out.add(f"{self._builder.module}.{node.id}{suffix}")
        return out

    def parameter(self, name: str, scope: Scope) -> tuple[Param, Scope] | None:
        """The function parameter that `name` refers to at `scope`, if it is one."""
        while scope is not None:
            if scope.kind == "function":
                if name in scope.parameters:
                    bindings = scope.bindings.get(name, [])
                    # Rebound to a computed value (`k = operator.index(k)`): still the parameter's value.
                    if all(b is LOCAL or isinstance(b, Value) for b in bindings):
                        return scope.parameters[name], scope
                    return None
                if name in scope.bindings:
                    return None
            elif scope.kind == "module":
                return None
            scope = scope.parent
        return None
