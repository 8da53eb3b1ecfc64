"""Parse Rust with tree-sitter-rust, loaded on first use only.

tree-sitter recovers from what its grammar does not know (measured: 55 of the 5,926 `.rs` files
of a cargo registry, all valid Rust that rustc builds, parse with an ERROR node covering at most
1.6% of the file), so a local error is not a reason to refuse a file: the rest of it is checked.
A file mostly made of errors is not Rust at all and is reported as such.
"""

from __future__ import annotations

import functools

from candle_port.pipeline.findings import FileError

# A file whose error nodes cover this share of its bytes does not parse as Rust (valid files
# measured above stay below 2%).
MAX_ERROR_SHARE = 0.10
# As for Python (pipeline/checker.py): a generated file beyond this is not analysed.
MAX_PARSE_BYTES = 4_000_000


@functools.lru_cache(maxsize=1)
def language():
    """tree-sitter-rust's grammar (for the parser and for queries)."""
    import tree_sitter_rust
    from tree_sitter import Language

    return Language(tree_sitter_rust.language())


@functools.lru_cache(maxsize=1)
def _parser():
    from tree_sitter import Parser

    return Parser(language())


def parse_rust(data: bytes, path: str):
    """tree-sitter's tree of `data` (UTF-8 Rust source), or the FileError to report."""
    if len(data) > MAX_PARSE_BYTES:
        return FileError(path, f"too large to analyse ({len(data) / 1e6:.1f} MB; the limit is {MAX_PARSE_BYTES / 1e6:.0f} MB); not checked")
    tree = _parser().parse(data)
    root = tree.root_node
    if root.has_error:
        errors = _error_nodes(root)
        covered = sum(node.end_byte - node.start_byte for node in errors)
        if data.strip() and covered >= MAX_ERROR_SHARE * len(data.strip()):
            first = errors[0]
            line, column = first.start_point
            return FileError(path, "syntax error: does not parse as Rust (tree-sitter-rust)", line + 1, column + 1)
    return tree


def _error_nodes(node) -> list:
    """The outermost ERROR (and MISSING) nodes below `node`, in source order."""
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_error or current.is_missing:
            found.append(current)
            continue
        stack.extend(reversed([child for child in current.children if child.has_error or child.is_missing]))
    return found


def error_count(data: bytes) -> int:
    """How many ERROR and MISSING nodes tree-sitter finds in `data` (0 for a clean parse)."""
    root = _parser().parse(data).root_node
    return len(_error_nodes(root)) if root.has_error else 0
