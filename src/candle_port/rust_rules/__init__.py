"""The Rust rules (CP2xx), one per module named after its code, discovered like the Python
rules (candle_port.rules): by walking this package, never by a hand-kept list."""

from __future__ import annotations

from functools import lru_cache

from candle_port.rules import codes_of, instantiate_rules, rule_module_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from candle_port.rust_rules.base import RustRule


@lru_cache(maxsize=1)
def _rule_modules() -> tuple[str, ...]:
    return rule_module_names(__path__[0])


def rust_rule_codes() -> tuple[str, ...]:
    """Every Rust rule's code, from the module names alone (no rule imported)."""
    return codes_of(_rule_modules())


@lru_cache(maxsize=1)
def all_rust_rules() -> tuple[RustRule, ...]:
    """Every Rust rule, sorted by code."""
    from candle_port.rust_rules.base import RustRule

    return instantiate_rules(__name__, _rule_modules(), RustRule)
