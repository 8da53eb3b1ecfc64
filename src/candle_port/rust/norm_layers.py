"""port-fix's move of candle-nn's LayerNorm and RmsNorm layers to candle-port-ops' norm module.

candle-nn's layers take the fused, gradient-less kernels in their forward (CP202), and no
candle-nn call builds one that does not. candle-port-ops' `norm` module has the same layers,
constructors and configuration (`LayerNorm`, `RmsNorm`, `layer_norm`, `layer_norm_no_bias`,
`rms_norm`, `LayerNormConfig`), with a forward candle differentiates. A layer is a type as well as
a call: its struct fields and signatures name it, so the move is by name, through the whole file:

- `use` items that import one of them from candle-nn leave candle-nn's list (the line when it
  empties) and are imported from `candle_port_ops::norm` on a line of their own beside it, so
  every bare `LayerNorm` or `layer_norm(..)` below follows;
- a full path (`candle_nn::LayerNorm`, `candle_nn::layer_norm(..)`, `layer_norm::LayerNorm`
  through `use candle_nn::layer_norm`) is written `candle_port_ops::norm::...`.

Types must agree across files, so run port-fix on the whole crate: a layer built in one file and
stored in another's field moves in both.
"""

from __future__ import annotations

from candle_port.rust.names import Names, path_segments

TARGET = "candle_port_ops::norm"
# candle-nn's path -> the name in candle_port_ops::norm.
MOVED = {
    "candle_nn::LayerNorm": "LayerNorm",
    "candle_nn::layer_norm::LayerNorm": "LayerNorm",
    "candle_nn::RmsNorm": "RmsNorm",
    "candle_nn::layer_norm::RmsNorm": "RmsNorm",
    "candle_nn::layer_norm": "layer_norm",
    "candle_nn::layer_norm::layer_norm": "layer_norm",
    "candle_nn::layer_norm_no_bias": "layer_norm_no_bias",
    "candle_nn::layer_norm::layer_norm_no_bias": "layer_norm_no_bias",
    "candle_nn::rms_norm": "rms_norm",
    "candle_nn::layer_norm::rms_norm": "rms_norm",
    "candle_nn::layer_norm::LayerNormConfig": "LayerNormConfig",
}
_PATHS = ("scoped_identifier", "scoped_type_identifier")


def norm_layer_edits(tree, data: bytes, renames: dict[str, str]) -> list[tuple[int, int, bytes]] | str:
    """The byte edits that move the file's candle-nn norm layers; a string: why the file is left
    as it is (a form this move cannot follow)."""
    from tree_sitter import Query, QueryCursor

    from candle_port.rust.fixer import _list_deletions
    from candle_port.rust.parser import language

    captures = QueryCursor(Query(language(), "(use_declaration) @use")).captures(tree.root_node)
    uses = sorted(captures.get("use", []), key=lambda n: n.start_byte)
    names = Names(renames)
    for use in uses:
        argument = use.child_by_field_name("argument")
        if argument is not None:
            names.add_use(argument)
    if any(names.canonical(glob)[:1] == ["candle_nn"] and len(names.canonical(glob)) <= 2 for glob in names.globs):
        return "a glob import from candle-nn (`use candle_nn::*`): its LayerNorm cannot be told apart; not moved"
    edits: list[tuple[int, int, bytes]] = []
    for use in uses:
        found = _use_edits(use, data, names, _list_deletions)
        if isinstance(found, str):
            return found
        edits.extend(found)
    edits.extend(_path_edits(tree.root_node, data, names, uses))
    return edits


