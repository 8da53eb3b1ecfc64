"""`[tool.candle-port]` in the nearest pyproject.toml, merged with command-line options.

Keys: select, ignore, exclude, extend-exclude, per-file-ignores, severity (code -> error|warning),
strategy (port-fix's default). Codes match by prefix, like ruff: "CP1" selects CP101..CP105.
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
KNOWN_KEYS = {"select", "ignore", "exclude", "extend-exclude", "per-file-ignores", "severity", "strategy", "cache-dir"}


class ConfigError(Exception):
    """A configuration that cannot be used; the message names the file and the key."""


def unknown_codes(codes: tuple[str, ...]) -> list[str]:
    """The entries of `codes` that are neither a rule code nor a prefix of one (`CP11`, `CP1O1`).

    A typo in select/ignore would otherwise select nothing and report "no findings" silently.
    """
    from candle_port.rules import rule_codes

    known = rule_codes()
    return [code for code in codes if not any(k.startswith(code) for k in known)]


def check_codes(codes: tuple[str, ...], where: str, exact: bool = False) -> None:
    """ConfigError naming each unknown code in `codes` and the known ones (`exact`: no prefixes)."""
    from candle_port.rules import rule_codes

    bad = unknown_codes(codes)
    if exact:
        bad = [code for code in codes if code not in rule_codes()]
    if bad:
        known = ", ".join(rule_codes())
        raise ConfigError(f"{where}: unknown rule code(s) {', '.join(bad)} (known: {known}, or a prefix such as CP1)")


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
            try:
                text = candidate.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{candidate}: cannot read: {exc}") from None
            if "candle-port" not in text:
                continue  # cannot hold the table: not parsed (most projects' pyproject.toml)
            import tomllib

            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                # Skipping it would drop its exclude and strategy silently, and port-fix would
                # rewrite what the user excluded: a broken pyproject.toml stops the run (exit 2).
                raise ConfigError(f"{candidate}: invalid TOML: {exc}") from None
            if "candle-port" in data.get("tool", {}):
                return candidate
    return None


def load_config(path: Path | None = None, start: Path | None = None) -> Config:
    """Read `path`, or the nearest pyproject.toml above `start` (default: cwd); defaults if none."""
    if path is None:
        path = find_config_file(start or Path.cwd())
        if path is None:
            return Config()
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    table = data.get("tool", {}).get("candle-port", {}) if path.name == "pyproject.toml" else data
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
            raise ConfigError(f"{path}: {key} must be a list of rule codes")
        result = tuple(v.upper() for v in value)
        check_codes(result, f"{path}: {key}")
        return result

    changes: dict = {}
    for key, attr in (("select", "select"), ("ignore", "ignore"), ("exclude", "exclude"), ("extend-exclude", "extend_exclude")):
        value = codes(key) if key in ("select", "ignore") else _strings(table, key, path)
        if value is not None:
            changes[attr] = value
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{path}: per-file-ignores must be a table of glob = [codes]")
    changes["per_file_ignores"] = tuple((glob, tuple(c.upper() for c in v)) for glob, v in pfi.items())
    for glob, pfi_codes in changes["per_file_ignores"]:
        check_codes(pfi_codes, f"{path}: per-file-ignores {glob!r}")
    severity = table.get("severity", {})
    if not isinstance(severity, dict) or any(v not in ("error", "warning") for v in severity.values()):
        raise ConfigError(f"{path}: severity must map rule codes to \"error\" or \"warning\"")
    changes["severity"] = tuple(sorted((k.upper(), v) for k, v in severity.items()))
    check_codes(tuple(code for code, _ in changes["severity"]), f"{path}: severity", exact=True)
    if "strategy" in table:
        if table["strategy"] not in ("runtime", "nearest", "convtranspose", "detach"):
            raise ConfigError(f"{path}: strategy must be runtime, nearest, convtranspose or detach")
        changes["strategy"] = table["strategy"]
    if "cache-dir" in table:
        changes["cache_dir"] = str(table["cache-dir"])
    return config.replace(**changes)


def _strings(table: dict, key: str, path: Path) -> tuple[str, ...] | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: {key} must be a list of strings")
    return tuple(value)
