"""CP111: 1-D convolutions, whose weight gradient candle computes wrong for batch > 1."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.pipeline.findings import Severity
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call
from candle_port.rules.cp106_pool_stride import literal


class Conv1dGradient(Rule):
    """1-D convolution: candle runs it, and trains its weight wrong.

    candle 0.11.0's CPU `conv1d` copies a non-contiguous kernel into `kernel_c` and then passes the
    original storage to the matmul anyway (candle-core/src/cpu_backend/mod.rs, `fn conv1d`, im2col
    branch; PR #3836 is open, the CUDA twin is PR #3853). Its backward computes the weight
    gradient as a `conv1d` whose kernel is the transposed output gradient, non-contiguous as soon
    as the batch is above 1 and a group has more than one output channel: the weight gradient is
    silently wrong (0.02 to 1.3 relative off finite differences in real candle,
    crates/candle-port-run/src/measure.rs, probes "conv1d, batch 2, ..."). Batch 1 and depthwise
    convolutions with one output channel per group are right. The input gradient is a
    `conv_transpose1d`, whose CPU col2im path (padding 0, dilation 1, no output padding) is wrong
    for batch > 1 too: without padding the input gradient is wrong as well (found on transformers'
    Wav2Vec2 feature encoder: its GroupNorm gradients came out 0.23 off through it). `conv2d` uses
    its copy, so the same convolution as a height-1 `conv2d` trains right; that is what port-fix's
    runtime rewrite runs.
    """

    code = "CP111"
    name = "conv1d-gradient"
    summary = "conv1d / nn.Conv1d: candle's weight gradient is wrong for batch > 1 (silently)"
    why = (
        "candle's CPU conv1d multiplies by the uncopied strided kernel when the kernel is not contiguous; "
        "its backward's weight gradient is such a conv1d for batch > 1 with > 1 output channel per group"
    )
    source = (
        "candle-core/src/cpu_backend/mod.rs, fn conv1d (im2col branch; candle PR #3836 open); "
        "measured in candle 0.11.0: crates/candle-port-run/src/measure.rs"
    )
    severity_note = "a warning when groups is computed and not the output channel count (it may leave one channel per group)"
    fix_hint = "run it as conv2d on x.unsqueeze(2) with the weight unsqueezed at dim 2 (padding applied with pad first), then squeeze(2)"
    VALID = (
        "from torch import nn\nm = nn.Conv2d(8, 8, 3)\n",
        # one output channel per group: the backward's kernel stays contiguous
        "from torch import nn\nm = nn.Conv1d(8, 8, 7, padding=3, groups=8)\n",
        "from torch import nn\nm = nn.Conv1d(dim, dim, 7, padding=3, groups=dim)\n",
        "from torch import nn\nm = nn.Conv1d(64, 1, 1)\n",
        "def conv1d(x): return x\ny = conv1d(x)\n",
        "from torch import nn\nTYPES = (nn.Conv1d, nn.Conv2d)\n",
    )
    INVALID = (
        "from torch import nn\nm = nn.Conv1d(8, 16, 3, padding=1)\n",
        "from torch import nn\nm = nn.Conv1d(c_in, c_out, kernel_size=7, stride=2)\n",
        "import torch.nn.functional as F\ny = F.conv1d(x, w, padding=1)\n",
        "import torch\ny = torch.conv1d(x, w)\n",
        "from torch.nn import Conv1d\nm = Conv1d(1, 32, 9)\n",
        "from torch import nn\nm = nn.Conv1d(8, 16, 3, groups=4)\n",
        "from torch import nn\nm = nn.Conv1d(c, 2 * c, 3, groups=g)\n",
        "from torch import nn\nm = nn.LazyConv1d(16, 3)\n",
    )

    def check(self, site: Site):
        if site.api.family != "conv1d":
            return
        call, fixes = describe_call(site), applicable(site)
        message = (
            f"{call}: candle's conv1d weight gradient is wrong for batch > 1 (its backward multiplies by "
            "an uncopied strided kernel; silently)"
        )
        if _no_padding(site):
            message += ", and so is its input gradient without padding (a conv_transpose1d on candle's col2im path)"
        groups = site.value("groups")
        if site.api.is_module and "out_channels" in site.api.params:
            out = site.value("out_channels")
            if _same_written(out, groups) or _one_per_group(out, groups):
                return  # depthwise, one output channel per group: right in candle
            if not groups.known and groups.node is not None:
                yield Hit(
                    f"{message}, unless groups ({site.describe_dynamic('groups')}) leaves one output channel per group",
                    fixes=fixes,
                    severity=Severity.WARNING,
                    hint=self.fix_hint,
                    backward_only=True,
                )
                return
        yield Hit(message, fixes=fixes, hint=self.fix_hint, backward_only=True)


def _no_padding(site: Site) -> bool:
    """Padding 0, written or by default (a string padding such as "same" is not 0)."""
    known, padding = literal(site.value("padding"))
    return known and padding in (0, (0,), [0], "valid")


def _same_written(out, groups) -> bool:
    """`nn.Conv1d(dim, dim, 7, groups=dim)`: the same expression for both."""
    return out.node is not None and groups.node is not None and out.source.strip() == groups.source.strip()


def _one_per_group(out, groups) -> bool:
    (known_out, n), (known_groups, g) = literal(out), literal(groups)
    return known_out and known_groups and isinstance(n, int) and isinstance(g, int) and g > 0 and n // g == 1