def _use_edits(use, data: bytes, names: Names, list_deletions) -> list[tuple[int, int, bytes]] | str:
    """Edits of one `use`: its moved items out, a `use candle_port_ops::norm::{..};` line in."""
    argument = use.child_by_field_name("argument")
    if argument is None:
        return []
    if argument.type in ("scoped_identifier", "use_as_clause"):
        item = _moved_item(argument, [], names)
        if item is None:
            return []
        start, end = _line_span(use, data)
        if not _alone_on_its_lines(use, data):
            return "a `use` of a candle-nn norm layer shares its line with other code: not moved"
        indent = data[start : use.start_byte].decode("utf-8")
        return [(start, end, f"{indent}use {TARGET}::{item};\n".encode())]
    if argument.type != "scoped_use_list":
        return []
    prefix = path_segments(argument.child_by_field_name("path")) if argument.child_by_field_name("path") is not None else []
    if prefix is None:
        return []
    listed = argument.child_by_field_name("list")
    items = listed.named_children if listed is not None else []
    moved = {id(item): _moved_item(item, prefix, names) for item in items}
    if any(item.type in ("scoped_use_list", "use_list") and _imports_moved(item, prefix, names) for item in items):
        return "a nested `use` list imports a candle-nn norm layer: not moved"
    taken = [moved[id(item)] for item in items if moved[id(item)] is not None]
    if not taken:
        return []
    start, end = _line_span(use, data)
    if not _alone_on_its_lines(use, data):
        return "a `use` of a candle-nn norm layer shares its line with other code: not moved"
    indent = data[start : use.start_byte].decode("utf-8")
    line = f"{indent}use {TARGET}::{{{', '.join(sorted(taken))}}};\n" if len(taken) > 1 else f"{indent}use {TARGET}::{taken[0]};\n"
    deletions = list_deletions(items, lambda item: moved[id(item)] is not None)
    if deletions is None:  # every item moves: the line is replaced
        return [(start, end, line.encode())]
    return deletions + [(end, end, line.encode())]


def _moved_item(item, prefix: list[str], names: Names) -> str | None:
    """`LayerNorm`, or `LayerNorm as Ln`, for a use item that imports a moved name; else None."""
    alias = None
    if item.type == "use_as_clause":
        alias_node = item.child_by_field_name("alias")
        alias = alias_node.text.decode("utf-8") if alias_node is not None else None
        item = item.child_by_field_name("path")
        if item is None:
            return None
    segments = path_segments(item)
    if segments is None:
        return None
    full = names.canonical(prefix + segments) if prefix + segments else []
    target = MOVED.get("::".join(full))
    if target is None:
        return None
    return f"{target} as {alias}" if alias else target


def _imports_moved(node, prefix: list[str], names: Names) -> bool:
    """Whether a nested `use` list (`nn::{ops, layer_norm::{LayerNorm}}`) imports a moved name."""
    if node.type == "scoped_use_list":
        path = node.child_by_field_name("path")
        inner = path_segments(path) if path is not None else []
        listed = node.child_by_field_name("list")
        if inner is None or listed is None:
            return False
        return any(_imports_moved(item, prefix + inner, names) for item in listed.named_children)
    if node.type == "use_list":
        return any(_imports_moved(item, prefix, names) for item in node.named_children)
    return _moved_item(node, prefix, names) is not None


def _path_edits(root, data: bytes, names: Names, uses) -> list[tuple[int, int, bytes]]:
    """Full paths outside `use` that name a moved item, outermost first (`candle_nn::layer_norm::
    LayerNorm` is one path, not `candle_nn::layer_norm` inside it)."""
    spans = [(u.start_byte, u.end_byte) for u in uses]
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        if any(start <= node.start_byte and node.end_byte <= end for start, end in spans):
            continue  # inside a `use`: _use_edits' part
        if node.type in _PATHS:
            segments = path_segments(node)
            if segments is not None and len(segments) > 1:
                target = MOVED.get("::".join(names.canonical(segments)))
                if target is not None:
                    out.append((node.start_byte, node.end_byte, f"{TARGET}::{target}".encode()))
                    continue
        stack.extend(node.children)
    return out


def _line_span(node, data: bytes) -> tuple[int, int]:
    start = data.rfind(b"\n", 0, node.start_byte) + 1
    end = data.find(b"\n", node.end_byte)
    return start, (len(data) if end < 0 else end + 1)


def _alone_on_its_lines(node, data: bytes) -> bool:
    start, end = _line_span(node, data)
    return not data[start : node.start_byte].strip() and not data[node.end_byte : end].strip()
