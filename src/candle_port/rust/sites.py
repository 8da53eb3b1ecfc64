"""The candle calls of one Rust file that a rule judges: `RustSite`s, found through
tree-sitter's call nodes and resolved with names.Names.

Free functions and constructors are matched by their resolved path (`candle_nn::ops::
softmax_last_dim`, however it was imported or renamed). Tensor methods (`xs.max_pool2d(2)`) are
matched by name in a file that uses candle: a Rust file has no types for a linter to read, and
these names are candle's own.
"""

from __future__ import annotations

from candle_port.rust.names import Names, path_segments

# Resolved path -> the API it is (a rule reads `site.api`).
PATHS = {
    "candle_nn::ops::softmax_last_dim": "softmax_last_dim",
    "candle_nn::ops::layer_norm": "ops_layer_norm",
    "candle_nn::ops::rms_norm": "ops_rms_norm",
    "candle_nn::layer_norm": "layer_norm_ctor",
    "candle_nn::layer_norm::layer_norm": "layer_norm_ctor",
    "candle_nn::rms_norm": "rms_norm_ctor",
    "candle_nn::layer_norm::rms_norm": "rms_norm_ctor",
    "candle_nn::LayerNorm::new": "layer_norm_new",
    "candle_nn::layer_norm::LayerNorm::new": "layer_norm_new",
    "candle_nn::RmsNorm::new": "rms_norm_new",
    "candle_nn::layer_norm::RmsNorm::new": "rms_norm_new",
    "candle_nn::rotary_emb::rope": "rope",
    "candle_nn::rotary_emb::rope_i": "rope",
    "candle_nn::rotary_emb::rope_thd": "rope",
    "candle_nn::conv_transpose1d": "nn_conv_transpose1d",
    "candle_nn::conv::conv_transpose1d": "nn_conv_transpose1d",
    "candle_nn::conv_transpose1d_no_bias": "nn_conv_transpose1d",
    "candle_nn::conv::conv_transpose1d_no_bias": "nn_conv_transpose1d",
    "candle_nn::ConvTranspose1d::new": "nn_conv_transpose1d",
    "candle_nn::conv::ConvTranspose1d::new": "nn_conv_transpose1d",
    "candle_nn::conv_transpose2d": "nn_conv_transpose2d",
    "candle_nn::conv::conv_transpose2d": "nn_conv_transpose2d",
    "candle_nn::conv_transpose2d_no_bias": "nn_conv_transpose2d",
    "candle_nn::conv::conv_transpose2d_no_bias": "nn_conv_transpose2d",
    "candle_nn::ConvTranspose2d::new": "nn_conv_transpose2d",
    "candle_nn::conv::ConvTranspose2d::new": "nn_conv_transpose2d",
}
# candle_core::Tensor's methods that a rule judges (called `xs.name(..)` or `Tensor::name(&xs, ..)`).
METHODS = frozenset(
    {
        "upsample_bilinear2d",
        "upsample_bilinear2d_with_scale",
        "upsample_nearest2d",
        "interpolate2d",
        "max_pool2d",
        "max_pool2d_with_stride",
        "avg_pool2d",
        "avg_pool2d_with_stride",
        "conv_transpose1d",
        "conv_transpose2d",
    }
)
for _method in METHODS:
    PATHS[f"candle_core::Tensor::{_method}"] = _method
    PATHS[f"candle_core::tensor::Tensor::{_method}"] = _method
KNOWN_PATHS = frozenset(PATHS)
# A file none of whose text holds one of these cannot hold a site, and is not parsed.
NAME_FRAGMENTS = ("softmax_last_dim", "norm", "Norm", "rope", "upsample_", "interpolate2d", "_pool2d", "conv_transpose", "ConvTranspose")

_CALLS_QUERY = "(call_expression function: (_) @function) @call (use_declaration argument: (_) @use) (function_item name: (identifier) @defined)"


class RustSite:
    """One call of a judged candle API. `api`: the key in PATHS/METHODS; `shown`: how the user
    wrote the callee; `args`: the argument nodes (for `Tensor::m(&xs, ..)`, without `xs`)."""

    __slots__ = ("api", "shown", "call", "args", "name_node", "source")

    def __init__(self, api: str, shown: str, call, args: list, name_node, source: bytes) -> None:
        self.api = api
        self.shown = shown
        self.call = call
        self.args = args
        self.name_node = name_node
        self.source = source

    def position(self) -> tuple[int, int, int]:
        """(line, 1-based character column, end line): a path call at its path, a method at its name
        (so that chained `xs.max_pool2d(2)?.upsample_nearest2d(..)` are two places)."""
        row, byte_column = self.name_node.start_point
        line_start = self.name_node.start_byte - byte_column
        column = len(self.source[line_start : self.name_node.start_byte].decode("utf-8", "replace"))
        return row + 1, column + 1, self.call.end_point[0] + 1

    def arg(self, index: int):
        return self.args[index] if index < len(self.args) else None


