"""CP103: nearest upsampling by a scale that candle's nearest backward rejects."""

from __future__ import annotations

import math

from candle_port.analysis.sites import Site
from candle_port.pipeline.findings import Severity
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call


def _unsupported_scale(value) -> str | None:
    values = list(value) if isinstance(value, (tuple, list)) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
        return None
    if not all(math.isfinite(v) for v in values):
        return None  # inf or nan (`1e400`): torch itself rejects it at run time
    if len(set(float(v) for v in values)) > 1:
        return "a non-uniform scale"
    if any(float(v) < 1 for v in values):
        return "a downscale"
    if any(float(v) != int(v) for v in values):
        return "a non-integer scale"
    return None


class NearestScale(Rule):
    code = "CP103"
    name = "nearest-unsupported-scale"
    summary = "nearest upsampling by a non-integer, non-uniform or downscaling factor: no candle backward"
    why = (
        "candle's upsample_nearest2d backward bails with 'backward not supported for non integer "
        "upscaling factors' or '... non uniform upscaling factors'"
    )
    source = (
        "candle-core/src/backprop.rs:390-410 (measured in candle 0.11.0: docs/candle-measured.md)"
    )
    severity_note = (
        "a warning when the size is computed at run time (`size=skip.shape[2:]`, FPN and U-Net decoders): "
        "the scale is not known statically"
    )
    fix_hint = (
        "port-fix swaps in candle_port.runtime.interpolate (index_select on precomputed indices, exact); "
        "or use an integer, uniform scale_factor (e.g. 2)"
    )
    VALID = (
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2)\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=(2.0, 2.0), mode='nearest')\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=s)\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=1.5, mode='bilinear')\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, size=(8, 8))\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, size=skip.shape[2:], mode='bilinear')\n",
    )
    INVALID = (
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=1.5)\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, None, (2, 1), 'nearest')\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=0.5, mode='nearest')\n",
        "from torch import nn\nm = nn.UpsamplingNearest2d(scale_factor=2.5)\n",
        "from torch import nn\nm = nn.Upsample(scale_factor=(1, 2))\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, size=skip.shape[2:])\n",
        "import torch.nn.functional as F\ny = F.interpolate(x, size=skip.shape[-2:], mode='nearest')\n",
    )

    def check(self, site: Site):
        if site.api.family != "interpolate" or site.possible_modes() != ["nearest"] or not site.mode.known:
            return
        size = site.value("size")
        if not size.known and size.node is not None:  # written, but computed at run time
            yield Hit(
                f"{describe_call(site)}(mode='nearest', size={size.source.strip()}): scale not known statically; "
                "candle's nearest backward fails unless the output is an integer, uniform multiple of the input",
                applicable(site),
                severity=Severity.WARNING,
                backward_only=True,
            )
            return
        scale = site.value("scale_factor")
        if not scale.known or len(scale.candidates) != 1:
            return
        problem = _unsupported_scale(scale.candidates[0])
        if problem:
            yield Hit(
                f"{describe_call(site)}(mode='nearest', scale_factor={scale.source}) is {problem}: "
                "candle's nearest backward needs an integer, uniform upscale",
                applicable(site),
                backward_only=True,
            )
