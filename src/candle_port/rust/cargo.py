"""What a Rust file's crate says about candle: the version it builds with, and its own names for
candle's crates (`candle = { package = "candle-core" }`, as candle-transformers writes it).

The version comes from the nearest Cargo.lock above the crate (a workspace keeps it at its root),
else from the crate's Cargo.toml requirement; `--candle-version` overrides both. Manifests are
read once per directory.
"""

from __future__ import annotations

import functools
import os

from candle_port.pipeline.records import Record

# candle's crates, by package name, as a path's first segment names them by default.
CANDLE_CRATES = {"candle-core": "candle_core", "candle-nn": "candle_nn", "candle-transformers": "candle_transformers"}


class CrateContext(Record):
    """What checking a file of one crate needs: `version` judged (X.Y.Z, or "" when nothing says),
    `version_source` (where it came from: "Cargo.lock", "Cargo.toml", "--candle-version"), and
    `renames`: the crate's name for each of candle's crates (`candle` -> `candle_core`)."""

    __slots__ = ("version", "version_source", "renames")

    def __init__(self, version: str = "", version_source: str = "", renames: tuple[tuple[str, str], ...] = ()) -> None:
        self.version = version
        self.version_source = version_source
        self.renames = renames

    def digest_text(self) -> str:
        """What the cache key of a file adds for its crate (a new Cargo.lock changes the verdicts)."""
        return f"{self.version}\0{self.version_source}\0{self.renames!r}"


def context_for(path: str, candle_version: str | None = None) -> CrateContext:
    """The crate context of the file at `path` (its nearest Cargo.toml above it)."""
    manifest = find_manifest(os.path.dirname(os.path.abspath(path)))
    version, source, renames = "", "", ()
    if manifest is not None:
        data = _with_workspace_dependencies(_toml(manifest), os.path.dirname(manifest))
        renames = tuple(sorted(_renames(data).items()))
        version = _locked_version(os.path.dirname(manifest))
        source = "Cargo.lock" if version else ""
        if not version:
            version = _required_version(data)
            source = "Cargo.toml" if version else ""
    if candle_version:
        version, source = candle_version, "--candle-version"
    return CrateContext(version, source, renames)


@functools.lru_cache(maxsize=1024)
def find_manifest(directory: str) -> str | None:
    """The nearest Cargo.toml at or above `directory` that is a package's (has [package])."""
    candidate = os.path.join(directory, "Cargo.toml")
    if os.path.isfile(candidate) and "package" in _toml(candidate):
        return candidate
    parent = os.path.dirname(directory)
    return None if parent == directory else find_manifest(parent)


@functools.lru_cache(maxsize=256)
def _toml(path: str) -> dict:
    """The parsed TOML file, or {} when it cannot be read (the crate's own build says why)."""
    import tomllib

    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _with_workspace_dependencies(data: dict, directory: str) -> dict:
    """The manifest with each `name = { workspace = true }` dependency replaced by the workspace
    root's `[workspace.dependencies]` entry (how candle's own crates and this project's name
    candle-core)."""
    inherited = None
    out = dict(data)
    for key in ("dependencies", "dev-dependencies", "build-dependencies"):
        table = data.get(key)
        if not isinstance(table, dict):
            continue
        replaced = {}
        for name, spec in table.items():
            if isinstance(spec, dict) and spec.get("workspace") is True:
                if inherited is None:
                    inherited = _workspace_dependencies(directory)
                spec = inherited.get(name, spec)
            replaced[name] = spec
        out[key] = replaced
    return out


@functools.lru_cache(maxsize=256)
def _workspace_dependencies(directory: str) -> dict:
    """`[workspace.dependencies]` of the nearest Cargo.toml at or above `directory` with a
    [workspace] table; {} when there is none."""
    candidate = os.path.join(directory, "Cargo.toml")
    if os.path.isfile(candidate):
        workspace = _toml(candidate).get("workspace")
        if isinstance(workspace, dict):
            dependencies = workspace.get("dependencies", {})
            return dependencies if isinstance(dependencies, dict) else {}
    parent = os.path.dirname(directory)
    return {} if parent == directory else _workspace_dependencies(parent)


def _dependency_tables(data: dict):
    for key in ("dependencies", "dev-dependencies", "build-dependencies"):
        yield data.get(key, {})
    for target in data.get("target", {}).values():
        if isinstance(target, dict):
            for key in ("dependencies", "dev-dependencies", "build-dependencies"):
                yield target.get(key, {})


def _renames(data: dict) -> dict[str, str]:
    """The crate's own names of candle's crates: `name = { package = "candle-core" }` -> name."""
    out: dict[str, str] = {}
    for table in _dependency_tables(data):
        if not isinstance(table, dict):
            continue
        for name, spec in table.items():
            package = spec.get("package") if isinstance(spec, dict) else None
            if package in CANDLE_CRATES:
                out[name.replace("-", "_")] = CANDLE_CRATES[package]
    return out


def _required_version(data: dict) -> str:
    """candle-core's version requirement in the manifest, as X.Y.Z (`^0.9.1`, `=0.9.2` -> 0.9.1,
    0.9.2; `0.9` -> 0.9.0): the lowest version the requirement admits."""
    for table in _dependency_tables(data):
        if not isinstance(table, dict):
            continue
        for name, spec in table.items():
            package = spec.get("package", name) if isinstance(spec, dict) else name
            if package != "candle-core":
                continue
            requirement = spec.get("version") if isinstance(spec, dict) else spec
            if isinstance(requirement, str):
                version = _lowest(requirement)
                if version:
                    return version
    return ""


def _lowest(requirement: str) -> str:
    first = requirement.split(",")[0].strip().lstrip("^=~>< ")
    parts = first.split(".")
    if not parts or not all(p.isdigit() for p in parts[:3]):
        return ""
    return ".".join((parts + ["0", "0"])[:3])


@functools.lru_cache(maxsize=256)
def _locked_version(directory: str) -> str:
    """candle-core's version in the nearest Cargo.lock at or above `directory` (the highest, when
    the lock holds more than one)."""
    candidate = os.path.join(directory, "Cargo.lock")
    if os.path.isfile(candidate):
        versions = [
            package.get("version", "")
            for package in _toml(candidate).get("package", [])
            if isinstance(package, dict) and package.get("name") == "candle-core"
        ]
        versions = [v for v in versions if _lowest(v)]
        if versions:
            return max(versions, key=version_key)
        return ""
    parent = os.path.dirname(directory)
    return "" if parent == directory else _locked_version(parent)


def version_key(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of an X.Y.Z version (pre-release tags dropped)."""
    parts = (version.split("-")[0].split(".") + ["0", "0"])[:3]
    return tuple(int(p) if p.isdigit() else 0 for p in parts)  # type: ignore[return-value]
