"""Where a file tells a layer's class apart: a class swap must not change what those checks answer.

The runtime strategy swaps `nn.Conv3d(...)` for `candle_runtime.Conv3d(...)`, a subclass: every
`isinstance(m, nn.Conv3d)` still holds, but `type(m) == nn.Conv3d` (or `is`, or `m.__class__ in
(...)`) becomes false and a dict keyed by the class (`INIT[type(m)]`) raises KeyError. A strategy
whose replacement is not a subclass (convtranspose: ConvTransposeUpsample is an nn.Module) also
breaks `isinstance` and `issubclass`. The fixer refuses a class swap where the same file checks
the class in a way the swap would change; checks in other files are not seen (docs/port-fix.md).
"""

from __future__ import annotations

import ast

from candle_port.analysis.names import ast_dotted


class ClassChecks:
    """The expressions of one module that name a class in an exact-type check or an isinstance check."""

    def __init__(self, tree: ast.Module) -> None:
        self.exact: list[ast.expr] = []
        self.instance: list[ast.expr] = []
        assigned = _top_level_values(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                self._compare(node, assigned)
            elif isinstance(node, ast.Dict):
                self.exact.extend(key for key in node.keys if key is not None)  # a dict keyed by class
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 2:
                if node.func.id in ("isinstance", "issubclass"):
                    self.instance.extend(_elements(node.args[1], assigned))

    def _compare(self, node: ast.Compare, assigned: dict[str, ast.expr]) -> None:
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands, operands[1:]):
            if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
                if _is_type_of(left):
                    self.exact.append(right)
                elif _is_type_of(right):
                    self.exact.append(left)
            elif isinstance(op, (ast.In, ast.NotIn)) and _is_type_of(left):
                self.exact.extend(_elements(right, assigned))

    def refusal(self, site, subclass_replacement: bool = True) -> str | None:
        """Why swapping the site's class would change a check in this file; None when none would."""
        name = site.api.name
        if any(_names_api(expr, site) for expr in self.exact):
            return (
                f"this file checks the exact class nn.{name} (`type(m) == nn.{name}`, `is`, `in`, or a dict keyed by it); "
                "the replacement is a subclass, so that check would change: rewrite it as isinstance, or fix by hand"
            )
        if not subclass_replacement and any(_names_api(expr, site) for expr in self.instance):
            return f"this file checks isinstance/issubclass against nn.{name}, which the replacement is not: fix by hand"
        return None


def _is_type_of(node: ast.expr) -> bool:
    """`type(x)` or `x.__class__`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type" and len(node.args) == 1:
        return True
    return isinstance(node, ast.Attribute) and node.attr == "__class__"


def _top_level_values(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level `NAME = <value>`: a tuple of classes named once and checked with `in NAME`."""
    values: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = node.value
    return values


def _elements(node: ast.expr, assigned: dict[str, ast.expr]) -> list[ast.expr]:
    if isinstance(node, ast.Name) and node.id in assigned:
        node = assigned[node.id]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return list(node.elts)
    if isinstance(node, ast.Dict):
        return [key for key in node.keys if key is not None]
    return [node]


def _names_api(expr: ast.expr, site) -> bool:
    """Whether `expr` names the site's API class: resolved in the module scope, or written as at the site."""
    if not isinstance(expr, (ast.Name, ast.Attribute)):
        return False
    try:
        if site.qualified_name in site.resolver.qualified_names(expr, site.scope.module()):
            return True
    except (AttributeError, TypeError):
        pass
    callee = site.call.func if isinstance(site.call, ast.Call) else None
    return callee is not None and ast_dotted(callee) is not None and ast_dotted(callee) == ast_dotted(expr)
