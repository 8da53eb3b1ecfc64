"""The runtime strategy: swap the callee for candle_port.runtime's drop-in of the same name.

The drop-ins compute what torch computes for every interpolate mode (CP101-CP104), for 1-D/2-D
max, average and adaptive pooling (CP106, CP107, CP109), and, where this runtime exports them, for
grid_sample and affine_grid (CP105), transposed convolutions (CP108: conv_transpose1d, groups,
output_padding) and 3-D convolution and pooling (CP110), from ops candle differentiates; so only
the callee changes (`F.interpolate` -> `candle_runtime.interpolate`, `nn.Conv3d` ->
`candle_runtime.Conv3d`, a subclass's `nn.Upsample` base -> `candle_runtime.Upsample`), never an
argument, and the strategy refuses nowhere but where every strategy does (an indexed layer, a
rebound name). An API the runtime has no drop-in for (`nn.LPPool3d`, `F.fractional_max_pool3d`,
lazy modules) is not considered: it stays listed as unfixable, with the rule's hint.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from candle_port.analysis.sites import Site
from candle_port.rewriters.strategies.base import RUNTIME_FAMILIES, RUNTIME_MODULE, Strategy, Target

CODES = ("CP101", "CP102", "CP103", "CP104", "CP105", "CP106", "CP107", "CP108", "CP109", "CP110", "CP111", "CP116")
# Families rewritten only where the runtime exports the API's own name (runtime_exports()).
EXPORTED_FAMILIES = ("grid_sample", "conv_transpose", "volumetric", "conv1d")
# torch.* aliases whose result differs from the F.* function of the same name: torch.adaptive_max_pool1d
# returns (values, indices) always, as F.adaptive_max_pool1d_with_indices does.
QUALIFIED_NAMES = {"torch.adaptive_max_pool1d": "adaptive_max_pool1d_with_indices"}


@functools.lru_cache(maxsize=1)
def runtime_exports() -> frozenset[str]:
    """The names candle_port.runtime exports (its `__all__`), read from its source without importing torch."""
    init = Path(__file__).resolve().parents[2] / "runtime" / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return frozenset(ast.literal_eval(node.value))
    return frozenset()


def replacement_name(site: Site) -> str:
    """The runtime's drop-in for the site's API: the API's own name (torch.* aliases aside)."""
    return QUALIFIED_NAMES.get(site.qualified_name) or site.api.name


def has_drop_in(site: Site) -> bool:
    """Whether candle_port.runtime has a drop-in for the site's API."""
    if site.api.family in RUNTIME_FAMILIES:
        return True
    return site.api.family in EXPORTED_FAMILIES and replacement_name(site) in runtime_exports()


class Runtime(Strategy):
    name = "runtime"
    fixed_codes = CODES
    help = "exact drop-in (default)"
    exact = True

    def target(self, vendored_module: str | None) -> Target:
        return Target(vendored_module or RUNTIME_MODULE, "candle_runtime")

    def replacement_name(self, site: Site) -> str:
        return replacement_name(site)

    def refusal(self, site: Site) -> str | None:
        if site.kind == "chosen" and site.rebound_classes:
            return None  # the drop-in is exact for any arguments: swapped where the name is assigned (fixer.py)
        return super().refusal(site)


RUNTIME = Runtime()
