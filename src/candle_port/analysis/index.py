"""The project index: what the modules of the checked tree define, for names other modules import.

Built from one summary per module (`summarize`, on the same `ast` pass that finds the module's
sites), never by importing user code:

- module constants: a name bound once at module level to a literal (str, number, tuple);
- Enum members (`class Mode(str, Enum)`, `StrEnum`): `Mode.BILINEAR.value`, and the member itself
  where it is a str;
- classes that subclass a module API (`class Up(nn.Upsample)`), also through other project classes;
- wrappers: functions and methods that pass one of their parameters through to the mode of an
  interpolate or grid_sample API (directly, or through `self.<attribute>` set in `__init__`, or
  through another wrapper: a wrapper of a wrapper).

Imports are resolved within the tree: absolute (`pkg.mod.name`) and package-relative, through
re-exports in `__init__` modules.
"""

from __future__ import annotations

import ast
import functools
import json

from candle_port.analysis.apis import APIS_BY_QUALIFIED_NAME, Api
from candle_port.analysis.names import ClassInfo, Collection, Import, Scope, Value, all_params, dotted_name
from candle_port.analysis.values import literals_of
from candle_port.pipeline.digests import hex_digest
from candle_port.pipeline.records import MutableRecord, Record

_ENUM_BASES = {"enum.Enum", "enum.StrEnum", "enum.IntEnum", "enum.Flag", "enum.IntFlag"}
_STR_ENUM_BASES = {"enum.StrEnum", "builtins.str"}
_MAX_DEPTH = 8
_WRAPPED_FAMILIES = ("interpolate", "grid_sample")


class Wrapper(Record):
    """A function or class that passes its parameter `param` to the mode of the API `api`.

    `name`: pkg.mod.func, pkg.mod.Class (called as Class(...): its __init__) or
    pkg.mod.Class.method; `params`: the parameters a caller passes by position (without self);
    `default`: the literal values of the parameter's default, None when it has none; `api`: the
    API's qualified name; `line`: the `def` line; `level`: 1 calls the API, 2 calls a level-1
    wrapper, ..."""

    __slots__ = ("name", "params", "param", "default", "api", "line", "path", "level")

    def __init__(
        self,
        name: str,
        params: tuple[str, ...],
        param: str,
        default: tuple | None,
        api: str,
        line: int,
        path: str = "",
        level: int = 1,
    ) -> None:
        self.name = name
        self.params = params
        self.param = param
        self.default = default
        self.api = api
        self.line = line
        self.path = path
        self.level = level


class ModuleSummary(MutableRecord):
    """What one module exports to the index (JSON-able, so it is cached with the file's result).

    `constants`: name -> [values]; `enums`: Class -> {"str": bool, "members": {MEMBER: value}};
    `imports`: name -> qualified name (module level, for re-exports); `classes`: Class ->
    [qualified base names]; `wrappers`: Wrapper fields; `passes`: candidate wrappers of wrappers,
    [function key, params, param, default, line, [callee names], keyword, position]; `stars`:
    the modules it star-imports (re-exports); `baseless`: its classes without bases (analysis/training.py)."""

    __slots__ = ("module", "path", "constants", "enums", "imports", "classes", "wrappers", "passes", "stars", "baseless")

    def __init__(
        self,
        module: str,
        path: str = "",
        constants: dict | None = None,
        enums: dict | None = None,
        imports: dict | None = None,
        classes: dict | None = None,
        wrappers: list | None = None,
        passes: list | None = None,
        stars: list | None = None,
        baseless: list | None = None,
    ) -> None:
        self.module = module
        self.path = path
        self.constants = {} if constants is None else constants
        self.enums = {} if enums is None else enums
        self.imports = {} if imports is None else imports
        self.classes = {} if classes is None else classes
        self.wrappers = [] if wrappers is None else wrappers
        self.passes = [] if passes is None else passes
        self.stars = [] if stars is None else stars
        self.baseless = [] if baseless is None else baseless

    def empty(self) -> bool:
        return not (self.constants or self.enums or self.imports or self.classes or self.wrappers or self.passes or self.stars or self.baseless)

    def to_json(self) -> dict:
        return self.as_dict()

    @staticmethod
    def from_json(raw: dict) -> "ModuleSummary":
        return ModuleSummary(**raw)


def _same_exports(a: ModuleSummary, b: ModuleSummary) -> bool:
    """Equal in everything the index answers from (`passes` feed only its fixed point, which the
    workers' copy has already run)."""
    return all(getattr(a, name) == getattr(b, name) for name in ("module", "constants", "enums", "imports", "classes", "wrappers", "stars", "baseless"))


