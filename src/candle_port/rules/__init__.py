"""The rule catalog, discovered by walking this package: each module holds one Rule subclass, in
a file named after its code (`cp101_bilinear.py` holds CP101)."""

from __future__ import annotations

import importlib
import os
from functools import lru_cache

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:
    from candle_port.rules.base import Rule


def rule_module_names(directory: str) -> tuple[str, ...]:
    """The rule modules of a rule package's `directory` (`cp101_bilinear`, ...), sorted. Listed
    from the directory: pkgutil.iter_modules would cost 4 ms of port-check's start (it imports
    typing and inspect). The Rust rules (candle_port.rust_rules) are found the same way."""
    return tuple(sorted(name[:-3] for name in os.listdir(directory) if name.startswith("cp") and name.endswith(".py")))


def codes_of(modules: tuple[str, ...]) -> tuple[str, ...]:
    """The codes of rule modules, from their names alone (`cp101_bilinear` holds CP101)."""
    return tuple(name.split("_", 1)[0].upper() for name in modules)


def instantiate_rules(package: str, modules: tuple[str, ...], base: type) -> tuple:
    """One instance of each `base` subclass defined in the modules of `package`, sorted by code;
    a code defined twice is an error."""
    found: dict = {}
    for name in modules:
        module = importlib.import_module(f"{package}.{name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, base) and value is not base and value.__module__ == module.__name__:
                if value.code in found:
                    raise RuntimeError(f"rule code {value.code} is defined twice")
                found[value.code] = value()
    return tuple(found[code] for code in sorted(found))


@lru_cache(maxsize=1)
def _rule_modules() -> tuple[str, ...]:
    return rule_module_names(__path__[0])


def rule_codes() -> tuple[str, ...]:
    """Every rule's code, sorted, from the module names alone: checking `--select CP1O1` needs no
    rule imported (importing them and the analysis they use is 10 ms of a run that may parse
    nothing). tests/test_cli_rules.py holds it equal to all_rules()'s codes."""
    return codes_of(_rule_modules())


@lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    """Every rule, sorted by code."""
    from candle_port.rules.base import Rule

    return instantiate_rules(__name__, _rule_modules(), Rule)


def rules_by_code() -> dict[str, Rule]:
    return {rule.code: rule for rule in all_rules()}
