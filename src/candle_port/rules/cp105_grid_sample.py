"""CP105: grid_sample and affine_grid, which candle has no op for at all."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call


class GridSample(Rule):
    code = "CP105"
    name = "grid-sample"
    summary = "grid_sample / affine_grid: candle has no op (grid_sampler_2d, affine_grid_generator)"
    why = "there is no grid_sample or affine_grid anywhere in the candle workspace, in any mode"
    source = "candle-core 0.11.0: no grid sampler (verify's op table; docs/rules/CP105.md)"
    fix_hint = (
        "compose it from ops candle can differentiate: build the sample indices and weights, then "
        "gather and weighted sums (affine_grid is a matmul with a base grid)"
    )
    VALID = (
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2)\n",
        "def grid_sample(x, g): return x\ny = grid_sample(x, g)\n",
    )
    INVALID = (
        "import torch.nn.functional as F\ny = F.grid_sample(x, grid)\n",
        "import torch.nn.functional as F\ny = F.grid_sample(x, grid, mode='nearest', align_corners=False)\n",
        "from torch.nn.functional import affine_grid\ng = affine_grid(theta, size, align_corners=False)\n",
    )

    def check(self, site: Site):
        if site.api.family != "grid_sample":
            return
        mode = site.mode
        shown = f"(mode='{mode.single}')" if site.api.accepts_mode and mode.known and not mode.omitted else ""
        yield Hit(f"{describe_call(site)}{shown} has no op in candle", applicable(site), hint=self.fix_hint)
