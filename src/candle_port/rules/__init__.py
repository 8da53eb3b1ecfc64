"""The rule catalog, discovered by walking this package: each module holds one Rule subclass."""

from __future__ import annotations

import importlib
import os
from functools import lru_cache

from candle_port.rules.base import Rule


@lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    """Every rule, sorted by code."""
    found: dict[str, Rule] = {}
    # The rule modules are listed from the directory: pkgutil.iter_modules would cost 4 ms of
    # port-check's start (it imports typing and inspect).
    names = sorted(name[:-3] for name in os.listdir(__path__[0]) if name.startswith("cp") and name.endswith(".py"))
    for name in names:
        module = importlib.import_module(f"{__name__}.{name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and value.__module__ == module.__name__:
                if value.code in found:
                    raise RuntimeError(f"rule code {value.code} is defined twice")
                found[value.code] = value()
    return tuple(found[code] for code in sorted(found))


def rules_by_code() -> dict[str, Rule]:
    return {rule.code: rule for rule in all_rules()}
