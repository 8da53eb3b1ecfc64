"""Which model to build (MODEL spec) and which tree of files to rewrite (source root).

MODEL is ``path/to/file.py:Name`` or ``package.module:Name``; Name is an ``nn.Module`` subclass or
a factory returning one. Nothing here imports the user's code: files are located on disk.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class SpecError(ValueError):
    """A MODEL spec or source root that cannot be used (exit code 2)."""


@dataclass(frozen=True)
class ModelSpec:
    text: str
    module: str  # dotted module name the workers import
    attr: str  # class or factory inside it (may be dotted: Outer.Inner)
    module_file: Path
    import_root: Path  # the directory the top-level package/module lives in


@dataclass(frozen=True)
class SourceRoot:
    path: Path  # a .py file, a package directory, or a plain directory of modules
    modules: dict[str, str] = field(default_factory=dict)  # module name -> path relative to the copy root
    # The model's module lies outside the root: a driver (a factory script) that imports it.
    driver: bool = False
    # A package directory without __init__.py on the model's dotted path (PEP 420)
    namespace: bool = False

    @property
    def is_file(self) -> bool:
        return self.path.is_file()

    @property
    def is_one_module(self) -> bool:
        """A file or a package (regular or namespace): one entry of `modules`, named as the copy's
        top entry; a plain directory maps each of its modules instead."""
        return self.path.is_file() or (self.path / "__init__.py").is_file() or self.namespace


def _package_chain(path: Path) -> tuple[Path, list[str]]:
    """For a file or package dir: the import root and the dotted parts down to ``path``."""
    path = path.resolve()
    parts = [path.stem if path.is_file() else path.name]
    parent = path.parent
    while (parent / "__init__.py").is_file():
        parts.insert(0, parent.name)
        parent = parent.parent
    if path.is_file() and path.name == "__init__.py":
        parts.pop()
    return parent, parts


def _locate_module(dotted: str, search: list[str]) -> tuple[Path, Path]:
    parts = dotted.split(".")
    for entry in search:
        base = Path(entry or ".")
        candidate = base.joinpath(*parts)
        for file in (candidate.with_suffix(".py"), candidate / "__init__.py"):
            # each package above it a directory: a regular package or a namespace package without
            # an __init__.py (PEP 420; facenet_pytorch/models)
            if file.is_file() and all(base.joinpath(*parts[:i]).is_dir() for i in range(1, len(parts))):
                return file.resolve(), base.resolve()
    raise SpecError(f"cannot find module {dotted!r} on sys.path (set PYTHONPATH or use path/to/file.py:Name)")


def parse_model_spec(text: str, cwd: Path | None = None) -> ModelSpec:
    cwd = cwd or Path.cwd()
    left, sep, attr = text.rpartition(":")
    if not sep or not left or not attr:
        raise SpecError(f"MODEL must be path/to/file.py:Name or package.module:Name, got {text!r}")
    if not _DOTTED.match(attr):
        raise SpecError(f"{attr!r} is not a Python name (MODEL {text!r})")
    if left.endswith(".py") or "/" in left or os.sep in left:
        file = (cwd / left).resolve()
        if not file.is_file():
            raise SpecError(f"no such file: {left}")
        root, parts = _package_chain(file)
        return ModelSpec(text, ".".join(parts), attr, file, root)
    if not _DOTTED.match(left):
        raise SpecError(f"{left!r} is neither a .py path nor a dotted module name (MODEL {text!r})")
    file, root = _locate_module(left, [str(cwd)] + [p for p in sys.path if p])
    return ModelSpec(text, left, attr, file, root)


def _namespace_package(spec: ModelSpec, path: Path) -> str | None:
    """The dotted name of `path`, a directory without __init__.py, when the model's module lies
    under it as a namespace package (`facenet_pytorch.models.mtcnn` in .../facenet_pytorch/models);
    None for a plain directory of top-level modules."""
    try:
        relative = spec.module_file.resolve().relative_to(path)
    except ValueError:
        return None
    parts = list(relative.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    tail = ".".join(parts)
    if not tail or not spec.module.endswith("." + tail):
        return None
    return spec.module[: -len(tail) - 1]


def resolve_source_root(spec: ModelSpec, source_root: str | os.PathLike | None) -> SourceRoot:
    """The tree to copy and rewrite, with the module names it provides (default: the model's file)."""
    if source_root is None:
        path = spec.module_file
    else:
        path = Path(source_root).resolve()
        if not path.exists():
            raise SpecError(f"--source-root {source_root} does not exist")
    modules: dict[str, str] = {}
    regular = path.is_file() or (path / "__init__.py").is_file()
    namespace = None if regular or not path.is_dir() else _namespace_package(spec, path)
    if regular:
        _, parts = _package_chain(path)
        name = ".".join(parts)
        modules[name] = path.name
    elif namespace is not None:
        # a package without __init__.py on the model's dotted path (PEP 420: facenet_pytorch/models)
        modules[namespace] = path.name
    elif path.is_dir():
        for child in sorted(path.iterdir()):
            if child.suffix == ".py" and child.is_file():
                modules[child.stem] = child.name
            elif (child / "__init__.py").is_file():
                modules[child.name] = child.name
    else:
        raise SpecError(f"--source-root {source_root} is neither a file nor a directory")
    covered = any(spec.module == m or spec.module.startswith(m + ".") for m in modules)
    plain_dir = path.is_dir() and not regular and namespace is None
    if not covered and plain_dir:
        raise SpecError(
            f"the model's module {spec.module} ({spec.module_file}) is not inside the source root {path}"
        )
    if plain_dir and path.resolve() != spec.import_root:
        raise SpecError(f"--source-root {path} is a plain directory but not the one {spec.module} is imported from")
    # A module or package root outside the model's file is allowed (a factory script building e.g. a
    # transformers model from a config); the run then checks that the model really imported the root.
    return SourceRoot(path, modules, driver=not covered, namespace=namespace is not None)


def parse_config_class(text: str) -> tuple[str, str]:
    """``package.module:ConfigClass`` -> (module, attr), for ``--config-class``.

    The class is imported in each worker (after the rewritten copy's redirect is in place), called
    with ``--config-kwargs`` and the result passed to MODEL as its first argument, as
    transformers' ``XModel(XConfig(**kwargs))``."""
    module, sep, attr = text.rpartition(":")
    if not sep or not _DOTTED.match(module or "") or not _DOTTED.match(attr or ""):
        raise SpecError(f"--config-class must be package.module:ClassName, got {text!r}")
    return module, attr


# Modules that model code imports under another name than the one pip installs.
_DISTRIBUTIONS = {
    "cv2": "opencv-python",
    "PIL": "Pillow",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "yaml": "PyYAML",
    "attr": "attrs",
    "dateutil": "python-dateutil",
    "google": "protobuf",
    "pkg_resources": "setuptools",
    "Levenshtein": "python-Levenshtein",
}


def describe_import_error(target: str, exc: BaseException, skipping: bool = False) -> str:
    """One line for an import that failed while building the model: which module is missing,
    which module imports it (file and line), and how to proceed. Not a traceback. `skipping`:
    --skip-package-init is on already (so it is not the advice)."""
    importer = _importing_frame(exc)
    where = f"; imported by {importer[0]} ({importer[1]}:{importer[2]})" if importer else ""
    bare = getattr(exc, "name", None)
    if isinstance(exc, ImportError) and bare and getattr(sys.modules.get(bare), "__candle_port_bare__", False):
        # `from ultralytics import __version__` in ultralytics.utils: the name comes from the
        # __init__.py that --skip-package-init left out
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return (f"cannot import {target}: {reason}{where}: {bare}'s __init__.py defines it, and "
                f"--skip-package-init does not run it; verify without --skip-package-init")
    package = _package_above(target, exc)
    if package is not None and skipping:
        # DAC: dac.model.dac imports dac.nn.layers, and dac.nn's __init__.py imports its losses
        ran = _first_init(exc) or package
        instead = (f"install what {ran}'s __init__.py imports (the failing import is there): "
                   f"--skip-package-init, given, leaves out only the __init__.py of the packages above "
                   f"{target}, and the model imports {ran} itself")
    elif package is not None and target.startswith(package + "."):
        # The model's module never got to run: a package above it imports everything (model zoos'
        # __init__.py import every model and its dependencies).
        instead = (f"--skip-package-init imports {target} without running {package}'s __init__.py "
                   f"(the failing import is there)")
    elif package is not None:  # a driver importing a zoo's subpackage
        instead = (f"--skip-package-init with --source-root on {package} or the subpackage the model needs "
                   f"imports it without running {package}'s __init__.py (the failing import is there)")
    else:
        instead = ("give MODEL as the model's own module and --source-root on its subpackage, so that only what the "
                   "model imports is imported")
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        missing = exc.name
        top = missing.split(".")[0]
        return (f"cannot import {target}: module {missing!r} is not installed{where}. Install it "
                f"(pip install {_DISTRIBUTIONS.get(top, top)}), or, if the model does not need it, {instead}")
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    hint = f". If the model does not need what failed, {instead}" if package is not None else ""
    return f"cannot import {target}: {type(exc).__name__}: {reason}{where}{hint}"


def _package_inits(exc: BaseException):
    """(package, file) of each package __init__.py the failing import ran in, outermost first."""
    tb = exc.__traceback__
    while tb is not None:
        name = str(tb.tb_frame.f_globals.get("__name__", ""))
        file = tb.tb_frame.f_code.co_filename
        if os.path.basename(file) == "__init__.py" and name and not name.startswith(("importlib", "candle_port")):
            yield name, file
        tb = tb.tb_next


def _first_init(exc: BaseException) -> str | None:
    """The package of the first __init__.py the failing import ran in (its full dotted name)."""
    return next((name for name, _ in _package_inits(exc)), None)


def _package_above(target: str, exc: BaseException) -> str | None:
    """The outermost package whose __init__.py the failing import ran in: one above module
    `target`, else (a driver importing a zoo) the first package __init__ in the traceback."""
    first = None
    for name, file in _package_inits(exc):
        if target.startswith(name + "."):
            return name
        if "site-packages" not in file and "dist-packages" not in file:  # the user's zoo, not a library
            first = first or name.split(".")[0]
    return first


def _importing_frame(exc: BaseException) -> tuple[str, str, int] | None:
    """(module name, file, line) of the innermost frame that ran the failing import statement."""
    tb = exc.__traceback__
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith("<frozen importlib"):
            name = tb.tb_frame.f_globals.get("__name__", "?")
            found = (str(name), code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    # The worker's own frame (importlib.import_module's caller) is no importer of the user's.
    if found is not None and found[0].startswith(("candle_port.", "importlib")):
        return None
    return found
