"""Which files the second pass must parse: those whose text can call a project wrapper.

A file that names no API is parsed again only when a wrapper defined in another module may be
called there. Such a call resolves only through an import (the analysis never infers types), so
the text must show one of:

* `fn(` with `fn` written in an import statement (`from .affwarp import resize`), or imported
  under another name (`resize as r`), or a star import;
* `.fn(`: an attribute of an imported module (`K.geometry.resize(`), with an import statement that
  names a part of a module defining or re-exporting `fn` (`import kornia as K`: PIL's
  `image.resize(` in a file that imports no such module sent 77 corpus files to the parser), or
  for a method wrapper `Class.meth`, `.meth(` with `Class` imported or reached as an attribute.

Checking the import words, not just `fn(`, keeps common names (`resize`, `scale`, `preprocess`)
from sending every file that defines its own function of that name to the parser (on the dev
corpus: 214 files parsed for nothing before). tests/test_check_mentions.py has the cases.
"""

from __future__ import annotations

import re

from candle_port.pipeline.records import Record

_HEAD = re.compile(r"[ \t]*(?:from[ \t]+[.\w]+[ \t]+)?\Z")  # what may precede `import` on its line
_WORD = re.compile(r"[A-Za-z_]\w*")


def imported_words(text: str) -> set[str]:
    """Every identifier written in an import statement of `text` (module parts, names, aliases).

    Found from each `import` substring (a few per file) rather than by a regex over every line."""
    words: set[str] = set()
    at = text.find("import")
    while at != -1:
        line_start = text.rfind("\n", 0, at) + 1
        head = text[line_start:at]
        after = at + 6
        if _HEAD.match(head) and text[after:after + 1] in (" ", "\t"):
            end = text.find("\n", after)
            end = len(text) if end == -1 else end
            body = text[after:end]
            if "(" in body and ")" not in body:
                close = text.find(")", after)
                end = len(text) if close == -1 else close
            else:
                while text[end - 1:end] == "\\" and end < len(text):  # backslash continuation
                    more = text.find("\n", end + 1)
                    end = len(text) if more == -1 else more
            words.update(_WORD.findall(text, after, end))
            words.update(_WORD.findall(head))
            if "*" in text[after:end]:
                words.add("*")
        at = text.find("import", after)
    return words


def call_words(text: str, spans=None) -> frozenset[str]:
    """The names `text` could call a wrapper of another module by: every word of its import
    statements, every `.name(` attribute call, and with a star import every `name(` call.
    `may_call` is true only for a name among these, so a file whose words meet no wrapper's name
    need not be read again when the wrappers are known. `spans`: the (start, end) offsets whose
    calls count (the parts of a file not analysed); the import statements count everywhere."""
    words = imported_words(text)
    star = "*" in words  # a star import can bring any name: every name called bare
    for start, end in spans if spans is not None else [(0, len(text))]:
        words.update(_ATTRIBUTE_CALL.findall(text, start, end))
        if star:
            words.update(_BARE_CALL.findall(text, start, end))
    return frozenset(words)


class WrapperCallFilter(Record):
    """The textual test for "may call one of these wrappers", built once per index.

    `functions`: module-level functions and classes (the called name); `methods`: (Class,
    method); `gateways` (not compared): for each function, the parts of the modules that define
    or re-export it. `.fn(` can call it only on a module imported by a statement that names one
    of them (`import kornia as K`)."""

    __slots__ = ("functions", "methods", "gateways")
    _uncompared = frozenset({"gateways"})

    def __init__(self, functions: frozenset[str], methods: frozenset[tuple[str, str]], gateways: dict | None = None) -> None:
        self.functions = functions
        self.methods = methods
        self.gateways = {} if gateways is None else gateways

    @classmethod
    def for_names(cls, qualified: list[tuple[str, str]]) -> "WrapperCallFilter":
        """From (module, qualified wrapper name) pairs: the module that defines the wrapper or
        re-exports it under that name."""
        functions: set[str] = set()
        methods: set[tuple[str, str]] = set()
        gateways: dict[str, set[str]] = {}
        for module, name in qualified:
            rest = name[len(module) + 1:].split(".") if name.startswith(module + ".") else name.rsplit(".", 1)[-1:]
            if len(rest) >= 2:
                methods.add((rest[-2], rest[-1]))
            else:
                functions.add(rest[-1])
                gateways.setdefault(rest[-1], set()).update(module.split("."))
        return cls(frozenset(functions), frozenset(methods), {name: frozenset(parts) for name, parts in gateways.items()})

    def short_names(self) -> set[str]:
        return set(self.functions) | {method for _, method in self.methods}

    def may_call(self, text: str) -> bool:
        """Two cheap scans of `text` (its import statements, its `.name(` calls), then set lookups."""
        words = imported_words(text)
        star = "*" in words
        for name in self.functions & words:  # imported by name: called under it or under an alias
            if f"{name} as " in text or re.search(r"(?<![\w.])%s\s*\(" % re.escape(name), text):
                return True
        attribute_calls = set(_ATTRIBUTE_CALL.findall(text)) if "." in text else set()
        for name in self.functions & attribute_calls:  # `K.geometry.resize(`, not `image.resize(`
            if name not in self.gateways or self.gateways[name] & words:
                return True
        for owner, method in self.methods:
            if method in attribute_calls and (owner in words or star or f".{owner}" in text):
                return True
        if star:
            return any(re.search(r"(?<![\w.])%s\s*\(" % re.escape(name), text) for name in self.functions if name in text)
        return False


# `.name(`: a call of an attribute (a module's function, a class's method); spaces allowed.
_ATTRIBUTE_CALL = re.compile(r"\.\s*([A-Za-z_]\w*)\s*\(")
# `name(`: a bare call.
_BARE_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")
