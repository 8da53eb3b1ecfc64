"""Which function bodies port-check must parse: those that can hold a site or define what one needs.

A body is needed when its text (decorators to last line) names an API (API_SHORT_NAMES), the
project index's wrappers or API subclasses (`project_names`, in a later pass), `global` (it may
rebind a module name, which decides whether that name is a constant), or a name of this module
that leads to a site:

- a class whose bases name one (a subclass of an API: constructing it is a site), found here,
  and its `__init__` (what it passes to `super().__init__` is the API's arguments);
- a module-level name bound by a statement that names one (`up = F.interpolate`), and a wrapper
  defined in this module (its calls are sites): both known only once the kept code is parsed and
  scanned, so the caller adds them with `more_names` and asks again (checker.py);
- for a needed method, the methods of its class that assign a `self.` attribute it uses (a
  finding says where `self.mode` comes from; a class whose `__init__` keeps its `mode` parameter
  is a wrapper), and the methods that call a nearest-upsample layer it stores on `self` (CP116
  reads that layer's input there).

Every other body of a module-level function or of a method of a module-level class is left out
(outline.py). What a body left out calls in another module (a wrapper the first pass does not know
yet) is handled as for a file the first pass did not parse (engine.py): the result keeps the call
words of what was left out (`recheck_names`), and a later pass checks it again when a new wrapper's
name is among them.
tests/test_corpus_truth.py proves on the real corpus that the findings are those of a whole parse.
"""

from __future__ import annotations

import ast
import bisect
import re

from candle_port.analysis.apis import API_SHORT_NAMES
from candle_port.analysis.mentions import call_words, imported_words
from candle_port.analysis.outline import Outline, Unit
from candle_port.pipeline.prefilter import api_names

_SELF_ATTRIBUTE = re.compile(r"self\s*\.\s*([A-Za-z_]\w*)")
_BASES = re.compile(r"\bclass\s+\w+\s*\(([^)]*)\)")
_NAME = re.compile(r"[A-Za-z_]\w*")
# A bare call on a line that passes a `self.` attribute (`resize(x, self.size, None, self.mode)`):
# once the callee is a wrapper, the class may keep its mode on self (index._passed_parameter).
_BARE_CALL = re.compile(r"(?<![.\w])([A-Za-z_]\w*)\s*\(")
# `self.up = nn.Upsample(...)`: the methods calling `self.up(` decide its input's consumers (CP116).
_UPSAMPLE_LAYER = re.compile(r"self\s*\.\s*([A-Za-z_]\w*)\s*(?::[^=\n]*)?=\s*[\w.]*(?:Upsample|UpsamplingNearest2d)\s*\(")
_SELF_ASSIGNMENT = re.compile(r"self\s*\.\s*([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)")


class Relevance:
    """The needed units of one outline for a set of names, grown as names are found."""

    def __init__(self, outline: Outline, project_names=(), own_wrappers=()) -> None:
        self.outline = outline
        self.names: set[str] = set()
        self.needed: set[int] = set()  # ids of needed units (module-level defs and methods)
        self.module_hits: list[int] = []  # offsets of names in module-level code (not in a def)
        self._assigned: dict[int, set[str]] = {}  # method id -> `self.` attributes it assigns
        # A project name this module defines itself (and does not import): written bare, it is
        # this module's own function (torchvision's v2 `resize`, `affine`, ... in a file of 138
        # functions), whose callers the scan finds as local wrappers; only `.name` can be another's.
        project = frozenset(project_names)
        own = {u.name for u in outline.units} - imported_words(outline.text)
        attribute_only = (project & own) - API_SHORT_NAMES
        text = outline.text
        found: set[str] = set()
        for offset in _occurrences(text, attribute_only):
            if _after_dot(text, offset):
                found |= self._mark(offset)
        # This module's own wrappers, as an earlier pass found them (`own_wrappers`), count bare:
        # the skeleton then holds their callers at once, not after another parse.
        self.add(found | API_SHORT_NAMES | (project - attribute_only) | set(own_wrappers) | {"global"})

    def add(self, names) -> bool:
        """Mark what `names` make needed (wherever they are written); whether a unit became needed."""
        before = len(self.needed)
        pending = set(names) - self.names
        while pending:
            self.names |= pending
            found: set[str] = set()
            offsets = _occurrences(self.outline.text, pending - API_SHORT_NAMES)
            if pending & API_SHORT_NAMES:
                offsets += _api_occurrences(self.outline.text)
            for offset in offsets:
                found |= self._mark(offset)
            pending = found - self.names
        return len(self.needed) != before

    def left_out(self) -> list[Unit]:
        """The units whose bodies need not be parsed."""
        out = []
        for unit in self.outline.units:
            if unit.is_class:
                out.extend(m for m in unit.methods if m.body_line and id(m) not in self.needed)
            elif unit.body_line and id(unit) not in self.needed:
                out.append(unit)
        return out

    def _mark(self, offset: int) -> set[str]:
        unit, method = self.outline.unit_at(offset)
        if unit is None:
            self.module_hits.append(offset)
            return set()
        if method is not None:
            self._need_method(unit, method)
            return set()
        if not unit.is_class:
            self.needed.add(id(unit))
            return set()
        if not unit.body_line or self.outline.line_of(offset) < unit.body_line:
            # In its bases: a subclass of what the name stands for, whose `__init__` decides the
            # base's arguments (super_init.py).
            init = next((m for m in unit.methods if m.name == "__init__"), None)
            if init is not None:
                self._need_method(unit, init)
            return {unit.name}
        return set()  # a class-level statement: always parsed

    def _need_method(self, cls: Unit, method: Unit) -> None:
        if id(method) in self.needed:
            return
        self.needed.add(id(method))
        start, end = self.outline.span(method)
        used = set(_SELF_ATTRIBUTE.findall(self.outline.text, start, end))
        for layer in _UPSAMPLE_LAYER.findall(self.outline.text, start, end):
            call = re.compile(rf"self\s*\.\s*{layer}\s*\(")
            for sibling in cls.methods:
                if id(sibling) not in self.needed and call.search(self.outline.text, *self.outline.span(sibling)):
                    self._need_method(cls, sibling)
        if not used:
            return
        for sibling in cls.methods:
            if id(sibling) not in self.needed and self._assigns(sibling) & used:
                self.needed.add(id(sibling))

    def _assigns(self, method: Unit) -> set[str]:
        found = self._assigned.get(id(method))
        if found is None:
            start, end = self.outline.span(method)
            found = self._assigned[id(method)] = set(_SELF_ASSIGNMENT.findall(self.outline.text, start, end))
        return found


