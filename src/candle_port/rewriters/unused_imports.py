"""Remove the torch imports a fix left unused, and only those (issue 36).

`import torch.nn.functional as F` whose last use was `F.interpolate(...)`, now
`candle_runtime.interpolate(...)`, would be flagged by ruff (F401) in the fixed file. A top-level
torch import is removed when the original module read the name it binds and the fixed one no
longer does (as a name in code, or as a word in a string: `__all__`, string annotations); an
import the user had left unused stays. Only whole lines are
removed or rewritten: an import sharing its line with another statement, carrying a comment other
than a `# noqa` that does not name F401, inside a block (`try:`, `if`), or spread over several
lines that keep some of its names, is left as it is.
"""

from __future__ import annotations

import ast
import re

_LINE_END = re.compile(r"\r\n|\r|\n")


def remove_made_unused(original_tree: ast.Module, new: str, path: str = "<string>") -> tuple[str, list[str]]:
    """`new` without the torch imports the fix made unused, and the names whose import went.

    Not in a package's `__init__.py`: an import there is often a re-export (`from pkg import
    Upsample`) that no code of the module itself reads.
    """
    if path.replace("\\", "/").rsplit("/", 1)[-1] == "__init__.py":
        return new, []
    try:
        new_tree = compile(new, "<fixed>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return new, []  # the fixer's own check reports it
    lines = _lines(new)
    statements = [s for s in new_tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    made_unused = {
        name
        for statement in statements
        if _imports_torch(statement)
        for name in _bound_names(statement)
        if _uses(original_tree, name) and not _uses(new_tree, name)
    }
    if not made_unused:
        return new, []
    removed: list[str] = []
    edits: dict[int, str] = {}  # first line index -> replacement for the statement's lines ("" deletes)
    for statement in statements:
        if not _imports_torch(statement):
            continue
        gone = [alias for alias in statement.names if _bound_name(statement, alias) in made_unused]
        if not gone or not _alone_on_its_lines(statement, new_tree, lines):
            continue
        kept = [alias for alias in statement.names if alias not in gone]
        if kept and statement.lineno != statement.end_lineno:
            continue
        first = statement.lineno - 1
        newline = _LINE_END.search(lines[statement.end_lineno - 1])
        replacement = "" if not kept else _statement_text(statement, kept) + (newline.group() if newline else "")
        edits[first] = replacement
        for index in range(first + 1, statement.end_lineno):
            edits[index] = ""
        removed += [_bound_name(statement, alias) for alias in gone]
    if not edits:
        return new, []
    return "".join(edits.get(index, line) for index, line in enumerate(lines)), sorted(set(removed))


def _lines(text: str) -> list[str]:
    """Lines with their endings, split where Python's tokenizer splits (not str.splitlines)."""
    out, start = [], 0
    for match in _LINE_END.finditer(text):
        out.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        out.append(text[start:])
    return out


def _imports_torch(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Import):
        return all(a.name == "torch" or a.name.startswith("torch.") for a in statement.names)
    return (
        isinstance(statement, ast.ImportFrom)
        and not statement.level
        and statement.module is not None
        and (statement.module == "torch" or statement.module.startswith("torch."))
        and all(a.name != "*" for a in statement.names)
    )


def _bound_name(statement: ast.stmt, alias: ast.alias) -> str:
    if alias.asname:
        return alias.asname
    return alias.name.split(".")[0] if isinstance(statement, ast.Import) else alias.name


def _bound_names(statement: ast.stmt) -> list[str]:
    return [_bound_name(statement, alias) for alias in statement.names]


def _uses(tree: ast.Module, name: str) -> bool:
    """Whether the module reads `name` outside its top-level imports: as a name in code, or as a
    word in a string (`__all__`, a string annotation). An attribute of that name is no use of it
    (`candle_runtime.interpolate` does not use an imported `interpolate`)."""
    word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    pending = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and node.id == name:
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a docstring: prose that names an API uses nothing
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and word.search(node.value):
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def _alone_on_its_lines(statement: ast.stmt, tree: ast.Module, lines: list[str]) -> bool:
    """No other statement and no comment on the statement's lines."""
    for other in tree.body:
        if other is not statement and not (other.end_lineno < statement.lineno or other.lineno > statement.end_lineno):
            return False
    text = "".join(lines[statement.lineno - 1 : statement.end_lineno])
    code, _, comment = text.partition("#")
    return ";" not in code and not text[:1].isspace() and (not comment or _only_noqa(comment))


_NOQA = re.compile(r"\s*noqa(?::\s*[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*)?\s*$", re.IGNORECASE)


def _only_noqa(comment: str) -> bool:
    """A `# noqa` comment that does not ask to keep an unused import (F401): it goes with its line."""
    return _NOQA.match(comment) is not None and "F401" not in comment.upper()


def _statement_text(statement: ast.stmt, kept: list[ast.alias]) -> str:
    names = ", ".join(alias.name + (f" as {alias.asname}" if alias.asname else "") for alias in kept)
    if isinstance(statement, ast.Import):
        return f"import {names}"
    return f"from {statement.module} import {names}"
