"""Static values of call arguments: literals we can prove, and a description of those we cannot."""

from __future__ import annotations

import ast
import re
from itertools import accumulate

from candle_port.pipeline.records import Record

_LINE_END = re.compile(r"\r\n|\r|\n")


class Source:
    """A module's text, to show an `ast` node as it is written (ast columns are UTF-8 bytes)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts: list[int] | None = None

    @property
    def starts(self) -> list[int]:
        if self._starts is None:
            if "\r" in self.text:
                self._starts = [0] + [m.end() for m in _LINE_END.finditer(self.text)]
            else:  # the common case, summed by C loops: a line starts one past the previous line's end
                self._starts = list(accumulate(map((1).__add__, map(len, self.text.split("\n"))), initial=0))[:-1]
        return self._starts

    def offset(self, line: int, byte_col: int) -> int:
        starts = self.starts
        start = starts[line - 1]
        end = starts[line] if line < len(starts) else len(self.text)
        segment = self.text[start:end]
        if segment.isascii():
            return start + byte_col
        raw = segment.encode("utf-8", "surrogatepass")[:byte_col]
        return start + len(raw.decode("utf-8", "surrogatepass"))

    def column(self, line: int, byte_col: int) -> int:
        """The 0-based character column of an ast byte column."""
        return self.offset(line, byte_col) - self.starts[line - 1]

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def code(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]


def code_of(node: ast.AST, source: Source | None = None) -> str:
    if source is not None and getattr(node, "end_lineno", None) is not None:
        return source.code(node)
    try:
        return ast.unparse(node)
    except (ValueError, RecursionError, AttributeError):  # pragma: no cover - unparse of a deep tree
        return "<expression>"


class Value(Record):
    """An argument as far as static analysis can tell.

    `known` is true when every value the expression can take is in `candidates` (a literal, or a
    conditional expression whose branches are literals, or a name the project index decides:
    a module constant, an enum member's `.value`). `omitted` means the API default applies.
    """

    __slots__ = ("known", "candidates", "source", "omitted", "node")

    def __init__(self, known: bool, candidates: tuple = (), source: str = "", omitted: bool = False, node: ast.expr | None = None) -> None:
        self.known = known
        self.candidates = candidates
        self.source = source
        self.omitted = omitted
        self.node = node

    @property
    def single(self):
        return self.candidates[0] if self.known and len(self.candidates) == 1 else None


def omitted(default) -> Value:
    return Value(True, (default,), omitted=True)


def unknown_from_splat(source: str) -> Value:
    return Value(False, (), source=source)


TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:
    from typing import Callable

    # Decides a name or attribute (`_MODE`, `InterpolateMode.BILINEAR.value`): its literal values, or None.
    Lookup = Callable[[ast.expr], "list | None"]


def evaluate(node: ast.expr, source: Source | None = None, lookup: Lookup | None = None) -> Value:
    """The literal values `node` can take, or an unknown Value carrying its source text."""
    literals = literals_of(node, lookup)
    text = code_of(node, source)
    if literals is None:
        return Value(False, (), source=text, node=node)
    return Value(True, tuple(literals), source=text, node=node)


def literals_of(node: ast.expr, lookup: Lookup | None = None) -> list | None:
    if isinstance(node, ast.IfExp):
        body, orelse = literals_of(node.body, lookup), literals_of(node.orelse, lookup)
        if body is None or orelse is None:
            # Still report the literal branches: 'bilinear' if c else mode can be bilinear.
            return None
        return _unique(body + orelse)
    if isinstance(node, ast.Constant):
        return [node.value]
    if lookup is not None and isinstance(node, (ast.Name, ast.Attribute)):
        found = lookup(node)
        if found is not None:
            return found
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Lambda, ast.Compare, ast.BoolOp)):
        return None
    try:
        return [ast.literal_eval(node)]
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def partial_literals(node: ast.expr | None, lookup: Lookup | None = None) -> list:
    """The literal values among the branches of a conditional expression (even when others are not)."""
    out: list = []
    stack = [node]
    while stack:
        item = stack.pop()
        if item is None:
            continue
        if isinstance(item, ast.IfExp):
            stack.extend((item.orelse, item.body))
            continue
        out.extend(literals_of(item, lookup) or [])
    return _unique(out)


def _unique(values: list) -> list:
    out: list = []
    for value in values:
        if value not in out:
            out.append(value)
    return out
