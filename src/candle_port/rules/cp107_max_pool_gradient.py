"""CP107: max pooling, whose candle gradient is silently wrong even when kernel_size == stride."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.pipeline.findings import Severity
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call
from candle_port.rules.cp106_pool_stride import dims_of, int_tuple, is_max_pool, literal, pool_problems


class MaxPoolGradient(Rule):
    """Max pooling that candle accepts but differentiates wrongly, with no error.

    candle's MaxPool2D backward arm multiplies the gradient by the window's mean of the max mask
    (`mask.avg_pool2d(k, s)`), so a window with one maximum gets grad/(kh*kw): 0.25x for 2x2
    (../shared/candle-ops.md, 2.3 and 7.4). Measured in candle 0.11.0
    (crates/candle-port-ops/tests/candle_native.rs, docs/candle-measured.md): exactly that; tied
    maxima each get count/(kh*kw) of the gradient, where torch gives all of it to one; and when
    the kernel does not divide H or W, most maxima get no gradient at all. Sites that CP106
    reports (stride != kernel_size, padding, dilation, ceil_mode) are left to it.
    """

    code = "CP107"
    name = "max-pool-wrong-gradient"
    summary = "max pooling: candle's backward runs without error but scales the gradient by 1/(kh*kw)"
    why = (
        "candle's max_pool2d backward multiplies the gradient by the mean of each window's max mask "
        "instead of routing it to the maximum: 0.25x for 2x2 pooling, silently; on sizes the kernel does "
        "not divide, most maxima get no gradient at all (measured)"
    )
    source = (
        "candle-core/src/backprop.rs:358-377 (measured in candle 0.11.0: docs/candle-measured.md)"
    )
    default_severity = Severity.WARNING
    fix_hint = (
        "port-fix swaps in candle_port.runtime's max pooling (argmax, then gather: the gradient goes to "
        "the maximum); or compose it by hand: crop H and W to multiples of k, "
        "x.reshape(n, c, h // k, k, w // k, k), max over the window axes (equal to torch, except that "
        "tied maxima each get the whole gradient)"
    )
    VALID = (
        "from torch import nn\nm = nn.AvgPool2d(2)\n",
        "from torch import nn\nm = nn.MaxPool2d(3, stride=2, padding=1)\n",
        "from torch import nn\nm = nn.AdaptiveMaxPool2d(1)\n",
        "import torch\ny = torch.amax(x, dim=(2, 3))\n",
    )
    INVALID = (
        "from torch import nn\ndef pool(mode):\n    pool_op = nn.MaxPool2d if mode == 'max' else nn.AvgPool2d\n    return pool_op(2)\n",
        "from torch import nn\nm = nn.MaxPool2d(2)\n",
        "from torch import nn\nm = nn.MaxPool2d(kernel_size=2, stride=2)\n",
        "import torch.nn.functional as F\ny = F.max_pool2d(x, kernel_size=k)\n",
        "import torch.nn.functional as F\ny = F.max_pool2d(x, 3, stride=s, padding=p)\n",
        "from torch.nn import MaxPool1d\nm = MaxPool1d(2)\n",
        "import torch\ny = torch.max_pool2d(x, 2)\n",
    )

    def check(self, site: Site):
        if not is_max_pool(site):
            return
        stride_differs, missing = pool_problems(site)
        if stride_differs or missing:
            return  # CP106
        known, kernel = literal(site.value("kernel_size"))
        kernels = int_tuple(kernel, dims_of(site)) if known else None
        if kernels is not None:
            area = 1
            for k in kernels:
                area *= k
            scale = f"1/{area} of the true gradient" if area > 1 else "the true gradient only for a 1-wide window"
        else:
            scale = "1/(kh*kw) of the true gradient"
        if _stride_is_kernel(site, kernels):
            message = f"candle's max_pool2d backward is silently wrong (no error): the maximum gets {scale}"
        else:  # `F.max_pool2d(x, 3, stride=s)`, `partial(nn.MaxPool2d, ...)` called with them later
            message = (f"candle's max_pool2d backward is silently wrong where kernel == stride (the maximum gets "
                       f"{scale}) and missing otherwise; the stride is not known statically")
        yield Hit(f"{describe_call(site)}: {message}", applicable(site), backward_only=True)


def _stride_is_kernel(site: Site, kernels) -> bool:
    """Whether literals prove stride == kernel: omitted or None (torch's default is the kernel), or
    both written and equal. A functools.partial's omitted stride may be given where it is called."""
    if site.kind == "partial" and "stride" not in site.arguments:
        return False
    known, stride = literal(site.value("stride"))
    if not known:
        return False
    if stride in (None, [], ()):
        return True
    return kernels is not None and int_tuple(stride, dims_of(site)) == kernels