def module_name_of(path: str) -> tuple[str, str]:
    """(module, package) of a file by the `__init__.py` files above it: `a/b/c.py` -> (`a.b.c`, `a.b`).

    A directory without `__init__.py` inside a package is a namespace portion of it (PEP 420:
    facenet_pytorch/models), so `from .utils import x` there resolves in the package."""
    import os

    directory, filename = os.path.split(os.path.abspath(path))
    stem = filename[:-3] if filename.endswith(".py") else filename
    parts = [] if stem == "__init__" else [stem]
    package: list[str] = []
    while _is_package_directory(directory):
        directory, name = os.path.split(directory)
        package.insert(0, name)
        if not name:
            break
    module = ".".join(package + parts) or stem
    return module, ".".join(package)


@functools.lru_cache(maxsize=4096)
def _is_package_directory(directory: str) -> bool:
    """A regular package (`__init__.py`), or a directory inside one (a namespace portion, as
    Python imports it: facenet_pytorch/models/utils)."""
    import os

    if os.path.isfile(os.path.join(directory, "__init__.py")):
        return True
    parent = os.path.dirname(directory)
    return parent != directory and _is_package_directory(parent)


# -- one module ---------------------------------------------------------------------------------


def summarize(module: str, path: str, builder, resolver, sites) -> ModuleSummary:
    """The module's exports, from its scope analysis and its (ast) sites."""
    summary = ModuleSummary(module, path)
    scope = builder.module_scope
    for name, bindings in scope.bindings.items():
        if len(bindings) != 1:
            continue
        binding = bindings[0]
        if isinstance(binding, (Value, Collection)):
            values = literals_of(binding.expression)
            if values is not None and len(values) == 1 and _plain(values[0]):
                summary.constants[name] = values
        elif isinstance(binding, Import):
            summary.imports[name] = binding.qualified_name
    for info in builder.classes:
        if info.scope is not scope:
            continue
        bases = sorted({n for base in info.node.bases for n in resolver.qualified_names(base, scope)})
        bases += sorted(f"{module}.{base.id}" for base in info.node.bases if isinstance(base, ast.Name) and _local_class(base.id, scope))
        if bases:
            summary.classes[info.node.name] = bases
        elif not info.node.bases:
            summary.baseless.append(info.node.name)
        certain = bool(set(bases) & _ENUM_BASES) or any(_is_enum_class(b, summary) for b in bases)
        # A class of another module's base (`class Mode(StrEnum)`, monai's StrEnum) may be an
        # enum: the index decides from that base (ProjectIndex.enum_traits).
        maybe = not certain and any(not b.startswith(("torch.", "builtins.", "enum.")) for b in bases)
        if certain or maybe:
            members = {}
            for statement in info.node.body:
                if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
                    values = literals_of(statement.value)
                    if values is not None and len(values) == 1 and _plain(values[0]):
                        members[statement.targets[0].id] = values[0]
            if certain or members:
                summary.enums[info.node.name] = {"str": bool(set(bases) & _STR_ENUM_BASES), "members": members}
                if maybe:
                    summary.enums[info.node.name]["maybe"] = True
    for site in sites:
        wrapper = _wrapper_of_site(site, module, path)
        if wrapper is not None and all(w["name"] != wrapper.name or w["param"] != wrapper.param for w in summary.wrappers):
            summary.wrappers.append(wrapper.as_dict())
    summary.passes = _parameter_passes(builder, resolver, module)
    summary.stars = list(scope.star_imports)
    return summary


def external_refs(builder, resolver, module: str, sites, plain) -> set[str]:
    """What this module refers to that another module of the tree may define: `c:` callees of plain
    calls and local class bases (a wrapper, a subclass of an API), `v:` names used as site arguments
    (a constant, an enum member), `b:` the bases of a class holding a site (whether it trains)."""
    refs: set[str] = set()
    own = module + "."

    def keep(name: str) -> bool:
        return not name.startswith(own) and not name.startswith(("torch.", "builtins.", "."))

    for call, scope in plain:
        func = call.func
        if isinstance(func, (ast.Name, ast.Attribute)) and not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            refs.update("c:" + n for n in resolver.qualified_names(func, scope) if keep(n))
    for info in builder.classes:
        for base in info.node.bases:
            refs.update("c:" + n for n in resolver.qualified_names(base, info.scope) if keep(n))
    classes = set()
    for site in sites:
        scope = site.scope
        while scope is not None and scope.kind != "class":
            scope = scope.parent
        if scope is not None and id(scope) not in classes:  # whether it trains (analysis/training.py)
            classes.add(id(scope))
            for base in scope.node.bases:
                refs.update("b:" + n for n in resolver.qualified_names(base, scope.parent) if keep(n))
    for site in sites:
        for node in site.arguments.values():
            dotted = dotted_name(node)
            if dotted is None:
                continue
            head, _, rest = dotted.partition(".")
            bindings = resolver.lookup(head, site.scope) or ()
            for binding in bindings:
                if isinstance(binding, Import) and keep(binding.qualified_name):
                    refs.add("v:" + binding.qualified_name + (f".{rest}" if rest else ""))
    return refs


