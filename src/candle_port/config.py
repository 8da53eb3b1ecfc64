"""`[tool.candle-port]` in the nearest pyproject.toml, merged with command-line options.

Keys: select, ignore, exclude, extend-exclude, per-file-ignores, severity (code -> error|warning),
strategy (port-fix's default), candle-version (the candle release Rust files are judged against,
over what their Cargo.lock says). Codes match by prefix, like ruff: "CP1" selects CP101..CP105.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from pathlib import Path, PurePath

from candle_port.pipeline.digests import hex_digest
from candle_port.pipeline.findings import Severity
from candle_port.pipeline.records import Record

DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".eggs",
    "__pycache__",
    "build",
    "dist",
    "site-packages",
    "node_modules",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".candle_port_cache",
)
KNOWN_KEYS = {"select", "ignore", "exclude", "extend-exclude", "per-file-ignores", "severity", "strategy", "cache-dir", "candle-version"}


class ConfigError(Exception):
    """A configuration that cannot be used; the message names the file and the key."""


def unknown_codes(codes: tuple[str, ...]) -> list[str]:
    """The entries of `codes` that are neither a rule code nor a prefix of one (`CP11`, `CP1O1`).

    A typo in select/ignore would otherwise select nothing and report "no findings" silently.
    """
    known = _known_codes()
    return [code for code in codes if not any(k.startswith(code) for k in known)]


def check_codes(codes: tuple[str, ...], where: str, exact: bool = False) -> None:
    """ConfigError naming each unknown code in `codes` and the known ones (`exact`: no prefixes)."""
    bad = unknown_codes(codes)
    if exact:
        bad = [code for code in codes if code not in _known_codes()]
    if bad:
        known = ", ".join(_known_codes())
        raise ConfigError(f"{where}: unknown rule code(s) {', '.join(bad)} (known: {known}, or a prefix such as CP1)")


def _known_codes() -> tuple[str, ...]:
    """The Python rules' codes (CP1xx) and the Rust rules' (CP2xx), from module names only."""
    from candle_port.rules import rule_codes
    from candle_port.rust_rules import rust_rule_codes

    return rule_codes() + rust_rule_codes()


class Config(Record):
    """The effective settings. `include_no_grad`: port-fix also rewrites sites under
    torch.no_grad()/inference_mode() (--include-no-grad). `include_untrained`: findings on no
    training path (analysis/training.py) stay errors, and port-fix rewrites them
    (--include-untrained). `root` (the directory of the config
    file, which relative patterns start from) and `source` (that file) are not compared."""

    __slots__ = (
        "select",
        "ignore",
        "exclude",
        "extend_exclude",
        "per_file_ignores",
        "severity",
        "strategy",
        "cache_dir",
        "include_no_grad",
        "candle_version",
        "include_untrained",
        "root",
        "source",
    )
    _uncompared = frozenset({"root", "source"})

    def __init__(
        self,
        select: tuple[str, ...] = ("CP",),
        ignore: tuple[str, ...] = (),
        exclude: tuple[str, ...] = DEFAULT_EXCLUDE,
        extend_exclude: tuple[str, ...] = (),
        per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = (),
        severity: tuple[tuple[str, str], ...] = (),
        strategy: str = "runtime",
        cache_dir: str | None = None,
        include_no_grad: bool = False,
        candle_version: str | None = None,
        include_untrained: bool = False,
        root: Path | None = None,
        source: Path | None = None,
    ) -> None:
        self.select = select
        self.ignore = ignore
        self.exclude = exclude
        self.extend_exclude = extend_exclude
        self.per_file_ignores = per_file_ignores
        self.severity = severity
        self.strategy = strategy
        self.cache_dir = cache_dir
        self.include_no_grad = include_no_grad
        self.candle_version = candle_version
        self.include_untrained = include_untrained
        self.root = root
        self.source = source

    def enabled(self, code: str, path: str | None = None) -> bool:
        if not any(code.startswith(prefix) for prefix in self.select):
            return False
        if any(code.startswith(prefix) for prefix in self.ignore):
            return False
        if path is not None:
            for pattern, codes in self.per_file_ignores:
                if _matches(_match_candidates(path, self.root), pattern) and any(code.startswith(c) for c in codes):
                    return False
        return True

    def severity_of(self, code: str, default: Severity) -> Severity:
        for key, level in self.severity:
            if key == code:
                return Severity(level)
        return default

    def is_excluded(self, path: str) -> bool:
        patterns = (*self.exclude, *self.extend_exclude)
        if not patterns:
            return False
        matches = _any_pattern(patterns)
        return any(matches(c) for c in _match_candidates(path, self.root))

    def fingerprint(self) -> str:
        """A stable digest of every setting that changes results (for the cache key)."""
        data = {
            "select": self.select,
            "ignore": self.ignore,
            "per_file_ignores": self.per_file_ignores,
            "severity": self.severity,
            "candle_version": self.candle_version,
            "include_untrained": self.include_untrained,
        }
        import json  # here: only a run with the cache needs the fingerprint

        return hex_digest(json.dumps(data, sort_keys=True).encode())[:16]

    def with_options(self, **options) -> "Config":
        changes = {key: value for key, value in options.items() if value is not None}
        return self.replace(**changes)


def _match_candidates(path: str, root: Path | None) -> set[str]:
    """What a pattern may match: the path, its name, any component, and the path relative to the
    config root (computed once per path, not once per pattern: discovery asks for every file)."""
    pure = PurePath(path)
    candidates = {str(pure), pure.name, *pure.parts}
    if root is not None:
        try:
            candidates.add(str(_real(path).relative_to(_resolved(root))))
        except (ValueError, OSError):
            pass
    return candidates


def _real(path: str) -> Path:
    """`Path(path).resolve()`, with each directory resolved once (a link is resolved whole)."""
    head, name = os.path.split(path)
    if not name or name in (".", "..") or os.path.islink(path):
        return Path(path).resolve()
    return _real_directory(os.path.abspath(head)) / name


@functools.lru_cache(maxsize=4096)
def _real_directory(directory: str) -> Path:
    return Path(directory).resolve()


@functools.lru_cache(maxsize=64)
def _resolved(root: Path) -> Path:
    return root.resolve()


_GLOB_CHARACTERS = frozenset("*?[")


@functools.lru_cache(maxsize=16)
def _any_pattern(patterns: tuple[str, ...]):
    """A test of a name or path against every pattern (and its form without a trailing slash), as
    _matches reads them: discovery asks for every file and directory of the tree. Plain names
    (every default exclude) are a set lookup; the globs are one compiled regex (compiling the
    defaults as globs cost about 2 ms, a fiftieth of port-check's run on a small package)."""
    forms = dict.fromkeys(form for pattern in patterns for form in (pattern, pattern.rstrip("/")))
    names = frozenset(form for form in forms if _GLOB_CHARACTERS.isdisjoint(form))
    globs = [form for form in forms if form not in names]
    if not globs:
        return names.__contains__
    glob = re.compile("|".join(f"(?:{fnmatch.translate(form)})" for form in globs)).match
    return lambda candidate: candidate in names or glob(candidate) is not None


def _matches(candidates: set[str], pattern: str) -> bool:
    """Glob match on the path relative to the config root, on any path component, or the name."""
    bare = pattern.rstrip("/")
    return any(fnmatch.fnmatchcase(c, pattern) or fnmatch.fnmatchcase(c, bare) for c in candidates)


def find_config_file(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a [tool.candle-port] table.

    ConfigError for any pyproject.toml on the way that names candle-port and does not parse (it
    might hold the table); one that never names it cannot, and is not parsed.
    """
    start = start.resolve()
    for directory in (start, *start.parents) if start.is_dir() else (start.parent, *start.parent.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            text = read_config_text(candidate)
            if "candle-port" not in text:
                continue  # cannot hold the table: not parsed (most projects' pyproject.toml)
            # A broken one stops the run (exit 2): skipping it would drop its exclude and strategy
            # silently, and port-fix would rewrite what the user excluded.
            if "candle-port" in _tool_table(parse_toml(text, candidate), candidate):
                return candidate
    return None


# A configuration file is a few hundred bytes; past this it is not one (`--config /dev/zero`).
MAX_CONFIG_BYTES = 1 << 20


def read_config_text(path: Path) -> str:
    """The text of a configuration file: the one way every config file is read.

    Opened without blocking and checked to be a regular file of at most MAX_CONFIG_BYTES, so a
    FIFO, a device or /dev/zero given as --config is a one-line ConfigError, not a hang or a run
    that fills memory.
    """
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path}: not a regular file; a config file must be a TOML file")
        data = os.read(fd, MAX_CONFIG_BYTES + 1)
        while len(data) <= MAX_CONFIG_BYTES and (chunk := os.read(fd, MAX_CONFIG_BYTES + 1 - len(data))):
            data += chunk
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES >> 20} MB; not a config file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def parse_toml(text: str, path: Path) -> dict:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None


def _tool_table(data: dict, path: Path) -> dict:
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: tool must be a table ([tool]), not {_kind(tool)}")
    return tool


def _kind(value) -> str:
    """How TOML calls a value's type, for a message."""
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array", dict: "a table"}
    return names.get(type(value), f"a {type(value).__name__}")


def _list_kind(value) -> str:
    """_kind, and for an array the kind of its first element that is no string."""
    if isinstance(value, list):
        bad = next((v for v in value if not isinstance(v, str)), None)
        if bad is not None:
            return f"an array holding {_kind(bad)}"
    return _kind(value)


def load_config(path: Path | None = None, start: Path | None = None) -> Config:
    """Read `path`, or the nearest pyproject.toml above `start` (default: cwd); defaults if none."""
    if path is None:
        path = find_config_file(start or Path.cwd())
        if path is None:
            return Config()
    data = parse_toml(read_config_text(path), path)
    if path.name == "pyproject.toml":
        table = _tool_table(data, path).get("candle-port", {})
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool] candle-port must be a table ([tool.candle-port]), not {_kind(table)}")
    else:
        table = data
    return config_from_table(table, path)


def config_from_table(table: dict, path: Path) -> Config:
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [tool.candle-port]: {', '.join(sorted(unknown))}")
    config = Config(root=path.parent, source=path)

    def codes(key: str) -> tuple[str, ...] | None:
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{path}: {key} must be a list of rule codes, not {_list_kind(value)}")
        result = tuple(v.upper() for v in value)
        if key == "select" and not result:
            raise ConfigError(f"{path}: select is empty, so no rule would run; remove it to run every rule")
        check_codes(result, f"{path}: {key}")
        return result

    changes: dict = {}
    for key, attr in (("select", "select"), ("ignore", "ignore"), ("exclude", "exclude"), ("extend-exclude", "extend_exclude")):
        value = codes(key) if key in ("select", "ignore") else _strings(table, key, path)
        if value is not None:
            changes[attr] = value
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{path}: per-file-ignores must be a table of glob = [codes], not {_kind(pfi)}")
    for glob, value in pfi.items():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{path}: per-file-ignores {glob!r} must be a list of rule codes, not {_list_kind(value)}")
    changes["per_file_ignores"] = tuple((glob, tuple(c.upper() for c in v)) for glob, v in pfi.items())
    for glob, pfi_codes in changes["per_file_ignores"]:
        check_codes(pfi_codes, f"{path}: per-file-ignores {glob!r}")
    severity = table.get("severity", {})
    if not isinstance(severity, dict) or any(not isinstance(v, str) or v not in ("error", "warning") for v in severity.values()):
        raise ConfigError(f"{path}: severity must map rule codes to \"error\" or \"warning\"")
    changes["severity"] = tuple(sorted((k.upper(), v) for k, v in severity.items()))
    check_codes(tuple(code for code, _ in changes["severity"]), f"{path}: severity", exact=True)
    if "strategy" in table:
        if not isinstance(table["strategy"], str) or table["strategy"] not in ("runtime", "nearest", "convtranspose", "detach"):
            raise ConfigError(f"{path}: strategy must be runtime, nearest, convtranspose or detach")
        changes["strategy"] = table["strategy"]
    if "candle-version" in table:
        changes["candle_version"] = check_candle_version(table["candle-version"], f"{path}: candle-version")
    if "cache-dir" in table:
        if not isinstance(table["cache-dir"], str):
            raise ConfigError(f"{path}: cache-dir must be a string (a directory), not {_kind(table['cache-dir'])}")
        changes["cache_dir"] = table["cache-dir"]
    return config.replace(**changes)


def _strings(table: dict, key: str, path: Path) -> tuple[str, ...] | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: {key} must be a list of strings, not {_list_kind(value)}")
    return tuple(value)


def check_candle_version(value: object, where: str) -> str:
    """`value` as an X.Y.Z candle version, or ConfigError naming `where`."""
    text = str(value).strip()
    parts = text.split(".")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        raise ConfigError(f"{where}: {text!r} is not a candle version (X.Y.Z, e.g. 0.11.0)")
    return text
