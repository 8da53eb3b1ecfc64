"""The one import port-fix adds: a name no user code uses, where the file imports torch.

Normally after the module docstring, the `from __future__` imports and the leading block of
imports, so the file's header (shebang, coding cookie, licence comments) stays first. When the
file's first top-level import of torch comes later (after `sys.path` set-up), the new import goes
right after it; when torch is imported only inside a top-level `try:` (optional torch, e.g.
`except ImportError`), the new import goes inside that `try`, right after the torch import, so a
module that works without torch still does.
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


def imports_torch(statement: cst.BaseStatement) -> bool:
    """Whether a simple statement line imports torch or a torch submodule."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Import) and any(_is_torch(dotted_name(a.name)) for a in small.names):
            return True
        if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
            if _is_torch(dotted_name(small.module)):
                return True
    return False


def _is_torch(name: str | None) -> bool:
    return name is not None and (name == "torch" or name.startswith("torch."))


def insertion_index(module: cst.Module) -> int:
    """After the leading imports; or after the first top-level torch import when that comes later."""
    body = module.body
    index = 1 if body and _is_docstring(body[0]) else 0
    while index < len(body) and _is_import_line(body[index]):
        index += 1
    for position, statement in enumerate(body):
        if imports_torch(statement):
            return index if position < index else _after_imports(body, position)
    return index


def _after_imports(body, position: int) -> int:
    """The index after the run of import lines that starts at `position`."""
    while position < len(body) and _is_import_line(body[position]):
        position += 1
    return position


def torch_try(module: cst.Module) -> tuple[int, int] | None:
    """(index of a top-level `try`, index in its body after its torch import) when torch is imported only there."""
    if any(imports_torch(statement) for statement in module.body):
        return None
    for position, statement in enumerate(module.body):
        if isinstance(statement, cst.Try):
            for inner, child in enumerate(statement.body.body):
                if imports_torch(child):
                    return position, _after_imports(statement.body.body, inner)
    return None


def add_import(module: cst.Module, target: str, alias: str) -> cst.Module:
    """`module` with `import <target> as <alias>` where the file imports torch (module docstring)."""
    statement = cst.parse_statement(f"import {target} as {alias}\n")
    body = list(module.body)
    inside = torch_try(module)
    if inside is not None:
        position, at = inside
        block = body[position]
        inner = list(block.body.body)
        inner.insert(at, statement)
        body[position] = block.with_changes(body=block.body.with_changes(body=inner))
        return module.with_changes(body=body)
    body.insert(insertion_index(module), statement)
    return module.with_changes(body=body)
