"""CP101: bilinear upsampling, which candle can run but never differentiate."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call


class BilinearUpsampling(Rule):
    code = "CP101"
    name = "bilinear-upsampling"
    summary = "bilinear upsampling: candle has no backward for upsample_bilinear2d"
    why = (
        "candle's autograd bails with 'backward not supported for upsample_bilinear2d' "
        "as soon as a loss depends on it"
    )
    source = (
        "candle-core/src/backprop.rs:411-413 (measured in candle 0.11.0: docs/candle-measured.md)"
    )
    fix_hint = (
        "port-fix --strategy runtime swaps in candle_port.runtime, equal in forward and backward and "
        "built from ops candle can differentiate"
    )
    VALID = (
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2)\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='nearest')\n",
        "from scipy import interpolate\ny = interpolate(x, 2, None, 'bilinear')\n",
        "def interpolate(x, mode): return x\ny = interpolate(x, mode='bilinear')\n",
        "import torch.nn.functional as F\n# F.interpolate(x, mode='bilinear')\ns = \"F.interpolate(x, mode='bilinear')\"\n",
    )
    INVALID = (
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, None, 2, 'bilinear', False)\n",
        "from torch.nn import functional as F\ny = F.upsample(x, size=(8, 8), mode='bilinear')\n",
        "from torch.nn.functional import interpolate as up\ny = up(x, scale_factor=2, mode='bilinear')\n",
        "import torch\ny = torch.nn.functional.upsample_bilinear(x, scale_factor=2)\n",
        "from torch import nn\nm = nn.Sequential(nn.Upsample(scale_factor=2, mode='bilinear'))\n",
        "from torch import nn\nm = nn.Upsample(None, 2, 'bilinear')\n",
        "import torch.nn as nn\nm = [nn.UpsamplingBilinear2d(scale_factor=2)]\n",
        "from torch import nn\ny = nn.functional.interpolate(x, scale_factor=2, mode='bilinear' if a else 'nearest')\n",
        "import functools\nimport torch.nn.functional as F\nup = functools.partial(F.interpolate, mode='bilinear')\n",
        "from torch import nn\nclass Up(nn.Upsample):\n    pass\nm = Up(scale_factor=2, mode='bilinear')\n",
    )

    def check(self, site: Site):
        if site.api.family != "interpolate" or "bilinear" not in site.possible_modes():
            return
        if site.api.accepts_mode:
            align = site.value("align_corners")
            shown = f"(mode='bilinear'{f', align_corners={align.single}' if align.known and not align.omitted else ''})"
        else:  # nn.UpsamplingBilinear2d takes no mode: say what it implies, not an argument it lacks
            shown = " (bilinear" + "".join(f", {k}={v}" for k, v in site.api.implied.items()) + ")"
        yield Hit(
            f"{describe_call(site)}{shown} has no backward in candle (upsample_bilinear2d)",
            applicable(site),
            backward_only=True,
        )
