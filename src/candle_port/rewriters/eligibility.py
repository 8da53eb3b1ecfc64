"""Whether each fix strategy is safe at a site, and if not, the reason the user sees.

Shared by the finder (a finding lists the strategies that apply) and by port-fix (which refuses
a site with the same reason), so the two never disagree. Each strategy's own refusals live with
it in rewriters/strategies/; this module is the name-based entry point the rules use.
"""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.rewriters.strategies import CONVTRANSPOSE, LISTED_STRATEGIES, NEAREST, RUNTIME, STRATEGIES, get
from candle_port.rewriters.strategies.base import RUNTIME_FAMILIES, integer_scale, rebinding

__all__ = [
    "CONVTRANSPOSE",
    "NEAREST",
    "RUNTIME",
    "RUNTIME_FAMILIES",
    "STRATEGIES",
    "applicable",
    "integer_scale",
    "rebinding",
    "refusal",
]


def refusal(strategy: str, site: Site) -> str | None:
    """None when `strategy` can rewrite `site`; otherwise why not, in one sentence."""
    return get(strategy).refusal(site)


def applicable(site: Site, strategies=LISTED_STRATEGIES) -> tuple[str, ...]:
    return tuple(s for s in strategies if refusal(s, site) is None)
