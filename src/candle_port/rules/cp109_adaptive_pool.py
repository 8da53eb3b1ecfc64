"""CP109: adaptive pooling, which candle has no op for (except the global case, a mean or a max)."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.pipeline.findings import Severity
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call
from candle_port.rules.cp106_pool_stride import dims_of, literal


def _is_global(value, dims: int) -> bool:
    values = list(value) if isinstance(value, (tuple, list)) else [value] * dims
    return len(values) == dims and all(v == 1 and not isinstance(v, bool) for v in values)


class AdaptivePool(Rule):
    """Adaptive average/max pooling: candle has no adaptive pooling op.

    An output size of 1 is a mean or max over the spatial axes (`mean_keepdim`, `max_keepdim`),
    which candle differentiates, so it is left alone; any other size has no candle forward
    (../shared/candle-ops.md, 3.2 and 7.2). An output size the checker cannot see (a parameter,
    often defaulting to 1 as in timm's and smp's pooling heads) is a warning, not an error.
    """

    code = "CP109"
    name = "adaptive-pool"
    summary = "adaptive avg/max pooling to an output size other than 1: candle has no op"
    why = "candle has no adaptive_avg_pool or adaptive_max_pool op; only output size 1 maps to mean/max"
    source = "candle-core 0.11.0: no adaptive pooling (verify's op table; docs/rules/CP109.md)"
    severity_note = "a warning when the output size is not known statically"
    fix_hint = (
        "port-fix swaps in candle_port.runtime's adaptive pooling (matmul / gather, exact); output size "
        "(1, 1) is also mean_keepdim / max_keepdim over the spatial axes"
    )
    VALID = (
        "from torch import nn\nm = nn.AdaptiveAvgPool2d(1)\n",
        "from torch import nn\nm = nn.AdaptiveAvgPool2d((1, 1))\n",
        "import torch.nn.functional as F\ny = F.adaptive_max_pool2d(x, output_size=1)\n",
        "import torch.nn.functional as F\ny = F.adaptive_avg_pool1d(x, 1)\n",
        "def adaptive_avg_pool2d(x, s): return x\ny = adaptive_avg_pool2d(x, 7)\n",
    )
    INVALID = (
        "from torch import nn\nm = nn.AdaptiveAvgPool2d((7, 7))\n",
        "import torch.nn.functional as F\ny = F.adaptive_avg_pool2d(x, 2)\n",
        "import torch.nn.functional as F\ny = F.adaptive_max_pool2d(x, (1, None))\n",
        "from torch.nn import AdaptiveMaxPool1d\nm = AdaptiveMaxPool1d(4)\n",
        "import torch.nn.functional as F\ndef pool(x, size=1):\n    return F.adaptive_avg_pool2d(x, size)\n",
    )

    def check(self, site: Site):
        if site.api.family != "adaptive_pool":
            return
        output_size = site.value("output_size")
        known, value = literal(output_size)
        if known and _is_global(value, dims_of(site)):
            return
        if known:
            detail = f"(output_size={output_size.source.strip()})"
            severity = None
        else:
            detail = f" with an output size not known statically ({site.describe_dynamic('output_size')})"
            severity = Severity.WARNING
        yield Hit(
            f"{describe_call(site)}{detail}: candle has no adaptive pooling op; only output size 1 maps to a mean/max",
            applicable(site),
            severity=severity,
        )
