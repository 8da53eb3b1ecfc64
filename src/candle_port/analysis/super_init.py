"""The arguments a layer subclass passes to its base's `__init__`, judged like the base built with them.

ultralytics' `class DWConvTranspose2d(nn.ConvTranspose2d)` calls
`super().__init__(c1, c2, k, s, p1, p2, groups=math.gcd(c1, c2))`: constructing it builds a
ConvTranspose2d with those groups. A value passed through is read where the subclass is built
(`DWConvTranspose2d(c, c, 2, 2)`: `k` is 2); a parameter left to its default reads the default;
anything else is evaluated where `super().__init__` is called.
"""

from __future__ import annotations

import ast

from candle_port.analysis.names import all_params
from candle_port.analysis.values import Value, evaluate, omitted


class SuperInit:
    """One class's `__init__` (`init`) and the API arguments its one `super().__init__(...)` binds
    (`bound`: parameter name -> expression; `star`: it passes *args or **kwargs)."""

    __slots__ = ("init", "bound", "star")

    def __init__(self, init: ast.FunctionDef, bound: dict[str, ast.expr], star: bool) -> None:
        self.init = init
        self.bound = bound
        self.star = star


def super_init(cls: ast.ClassDef, params: tuple[str, ...]) -> SuperInit | None:
    """The one base-class `__init__` call in `cls.__init__`, bound to the API's `params`; None
    when there is none or more than one (the arguments then depend on a branch)."""
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return None
    calls = [node for node in ast.walk(init) if isinstance(node, ast.Call) and _calls_base_init(node, cls.name)]
    if len(calls) != 1:
        return None
    call = calls[0]
    args = list(call.args)
    if not isinstance(call.func.value, ast.Call):  # `Base.__init__(self, ...)`
        args = args[1:]
    bound: dict[str, ast.expr] = {}
    star = False
    for position, arg in enumerate(args):
        if isinstance(arg, ast.Starred):
            star = True
            break
        if position < len(params):
            bound[params[position]] = arg
    for keyword in call.keywords:
        if keyword.arg is None:
            star = True
        else:
            bound[keyword.arg] = keyword.value
    return SuperInit(init, bound, star)


def _calls_base_init(call: ast.Call, class_name: str) -> bool:
    """`super().__init__(...)`, `super(Cls, self).__init__(...)` or `Base.__init__(self, ...)`."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "__init__":
        return False
    target = func.value
    if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "super":
        return True
    return (
        isinstance(target, (ast.Name, ast.Attribute)) and not (isinstance(target, ast.Name) and target.id == class_name)
        and bool(call.args)
        and isinstance(call.args[0], ast.Name) and call.args[0].id == "self"
    )


def value_through_super(site, name: str, default) -> Value | None:
    """The value of the API's parameter `name` at `site`, a construction of a subclass with its own
    `__init__`, as that `__init__` passes it on; None when it has no single base-class call."""
    cls = site.subclass.node
    found = super_init(cls, site.api.params)
    if found is None:
        return None
    expr = found.bound.get(name)
    if expr is None:
        if found.star:
            return None  # `super().__init__(*args, **kwargs)`: read the construction's arguments, as before
        return omitted(default)
    if isinstance(expr, ast.Name):
        params = {p.name: p for p in all_params(found.init.args)}
        if expr.id in params and expr.id != "self":
            return _passed_at_construction(site, found.init, params[expr.id])
    return evaluate(expr, site.source, site.lookup)


def _passed_at_construction(site, init: ast.FunctionDef, param) -> Value:
    """What the construction `site.call` passes for `__init__`'s parameter, or its default."""
    positional = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][1:]  # without self
    call = site.call
    for position, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return Value(False, (), source="*args")
        if position < len(positional) and positional[position] == param.name:
            return evaluate(arg, site.source, site.lookup)
    for keyword in call.keywords:
        if keyword.arg == param.name:
            return evaluate(keyword.value, site.source, site.lookup)
        if keyword.arg is None:
            return Value(False, (), source="**kwargs")
    if param.default is None:
        return Value(False, (), source=f"{site.subclass.node.name}.__init__")
    value = evaluate(param.default, site.source, site.lookup)
    return Value(value.known, value.candidates, value.source, True, value.node)
