"""CP102: an interpolation mode that is only known at run time."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.pipeline.findings import Severity
from candle_port.rewriters.eligibility import RUNTIME, refusal
from candle_port.rules.base import Hit, Rule, describe_call


class DynamicMode(Rule):
    code = "CP102"
    name = "dynamic-interpolation-mode"
    summary = "interpolation mode not known statically: if it is bilinear, candle cannot train it"
    why = (
        "the mode comes from a variable, attribute, parameter or config; when it is 'bilinear' "
        "candle's backward bails, and only some other modes have a candle op"
    )
    source = "candle-core/src/backprop.rs:411-413 (docs/rules/CP102.md)"
    default_severity = Severity.WARNING
    fix_hint = "port-fix --strategy runtime handles every mode: bilinear goes through the runtime op, others to torch"
    VALID = (
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='nearest')\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n",
        "import torch.nn.functional as F\ny = F.grid_sample(x, grid, mode=mode)\n",
    )
    INVALID = (
        "import torch.nn.functional as F\ndef up(x, mode='bilinear'):\n    return F.interpolate(x, scale_factor=2, mode=mode)\n",
        "from torch import nn\nclass M(nn.Module):\n    def __init__(self, mode='nearest'):\n        self.mode = mode\n"
        "    def forward(self, x):\n        return nn.functional.interpolate(x, scale_factor=2, mode=self.mode)\n",
        "from torch import nn\nm = nn.Upsample(scale_factor=2, mode=cfg.mode)\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, **kwargs)\n",
    )

    def check(self, site: Site):
        if site.api.family != "interpolate" or site.mode.known or "bilinear" in site.possible_modes():
            return
        fixes = (RUNTIME,) if refusal(RUNTIME, site) is None else ()
        yield Hit(f"{describe_call(site)} mode is not known statically: {site.describe_dynamic('mode')}", fixes)
