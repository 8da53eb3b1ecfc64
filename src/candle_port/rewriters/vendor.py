"""`--vendor DIR`: the runtime as one self-contained module (torch only) in the user's tree.

The module is generated from the installed candle_port.runtime package source (read as text,
never imported, so port-fix still does not import torch): every file of the package, in the order
their relative imports need, with those imports and the `from __future__` lines removed and one
`__all__` at the end. Two files defining the same top-level name would clash in one namespace;
that is an error here, never a silent override.

Where it goes and how it is imported: `DIR/candle_port_runtime.py`. When DIR sits inside a
package (its parent directories hold `__init__.py`), DIR gets an `__init__.py` too and fixed files
import it by its absolute dotted name (`import mypkg.vendor.candle_port_runtime as candle_runtime`);
otherwise it is the top-level module `candle_port_runtime`, and DIR must be on sys.path.
"""

from __future__ import annotations

import ast
import importlib.util
import keyword
from pathlib import Path

from candle_port.rewriters.strategies import VENDORED_MODULE_NAME

HEADER = '''"""candle-port runtime, vendored by `port-fix --vendor`: resize and pooling ops equal to torch's, built from
ops candle can differentiate. Generated from candle_port {version}; do not edit, regenerate.
Depends on torch only.
"""

from __future__ import annotations

'''


class VendorError(Exception):
    """The runtime package cannot be flattened into one module."""


def _runtime_dir() -> Path:
    spec = importlib.util.find_spec("candle_port.runtime")
    if spec is None or not spec.submodule_search_locations:
        raise VendorError("cannot locate the candle_port.runtime package")
    return Path(list(spec.submodule_search_locations)[0])


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id != "__all__":
                    names.add(target.id)
    return names


def build_vendored_source() -> str:
    """The text of the single-file runtime."""
    from candle_port import __version__

    directory = _runtime_dir()
    modules: dict[str, tuple[str, ast.Module]] = {}
    for path in sorted(directory.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        modules[path.stem] = (text, ast.parse(text))
    init = modules.pop("__init__", None)
    exports: list[str] = []
    if init is not None:
        exports = _all_of(init[1])
    for name in sorted(modules):
        if name != "__init__" and not name.startswith("_"):
            exports += [e for e in _all_of(modules[name][1]) if e not in exports]

    deps = {name: _relative_deps(tree) for name, (_, tree) in modules.items()}
    order: list[str] = []

    def visit(name: str, stack: tuple[str, ...] = ()) -> None:
        if name in order:
            return
        if name in stack:
            raise VendorError(f"circular relative imports: {' -> '.join((*stack, name))}")
        for dep in sorted(deps.get(name, ())):
            if dep in modules:
                visit(dep, (*stack, name))
        order.append(name)

    for name in sorted(modules):
        visit(name)

    defined: dict[str, str] = {}
    chunks = [HEADER.format(version=__version__)]
    for name in order:
        text, tree = modules[name]
        for top in _top_level_names(tree):
            if top in defined:
                raise VendorError(f"{top} is defined in both {defined[top]}.py and {name}.py")
            defined[top] = name
        chunks.append(f"# ---- candle_port/runtime/{name}.py " + "-" * max(4, 60 - len(name)) + "\n")
        chunks.append(_strip(text, tree))
    chunks.append(f"\n__all__ = {sorted(exports)!r}\n")
    return "".join(chunks)


def _all_of(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return list(ast.literal_eval(node.value))
            except ValueError:
                return []
    return []


def _relative_deps(tree: ast.Module) -> set[str]:
    return {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
    }


def _strip(text: str, tree: ast.Module) -> str:
    """The module without its docstring, __future__ and relative imports, and __all__."""
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()
    aliases: list[str] = []
    for index, node in enumerate(tree.body):
        remove = False
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            remove = True
        elif isinstance(node, ast.ImportFrom) and (node.module == "__future__" or node.level > 0):
            remove = True
            if node.level > 1:
                raise VendorError("imports from outside candle_port.runtime cannot be vendored")
            for alias in node.names:
                if alias.asname and alias.asname != alias.name:
                    aliases.append(f"{alias.asname} = {alias.name}\n")
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            remove = True
        elif isinstance(node, ast.Import) and any(a.name.startswith("candle_port") for a in node.names):
            raise VendorError("the runtime imports candle_port; it cannot be vendored")
        if remove:
            drop.update(range(node.lineno - 1, (node.end_lineno or node.lineno)))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0 and node not in tree.body:
            raise VendorError("a relative import inside a function cannot be vendored")
    kept = [line for i, line in enumerate(lines) if i not in drop]
    return "".join(aliases) + "".join(kept).strip("\n") + "\n\n"


def vendored_module_name(directory: Path) -> str:
    """The dotted name fixed files import the vendored runtime by (see the module docstring).

    VendorError, before anything is written, when DIR is an existing file or a name in that
    dotted path is not a Python identifier (`pkg/my-vendor` cannot be imported).
    """
    if directory.exists() and not directory.is_dir():
        raise VendorError(f"--vendor expects a directory, but {directory} is a file")
    directory = directory.resolve()
    parts = [VENDORED_MODULE_NAME]
    if (directory.parent / "__init__.py").is_file() or (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        parent = directory.parent
        while (parent / "__init__.py").is_file():
            parts.insert(0, parent.name)
            parent = parent.parent
    for part in parts:
        if not part.isidentifier() or keyword.iskeyword(part):
            raise VendorError(
                f"--vendor {directory}: {part!r} is not a Python identifier, so {'.'.join(parts)} cannot be imported"
            )
    return ".".join(parts)


def _written_by_port_fix(data: bytes) -> bool:
    from candle_port.pipeline.prefilter import is_vendored_runtime

    return is_vendored_runtime(data.decode("utf-8", "replace"))


def write_vendored(directory: Path) -> Path:
    """Write DIR/candle_port_runtime.py (and DIR/__init__.py inside a package) and check it; return the file.

    Atomic (writeback.create_or_replace) and read back before returning, so the caller can write
    model files that import it knowing it is complete. An existing file there that port-fix did
    not write, or a symlink, is refused (WriteRefused), never replaced or followed.
    """
    from candle_port.rewriters.writeback import create_or_replace, take_snapshot

    vendored_module_name(directory)  # refuse a bad target before creating anything
    source = build_vendored_source()
    directory.mkdir(parents=True, exist_ok=True)
    init = directory / "__init__.py"
    if (directory.resolve().parent / "__init__.py").is_file() and not init.exists():
        create_or_replace(str(init), b"")
    target = directory / f"{VENDORED_MODULE_NAME}.py"
    data = source.encode("utf-8")
    # Replaced only when port-fix wrote it: a user's own candle_port_runtime.py is refused, not overwritten.
    create_or_replace(str(target), data, owned=_written_by_port_fix)
    if take_snapshot(str(target)).data != data:
        raise VendorError(f"{target} does not hold what was written")
    return target
