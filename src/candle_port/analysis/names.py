"""Scope-correct resolution of what a call refers to, cheaper than libcst's QualifiedNameProvider.

One pass over the module records every binding (imports, assignments, defs, parameters, loop and
`with` targets) in the scope where Python puts it, and every call with the scope it sits in. Names
are resolved afterwards, so a binding later in a function body still shadows (as in Python). A name
may have several bindings (an import in `try`, a fallback in `except`); resolution returns all the
qualified names it may hold, like QualifiedNameProvider does. Attribute chains extend them:
`F.interpolate` with `F -> torch.nn.functional` is `torch.nn.functional.interpolate`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import dataclasses

import libcst as cst

# The name of the class that a local `class X(nn.Upsample)` stands for; resolution returns this
# base qualified name for X, and `SubclassInfo` for details.
_MAX_ALIAS_DEPTH = 8


@dataclass
class ClassInfo:
    """A class defined in this module: its bases (resolved later) and whether it has __init__."""

    node: cst.ClassDef
    scope: "Scope"
    defines_init: bool


@dataclass(frozen=True)
class Import:
    qualified_name: str


@dataclass(frozen=True)
class Alias:
    """`x = <dotted expression>`: x holds whatever the expression resolves to."""

    expression: cst.BaseExpression
    scope: "Scope"


class _Local:
    """A binding we cannot follow (a parameter, a def, a computed value): shadows, matches nothing."""

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "LOCAL"


LOCAL = _Local()

@dataclass(frozen=True)
class Collection:
    """`x = (a, b)` / `[a, b]` / `{"k": a}`: a literal collection, whose items may be layer classes
    (`POOLS[dim - 1](...)` picks one at run time)."""

    expression: cst.BaseExpression
    scope: "Scope"


Binding = Import | Alias | ClassInfo | Collection | _Local


@dataclass(eq=False)
class Scope:
    kind: str  # "module", "class", "function", "comprehension"
    parent: "Scope | None"
    node: cst.CSTNode | None = None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    global_names: set[str] = field(default_factory=set)
    star_imports: list[str] = field(default_factory=list)
    parameters: dict[str, cst.Param] = field(default_factory=dict)

    def bind(self, name: str, binding: Binding) -> None:
        target = self.module() if name in self.global_names else self
        target.bindings.setdefault(name, []).append(binding)

    def module(self) -> "Scope":
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` as text, or None when the expression is not a plain dotted name."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _import_module_name(node: cst.ImportFrom) -> str:
    dots = "." * len(node.relative)
    return dots + (dotted_name(node.module) or "" if node.module is not None else "")


_SKIPPED_FIELDS = frozenset(
    {
        "lpar", "rpar", "comma", "semicolon", "colon", "equal", "dot", "star", "operator",
        "header", "footer", "newline", "leading_lines", "lines_after_decorators", "relative",
    }
)
_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
        )
        _FIELDS[cls] = names
    return names


class ScopeBuilder:
    """Collects bindings per scope and every call with the scope it sits in.

    It walks the tree itself (dataclass fields, cached per node type) instead of using libcst's
    visitor, which rebuilds every node it passes and costs about ten times more. Children are
    walked in source order: the fields of libcst nodes follow the code, and the few that do not
    (IfExp, ExceptHandler, comprehensions, function parameters) have their own handler.
    """

    def __init__(self) -> None:
        self.module_scope = Scope("module", None)
        self.scope = self.module_scope
        self.calls: list[tuple[cst.Call, Scope]] = []
        # The `with` items and decorators a call runs under, innermost last, each with the scope it
        # is evaluated in (context.py decides which of them turn gradients off).
        self.call_contexts: dict[cst.Call, tuple[tuple[str, cst.BaseExpression, Scope], ...]] = {}
        self._contexts: list[tuple[str, cst.BaseExpression, Scope]] = []
        self._handlers = {
            cst.FunctionDef: self._function_def,
            cst.Lambda: self._lambda,
            cst.ClassDef: self._class_def,
            cst.ListComp: self._comprehension,
            cst.SetComp: self._comprehension,
            cst.GeneratorExp: self._comprehension,
            cst.DictComp: self._comprehension,
            cst.IfExp: self._if_exp,
            cst.ExceptHandler: self._except_handler,
            cst.Global: self._global,
            cst.Import: self._import,
            cst.ImportFrom: self._import_from,
            cst.Assign: self._assign,
            cst.AnnAssign: self._ann_assign,
            cst.AugAssign: self._aug_assign,
            cst.NamedExpr: self._named_expr,
            cst.For: self._for,
            cst.CompFor: self._comp_for,
            cst.WithItem: self._with_item,
            cst.With: self._with,
            cst.MatchAs: self._match_name,
            cst.MatchStar: self._match_name,
            cst.Call: self._call,
        }

    def build(self, module: cst.Module) -> "ScopeBuilder":
        self.walk(module)
        return self

    # -- traversal -----------------------------------------------------------------------------
    def walk(self, node) -> None:
        if node is None:
            return
        handler = self._handlers.get(type(node))
        if handler is not None and handler(node) is False:
            return
        self._walk_children(node)

    def _walk_children(self, node: cst.CSTNode) -> None:
        for name in _child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                self.walk(value)
            elif isinstance(value, (tuple, list)):
                for item in value:
                    if isinstance(item, cst.CSTNode):
                        self.walk(item)

    # -- scopes --------------------------------------------------------------------------------
    def _push(self, kind: str, node: cst.CSTNode) -> Scope:
        self.scope = Scope(kind, self.scope, node)
        return self.scope

    def _pop(self) -> None:
        assert self.scope.parent is not None
        self.scope = self.scope.parent

    def _function_def(self, node: cst.FunctionDef) -> bool:
        self.scope.bind(node.name.value, LOCAL)
        # Decorators, defaults and annotations are evaluated in the enclosing scope.
        for decorator in node.decorators:
            self.walk(decorator)
        self._param_defaults(node.params)
        self.walk(node.returns)
        outer_contexts = self._contexts
        # The body runs when the function is called: under its decorators, not under the `with` it sits in.
        self._contexts = [("decorator", decorator.decorator, self.scope) for decorator in node.decorators]
        scope = self._push("function", node)
        _bind_params(node.params, scope)
        self.walk(node.body)
        self._pop()
        self._contexts = outer_contexts
        return False

    def _lambda(self, node: cst.Lambda) -> bool:
        self._param_defaults(node.params)
        outer_contexts, self._contexts = self._contexts, []  # the body runs when called, not here
        scope = self._push("function", node)
        _bind_params(node.params, scope)
        self.walk(node.body)
        self._pop()
        self._contexts = outer_contexts
        return False

    def _param_defaults(self, params: cst.Parameters) -> None:
        for param in _all_params(params):
            self.walk(param.annotation)
            self.walk(param.default)

    def _class_def(self, node: cst.ClassDef) -> bool:
        for decorator in node.decorators:
            self.walk(decorator)
        for arg in (*node.bases, *node.keywords):
            self.walk(arg)
        info = ClassInfo(node, self.scope, _defines_method(node, "__init__"))
        self.scope.bind(node.name.value, info)
        self._push("class", node)
        self.walk(node.body)
        self._pop()
        return False

    def _comprehension(self, node) -> bool:
        # Element first: that is its place in the source (positions.py relies on source order);
        # bindings are resolved after the walk, so the order does not change any answer.
        self._push("comprehension", node)
        if isinstance(node, cst.DictComp):
            self.walk(node.key)
            self.walk(node.value)
        else:
            self.walk(node.elt)
        self.walk(node.for_in)
        self._pop()
        return False

    def _if_exp(self, node: cst.IfExp) -> bool:
        self.walk(node.body)
        self.walk(node.test)
        self.walk(node.orelse)
        return False

    def _except_handler(self, node: cst.ExceptHandler) -> bool:
        self.walk(node.type)
        if node.name is not None:
            self._bind_target(node.name.name, LOCAL)
        self.walk(node.body)
        return False

    # -- bindings ------------------------------------------------------------------------------
    def _global(self, node: cst.Global) -> None:
        for item in node.names:
            self.scope.global_names.add(item.name.value)

    def _import(self, node: cst.Import) -> bool:
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            if alias.asname is not None:
                name = _target_name(alias.asname.name)
                if name:
                    self.scope.bind(name, Import(full))
            else:
                top = full.split(".")[0]
                self.scope.bind(top, Import(top))
        return False

    def _import_from(self, node: cst.ImportFrom) -> bool:
        module = _import_module_name(node)
        if isinstance(node.names, cst.ImportStar):
            self.scope.star_imports.append(module)
            return False
        for alias in node.names:
            imported = alias.name.value if isinstance(alias.name, cst.Name) else dotted_name(alias.name)
            name = _target_name(alias.asname.name) if alias.asname is not None else imported
            if name:
                sep = "" if module.endswith(".") else "."
                self.scope.bind(name, Import(f"{module}{sep}{imported}" if module else str(imported)))
        return False

    def _assign(self, node: cst.Assign) -> None:
        value_binding = _value_binding(node.value, self.scope)
        for target in node.targets:
            self._bind_target(target.target, value_binding)

    def _ann_assign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind_target(node.target, _value_binding(node.value, self.scope))

    def _aug_assign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target, LOCAL)

    def _named_expr(self, node: cst.NamedExpr) -> None:
        scope = self.scope
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent  # PEP 572: the walrus binds in the enclosing function
        name = _target_name(node.target)
        if name:
            scope.bind(name, _value_binding(node.value, self.scope))

    def _for(self, node: cst.For) -> None:
        self._bind_target(node.target, LOCAL)

    def _comp_for(self, node: cst.CompFor) -> None:
        self._bind_target(node.target, LOCAL)

    def _with(self, node: cst.With) -> bool:
        for item in node.items:
            self.walk(item)
        added = [("with", item.item, self.scope) for item in node.items]
        self._contexts.extend(added)
        self.walk(node.body)
        del self._contexts[len(self._contexts) - len(added) :]
        return False

    def _with_item(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name, LOCAL)

    def _match_name(self, node) -> None:
        if node.name is not None:
            self._bind_target(node.name, LOCAL)

    def _bind_target(self, target: cst.BaseExpression, binding: Binding) -> None:
        if isinstance(target, cst.Name):
            self.scope.bind(target.value, binding)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(element.value, LOCAL)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, LOCAL)
        # Attributes and subscripts bind no name.

    # -- uses ----------------------------------------------------------------------------------
    def _call(self, node: cst.Call) -> None:
        self.calls.append((node, self.scope))
        if self._contexts:
            self.call_contexts[node] = tuple(self._contexts)


def _target_name(node: cst.BaseExpression) -> str | None:
    return node.value if isinstance(node, cst.Name) else None


def _value_binding(value: cst.BaseExpression, scope: Scope) -> Binding:
    if isinstance(value, (cst.Tuple, cst.List, cst.Dict)):
        return Collection(value, scope)
    return Alias(value, scope) if dotted_name(value) is not None else LOCAL


def _defines_method(node: cst.ClassDef, name: str) -> bool:
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    return any(isinstance(stmt, cst.FunctionDef) and stmt.name.value == name for stmt in body)


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    """Every parameter, in source order."""
    out = [*params.posonly_params, *params.params]
    if isinstance(params.star_arg, cst.Param):
        out.append(params.star_arg)
    out.extend(params.kwonly_params)
    if params.star_kwarg is not None:
        out.append(params.star_kwarg)
    return out


def _bind_params(params: cst.Parameters, scope: Scope) -> None:
    for param in _all_params(params):
        scope.bind(param.name.value, LOCAL)
        scope.parameters[param.name.value] = param


class Resolver:
    """Answers "which qualified names may this expression hold?" after a ScopeBuilder pass."""

    def __init__(self, builder: ScopeBuilder, base_of_class) -> None:
        self._builder = builder
        # Called with a ClassInfo; returns the qualified names that class stands for (for a
        # subclass of a known API, that API), or an empty set.
        self._base_of_class = base_of_class

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

    def qualified_names(self, node: cst.BaseExpression, scope: Scope, depth: int = 0) -> set[str]:
        if depth > _MAX_ALIAS_DEPTH:
            return set()
        if isinstance(node, cst.Attribute):
            return {f"{q}.{node.attr.value}" for q in self.qualified_names(node.value, scope, depth)}
        if not isinstance(node, cst.Name):
            return set()
        bindings = self.lookup(node.value, scope)
        if bindings is None:
            return {f"builtins.{node.value}"}
        out: set[str] = set()
        for binding in bindings:
            if isinstance(binding, Import):
                out.add(binding.qualified_name)
            elif isinstance(binding, Alias):
                out |= self.qualified_names(binding.expression, binding.scope, depth + 1)
            elif isinstance(binding, ClassInfo):
                out |= self._base_of_class(binding, depth + 1)
        return out

    def parameter(self, name: str, scope: Scope) -> tuple[cst.Param, Scope] | None:
        """The function parameter that `name` refers to at `scope`, if it is one."""
        while scope is not None:
            if scope.kind == "function":
                if name in scope.parameters:
                    bindings = scope.bindings.get(name, [])
                    if all(b is LOCAL for b in bindings):
                        return scope.parameters[name], scope
                    return None
                if name in scope.bindings:
                    return None
            elif scope.kind == "module":
                return None
            scope = scope.parent
        return None
