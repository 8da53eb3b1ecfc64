"""A module's functions and methods found in its text, and the module with chosen ones left out.

Parsing is most of port-check's time on a small package, and most of a model file is functions
that name no API. The outline finds, without parsing, every module-level `def` and `class` (with
its decorators) and every method of such a class: where it starts, where its header ends and its
body starts, where it ends. `Outline.skeleton` is the text with chosen functions replaced by a
stub (`def name(): pass` on the def line, blank lines for their decorators, header and body), so
the name is still bound, every kept line keeps its number and its columns, and CPython's parser
reads only what is kept.

The outline reads lines, not tokens: a statement starts on a line whose first character is at the
unit's indentation, outside a string (prefilter.CodeOffsets knows where strings and comments are),
not after a backslash and not inside a header or decorator whose brackets are still open. What it
cannot read for sure (a lone carriage return, brackets that do not balance in a header) gives no
outline, and `Outline.matches` checks the parsed skeleton: each function left out must come back
as its stub at its line, otherwise the caller parses the whole text. What is left out is not
parsed, so a syntax error there is not reported (Python reports it when the module is imported;
port-fix parses a file whole).
"""

from __future__ import annotations

import ast
import bisect
import re

from candle_port.analysis.values import Source
from candle_port.pipeline.prefilter import CodeOffsets

_STATEMENT_AT_COLUMN_0 = re.compile(r"^[^\s#]", re.M)
_INDENTED_STATEMENT = re.compile(r"^([ \t]+)[^\s#]", re.M)
_DEF = re.compile(r"(?:async[ \t]+)?def[ \t]")
_CLASS = re.compile(r"class[ \t]")
_NAME = re.compile(r"(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)")
# Characters CPython reads as whitespace or as no line break where `^` or an indentation test
# here could misread a line (a form feed may sit in an indentation): such a text, like one with
# a lone "\r", gets no outline and is parsed whole.
# (A string, not a regex: a character class with non-ASCII members costs 0.5 ms to compile.)
_ODD_WHITESPACE = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_HEADER_TOKENS = re.compile(r"[()\[\]{}\n]")
_OPEN = "([{"


class Unit:
    """A module-level def or class, or a method of a module-level class (1-based line numbers).

    `first_line`: its first decorator, or the def line; `body_line`: the first line of its body,
    0 when the body shares the header's last line; `last_line`: the last line before the next
    statement at its indentation (or the end)."""

    __slots__ = ("name", "first_line", "def_line", "body_line", "last_line", "indent", "is_class", "methods")

    def __init__(
        self, name: str, first_line: int, def_line: int, body_line: int, last_line: int, indent: str, is_class: bool = False
    ) -> None:
        self.name = name
        self.first_line = first_line
        self.def_line = def_line
        self.body_line = body_line
        self.last_line = last_line
        self.indent = indent
        self.is_class = is_class
        self.methods: list[Unit] = []


class Outline:
    """The units of one module's text, and the offsets that map text positions to them."""

    def __init__(self, text: str, line_starts: list[int], units: list[Unit]) -> None:
        self.text = text
        self.line_starts = line_starts
        self.units = units
        self._unit_lines = [u.first_line for u in units]

    @staticmethod
    def of(text: str) -> "Outline | None":
        """The outline of `text`, or None when its lines cannot be read for sure."""
        if "\r" in text and text.count("\r") != text.count("\r\n"):
            return None  # a lone carriage return ends a line for CPython, not for `^` below
        if any(character in text for character in _ODD_WHITESPACE):
            return None  # a form feed may sit in an indentation
        starts = Source(text).starts
        reader = _Reader(text, starts)
        units = reader.units_at("", 0, len(text))
        if units is None:
            return None
        for unit in units:
            if unit.is_class and unit.body_line:
                unit.methods = reader.methods_of(unit) or []
        return Outline(text, starts, units)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset)

    def unit_at(self, offset: int) -> tuple[Unit | None, Unit | None]:
        """(module-level unit, method) holding `offset`; (None, None) in other module code."""
        line = self.line_of(offset)
        i = bisect.bisect_right(self._unit_lines, line) - 1
        if i < 0 or line > self.units[i].last_line:
            return None, None
        unit = self.units[i]
        for method in unit.methods:
            if method.first_line <= line <= method.last_line:
                return unit, method
        return unit, None

    def span(self, unit: Unit) -> tuple[int, int]:
        """(start, end) offsets of a unit's text."""
        end = self.line_starts[unit.last_line] if unit.last_line < len(self.line_starts) else len(self.text)
        return self.line_starts[unit.first_line - 1], end

    def skeleton(self, left_out: list[Unit]) -> str:
        """The text with each unit of `left_out` (decorators, header and body) replaced by a stub,
        `def name(): pass` on its def line, and blank lines: the name is still bound there."""
        pieces: list[str] = []
        at = 0
        for unit in sorted(left_out, key=lambda u: u.first_line):
            start, end = self.span(unit)
            pieces.append(self.text[at:start])
            before = unit.def_line - unit.first_line
            after = unit.last_line - unit.def_line
            if not (end < len(self.text) or self.text.endswith("\n")):
                after -= 1  # the unit ends the file without a line break
            pieces.append("\n" * before + f"{unit.indent}def {unit.name}(): pass" + "\n" * (after + 1 if after >= 0 else 0))
            at = end
        pieces.append(self.text[at:])
        return "".join(pieces)

    def matches(self, tree: ast.Module, left_out: list[Unit]) -> bool:
        """Whether the parsed skeleton has each left-out unit's stub where the outline put it."""
        wanted = {u.def_line: u for u in left_out}
        found = 0
        for statement in tree.body:
            nodes = [statement]
            if isinstance(statement, ast.ClassDef):
                nodes.extend(statement.body)
            for node in nodes:
                unit = wanted.get(getattr(node, "lineno", 0))
                if unit is None or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                body = node.body
                if node.name != unit.name or len(body) != 1 or not isinstance(body[0], ast.Pass) or body[0].lineno != unit.def_line:
                    return False
                found += 1
        return found == len(left_out)


