"""The rule catalog, discovered by walking this package: each module holds one Rule subclass, in
a file named after its code (`cp101_bilinear.py` holds CP101)."""

from __future__ import annotations

import importlib
import os
from functools import lru_cache

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:
    from candle_port.rules.base import Rule


@lru_cache(maxsize=1)
def _rule_modules() -> tuple[str, ...]:
    # Listed from the directory: pkgutil.iter_modules would cost 4 ms of port-check's start (it
    # imports typing and inspect).
    return tuple(sorted(name[:-3] for name in os.listdir(__path__[0]) if name.startswith("cp") and name.endswith(".py")))


def rule_codes() -> tuple[str, ...]:
    """Every rule's code, sorted, from the module names alone: checking `--select CP1O1` needs no
    rule imported (importing them and the analysis they use is 10 ms of a run that may parse
    nothing). tests/test_cli_rules.py holds it equal to all_rules()'s codes."""
    return tuple(name.split("_", 1)[0].upper() for name in _rule_modules())


@lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    """Every rule, sorted by code."""
    from candle_port.rules.base import Rule

    found: dict[str, Rule] = {}
    for name in _rule_modules():
        module = importlib.import_module(f"{__name__}.{name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and value.__module__ == module.__name__:
                if value.code in found:
                    raise RuntimeError(f"rule code {value.code} is defined twice")
                found[value.code] = value()
    return tuple(found[code] for code in sorted(found))


def rules_by_code() -> dict[str, Rule]:
    return {rule.code: rule for rule in all_rules()}
