"""The one import port-fix adds: a name no user code uses, where the file imports torch.

Normally after the module docstring, the `from __future__` imports and the leading block of
imports, so the file's header (shebang, coding cookie, licence comments) stays first. When the
file's first top-level import of torch comes later (after `sys.path` set-up), the new import goes
right after it. When no top-level statement imports torch (optional torch: inside `try`, an
`else:` branch, `if HAS_TORCH:`, `with suppress(ImportError):`, or only inside functions and a
module `__getattr__`), the new import goes right after each of those torch imports
(torch_import_blocks), so a module that works without torch still does. The fixer then checks
with symtable that every use of the alias sees it (sites_see_alias); otherwise the file is left
unchanged.
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


def _is_type_checking(test: cst.BaseExpression) -> bool:
    """`if TYPE_CHECKING:` / `if typing.TYPE_CHECKING:`: never runs, so nothing is imported there."""
    if isinstance(test, cst.Name):
        return test.value == "TYPE_CHECKING"
    return isinstance(test, cst.Attribute) and test.attr.value == "TYPE_CHECKING"


class _TorchImportBlocks(cst.CSTVisitor):
    """Every indented block that imports torch, with whether it runs in a function.

    A class body is not one (what it binds is not seen by its methods), nor an `if TYPE_CHECKING:`.
    """

    def __init__(self) -> None:
        self.blocks: list[tuple[cst.IndentedBlock, bool]] = []
        self.functions = 0
        self.class_bodies: set[int] = set()

    def visit_If(self, node: cst.If) -> bool:
        return not _is_type_checking(node.test)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_bodies.add(id(node.body))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions -= 1

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if id(node) not in self.class_bodies and any(imports_torch(child) for child in node.body):
            self.blocks.append((node, self.functions > 0))


def torch_import_blocks(module: cst.Module) -> list[cst.IndentedBlock]:
    """Where the runtime import goes when no top-level statement imports torch: right after the torch
    import of each block that imports it conditionally (`try`/`except`/`else`, `if HAS_TORCH:`,
    `with suppress(ImportError):`) at module level; when torch is imported only inside functions
    (a lazy import, a module `__getattr__`), in each of those functions. Empty when torch is
    imported at top level (or nowhere): then the import goes at the top.
    """
    if any(imports_torch(statement) for statement in module.body):
        return []
    finder = _TorchImportBlocks()
    module.visit(finder)
    module_level = [block for block, in_function in finder.blocks if not in_function]
    return module_level or [block for block, _ in finder.blocks]


class _InsertAfterTorchImport(cst.CSTTransformer):
    def __init__(self, blocks: list[cst.IndentedBlock], statement: cst.BaseStatement) -> None:
        self.blocks = {id(block) for block in blocks}
        self.statement = statement

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        if id(original_node) not in self.blocks:
            return updated_node
        body = list(updated_node.body)
        first = next(i for i, child in enumerate(body) if imports_torch(child))
        body.insert(_after_imports(body, first), self.statement)
        return updated_node.with_changes(body=body)


def add_import(module: cst.Module, target: str, alias: str) -> cst.Module:
    """`module` with `import <target> as <alias>` where the file imports torch (module docstring)."""
    statement = cst.parse_statement(f"import {target} as {alias}\n")
    blocks = torch_import_blocks(module)
    if blocks:
        return module.visit(_InsertAfterTorchImport(blocks, statement))
    body = list(module.body)
    body.insert(insertion_index(module), statement)
    return module.with_changes(body=body)


def alias_seen_by_every_use(text: str, alias: str) -> bool:
    """Whether every scope that reads `alias` sees a binding of it (its own, an enclosing
    function's, or the module's), so no fixed site raises NameError. For an import placed inside
    blocks: a site in a function that does not import torch itself would not see it."""
    import symtable

    try:
        top = symtable.symtable(text, "<fixed>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return False
    module_binds = alias in top.get_identifiers() and top.lookup(alias).is_imported()
    pending = [top]
    while pending:
        table = pending.pop()
        pending.extend(table.get_children())
        if alias not in table.get_identifiers():
            continue
        symbol = table.lookup(alias)
        if symbol.is_referenced() and symbol.is_global() and not module_binds:
            return False
        if table is top and symbol.is_referenced() and not module_binds:
            return False
    return True
