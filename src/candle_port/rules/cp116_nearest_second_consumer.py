"""CP116: nearest upsampling of a tensor that is also used elsewhere: candle's gradient is silently wrong."""

from __future__ import annotations

from candle_port.analysis.consumers import second_consumer
from candle_port.analysis.sites import Site
from candle_port.pipeline.findings import Severity
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call
from candle_port.rules.cp103_nearest_scale import _unsupported_scale

# What verify and the docs can cite for this cause (issue 36).
CAUSE = (
    "candle's upsample_nearest2d backward overwrites the gradient its input gets from its other "
    "consumers (no error, a wrong gradient)"
)


class NearestSecondConsumer(Rule):
    """candle's upsample_nearest2d backward sets the input's gradient instead of adding to it, so
    whatever the input accumulated from its other consumers before that op's backward ran is lost
    (candle_native.rs `nearest_backward_overwrites_other_consumers_gradient`, order dependent).
    Every U-Net, FPN and YOLO neck upsamples a tensor that a skip or lateral path also reads.
    analysis/consumers.py decides whether the input has another reader."""

    code = "CP116"
    name = "nearest-second-consumer"
    summary = "nearest upsampling of a tensor also used elsewhere: candle's backward overwrites its other gradients"
    why = (
        "candle's upsample_nearest2d backward overwrites the gradient accumulated on its input instead of "
        "adding to it, so the input's other consumers lose their share, with no error"
    )
    source = (
        "candle-core/src/backprop.rs, the UpsampleNearest2D arm (measured in candle 0.11.0: docs/candle-measured.md)"
    )
    severity_note = "a warning when where the input goes cannot be decided (a layer called outside its class, the first layer of an nn.Sequential)"
    fix_hint = (
        "port-fix swaps in candle_port.runtime's nearest (index_select, whose backward adds); or upsample a copy "
        "that nothing else reads"
    )
    VALID = (
        "import torch.nn.functional as F\ndef f(x):\n    return F.interpolate(x, scale_factor=2)\n",
        "import torch.nn.functional as F\ndef f(x):\n    x = F.interpolate(x, scale_factor=2)\n    return x + 1\n",
        "import torch.nn.functional as F\ndef f(x, conv):\n    return F.interpolate(conv(x), scale_factor=2) + x\n",
        "import torch.nn.functional as F\ndef f(x, skip):\n    return F.interpolate(x, scale_factor=2, mode='bilinear') + x\n",
        "from torch import nn\nclass Up(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.up = nn.Upsample(scale_factor=2)\n    def forward(self, x):\n        return self.up(x)\n",
        "from torch import nn\nm = nn.Sequential(nn.Conv2d(8, 8, 3), nn.Upsample(scale_factor=2))\n",
    )
    INVALID = (
        "import torch\nimport torch.nn.functional as F\ndef f(x):\n"
        "    return torch.cat([F.interpolate(x, scale_factor=2), F.avg_pool2d(x, 1)], 1)\n",
        "import torch\nfrom torch import nn\nclass Neck(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.up = nn.Upsample(scale_factor=2)\n    def forward(self, x):\n        y = self.up(x)\n"
        "        return y.sum() + x.sum()\n",
        "from torch import nn\ndef make():\n    return nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(8, 8, 3))\n",
    )

    def check(self, site: Site):
        if site.api.family != "interpolate" or site.kind not in ("call", "subclass") or not site.mode.known:
            return
        if site.possible_modes() != ["nearest"]:
            return
        scale = site.value("scale_factor")
        if scale.known and len(scale.candidates) == 1 and _unsupported_scale(scale.candidates[0]):
            return  # CP103: no backward at all
        found = second_consumer(site)
        if found is None:
            return
        call = describe_call(site) + (" (nearest, the default)" if site.mode.omitted else "(mode='nearest')")
        if found.undecided:
            yield Hit(
                f"{call}: whether its input is also used elsewhere cannot be decided here ({found.undecided}); "
                f"if it is, {CAUSE}",
                applicable(site),
                severity=Severity.WARNING,
                backward_only=True,
            )
            return
        yield Hit(
            f"{call}: its input `{found.input}` is also read at line {found.other_read}; {CAUSE}",
            applicable(site),
            backward_only=True,
        )