def more_names(relevance: Relevance, tree: ast.Module, wrappers) -> set[str]:
    """Names found once the kept code is parsed: what module-level statements naming a known name
    bind (`up = F.interpolate`, `from torch.nn.functional import interpolate as resize`), and the
    names this module's wrappers are called by (`wrappers`: their qualified names' last parts)."""
    names = set(wrappers)
    hits = sorted(relevance.outline.line_of(offset) for offset in relevance.module_hits)
    if hits:
        for statement in tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            i = bisect.bisect_left(hits, statement.lineno)
            if i < len(hits) and hits[i] <= (statement.end_lineno or statement.lineno):
                names |= _bound_names(statement, relevance.names)
    return names - relevance.names


def recheck_names(outline: Outline, left_out: list[Unit]) -> frozenset[str]:
    """The names that, once the project index says one is a wrapper's or an API subclass's name,
    may make a unit left out needed. Another module's wrapper or subclass is reached only through
    an import (mentions.py): the call words of the units left out (every word of the module's
    import statements; their `.name(` calls, with a star import their `name(` calls) and their
    classes' bases. A name they merely mention (kornia's `scale` as a variable) or call but define
    in this module (timm's 26 models each call their own `checkpoint_filter_fn`) sends no file back,
    unless it passes a `self.` attribute (the class may then keep a wrapper's mode on self)."""
    spans = [outline.span(unit) for unit in left_out]
    words = set(call_words(outline.text, spans))
    for start, end in spans:
        for bases in _BASES.findall(outline.text, start, end):
            words.update(_NAME.findall(bases))
        words.update(_self_passing_calls(outline.text, start, end))
    return frozenset(words)


def _self_passing_calls(text: str, start: int, end: int) -> set[str]:
    """The bare callees on the lines of `text[start:end]` that also pass a `self.` attribute."""
    found: set[str] = set()
    at = text.find("self.", start, end)
    while at != -1:
        line_start = text.rfind("\n", start, at) + 1
        line_end = text.find("\n", at, end)
        line_end = end if line_end == -1 else line_end
        found.update(_BARE_CALL.findall(text, max(line_start, start), line_end))
        at = text.find("self.", line_end, end)
    return found


def _occurrences(text: str, words) -> list[int]:
    """Where each of `words` is written as a whole identifier (a substring search per word: C
    speed, where one regex alternation of them tests every offset)."""
    out: list[int] = []
    for word in words:
        at = text.find(word)
        while at != -1:
            end = at + len(word)
            if not (at and _identifier_char(text[at - 1])) and not (end < len(text) and _identifier_char(text[end])):
                out.append(at)
            at = text.find(word, end)
    return out


def _api_occurrences(text: str) -> list[int]:
    """Where an API's name is written as a whole identifier (the prefilter's fragment search:
    15 substring searches rather than one per name, 57)."""
    return list({start for start, _end, _name in api_names(text)})


def _after_dot(text: str, offset: int) -> bool:
    """Whether the name at `offset` is an attribute (`x.name`, `x. name`)."""
    at = offset - 1
    while at >= 0 and text[at] in " \t":
        at -= 1
    return at >= 0 and text[at] == "."


def _identifier_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _bound_names(statement: ast.stmt, known: set[str]) -> set[str]:
    """Every name a module-level statement may bind to what it names: its targets, defs and
    classes, and the names it imports a known name as (`interpolate as up`)."""
    names: set[str] = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias) and node.name.rpartition(".")[2] in known:
            names.add(node.asname or node.name.partition(".")[0])
    return names
