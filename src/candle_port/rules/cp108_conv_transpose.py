"""CP108: transposed convolutions that candle cannot train (1-D always; 2-D with groups or large output_padding)."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.pipeline.findings import Severity
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call
from candle_port.rules.cp106_pool_stride import int_tuple, literal


HINT_1D = (
    "unsqueeze to 2-D and use conv_transpose2d with a (1, k) kernel, padding 0 and output_padding 0 "
    "(candle applies both to the height too), then crop `padding` columns from each end and append "
    "`output_padding` zero columns"
)
HINT_GROUPS = "split the channels and run one conv_transpose2d per group, then cat"
HINT_OUTPUT_PADDING = "keep output_padding < stride"


class ConvTranspose(Rule):
    """Transposed convolutions with no candle backward or no candle forward.

    conv_transpose1d's backward arm is `Err(BackwardNotSupported { op: "conv-transpose1d" })`
    (backprop.rs:314-316), and its CPU forward without padding, output_padding or dilation (the
    col2im path) is wrong for batch > 1 with more than one input channel (measured on demucs;
    candle_native.rs `conv_transpose1d_forward_is_wrong_for_batch_above_one_without_padding`); candle's conv_transpose2d has no groups (candle-nn `// TODO: support
    groups.`) and its backward ignores output_padding, so the input gradient has the right shape
    only while output_padding < stride; otherwise `backward()` fails with "shape mismatch in add"
    (../shared/candle-ops.md, 2.1 rows ConvTranspose1D/2D, 3.3, 7.2). Measured in candle 0.11.0:
    crates/candle-port-ops/tests/candle_native.rs (docs/candle-measured.md). torch accepts
    output_padding >= stride only when output_padding < dilation.
    """

    code = "CP108"
    name = "conv-transpose"
    summary = "conv_transpose1d (no backward), conv_transpose2d with groups != 1 or output_padding >= stride"
    why = (
        "candle bails with 'backward is not supported for conv-transpose1d'; its conv_transpose2d has no "
        "groups argument, and its backward ignores output_padding (backward() fails with a shape mismatch "
        "unless output_padding < stride)"
    )
    source = (
        "candle-core/src/backprop.rs:314-342 (measured in candle 0.11.0: docs/candle-measured.md)"
    )
    severity_note = "a warning when groups is not known statically (a variable, `math.gcd(c1, c2)`)"
    fix_hint = f"1-D: {HINT_1D}; groups: {HINT_GROUPS}; {HINT_OUTPUT_PADDING}"
    VALID = (
        "from torch import nn\nm = nn.ConvTranspose2d(64, 32, 2, stride=2)\n",
        "from torch import nn\nm = nn.ConvTranspose2d(64, 32, 3, 2, 1, 1)\n",
        "import torch.nn.functional as F\ny = F.conv_transpose2d(x, w, None, 2, 1, 1, 1)\n",
        "from torch import nn\nm = nn.ConvTranspose2d(c, c, 4, 2, 1, groups=1)\n",
        "from torch import nn\nm = nn.Conv1d(8, 8, 3)\n",
        # a 2-D class handed on: groups and output_padding, given where it is built, decide
        "from torch import nn\ndef up_for(dim):\n    return nn.ConvTranspose2d\n",
        # a subclass is its base built with what it passes to super().__init__
        "from torch import nn\nclass Up(nn.ConvTranspose2d):\n    def __init__(self, c, g=1):\n"
        "        super().__init__(c, c, 2, 2, groups=g)\nm = Up(8)\n",
    )
    INVALID = (
        "from torch import nn\nm = nn.ConvTranspose1d(8, 8, 4, stride=2)\n",
        "import torch.nn.functional as F\ny = F.conv_transpose1d(x, w)\n",
        "from torch import nn\nm = nn.ConvTranspose2d(64, 64, 4, 2, 1, groups=64)\n",
        "from torch import nn\nm = nn.ConvTranspose2d(64, 64, 4, 2, 1, 0, 4)\n",
        "import torch.nn.functional as F\ny = F.conv_transpose2d(x, w, None, 1, 0, 1, 1, 2)\n",
        "from torch.nn import ConvTranspose2d as Up\nm = Up(8, 8, 3, stride=2, output_padding=(2, 0))\n",
        "from torch import nn\nm = nn.ConvTranspose2d(c, c, 4, 2, 1, groups=g)\n",
        "import math\nfrom torch import nn\nm = nn.ConvTranspose2d(c1, c2, 4, 2, 1, groups=math.gcd(c1, c2))\n",
        # 1-D whatever its arguments: the class handed on from a layer factory is the site
        "from torch import nn\ndef up_for(dim):\n    return nn.ConvTranspose1d if dim == 1 else nn.ConvTranspose2d\n",
        # ultralytics' DWConvTranspose2d: groups computed where it calls super().__init__
        "import math\nfrom torch import nn\nclass DWConvTranspose2d(nn.ConvTranspose2d):\n"
        "    def __init__(self, c1, c2, k=1, s=1):\n        super().__init__(c1, c2, k, s, groups=math.gcd(c1, c2))\n"
        "m = DWConvTranspose2d(16, 16, 2, 2)\n",
    )

    def check(self, site: Site):
        if site.api.family != "conv_transpose":
            return
        call, fixes = describe_call(site), applicable(site)
        if "1d" in site.api.name:
            message = f"{call}: candle has no backward for conv_transpose1d ('backward is not supported for conv-transpose1d')"
            forward_right = _takes_the_direct_kernel(site)
            if not forward_right:
                message += (
                    ", and its forward is wrong for batch > 1 with padding 0"
                    + (" (padding not known statically)" if forward_right is None else "")
                )
            yield Hit(message, fixes=fixes, hint=HINT_1D, backward_only=bool(forward_right))
            return
        groups = site.value("groups")
        known, value = literal(groups)
        if known and isinstance(value, int) and not isinstance(value, bool) and value != 1:
            yield Hit(
                f"{call}(groups={groups.source.strip()}): candle's conv_transpose2d has no groups (no forward)",
                fixes=fixes,
                hint=HINT_GROUPS,
            )
        elif not groups.known and groups.node is not None:  # written, but computed
            yield Hit(
                f"{call} groups not known statically ({site.describe_dynamic('groups')}): candle's conv_transpose2d "
                "has no groups, so any value but 1 has no forward",
                severity=Severity.WARNING,
                fixes=fixes,
                hint=HINT_GROUPS,
            )
        padding, stride = site.value("output_padding"), site.value("stride")
        (known_pad, pad), (known_stride, step) = literal(padding), literal(stride)
        pads = int_tuple(pad, 2) if known_pad else None
        strides = int_tuple(step, 2) if known_stride else None
        if pads is not None and strides is not None and any(p >= s for p, s in zip(pads, strides)):
            stride_text = stride.source.strip() if not stride.omitted else "1"
            yield Hit(
                f"{call}(output_padding={padding.source.strip()}, stride={stride_text}): candle's "
                "conv_transpose2d backward ignores output_padding and fails with a shape mismatch "
                "unless output_padding < stride",
                fixes=fixes,
                hint=HINT_OUTPUT_PADDING,
                backward_only=True,
            )


def _takes_the_direct_kernel(site: Site) -> bool | None:
    """Whether candle's conv_transpose1d forward takes its direct kernel (right at any batch):
    padding, output_padding or dilation not 0, 0, 1. Its col2im path, taken otherwise, is wrong
    for batch > 1 with > 1 input channel (candle_native.rs). None when a value is not known."""
    if site.kind == "value":
        return None  # the class handed on: its arguments are given where it is built
    unknown = False
    for name, plain in (("padding", 0), ("output_padding", 0), ("dilation", 1)):
        known, value = literal(site.value(name))
        if not known:
            unknown = True
            continue
        values = int_tuple(value, 1)
        if values is not None and any(v != plain for v in values):
            return True
    return None if unknown else False