def _plain(value) -> bool:
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _local_class(name: str, scope: Scope) -> bool:
    return any(isinstance(b, ClassInfo) for b in scope.bindings.get(name, ()))


def _is_enum_class(qualified: str, summary: ModuleSummary) -> bool:
    module, _, name = qualified.rpartition(".")
    return module == summary.module and name in summary.enums


def _function_key(scope: Scope, module: str) -> tuple[str, ast.AST, bool] | None:
    """(qualified key, def node, is_method) of a module-level function or a method of a module-level class."""
    node = scope.node
    if scope.kind != "function" or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    parent = scope.parent
    if parent is not None and parent.kind == "module":
        return f"{module}.{node.name}", node, False
    if parent is not None and parent.kind == "class" and parent.parent is not None and parent.parent.kind == "module":
        cls = parent.node.name
        if node.name == "__init__":
            return f"{module}.{cls}", node, True
        return f"{module}.{cls}.{node.name}", node, True
    return None


def _call_params(node, is_method: bool) -> tuple[str, ...]:
    """The names a call's positional arguments bind to, in order (`self` dropped for a method)."""
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if is_method and params and not _is_static(node):
        params = params[1:]
    return tuple(params)


def _is_static(node) -> bool:
    return any(dotted_name(d) == "staticmethod" for d in node.decorator_list)


def _wrapper_of_site(site, module: str, path: str) -> Wrapper | None:
    if site.kind not in ("call", "subclass") or site.api.family not in _WRAPPED_FAMILIES or not site.api.accepts_mode:
        return None
    node = site.arguments.get("mode")
    if isinstance(node, ast.Name):
        found = site.resolver.parameter(node.id, site.scope)
        if found is None:
            return None
        param, scope = found
        key = _function_key(scope, module)
        if key is None:
            return None
        name, func, is_method = key
        return Wrapper(name, _call_params(func, is_method), param.name, _default(param.default), site.qualified_name, func.lineno, path)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return _class_wrapper(site, node.attr, module, path)
    return None


def _class_wrapper(site, attribute: str, module: str, path: str) -> Wrapper | None:
    """`self.<attribute>` set in `__init__` from one of its parameters: the class is the wrapper."""
    from candle_port.analysis.sites import self_assignments

    scope = site.scope
    while scope is not None and scope.kind != "class":
        scope = scope.parent
    if scope is None or scope.parent is None or scope.parent.kind != "module":
        return None
    cls = scope.node
    found = self_assignments(cls, attribute)
    if len(found) != 1:
        return None
    method, _attr, value = found[0]
    if method.name != "__init__" or not isinstance(value, ast.Name):
        return None
    params = {p.name: p for p in all_params(method.args)}
    if value.id not in params:
        return None
    return Wrapper(
        f"{module}.{cls.name}",
        _call_params(method, True),
        value.id,
        _default(params[value.id].default),
        site.qualified_name,
        method.lineno,
        path,
    )


def _default(node: ast.expr | None) -> tuple | None:
    if node is None:
        return None
    values = literals_of(node)
    return tuple(values) if values is not None else None


def _parameter_passes(builder, resolver, module: str) -> list:
    """Calls that pass a bare parameter of the enclosing function, or `self.<attribute>` kept from a
    parameter of the class's `__init__` (mmsegmentation's `Upsample` passes `self.mode` to its
    `resize`): a wrapper of a wrapper, once the callee turns out to be a wrapper and the argument
    its mode."""
    out = []
    assigned: dict = {}  # id(class) -> {attribute: [(method, value)]}, read once per class
    for call, scope in builder.calls:
        candidates = None
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            if isinstance(arg, ast.Name) or _self_attribute(arg):
                candidates = candidates or []
                candidates.append((arg, None, position))
        for keyword in call.keywords:
            if keyword.arg is not None and (isinstance(keyword.value, ast.Name) or _self_attribute(keyword.value)):
                candidates = candidates or []
                candidates.append((keyword.value, keyword.arg, None))
        if not candidates:
            continue
        callees = None
        for node, keyword, position in candidates:
            found = _passed_parameter(node, scope, resolver, module, assigned)
            if found is None:
                continue
            qualified, func, is_method, param = found
            if callees is None:
                callees = sorted(n for n in callee_names(call, scope, resolver, module) if not n.startswith(("torch.", "builtins.")))
            if not callees:
                break
            out.append(
                [qualified, list(_call_params(func, is_method)), param.name, _default(param.default), func.lineno, callees, keyword, position]
            )
    return out