def may_hold_sites(text: str) -> bool:
    return any(fragment in text for fragment in NAME_FRAGMENTS)


def scan(tree, source: bytes, renames: dict[str, str]) -> list[RustSite]:
    """Every judged candle call of the file, in source order."""
    from tree_sitter import Query, QueryCursor

    from candle_port.rust.parser import language

    captures = QueryCursor(_query(Query, language())).captures(tree.root_node)
    names = Names(renames)
    for node in captures.get("defined", ()):
        names.local_functions.add(node.text.decode("utf-8", "replace"))
    for node in sorted(captures.get("use", ()), key=lambda n: n.start_byte):
        names.add_use(node)
    methods_are_candle = names.mentions_candle()
    sites: list[RustSite] = []
    for function in captures.get("function", ()):
        call = function.parent
        site = _site(call, function, names, methods_are_candle, source)
        if site is not None:
            sites.append(site)
    sites.sort(key=lambda s: s.name_node.start_byte)
    return sites


_QUERY = None


def _query(query_type, grammar):
    global _QUERY
    if _QUERY is None:
        _QUERY = query_type(grammar, _CALLS_QUERY)
    return _QUERY


def _arguments(call) -> list:
    arguments = call.child_by_field_name("arguments")
    return [] if arguments is None else [a for a in arguments.named_children if a.type not in ("line_comment", "block_comment", "attribute_item")]


def _site(call, function, names: Names, methods_are_candle: bool, source: bytes) -> RustSite | None:
    if function.type == "generic_function":
        function = function.child_by_field_name("function") or function
    if function.type == "field_expression":
        field = function.child_by_field_name("field")
        if field is None or not methods_are_candle:
            return None
        method = field.text.decode("utf-8", "replace")
        if method not in METHODS:
            return None
        return RustSite(method, f".{method}", call, _arguments(call), field, source)
    if function.type == "identifier":
        resolved = names.resolve_bare(function.text.decode("utf-8", "replace"), KNOWN_PATHS)
        name_node = function
    else:
        segments = path_segments(function)
        if segments is None or segments[0] in ("crate", "self", "super"):
            return None
        resolved = names.canonical(segments)
        name_node = function
    if resolved is None:
        return None
    api = PATHS.get("::".join(resolved))
    if api is None:
        return None
    args = _arguments(call)
    if api in METHODS:
        args = args[1:]  # `Tensor::max_pool2d(&xs, 2)`: the tensor is not an argument of the op
    return RustSite(api, function.text.decode("utf-8", "replace"), call, args, name_node, source)


def literal(node):
    """The value of an integer, float or bool literal, or a tuple/array of them (through `&`,
    parentheses and casts to integers); None for anything else."""
    if node is None:
        return None
    kind = node.type
    if kind in ("reference_expression", "parenthesized_expression"):
        inner = node.child_by_field_name("value") or (node.named_children[0] if node.named_children else None)
        return literal(inner)
    if kind == "integer_literal":
        text = node.text.decode("ascii", "replace").replace("_", "")
        for suffix in ("usize", "isize", "u64", "i64", "u32", "i32", "u16", "i16", "u8", "i8"):
            if text.endswith(suffix):
                text = text[: -len(suffix)]
                break
        try:
            return int(text, 0)
        except ValueError:
            return None
    if kind == "boolean_literal":
        return node.text == b"true"
    if kind in ("tuple_expression", "array_expression"):
        values = [literal(child) for child in node.named_children]
        return None if any(v is None for v in values) else tuple(values)
    return None


def struct_fields(node):
    """For a struct literal (`LayerNormConfig { eps: 1e-5, affine: false, ..Default::default() }`,
    through `&` and parentheses): field name -> value node, and the `..base` expression's text
    ("" without one); None for anything else."""
    if node is None:
        return None
    if node.type in ("reference_expression", "parenthesized_expression"):
        inner = node.child_by_field_name("value") or (node.named_children[0] if node.named_children else None)
        return struct_fields(inner)
    if node.type != "struct_expression":
        return None
    body = node.child_by_field_name("body")
    fields: dict[str, object] = {}
    base = ""
    for child in body.named_children if body is not None else ():
        if child.type == "field_initializer":
            name = child.child_by_field_name("field")
            if name is not None:
                fields[name.text.decode("utf-8", "replace")] = child.child_by_field_name("value")
        elif child.type == "shorthand_field_initializer":
            fields[child.text.decode("utf-8", "replace")] = child
        elif child.type == "base_field_initializer":
            base = " ".join(child.text.decode("utf-8", "replace").lstrip(".").split())
    return fields, base
