"""Which files the second pass must parse: those whose text can call a project wrapper.

A file that names no API is parsed again only when a wrapper defined in another module may be
called there. Such a call resolves only through an import (the analysis never infers types), so
the text must show one of:

* `fn(` with `fn` written in an import statement (`from .affwarp import resize`), or imported
  under another name (`resize as r`), or a star import;
* `.fn(`: an attribute of an imported module (`K.geometry.resize(`), with an import statement
  whose module (a relative one resolved against the file's package) is `fn`'s gateway or a
  package above one: a module that defines or re-exports `fn`, or reaches one by a module alias
  or a star import (`import kornia as K`; PIL's `image.resize(` in a file that imports no such
  module sent 77 corpus files to the parser, and about 50 more while the modules' words were compared
  instead: `from ..models import UNet` in diffusers met kornia's `models/_hf_models/...`), or
  for a method wrapper `Class.meth`, `.meth(` with `Class` imported or reached as an attribute.
  A star import, `importlib`, `__import__` or an import the text does not resolve (a relative one
  above the package, a `from` clause continued over a backslash) lets every `.fn(` through.

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
    method); `gateways` (not compared): for each function, the modules through which `.fn(` may
    reach it (`for_names`); `aliases` (not compared): the project's imports, to follow a file's
    imported module through them. `.fn(` can call it only on a module imported by a statement
    whose module is among the gateways or reaches one."""

    __slots__ = ("functions", "methods", "gateways", "aliases")
    _uncompared = frozenset({"gateways", "aliases"})

    def __init__(self, functions: frozenset[str], methods: frozenset[tuple[str, str]], gateways: dict | None = None) -> None:
        self.functions = functions
        self.methods = methods
        self.gateways = {} if gateways is None else gateways
        self.aliases: dict[str, list[str]] = {}  # for_names' aliases, by the alias

    @classmethod
    def for_names(cls, qualified: list[tuple[str, str]], aliases: list[tuple[str, str]] = ()) -> "WrapperCallFilter":
        """From (module, qualified wrapper name) pairs: the module that defines the wrapper or
        re-exports it under that name; and the project's module-level (alias, target) imports
        (`pkg.api.geometry` -> `pkg.geometry` for `from pkg import geometry` in pkg/api.py) and
        star imports (`pkg` -> `pkg.ops` for `from .ops import *` in pkg/__init__.py).

        A function's gateways are the modules M for which the index can resolve `M.fn` to it:
        those of the pairs, then through the aliases (ProjectIndex._split follows an import, a
        star import, and a package above the module that defines the name)."""
        functions: set[str] = set()
        methods: set[tuple[str, str]] = set()
        gateways: dict[str, set[str]] = {}
        for module, name in qualified:
            rest = name[len(module) + 1:].split(".") if name.startswith(module + ".") else name.rsplit(".", 1)[-1:]
            if len(rest) >= 2:
                methods.add((rest[-2], rest[-1]))
            else:
                functions.add(rest[-1])
                gateways.setdefault(rest[-1], set()).add(module)
        by_target: dict[str, list[str]] = {}
        by_name: dict[str, dict[str, list[str]]] = {}  # `S.name -> X.name`: by name, X -> [S]
        for alias, target in aliases:
            by_target.setdefault(target, []).append(alias)
            source, _, last = alias.rpartition(".")
            if target.endswith("." + last) and source:
                by_name.setdefault(last, {}).setdefault(target[: -len(last) - 1], []).append(source)
        found = cls(
            frozenset(functions),
            frozenset(methods),
            {name: _reachable(modules, by_target, by_name.get(name, {})) for name, modules in gateways.items()},
        )
        found.aliases = {}
        for alias, target in aliases:
            found.aliases.setdefault(alias, []).append(target)
        return found

    def short_names(self) -> set[str]:
        return set(self.functions) | {method for _, method in self.methods}

    def may_call(self, text: str, package: str | None = None) -> bool:
        """Two cheap scans of `text` (its import statements, its `.name(` calls), then set lookups;
        for a `.name(` call of a function, the modules of its import statements (`package`: the
        file's, for its relative imports; None: not known, so a relative import lets it through)."""
        words = imported_words(text)
        star = "*" in words
        for name in self.functions & words:  # imported by name: called under it or under an alias
            if f"{name} as " in text or re.search(r"(?<![\w.])%s\s*\(" % re.escape(name), text):
                return True
        attribute_calls = set(_ATTRIBUTE_CALL.findall(text)) if "." in text else set()
        called = self.functions & attribute_calls
        if called:  # `K.geometry.resize(`, not `image.resize(`
            modules = imported_modules(text, package)
            for name in called:
                gateways = self.gateways.get(name)
                if modules is None or gateways is None or any(self._reaches(m, gateways, 0) for m in modules):
                    return True
        for owner, method in self.methods:
            if method in attribute_calls and (owner in words or star or f".{owner}" in text):
                return True
        if star:
            return any(re.search(r"(?<![\w.])%s\s*\(" % re.escape(name), text) for name in self.functions if name in text)
        return False

    def _reaches(self, module: str, gateways: frozenset[str], depth: int) -> bool:
        """Whether `module` is among `gateways` (_reachable), or is under an alias whose target,
        with the rest of `module`, is (`M.x.y` for `M.x -> T`: `T.y`), as _split follows it."""
        if module in gateways:
            return True
        if depth > _MAX_ALIAS_HOPS or not self.aliases:
            return False
        prefix = module.rpartition(".")[0]
        while prefix:
            for target in self.aliases.get(prefix, ()):
                if self._reaches(target + module[len(prefix):], gateways, depth + 1):
                    return True
            prefix = prefix.rpartition(".")[0]
        return False