def _self_attribute(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _passed_parameter(node: ast.expr, scope: Scope, resolver, module: str, assigned: dict):
    """(wrapper key, def node, is_method, Param) of the parameter `node` stands for: a parameter of
    the enclosing function, or for `self.<attribute>` the `__init__` parameter it is set from once
    (then the class, called as Class(...), is the wrapper); None otherwise."""
    if isinstance(node, ast.Name):
        found = resolver.parameter(node.id, scope)
        if found is None:
            return None
        param, function_scope = found
        key = _function_key(function_scope, module)
        return None if key is None else (*key, param)
    from candle_port.analysis.sites import self_assignments

    class_scope = scope
    while class_scope is not None and class_scope.kind != "class":
        class_scope = class_scope.parent
    if class_scope is None or class_scope.parent is None or class_scope.parent.kind != "module":
        return None
    cls = class_scope.node
    by_attribute = assigned.get(id(cls))
    if by_attribute is None:
        by_attribute = assigned[id(cls)] = {}
        for method, attribute, value in self_assignments(cls):
            by_attribute.setdefault(attribute, []).append((method, attribute, value))
    found = by_attribute.get(node.attr, ())
    if len(found) != 1:
        return None
    method, _attr, value = found[0]
    if method.name != "__init__" or not isinstance(value, ast.Name):
        return None
    params = {p.name: p for p in all_params(method.args)}
    if value.id not in params:
        return None
    return f"{module}.{cls.name}", method, True, params[value.id]


def callee_names(call: ast.Call, scope: Scope, resolver, module: str) -> set[str]:
    """The qualified names a call's callee may be, with `self.method` inside a module-level class."""
    names = set(resolver.qualified_names(call.func, scope))
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        class_scope = scope
        while class_scope is not None and class_scope.kind != "class":
            class_scope = class_scope.parent
        if class_scope is not None and class_scope.parent is not None and class_scope.parent.kind == "module":
            names.add(f"{module}.{class_scope.node.name}.{func.attr}")
    return names


# -- the index ----------------------------------------------------------------------------------


class ProjectIndex:
    """The summaries of every module of the checked tree, and the answers the checker asks of them."""

    def __init__(self, summaries: list[ModuleSummary]) -> None:
        self.modules: dict[str, ModuleSummary] = {}
        for summary in summaries:
            self.modules.setdefault(summary.module, summary)
        self.wrappers: dict[str, Wrapper] = {}
        for summary in self.modules.values():
            for raw in summary.wrappers:
                wrapper = Wrapper(**{**raw, "params": tuple(raw["params"]), "default": _tuple(raw["default"])})
                self.wrappers.setdefault(wrapper.name, wrapper)
        self._wrappers_of_wrappers()
        self._digests: dict[str, str] = {}

    def overlay(self, summary: ModuleSummary) -> "ProjectIndex":
        """This index with `summary` (the module being checked, as it is now) in place of its stored version.

        Cheap (no new fixed point): a wrapper of a wrapper across modules comes from the stored index.
        """
        stored = self.modules.get(summary.module)
        if stored is not None and _same_exports(stored, summary):
            return self  # the file as the index already has it (the second pass): keep its caches
        out = ProjectIndex.__new__(ProjectIndex)
        out.modules = {**self.modules, summary.module: summary}
        out.wrappers = dict(self.wrappers)
        for raw in summary.wrappers:
            wrapper = Wrapper(**{**raw, "params": tuple(raw["params"]), "default": _tuple(raw["default"])})
            out.wrappers.setdefault(wrapper.name, wrapper)
        out._digests = {}
        if self.modules:  # a superset of the tails is still a filter that drops no wrapper
            out._tails = self._wrapper_tails() | _tails_of(summary)
            out._definer_table = out._definers_with(self._definers(), stored, summary)
        # The stored index holds every other module's wrappers of wrappers; this module's own are
        # found here (a file first parsed in a later pass is not in the stored fixed point).
        out._wrappers_of_wrappers([summary])
        return out

    # -- resolution ------------------------------------------------------------------------------
    def _split(self, qualified: str, depth: int = 0, strict: bool = False):
        """(summary, the names after the module) for a qualified name, following re-exports.

        A package whose `__init__` was not summarized (it holds no site, so the first pass skipped
        it) re-exports by name: `pkg.resize` is the one `resize` defined in a module under `pkg`.
        A star import is followed only to a module that defines or imports the name (`strict`):
        the first star module is not the answer just because it was summarized.
        """
        if depth > _MAX_DEPTH:
            return None
        # Two caches: answers that read only the summaries (kept through the wrapper fixed point)
        # and answers that read the definer table, which grows with each round of it.
        memo = self.__dict__.setdefault("_split_memo", {})
        volatile = self.__dict__.setdefault("_split_volatile", {})
        key = (qualified, strict)
        if key in memo:
            return memo[key]  # None while in progress: an import cycle resolves to nothing
        if key in volatile:
            return volatile[key]
        memo[key] = None
        reads = self.__dict__.get("_definer_reads", 0)
        found = self._split_uncached(qualified, depth, strict)
        if self.__dict__.get("_definer_reads", 0) != reads:
            del memo[key]
            volatile[key] = found
        else:
            memo[key] = found
        return found

    def _split_uncached(self, qualified: str, depth: int, strict: bool):
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            summary = self.modules.get(".".join(parts[:cut]))
            if summary is None:
                continue
            rest = parts[cut:]
            target = summary.imports.get(rest[0])
            if target is not None and target != qualified:
                return self._split(".".join([target, *rest[1:]]), depth + 1, strict)
            if self._defines(summary, rest[0]):
                return summary, rest
            found = self._through_stars(summary, rest, depth, {summary.module})
            if found is not None:
                return found
            if strict:
                return None
            return self._defined_under(parts, cut) or (summary, rest)
        return None if strict else self._defined_under(parts, len(parts) - 1)

    def _through_stars(self, summary: ModuleSummary, rest: list[str], depth: int, seen: set[str]):
        """`rest` reached through `summary`'s star imports: only a module that defines or imports
        `rest[0]` answers (the first star module is not the answer because it was summarized)."""
        for star in summary.stars:
            inner = self.modules.get(star)
            if inner is None or star in seen:
                continue
            seen.add(star)
            target = inner.imports.get(rest[0])
            if target is not None:
                found = self._split(".".join([target, *rest[1:]]), depth + 1, strict=True)
                if found is not None:
                    return found
            if self._defines(inner, rest[0]):
                return inner, rest
            found = self._through_stars(inner, rest, depth + 1, seen)
            if found is not None:
                return found
        return None

    def _defined_under(self, parts: list[str], longest: int):
        """The one summarized module under a prefix of `parts` that defines the next name."""
        self._definer_reads = self.__dict__.get("_definer_reads", 0) + 1
        for cut in range(longest, 0, -1):
            prefix = ".".join(parts[:cut]) + "."
            found = [s for s in self._definers().get(parts[cut], ()) if s.module.startswith(prefix)]
            if len(found) == 1:
                return found[0], parts[cut:]
        return None

    @staticmethod
    def _defines(summary: ModuleSummary, name: str) -> bool:
        return (
            name in summary.constants
            or name in summary.enums
            or name in summary.classes
            or name in summary.baseless
            or any(w["name"].startswith(f"{summary.module}.{name}") for w in summary.wrappers)
        )

    def _definers(self) -> dict[str, list[ModuleSummary]]:
        table = getattr(self, "_definer_table", None)
        if table is None:
            table = {}
            for summary in self.modules.values():
                for name in _defined_names(summary):
                    table.setdefault(name, []).append(summary)
            for wrapper in self.wrappers.values():  # wrappers of wrappers found by the fixed point
                module, _, name = wrapper.name.rpartition(".")
                summary = self.modules.get(module)
                if summary is not None and summary not in table.setdefault(name, []):
                    table[name].append(summary)
            self._definer_table = table
        return table

    def _definers_with(self, table: dict, stored: ModuleSummary | None, summary: ModuleSummary) -> dict:
        """The definer table of this overlay from its stored index's `table`, `summary` in place of
        `stored` (rebuilding it for every checked file took 3% of port-check's time)."""
        out = dict(table)
        in_module = {w.name.rpartition(".")[2] for w in self.wrappers.values() if w.name.rpartition(".")[0] == summary.module}
        if stored is not None:
            for name in _defined_names(stored) | in_module:
                if name in out:
                    out[name] = [s for s in out[name] if s is not stored]
        for name in _defined_names(summary) | in_module:
            out[name] = [*out.get(name, ()), summary]
        return out

    def wrapper(self, qualified: str) -> Wrapper | None:
        memo = self.__dict__.setdefault("_wrapper_memo", {})
        if qualified in memo:
            return memo[qualified]
        if qualified.rpartition(".")[2] not in self._wrapper_tails():
            memo[qualified] = None  # most callees: no re-export can make them a wrapper
            return None
        found = memo[qualified] = self._wrapper(qualified)
        return found

    def _wrapper_tails(self) -> set[str]:
        """Every wrapper's last name, and every name a module imports under another name.

        Resolution follows re-exports, which keep a name's last part unless an import renames it
        (`from .ops import resize as up`), so only a name ending in one of these can be a wrapper."""
        tails = self.__dict__.get("_tails")
        if tails is None:
            tails = {name.rpartition(".")[2] for name in self.wrappers}
            for summary in self.modules.values():
                tails |= _tails_of(summary)
            self._tails = tails
        return tails

    def _wrapper(self, qualified: str) -> Wrapper | None:
        found = self.wrappers.get(qualified)
        if found is not None:
            return found
        split = self._split(qualified)
        if split is None:
            return None
        summary, rest = split
        return self.wrappers.get(".".join([summary.module, *rest]))

    def constant(self, qualified: str) -> list | None:
        split = self._split(qualified)
        if split is None:
            return None
        summary, rest = split
        if len(rest) == 1 and rest[0] in summary.constants:
            return [_tuple(v) for v in summary.constants[rest[0]]]
        enum = summary.enums.get(rest[0])
        if enum is not None and len(rest) in (2, 3) and rest[1] in enum["members"]:
            is_enum, is_str = self.enum_traits(f"{summary.module}.{rest[0]}")
            if not is_enum:
                return None
            value = enum["members"][rest[1]]
            if len(rest) == 3 and rest[2] == "value":
                return [_tuple(value)]
            if len(rest) == 2 and is_str and isinstance(value, str):
                return [value]  # a str-mixin member is the string
        return None

    def enum_traits(self, qualified: str, depth: int = 0) -> tuple[bool, bool]:
        """(an Enum, a str Enum) for a project class, through its bases in any module of the tree
        (`class InterpolateMode(StrEnum)` with monai's `class StrEnum(str, Enum)` elsewhere)."""
        if qualified in _ENUM_BASES or qualified in _STR_ENUM_BASES:
            return qualified in _ENUM_BASES, qualified in _STR_ENUM_BASES
        split = self._split(qualified) if depth <= _MAX_DEPTH else None
        if split is None or len(split[1]) != 1:
            return False, False
        summary, (name,) = split
        enum = summary.enums.get(name)
        if enum is None:
            return False, False
        is_enum, is_str = not enum.get("maybe"), enum["str"]
        for base in summary.classes.get(name, ()):
            if base != f"{summary.module}.{name}":
                base_enum, base_str = self.enum_traits(base, depth + 1)
                is_enum, is_str = is_enum or base_enum, is_str or base_str
        return is_enum, is_str and is_enum

    def plain_class(self, qualified: str, depth: int = 0) -> bool:
        """Whether a project class is certainly no nn.Module, autograd Function or loss: its bases,
        followed through the index, end in plain Python classes (analysis/training.py)."""
        from candle_port.analysis.training import is_loss_name, plain_base_name

        memo = self.__dict__.setdefault("_plain_memo", {})
        if qualified in memo:
            return memo[qualified]
        memo[qualified] = False  # a cycle is not plain
        split = self._split(qualified) if depth <= _MAX_DEPTH else None
        found = False
        if split is not None and len(split[1]) == 1 and not is_loss_name(split[1][0]):
            summary, (name,) = split
            if name in summary.baseless:
                found = True
            elif name in summary.classes:
                own = f"{summary.module}.{name}"
                found = all(plain_base_name(b) or (b != own and self.plain_class(b, depth + 1)) for b in summary.classes[name])
        memo[qualified] = found
        return found

    def external_names(self, qualified: str, depth: int = 0) -> set[str]:
        """The module APIs a project class subclasses (directly or through project classes)."""
        if depth > _MAX_DEPTH or qualified.startswith(("torch.", "builtins.")):
            return set()
        memo = self.__dict__.setdefault("_class_memo", {})
        if qualified not in memo:
            memo[qualified] = self._external_names(qualified, depth)
        return memo[qualified]

    def _external_names(self, qualified: str, depth: int) -> set[str]:
        split = self._split(qualified)
        if split is None:
            return set()
        summary, rest = split
        if len(rest) != 1 or rest[0] not in summary.classes:
            return set()
        out: set[str] = set()
        for base in summary.classes[rest[0]]:
            api = APIS_BY_QUALIFIED_NAME.get(base)
            if api is not None and api.is_module:
                out.add(base)
            elif base != qualified:
                out |= self.external_names(base, depth + 1)
        return out

    def _wrappers_of_wrappers(self, summaries: list[ModuleSummary] | None = None) -> None:
        """The fixed point: a function passing its parameter to a wrapper's mode is a wrapper one
        level up (over `summaries`' passes only, when given)."""
        if not self.wrappers:
            return  # nothing to be a wrapper of (most single files of the first pass)
        entries = [(summary, entry) for summary in (self.modules.values() if summaries is None else summaries) for entry in summary.passes]
        by_tail: dict[str, list[int]] = {}  # a callee's last name -> the entries that call it
        for i, (_, entry) in enumerate(entries):
            for callee in entry[5]:
                by_tail.setdefault(callee.rpartition(".")[2], []).append(i)
        for _ in range(_MAX_DEPTH):
            added: list[str] = []
            tails = self._wrapper_tails()
            # Only an entry calling a name that can resolve to a wrapper, in their first order.
            for i in sorted({i for tail in tails & by_tail.keys() for i in by_tail[tail]}):
                summary, (key, params, param, default, line, callees, keyword, position) = entries[i]
                if key in self.wrappers:
                    continue
                for callee in callees:
                    inner = self.wrapper(callee)
                    if inner is None:
                        continue
                    passes = keyword == inner.param if keyword is not None else (
                        position is not None and position < len(inner.params) and inner.params[position] == inner.param
                    )
                    if passes:
                        self.wrappers[key] = Wrapper(
                            key, tuple(params), param, _tuple(default), inner.api, line, summary.path, inner.level + 1
                        )
                        added.append(key)
                        break
            if not added:
                return
            # One level per round: answers cached in this round may predate its new wrappers.
            for memo in ("_definer_table", "_wrapper_memo", "_split_volatile"):
                self.__dict__.pop(memo, None)
            tails.update(key.rpartition(".")[2] for key in added)

    # -- what the checker asks ---------------------------------------------------------------------
    def own_wrapper_names(self, module: str) -> list[str]:
        """The names `module`'s own wrappers are called by there: a function's, a class's, a
        method's (`pkg.mod.Class.resize` -> `resize`)."""
        return [name.rpartition(".")[2] for name in self.wrappers if name.startswith(module + ".")]

    def called_names(self) -> set[str]:
        """The names whose call in another module may be a site: wrappers and project subclasses."""
        return self._wrapper_call_filter().short_names()

    def mentioned_in(self, text: str, package: str | None = None) -> bool:
        """Whether `text` may call a wrapper or construct a project subclass of an API through an
        import: the second pass's prefilter (analysis/mentions.py). `package`: the file's, for
        its relative imports (None: not known)."""
        return self._wrapper_call_filter().may_call(text, package)

    def _wrapper_call_filter(self):
        found = getattr(self, "_call_filter", None)
        if found is None:
            from candle_port.analysis.mentions import WrapperCallFilter

            pairs = [(self._module_of(w.name), w.name) for w in self.wrappers.values()]
            pairs += [  # a wrapper re-exported, by name or as another (`from .ops import resize as up`)
                (name, f"{name}.{local}") for name, summary in self.modules.items()
                for local, target in summary.imports.items()
                if self.wrapper(target) is not None
            ]
            tails = {w.name.rpartition(".")[2] for w in self.wrappers.values()}
            pairs += [  # ...or through a star import (`from .ops import *`)
                (name, f"{name}.{tail}") for name, summary in self.modules.items() if summary.stars
                for tail in tails if self.wrapper(f"{name}.{tail}") is not None
            ]
            pairs += [  # project subclasses of a module API: constructing one is a site
                (name, f"{name}.{cls}") for name, summary in self.modules.items() for cls in summary.classes
                if self.external_names(f"{name}.{cls}")
            ]
            aliases = [  # how `.name(` on an imported module reaches a gateway: module-level imports...
                (f"{name}.{local}", target) for name, summary in self.modules.items()
                for local, target in summary.imports.items()
            ]
            aliases += [(name, star) for name, summary in self.modules.items() for star in summary.stars]  # ...and star imports
            found = self._call_filter = WrapperCallFilter.for_names(pairs, aliases)
        return found

    def _module_of(self, qualified: str) -> str:
        """The longest indexed module that `qualified` is inside."""
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if module in self.modules:
                return module
        return qualified.rpartition(".")[0]

    def value_lookup(self, resolver, scope: Scope, module: str):
        """A values.Lookup for names at `scope`: module constants and enum members, here or imported."""

        def lookup(node: ast.expr):
            if isinstance(node, ast.Name):
                bindings = resolver.lookup(node.id, scope)
                if not bindings or len(bindings) != 1:
                    return None
                binding = bindings[0]
                if isinstance(binding, Import):
                    return self.constant(binding.qualified_name)
                if isinstance(binding, (Value, Collection)) and binding.scope.kind == "module":
                    return self.constant(f"{module}.{node.id}")
                return None
            dotted = dotted_name(node)
            if dotted is None:
                return None
            head, _, rest = dotted.partition(".")
            bindings = resolver.lookup(head, scope)
            if not bindings or len(bindings) != 1:
                return None
            binding = bindings[0]
            if isinstance(binding, Import):
                return self.constant(f"{binding.qualified_name}.{rest}")
            if isinstance(binding, ClassInfo) and binding.scope.kind == "module":
                return self.constant(f"{module}.{dotted}")
            return None

        return lookup

    def wrapper_sites(self, call: ast.Call, scope: Scope, resolver, module: str) -> list:
        """A call of a wrapper that passes (or defaults to) a literal mode: a site of kind "wrapper"."""
        from candle_port.analysis.sites import Site

        for name in sorted(callee_names(call, scope, resolver, module)):
            wrapper = self.wrapper(name)
            if wrapper is None:
                continue
            api: Api | None = APIS_BY_QUALIFIED_NAME.get(wrapper.api)
            if api is None:
                return []
            passed = None
            for position, arg in enumerate(call.args):
                if isinstance(arg, ast.Starred):
                    return []  # where the mode goes is not known statically
                if position < len(wrapper.params) and wrapper.params[position] == wrapper.param:
                    passed = arg
            for keyword in call.keywords:
                if keyword.arg == wrapper.param:
                    passed = keyword.value
                elif keyword.arg is None and passed is None:
                    return []
            site = Site(call, api, wrapper.api, "wrapper", scope, resolver, wrapper=wrapper.name, wrapper_default=wrapper.default)
            if passed is not None:
                if literals_of(passed, self.value_lookup(resolver, scope, module)) is None:
                    return []  # a mode not known here: the wrapper (or a wrapper of it) is reported instead
                site.arguments["mode"] = passed
            elif wrapper.default is None:
                return []
            return [site]
        return []

    # -- cache keys ----------------------------------------------------------------------------
    def digest_for(self, refs) -> str | None:
        """A digest of what the index says about `refs` (a file's external names), or None when it
        says nothing: then the file's findings do not depend on the index."""
        used = []
        for ref in refs:
            name = ref[2:]
            if ref.startswith("c:"):
                wrapper = self.wrapper(name)
                classes = sorted(self.external_names(name))
                if wrapper is not None or classes:
                    used.append([ref, repr(wrapper), classes])
            elif ref.startswith("b:"):
                continue  # whether its class trains is decided after the passes (engine._decide_training)
            else:
                value = self.constant(name)
                if value is not None:
                    used.append([ref, value])
        if not used:
            return None
        return hex_digest(json.dumps(used, sort_keys=True, default=repr).encode())

    def for_workers(self) -> "ProjectIndex":
        """The same answers without the fixed point's input (smaller to send to each worker)."""
        out = ProjectIndex.__new__(ProjectIndex)
        out.modules = {
            name: s.replace(passes=[]) for name, s in self.modules.items()
        }
        out.wrappers = self.wrappers
        out._digests = dict(self._digests)
        return out

    def digest(self) -> str:
        """A digest of everything a file's findings can depend on: every summary's exports and the wrappers."""
        cached = self._digests.get("*")
        if cached is None:
            payload = {
                "modules": {name: [s.constants, s.enums, s.imports, s.classes, s.baseless] for name, s in sorted(self.modules.items())},
                "wrappers": sorted(repr(w.as_dict()) for w in self.wrappers.values()),
            }
            cached = hex_digest(json.dumps(payload, sort_keys=True, default=repr).encode())
            self._digests["*"] = cached
        return cached


def _defined_names(summary: ModuleSummary) -> set[str]:
    """The names a module defines at its top level that the index knows: constants, enums,
    classes, wrappers (a method wrapper by its class)."""
    names = {*summary.constants, *summary.enums, *summary.classes, *summary.baseless}
    names.update(w["name"][len(summary.module) + 1 :].split(".")[0] for w in summary.wrappers)
    return names


def _tails_of(summary: ModuleSummary) -> set[str]:
    """The last names of a module's wrappers and the names it imports under another name."""
    tails = {raw["name"].rpartition(".")[2] for raw in summary.wrappers}
    tails.update(local for local, target in summary.imports.items() if target.rpartition(".")[2] != local)
    return tails


def _tuple(value):
    if isinstance(value, list):
        return tuple(_tuple(v) for v in value)
    return value
