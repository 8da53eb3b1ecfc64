"""port-fix's strategies, one object per file (like the rules): runtime, nearest, convtranspose,
detach and convert. Each holds its fixed codes, its refusals, its import target, its rewrite of one call
and its note (base.Strategy); this package is the registry.

The module-level names below (FIXED_CODES, target_for, replacement_name, note_for, ...) are the
interface the fixer, port-check's rule listing and the tests use.
"""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.rewriters.strategies.base import (
    CONVERT_HINT,
    RUNTIME_MODULE,
    VENDORED_MODULE_NAME,
    Strategy,
    Target,
    callee,
    integer_scale,
    rebinding,
    swap_base,
    swap_callee,
)
from candle_port.rewriters.strategies.convert import CONVERT
from candle_port.rewriters.strategies.convtranspose import CONVTRANSPOSE as _CONVTRANSPOSE
from candle_port.rewriters.strategies.convtranspose import MODULE as CONVTRANSPOSE_MODULE
from candle_port.rewriters.strategies.detach import DETACH as _DETACH
from candle_port.rewriters.strategies.nearest import NEAREST as _NEAREST
from candle_port.rewriters.strategies.nearest import WARNING as NEAREST_WARNING
from candle_port.rewriters.strategies.nearest import nearest_call
from candle_port.rewriters.strategies.runtime import CODES as RUNTIME_CODES
from candle_port.rewriters.strategies.runtime import RUNTIME as _RUNTIME

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:  # libcst only where a file is rewritten: port-check imports these refusals
    import libcst as cst

RUNTIME, NEAREST, CONVTRANSPOSE, DETACH = _RUNTIME.name, _NEAREST.name, _CONVTRANSPOSE.name, _DETACH.name
# Every strategy, by name; port-fix rewrites source with those in STRATEGIES (convert works on the built model).
REGISTRY: dict[str, Strategy] = {s.name: s for s in (_RUNTIME, _NEAREST, _CONVTRANSPOSE, _DETACH, CONVERT)}
STRATEGIES = tuple(name for name, s in REGISTRY.items() if s.rewrites_source)
FIXED_CODES = {name: REGISTRY[name].fixed_codes for name in STRATEGIES}
# The strategies a finding's `[fix: ...]` and the rule catalog name (detach changes what trains: opt-in).
LISTED_STRATEGIES = tuple(name for name in STRATEGIES if REGISTRY[name].listed)
CONSIDERED_CODES = RUNTIME_CODES
EXACT_STRATEGIES = tuple(name for name, s in REGISTRY.items() if s.exact)


def get(name: str) -> Strategy:
    """The strategy called `name` (KeyError for an unknown one)."""
    return REGISTRY[name]


def target_for(strategy: str, vendored_module: str | None) -> Target | None:
    """The import a strategy needs (None for nearest, which only edits arguments)."""
    return get(strategy).target(vendored_module)


def replacement_name(strategy: str, site: Site) -> str:
    """The attribute of the target module that replaces the site's API."""
    return get(strategy).replacement_name(site)


def note_for(strategy: str, site: Site) -> str:
    return get(strategy).note(site)


def rewrite_call(strategy: str, site: Site, original: cst.Call, call: cst.Call, alias: str | None) -> cst.Call:
    return get(strategy).rewrite_call(site, original, call, alias)


__all__ = [
    "CONSIDERED_CODES",
    "CONVERT",
    "CONVERT_HINT",
    "CONVTRANSPOSE",
    "CONVTRANSPOSE_MODULE",
    "DETACH",
    "EXACT_STRATEGIES",
    "FIXED_CODES",
    "LISTED_STRATEGIES",
    "NEAREST",
    "NEAREST_WARNING",
    "REGISTRY",
    "RUNTIME",
    "RUNTIME_CODES",
    "RUNTIME_MODULE",
    "STRATEGIES",
    "Strategy",
    "Target",
    "VENDORED_MODULE_NAME",
    "callee",
    "get",
    "integer_scale",
    "nearest_call",
    "note_for",
    "rebinding",
    "replacement_name",
    "rewrite_call",
    "swap_base",
    "swap_callee",
]
