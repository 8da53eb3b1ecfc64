"""Turn command-line paths into the Python (and, for port-check, Rust) files to check, with
ruff-like default excludes; a crate's `target/` (beside its Cargo.toml) is cargo's build output."""

from __future__ import annotations

import os
from pathlib import Path

from candle_port.config import Config
from candle_port.pipeline.findings import FileError


class Discovery:
    """What the paths hold: `files` (display paths, as given joined with the relative path), the
    paths that could not be read, and the directories with no Python file."""

    __slots__ = ("files", "errors", "empty_directories")

    def __init__(self) -> None:
        self.files: list[str] = []
        self.errors: list[FileError] = []
        self.empty_directories: list[str] = []


def discover(paths: list[str], config: Config, rust: bool = False) -> Discovery:
    """`rust`: `*.rs` files too (port-check; port-fix rewrites Python only)."""
    found = Discovery()
    seen: set[str] = set()
    for given in paths:
        path = Path(given)
        try:
            if path.is_symlink() and not path.exists():
                path.stat()  # raises ELOOP for a loop, ENOENT for a dangling link
        except OSError as exc:
            found.errors.append(FileError(given, exc.strerror or str(exc)))
            continue
        if path.is_dir():
            before = len(found.files)
            _walk(given, config, found, seen, (".py", ".pyi", ".rs") if rust else (".py", ".pyi"))
            if len(found.files) == before:
                found.empty_directories.append(given)
        elif given.endswith(".ipynb"):
            # JSON, not Python: parsing it as Python reads a dict and misses every site.
            found.errors.append(FileError(given, "a Jupyter notebook, not Python source; export it first (jupyter nbconvert --to script)"))
        elif path.exists():
            # A file named explicitly is checked even when excluded or not *.py (like ruff).
            _add(given, found, seen)
        else:
            found.errors.append(FileError(given, "no such file or directory"))
    return found


def _add(display: str, found: Discovery, seen: set[str], key: str | None = None) -> None:
    """Add a file once, however it is reached (`key`: its real path, when the caller knows it)."""
    if key is None:
        try:
            key = os.path.realpath(display)
        except OSError:
            key = display
    if key not in seen:
        seen.add(key)
        found.files.append(display)


def _walk(root: str, config: Config, found: Discovery, seen: set[str], suffixes: tuple[str, ...]) -> None:
    def on_error(exc: OSError) -> None:
        found.errors.append(FileError(exc.filename or root, exc.strerror or str(exc)))

    for directory, subdirs, names in os.walk(root, onerror=on_error, followlinks=False):
        # Excludes match below the root the user named, so `port-check build/` still checks build/.
        # Paths relative to it and real paths are made once per directory, not per file.
        relative = os.path.relpath(directory, root)
        below = "" if relative == "." else relative + os.sep
        subdirs[:] = sorted(d for d in subdirs if not config.is_excluded(below + d))
        if ".rs" in suffixes and "target" in subdirs and "Cargo.toml" in names:
            subdirs.remove("target")
        real = None
        for name in sorted(names):
            if not name.endswith(suffixes):
                continue
            display = os.path.join(directory, name)
            if config.is_excluded(below + name):
                continue
            if os.path.islink(display):
                if not os.path.exists(display):
                    try:
                        os.stat(display)
                    except OSError as exc:
                        found.errors.append(FileError(display, exc.strerror or str(exc)))
                    continue
                _add(display, found, seen)  # a link: its own real path
                continue
            if real is None:
                real = os.path.realpath(directory)
            _add(display, found, seen, os.path.join(real, name))
