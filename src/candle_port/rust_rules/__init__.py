"""The Rust rules (CP2xx), one per module named after its code, discovered like the Python
rules (candle_port.rules): by walking this package, never by a hand-kept list."""

from __future__ import annotations

import importlib
import os
from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from candle_port.rust_rules.base import RustRule


@lru_cache(maxsize=1)
def _rule_modules() -> tuple[str, ...]:
    return tuple(sorted(name[:-3] for name in os.listdir(__path__[0]) if name.startswith("cp") and name.endswith(".py")))


def rust_rule_codes() -> tuple[str, ...]:
    """Every Rust rule's code, from the module names alone (no rule imported)."""
    return tuple(name.split("_", 1)[0].upper() for name in _rule_modules())


@lru_cache(maxsize=1)
def all_rust_rules() -> tuple[RustRule, ...]:
    """Every Rust rule, sorted by code."""
    from candle_port.rust_rules.base import RustRule

    found: dict[str, RustRule] = {}
    for name in _rule_modules():
        module = importlib.import_module(f"{__name__}.{name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, RustRule) and value is not RustRule and value.__module__ == module.__name__:
                if value.code in found:
                    raise RuntimeError(f"rule code {value.code} is defined twice")
                found[value.code] = value()
    return tuple(found[code] for code in sorted(found))
