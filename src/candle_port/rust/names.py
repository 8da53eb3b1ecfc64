"""What a path in a Rust file refers to: `use` declarations, and the crate's names for candle's
crates (cargo.CrateContext.renames), read from tree-sitter nodes, never from the text by pattern.

Scope is the file: a `use` inside a function or module counts for the whole file, and a function
the file defines hides a glob import of the same name. That is coarser than rustc's scopes and
errs towards resolving a name (a finding a human can dismiss) rather than losing one.
"""

from __future__ import annotations

CANDLE_CRATE_NAMES = frozenset({"candle_core", "candle_nn", "candle_transformers"})
# candle's own workspace, and crates built like it (candle-transformers), call candle-core `candle`.
DEFAULT_RENAMES = {"candle": "candle_core"}


def path_segments(node) -> list[str] | None:
    """`a::b::c` (scoped_identifier, identifier, crate/self/super) as its segments; None for a
    path through a generic type or anything else a call cannot be resolved through."""
    kind = node.type
    if kind in ("identifier", "type_identifier", "field_identifier"):
        return [node.text.decode("utf-8", "replace")]
    if kind in ("crate", "self", "super"):
        return [kind]
    if kind in ("scoped_identifier", "scoped_type_identifier"):
        name = node.child_by_field_name("name")
        head = node.child_by_field_name("path")
        if name is None:
            return None
        if head is None:
            return [name.text.decode("utf-8", "replace")]  # `::candle_nn::...`
        before = path_segments(head)
        return None if before is None else before + [name.text.decode("utf-8", "replace")]
    if kind == "generic_type":
        inner = node.child_by_field_name("type")
        return path_segments(inner) if inner is not None else None
    return None


class Names:
    """The `use` bindings of one file: local name -> path, the glob-imported modules, and the
    functions the file defines itself."""

    __slots__ = ("bindings", "globs", "local_functions", "renames")

    def __init__(self, renames: dict[str, str]) -> None:
        self.bindings: dict[str, list[str]] = {}
        self.globs: list[list[str]] = []
        self.local_functions: set[str] = set()
        self.renames = {**DEFAULT_RENAMES, **renames}

    def add_use(self, argument, prefix: list[str] | None = None) -> None:
        """Record one `use` tree (the use_declaration's argument)."""
        prefix = prefix or []
        kind = argument.type
        if kind == "use_as_clause":
            path = argument.child_by_field_name("path")
            alias = argument.child_by_field_name("alias")
            segments = path_segments(path) if path is not None else None
            if segments is not None and alias is not None:
                self.bindings[alias.text.decode("utf-8", "replace")] = prefix + segments
        elif kind == "scoped_use_list":
            path = argument.child_by_field_name("path")
            inner = argument.child_by_field_name("list")
            segments = path_segments(path) if path is not None else []
            if segments is not None and inner is not None:
                for item in inner.named_children:
                    self.add_use(item, prefix + segments)
        elif kind == "use_list":
            for item in argument.named_children:
                self.add_use(item, prefix)
        elif kind == "use_wildcard":
            inner = argument.named_children[0] if argument.named_children else None
            segments = path_segments(inner) if inner is not None else []
            if segments is not None:
                self.globs.append(prefix + segments)
        else:
            segments = path_segments(argument)
            if segments is None:
                return
            full = prefix + segments
            if full[-1] == "self":  # `use candle_nn::{self, ops}`
                full = full[:-1]
            if full:
                self.bindings[full[-1]] = full

    def canonical(self, segments: list[str]) -> list[str]:
        """`segments` with the first one expanded through `use` (a few levels: `use candle_nn as
        nn; use nn::ops;`) and crate renames."""
        for _ in range(8):
            if not segments or segments[0] not in self.bindings:
                break
            expanded = self.bindings[segments[0]]
            if not expanded or expanded[0] == segments[0]:
                segments = expanded + segments[1:]
                break
            segments = expanded + segments[1:]
        if not segments:
            return segments
        return [self.renames.get(segments[0], segments[0]), *segments[1:]]

    def resolve_bare(self, name: str, known: frozenset[str]) -> list[str] | None:
        """A bare function name: its `use` binding, else (unless the file defines it) the one glob
        import through which it is a known candle path."""
        if name in self.bindings:
            return self.canonical([name])
        if name in self.local_functions:
            return None
        for module in self.globs:
            candidate = self.canonical(module + [name])
            if "::".join(candidate) in known:
                return candidate
        return None

    def mentions_candle(self) -> bool:
        """Whether any `use` of the file names one of candle's crates (method names such as
        `max_pool2d` are then read as candle's Tensor methods)."""
        paths = list(self.bindings.values()) + self.globs
        return any(self.canonical(path[:1])[0] in CANDLE_CRATE_NAMES for path in paths if path)
