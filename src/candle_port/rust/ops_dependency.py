"""Give a crate the candle-port-ops dependency that port-fix's Rust rewrites call (or, for
`port-fix --instrument`, candle-port-parity: `name`).

The manifest's text gets one line at the end of its `[dependencies]` table (the table is added
when missing); nothing else in the file moves. Where the crate comes from: `--ops-crate` (a
directory: a path dependency, written relative to the manifest; anything else: a version
requirement), else this installation's own crates/candle-port-ops when it has one (a clone or
an editable install), else the requirement `=<candle-port's version>`.
"""

from __future__ import annotations

import os
import re

from candle_port import __version__

NAME = "candle-port-ops"
PARITY = "candle-port-parity"
_HEADER = re.compile(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$")


def bundled_crate(name: str = NAME) -> str | None:
    """This installation's crates/<name>, when it ships with the source tree."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    candidate = os.path.join(os.path.dirname(root), "crates", name)
    return candidate if os.path.isfile(os.path.join(candidate, "Cargo.toml")) else None


def dependency_line(manifest: str, spec: str | None, name: str = NAME) -> str:
    """`candle-port-ops = ...` for `manifest` (see the module's docstring for `spec`)."""
    if spec is None:
        spec = bundled_crate(name) or f"={__version__}"
    if os.path.isdir(spec):
        relative = os.path.relpath(os.path.abspath(spec), os.path.dirname(os.path.abspath(manifest)))
        return f'{name} = {{ path = "{relative.replace(os.sep, "/")}" }}'
    return f'{name} = "{spec}"'


def has_dependency(data: dict, name: str = NAME) -> bool:
    from candle_port.rust.cargo import _dependency_tables

    for table in _dependency_tables(data):
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            package = value.get("package", key) if isinstance(value, dict) else key
            if package == name:
                return True
    return False


def with_dependency(text: str, line: str) -> str:
    """`text` with `line` at the end of its [dependencies] table (added at the end when missing)."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    start = None
    for i, current in enumerate(lines):
        header = _HEADER.match(current.rstrip("\r\n"))
        if header is None:
            continue
        if start is not None:
            end = i
            while end > start + 1 and not lines[end - 1].strip():
                end -= 1  # before the blank lines that end the table
            return "".join(lines[:end] + [line + newline] + lines[end:])
        if header.group(1).strip() == "dependencies":
            start = i
    if start is not None:
        body = "".join(lines)
        if body and not body.endswith(("\n", "\r")):
            body += newline
        return body + line + newline
    body = text if not text or text.endswith(("\n", "\r")) else text + newline
    return body + newline + "[dependencies]" + newline + line + newline


def manifest_edit(manifest: str, spec: str | None, name: str = NAME) -> tuple[str, str] | str | None:
    """(old text, new text) of `manifest` with the dependency; None when it has it; a string:
    why the manifest cannot be edited."""
    import tomllib

    try:
        with open(manifest, "rb") as handle:
            raw = handle.read()
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return f"cannot read it to add {name}: {exc}"
    if has_dependency(data, name):
        return None
    line = dependency_line(manifest, spec, name)
    new = with_dependency(text, line)
    try:
        if not has_dependency(tomllib.loads(new), name):
            return f"could not add {name} to it; add `{line}` by hand"
    except tomllib.TOMLDecodeError:
        return f"could not add {name} to it; add `{line}` by hand"
    return text, new