# Aliases followed from a file's imported module (ProjectIndex._split follows 8; more is safe).
_MAX_ALIAS_HOPS = 16


def _reachable(modules: set[str], by_target: dict[str, list[str]], reexports: dict[str, list[str]]) -> frozenset[str]:
    """Every module M such that `M.<attributes>.name` may resolve to the `name` defined or
    re-exported in one of `modules` (ProjectIndex._split): those modules and every package above
    them (a package whose `__init__` the index has not summarized re-exports a name defined below
    it); then, to a fixed point, a module with an import `M.x -> T` (or a star import `M -> T`)
    of such a T, and every package above it; and `S` for `S.name -> X.name` (`reexports`: X -> [S])
    with X such a module. A module reached through an alias of one of its packages
    (`M.x.y` for `M.x -> T` with `T.y` in the set) is found when a file's import is tested
    (WrapperCallFilter._reaches), not listed here: a module that imports its own package would
    make those paths endless."""
    found: set[str] = set()
    work = list(modules)
    while work:
        module = work.pop()
        while module and module not in found:
            found.add(module)
            work.extend(by_target.get(module, ()))
            work.extend(reexports.get(module, ()))
            module = module.rpartition(".")[0]
    return frozenset(found)


_STATEMENT_HEAD = re.compile(r"(?:\A|[;:])[ \t]*(?:from[ \t]+([.\w][.\w \t]*?)[ \t]+)?\Z")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z")
_COMMENT = re.compile(r"#[^\n]*")


def imported_modules(text: str, package: str | None) -> set[str] | None:
    """The modules the import statements of `text` bind a name to, as the analysis resolves them:
    `import a.b` -> `a`, `import a.b as c` -> `a.b`, `from .m import x` in package `p` -> `p.m.x`.
    None when the text may bind one the statements do not show: a star import, `importlib`,
    `__import__`, a relative import that cannot be resolved, a statement continued from the line
    before by a backslash. Lines that only look like imports (in a docstring) add modules, which
    only lets more files through."""
    if "importlib" in text or "__import__" in text:
        return None
    modules: set[str] = set()
    at = text.find("import")
    while at != -1:
        after = at + 6
        line_start = text.rfind("\n", 0, at) + 1
        head = text[line_start:at]
        match = _STATEMENT_HEAD.search(head) if text[after:after + 1] in (" ", "\t", "(", "\\") else None
        if match is not None:
            if text[line_start - 2:line_start] == "\\\n" or text[line_start - 3:line_start] == "\\\r\n":
                return None  # `from a \` + `import b`: the module is on the line before
            end = text.find("\n", after)
            end = len(text) if end == -1 else end
            body = text[after:end]
            if "(" in body and ")" not in body:
                close = text.find(")", after)
                end = len(text) if close == -1 else close
            else:
                while text[end - 1:end] == "\\" or text[end - 2:end] == "\\\r":  # backslash continuation
                    more = text.find("\n", end + 1)
                    end = len(text) if more == -1 else more
                    if more == -1:
                        break
            body = _COMMENT.sub("", text[after:end]).split(";", 1)[0]
            body = body.replace("\\", " ").replace("(", " ").replace(")", " ")
            source = match.group(1)
            if source is not None:
                source = "".join(source.split())
                dots = len(source) - len(source.lstrip("."))
                base = _absolute(dots, source[dots:], package)
                if base is None:
                    return None
            for item in body.split(","):
                words = item.split()
                if not words:
                    continue
                if words[0] == "*":
                    return None
                if not _DOTTED.match(words[0]) or not (len(words) == 1 or (len(words) == 3 and words[1] == "as")):
                    continue  # not an import (prose in a docstring)
                if source is not None:
                    modules.add(f"{base}.{words[0]}" if base else words[0])
                else:
                    modules.add(words[0] if len(words) == 3 else words[0].split(".", 1)[0])
        at = text.find("import", after)
    return modules


def _absolute(level: int, module: str, package: str | None) -> str | None:
    """A `from` clause's module made absolute as names.ScopeBuilder does; None when it cannot be."""
    if not level:
        return module
    parts = package.split(".") if package else []
    if not parts or level - 1 >= len(parts):
        return None
    return ".".join(parts[: len(parts) - (level - 1)] + ([module] if module else []))


# `.name(`: a call of an attribute (a module's function, a class's method); spaces allowed.
_ATTRIBUTE_CALL = re.compile(r"\.\s*([A-Za-z_]\w*)\s*\(")
# `name(`: a bare call.
_BARE_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")
