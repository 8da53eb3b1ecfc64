"""The files of a source root that the model's module imports, found by reading import statements.

verify rewrites only these: with all of transformers (2,951 files) as the source root, a model
imports a few hundred, and port-fix on every file that mentions an op was most of a first run.
The walk over-approximates (every import anywhere in a file counts, inside functions and ``try``
blocks too, and every package ``__init__`` on the way); an import by string
(``importlib.import_module``, transformers' lazy ``__init__``) is not seen, which is why the
entry points are the model's own module and ``--config-class``'s, not a package ``__init__``.
``verify --rewrite-all`` rewrites every file instead.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from .spec import SourceRoot


class ModuleFiles:
    """Module names <-> files inside one source root."""

    def __init__(self, source: SourceRoot) -> None:
        # Where the source root's top-level modules live: a package (or namespace) root is imported
        # from its parent; a plain directory holds its modules itself.
        inside = (source.path / "__init__.py").is_file() or source.namespace or source.path.is_file()
        self.base = source.path.parent if inside else source.path
        self.tops = {name: self.base / rel for name, rel in source.modules.items()}

    def file_of(self, name: str) -> Path | None:
        for top, location in self.tops.items():
            if name == top or name.startswith(top + "."):
                rest = name[len(top):].lstrip(".").split(".") if name != top else []
                path = location.joinpath(*rest) if rest else location
                if path.suffix == ".py" and path.is_file():
                    return path
                if (path / "__init__.py").is_file():
                    return path / "__init__.py"
                module = path.with_name(path.name + ".py") if rest else path
                return module if module.is_file() else None
        return None

    def name_of(self, file: Path) -> str | None:
        for top, location in self.tops.items():
            root = location if location.is_dir() else location.parent
            try:
                rel = file.relative_to(root)
            except ValueError:
                continue
            parts = list(rel.with_suffix("").parts)
            if location.is_file():
                return top if file == location else None
            if parts and parts[-1] == "__init__":
                parts = parts[:-1]
            return ".".join([top, *parts])
        return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST):
    """Every node but the bodies of ``if TYPE_CHECKING:``, which never run (transformers'
    ``models/__init__.py`` imports all of its 400 models there, for type checkers only)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every module name an import statement in ``tree`` may load (and each ``from M import x``'s
    ``M.x``, which is a submodule when x is one)."""
    names: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base:
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    # importing a.b.c runs a and a.b first
    return {".".join(name.split(".")[:i]) for name in names for i in range(1, name.count(".") + 2)}


def imported_files(source: SourceRoot, entries: list[Path]) -> set[Path]:
    """The files under ``source`` that ``entries`` (files) import, directly or through each other."""
    modules = ModuleFiles(source)
    seen: set[Path] = set()
    queue = [entry.resolve() for entry in entries]
    while queue:
        file = queue.pop()
        if file in seen:
            continue
        seen.add(file)
        try:
            tree = ast.parse(file.read_bytes(), filename=str(file))
        except (OSError, SyntaxError, ValueError):
            continue  # the rewrite reports an unreadable file; the walk only loses its imports
        name = modules.name_of(file) or file.stem
        for imported in _imported_names(tree, name, file.name == "__init__.py"):
            found = modules.file_of(imported)
            if found is not None and found.resolve() not in seen:
                queue.append(found.resolve())
    root = source.path.resolve()
    return {file for file in seen if file == root or root in file.parents}


def entry_files(source: SourceRoot, model_file: Path, config_class: str | None) -> list[Path]:
    """Where the walk starts: the model's module (or the script that builds it) and the module of
    ``--config-class`` when it is inside the source root."""
    entries = [model_file]
    if config_class:
        found = ModuleFiles(source).file_of(config_class.partition(":")[0])
        if found is not None:
            entries.append(found)
    return entries


def linked_directories(root: Path) -> list[tuple[str, str]]:
    """(path under ``root``, where it points) for each symbolic link to a directory inside
    ``root``: the copy links to it whole, so nothing under it is rewritten; verify says so."""
    found = []
    for directory, dirs, _ in os.walk(root):
        for name in sorted(dirs):
            path = Path(directory, name)
            if path.is_symlink():
                found.append((path.relative_to(root).as_posix(), os.path.realpath(path)))
    return found
