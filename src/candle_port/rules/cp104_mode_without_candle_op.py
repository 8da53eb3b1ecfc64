"""CP104: interpolation modes (and antialias) that candle has no op or no backward for."""

from __future__ import annotations

from candle_port.analysis.apis import MODES_WITHOUT_CANDLE_OP
from candle_port.analysis.sites import Site
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call


class ModeWithoutCandleOp(Rule):
    code = "CP104"
    name = "mode-without-candle-op"
    summary = "bicubic, trilinear, linear, area, nearest-exact or antialias: no candle op or no backward"
    why = "candle implements only nearest and bilinear (without antialias) upsampling"
    source = "candle-core/src/tensor.rs:1186-1334: no such op (docs/rules/CP104.md)"
    fix_hint = (
        "port-fix swaps in candle_port.runtime.interpolate, which builds the same mode from matmul with "
        "fixed weights and index_select (exact)"
    )
    VALID = (
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='nearest')\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear', antialias=False)\n",
    )
    INVALID = (
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bicubic')\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, size=(8, 8), mode='bilinear', antialias=True)\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, size=8, mode='linear')\n",
        "from torch import nn\nm = nn.Upsample(scale_factor=2, mode='trilinear')\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, size=8, mode='area')\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, size=8, mode='nearest-exact')\n",
    )

    def check(self, site: Site):
        if site.api.family != "interpolate":
            return
        for mode in site.possible_modes():
            reason = MODES_WITHOUT_CANDLE_OP.get(mode) if isinstance(mode, str) else None
            if reason:
                yield Hit(f"{describe_call(site)}(mode='{mode}'): {reason}", applicable(site))
        if site.value("antialias").single is True:
            yield Hit(f"{describe_call(site)}(antialias=True): candle has no antialiased resize op", applicable(site))
