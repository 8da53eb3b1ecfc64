"""Line and column of calls, from Python's own parser instead of libcst's PositionProvider.

PositionProvider re-generates the whole module to count characters, which costs about twice the
parse itself. `ast` gives call positions in a fraction of that. libcst records calls in source
order (names.py visits children in source order), and sorting ast calls by start (outer before
inner) gives the same order; each pair is also checked by the callee's dotted name. Anything that
does not line up falls back to PositionProvider, so positions are never wrong, only slower.
"""

from __future__ import annotations

import ast
import warnings

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from candle_port.analysis.names import dotted_name


def ast_dotted(node: ast.expr) -> str | None:
    """`a.b.c` for an ast Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _char_column(lines: list[bytes], line: int, byte_col: int) -> int:
    return len(lines[line - 1][:byte_col].decode("utf-8", "replace"))


def call_positions(
    module: cst.Module, text: str, calls: list[cst.Call], wanted: list[cst.Call]
) -> dict[cst.Call, tuple[int, int, int]]:
    """(line, 1-based column, end line) of each call in `wanted`; `calls` is every call in order."""
    aligned = align_calls(text, calls, wanted)
    if aligned is not None:
        lines = text.encode("utf-8", "surrogatepass").splitlines(keepends=True) if wanted else []
        return {
            call: (node.lineno, _char_column(lines, node.lineno, node.col_offset) + 1, node.end_lineno or node.lineno)
            for call, node in aligned[1].items()
        }
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {c: (positions[c].start.line, positions[c].start.column + 1, positions[c].end.line) for c in wanted}


def align_calls(
    text: str, calls: list[cst.Call], wanted: list[cst.Call]
) -> tuple[ast.Module, dict[cst.Call, ast.Call]] | None:
    """The ast tree and the ast Call of each libcst call in `wanted`, or None if unsure."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    ast_calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    if len(ast_calls) != len(calls):
        return None
    ast_calls.sort(key=lambda n: (n.lineno, n.col_offset, -(n.end_lineno or 0), -(n.end_col_offset or 0)))
    index = {id(c): i for i, c in enumerate(calls)}
    out = {}
    for call in wanted:
        node = ast_calls[index[id(call)]]
        if dotted_name(call.func) != ast_dotted(node.func) or len(call.args) != len(node.args) + len(node.keywords):
            return None
        out[call] = node
    return tree, out
