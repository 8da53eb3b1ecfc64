"""The one import port-fix adds: a name no user code uses, at the top of the module.

It goes after the module docstring, the `from __future__` imports and the leading block of
imports, so the file's header (shebang, coding cookie, licence comments) stays first.
"""

from __future__ import annotations

import re

import libcst as cst

from candle_port.analysis.names import dotted_name


_IDENTIFIER = re.compile(r"[^\W\d]\w*")


def used_names(text: str) -> set[str]:
    """Every identifier-like word in the source, code, strings and comments alike.

    A superset of the names the module binds or reads, so a name outside it shadows nothing;
    a regex over the text is ~100x cheaper than visiting the tree.
    """
    return set(_IDENTIFIER.findall(text))


def fresh_name(preferred: str, taken: set[str]) -> str:
    """`preferred`, or `preferred_2`, `preferred_3`, ... : the first that is not in `taken`."""
    if preferred not in taken:
        return preferred
    n = 2
    while f"{preferred}_{n}" in taken:
        n += 1
    return f"{preferred}_{n}"


def existing_alias(module: cst.Module, target: str) -> str | None:
    """The name under which a top-level `import <target> as NAME` already binds `target`."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if dotted_name(alias.name) == target and alias.asname is not None:
                        name = alias.asname.name
                        if isinstance(name, cst.Name):
                            return name.value
    return None


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def insertion_index(module: cst.Module) -> int:
    body = module.body
    index = 1 if body and _is_docstring(body[0]) else 0
    while index < len(body) and _is_import_line(body[index]):
        index += 1
    return index


def add_import(module: cst.Module, target: str, alias: str) -> cst.Module:
    """`module` with `import <target> as <alias>` inserted at insertion_index()."""
    statement = cst.parse_statement(f"import {target} as {alias}\n")
    body = list(module.body)
    body.insert(insertion_index(module), statement)
    return module.with_changes(body=body)