class _Reader:
    """Finds statements at one indentation, and headers' ends, in a text read once for strings."""

    def __init__(self, text: str, starts: list[int]) -> None:
        self.text = text
        self.starts = starts
        self.code = CodeOffsets(text)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def statement_starts(self, indent: str, start: int, end: int) -> list[int]:
        """Offsets of the lines in [start, end) that begin a statement at exactly `indent`."""
        text = self.text
        if indent:
            pattern = re.compile(r"^" + re.escape(indent) + r"[^\s#]", re.M)
        else:
            pattern = _STATEMENT_AT_COLUMN_0
        out = []
        for match in pattern.finditer(text, start, end):
            at = match.start()
            if at and not self.code.holds(at - 1):
                continue  # the line break before it is inside a string
            if at >= 2 and text[at - 2] == "\\" or at >= 3 and text[at - 3 : at - 1] == "\\\r":
                continue  # a backslash continuation
            out.append(at)
        return out

    def units_at(self, indent: str, start: int, end: int) -> list[Unit] | None:
        """The defs and classes among the statements at `indent` in [start, end)."""
        text = self.text
        statements = self.statement_starts(indent, start, end)
        last_line = self.line_of(end - 1) if end > start else self.line_of(start)
        units: list[Unit] = []
        decorators: list[int] = []
        after = start  # candidates before this offset continue a header or a decorator
        for k, at in enumerate(statements):
            if at < after:
                continue
            head = at + len(indent)
            if text.startswith("@", head):
                decorators.append(at)
                after = self.body_start(at)  # a decorator may span lines: `@register(\n...\n)`
                if after is None:
                    return None
                continue
            first = decorators[0] if decorators else at
            decorators = []
            is_def = _DEF.match(text, head) is not None
            if not is_def and _CLASS.match(text, head) is None:
                continue
            name = _NAME.match(text, head)
            body = self.body_start(at)
            if name is None or body is None:
                return None
            after = body
            following = next((s for s in statements[k + 1 :] if s >= body), None)
            last = self.line_of(following) - 1 if following is not None else last_line
            body_line = self.line_of(body) if body < len(text) else 0
            if body_line > last:
                body_line = 0  # a one-line def: `def f(): pass`
            units.append(Unit(name.group(1), self.line_of(first), self.line_of(at), body_line, last, indent, not is_def))
        return units

    def methods_of(self, cls: Unit) -> list[Unit] | None:
        """The methods of a class (defs at the indentation of its first body statement)."""
        start = self.starts[cls.body_line - 1]
        end = self.starts[cls.last_line] if cls.last_line < len(self.starts) else len(self.text)
        match = _INDENTED_STATEMENT.search(self.text, start, end)
        while match is not None and not self.code.holds(match.start() - 1):
            match = _INDENTED_STATEMENT.search(self.text, match.end(), end)
        if match is None:
            return []
        units = self.units_at(match.group(1), match.start(), end)
        return [u for u in units or () if not u.is_class]

    def body_start(self, at: int) -> int | None:
        """The offset of the line after a def's or class's header (None: brackets do not balance)."""
        depth = 0
        for match in _HEADER_TOKENS.finditer(self.text, at):
            char = match.group()
            pos = match.start()
            if char == "\n":
                if depth == 0 and self.code.holds(pos) and not self.text.startswith("\\", pos - 1) and not self.text.startswith("\\\r", pos - 2):
                    return pos + 1
                continue
            if not self.code.holds(pos):
                continue
            depth += 1 if char in _OPEN else -1
            if depth < 0:
                return None
        return len(self.text) if depth == 0 else None
