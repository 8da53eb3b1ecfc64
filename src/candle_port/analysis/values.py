"""Static values of call arguments: literals we can prove, and a description of those we cannot."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

_EMPTY_MODULE = cst.Module(body=[])


def code_of(node: cst.CSTNode) -> str:
    return _EMPTY_MODULE.code_for_node(node)


@dataclass(frozen=True)
class Value:
    """An argument as far as static analysis can tell.

    `known` is true when every value the expression can take is in `candidates` (a literal, or a
    conditional expression whose branches are literals). `omitted` means the API default applies.
    """

    known: bool
    candidates: tuple = ()
    source: str = ""
    omitted: bool = False
    node: cst.BaseExpression | None = None

    @property
    def single(self):
        return self.candidates[0] if self.known and len(self.candidates) == 1 else None


def omitted(default) -> Value:
    return Value(True, (default,), omitted=True)


def unknown_from_splat(source: str) -> Value:
    return Value(False, (), source=source)


def evaluate(node: cst.BaseExpression) -> Value:
    """The literal values `node` can take, or an unknown Value carrying its source text."""
    literals = _literals(node)
    source = code_of(node)
    if literals is None:
        return Value(False, (), source=source, node=node)
    return Value(True, tuple(literals), source=source, node=node)


def _literals(node: cst.BaseExpression) -> list | None:
    if isinstance(node, cst.IfExp):
        body, orelse = _literals(node.body), _literals(node.orelse)
        if body is None or orelse is None:
            # Still report the literal branches: 'bilinear' if c else mode can be bilinear.
            return None
        return _unique(body + orelse)
    try:
        return [ast.literal_eval(code_of(node).strip())]
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def partial_literals(node: cst.BaseExpression | None) -> list:
    """The literal values among the branches of a conditional expression (even when others are not)."""
    if node is None:
        return []
    if isinstance(node, cst.IfExp):
        return _unique(partial_literals(node.body) + partial_literals(node.orelse))
    values = _literals(node)
    return values or []


def _unique(values: list) -> list:
    out: list = []
    for value in values:
        if value not in out:
            out.append(value)
    return out
