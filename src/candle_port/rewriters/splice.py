"""Fast path for callee-only rewrites (runtime, convtranspose): splice the source text.

Re-generating a module through a libcst transformer rebuilds every node (about as costly as the
parse itself). When only callees change, the new text is the old text with a few spans replaced:
the span of each call's callee (or a functools.partial's first argument), taken from the `ast`
sites port-check reported, plus one import line. Anything unusual (a callee written across lines
or with comments) returns None and the caller falls back to the libcst transformer. The result is
verified by the fixer like any other rewrite.
"""

from __future__ import annotations

import ast
import re

from candle_port.analysis.names import ast_dotted

_LINE_END = re.compile(r"\r\n|\r|\n")


class _Lines:
    """Maps ast (line, utf-8 byte column) to offsets in the str."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in _LINE_END.finditer(text)]

    def offset(self, line: int, byte_col: int) -> int:
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        raw = self.text[start:end].encode("utf-8", "surrogatepass")[:byte_col]
        return start + len(raw.decode("utf-8", "surrogatepass"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)


def splice(
    text: str,
    tree: ast.Module,
    edits: list[tuple[ast.Call, bool, str]],
    import_line: str | None,
) -> str | None:
    """`text` with each edit applied, or None when the fast path cannot be sure.

    edits: (ast call of the site, is_partial, replacement callee text). import_line: the statement to add.
    """
    lines = _Lines(text)
    spans: list[tuple[int, int, str]] = []
    for node, is_partial, replacement in edits:
        if is_partial:
            if not node.args:
                return None
            target = node.args[0]
        else:
            target = node.func
        start, end = lines.span(target)
        if ast_dotted(target) is None or not _plain_dotted(text[start:end]):
            return None  # e.g. a callee written across lines or with comments: let libcst do it
        spans.append((start, end, replacement))
    if import_line is not None:
        at = _import_offset(tree, lines)
        if at is None:
            return None
        newline = _LINE_END.search(text)
        spans.append((at, at, import_line + (newline.group() if newline else "\n")))
    spans.sort()
    for (s1, e1, _), (s2, _, _) in zip(spans, spans[1:]):
        if s2 < e1:
            return None
    out, last = [], 0
    for start, end, replacement in spans:
        out.append(text[last:start])
        out.append(replacement)
        last = end
    out.append(text[last:])
    return "".join(out)


def _imports_torch(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Import):
        return any(a.name == "torch" or a.name.startswith("torch.") for a in statement.names)
    if isinstance(statement, ast.ImportFrom) and not statement.level and statement.module:
        return statement.module == "torch" or statement.module.startswith("torch.")
    return False


def _plain_dotted(source: str) -> bool:
    return re.fullmatch(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*", source) is not None


def _import_offset(tree: ast.Module, lines: _Lines) -> int | None:
    """Where imports.insertion_index() puts the import: after docstring, __future__ and imports.

    None (libcst places it) when torch is first imported after that block or only inside a `try`.
    """
    body = tree.body
    index = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        index = 1
    while index < len(body) and isinstance(body[index], (ast.Import, ast.ImportFrom)):
        index += 1
    first_torch = next((i for i, statement in enumerate(body) if _imports_torch(statement)), None)
    if first_torch is None or first_torch >= index:
        return None
    if index == 0:
        first = body[0]
        line = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))])
        return lines.starts[line - 1]
    previous = body[index - 1]
    end_line = previous.end_lineno
    # Another statement on the same line (`import a; x = 1`), or a comment-less `;` tail: bail out.
    if index < len(body) and body[index].lineno == end_line:
        return None
    if end_line >= len(lines.starts):
        return None
    return lines.starts[end_line]
