"""CP110: 3-D (volumetric) convolution and pooling, which candle has no op for at all."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call


class Volumetric(Rule):
    """3-D convolution, transposed convolution and pooling: no candle op, so no forward either.

    candle has conv1d/conv2d and 2-D pooling only; conv3d is in open PRs (#3537, #3806) and there
    is no 3-D pooling or conv_transpose3d (../shared/candle-ops.md, 2.1, 3.2, 3.3 and 7.2). Video
    and volumetric models (3-D VAEs, I3D-style blocks) hit this before any backward does.
    """

    code = "CP110"
    name = "volumetric-op"
    summary = "3-D convolution, transposed convolution or pooling: candle has no op"
    why = "candle has no conv3d, conv_transpose3d or 3-D pooling (conv3d is only in open PRs #3537/#3806)"
    source = "candle-core 0.11.0: no 3-D convolution or pooling (verify's op table; docs/rules/CP110.md)"
    fix_hint = (
        "fold the depth axis into the batch and use 2-D ops where the kernel's depth is 1; otherwise "
        "sum depth-shifted 2-D convolutions (narrow along depth, conv2d per kernel slice, add)"
    )
    VALID = (
        "from torch import nn\nm = nn.Conv2d(8, 8, 3)\n",
        "from torch import nn\nm = nn.BatchNorm3d(8)\n",
        "def conv3d(x): return x\ny = conv3d(x)\n",
        "import torch.nn.functional as F\ny = F.max_pool2d(x, 2)\n",
        # a 3-D class used as a type, not built: isinstance, a tuple of types, a comparison, an annotation
        "from torch import nn\ndef is_3d(m) -> nn.Conv3d:\n    return isinstance(m, (nn.Conv3d, nn.MaxPool3d)) or type(m) is nn.AvgPool3d\n",
        "from torch import nn\nTYPES = (nn.Conv3d, nn.ConvTranspose3d)\nREGISTRY = {nn.Conv3d: 'conv'}\n",
    )
    INVALID = (
        "from torch import nn\nm = nn.Conv3d(8, 8, 3)\n",
        "from torch import nn\nm = nn.ConvTranspose3d(8, 8, 2, stride=2)\n",
        "from torch import nn\nm = nn.LazyConv3d(8, 3)\n",
        "import torch.nn.functional as F\ny = F.avg_pool3d(x, 2)\n",
        "import torch.nn.functional as F\ny = F.adaptive_avg_pool3d(x, 1)\n",
        "import torch\ny = torch.conv3d(x, w)\n",
        "from torch.nn import MaxPool3d as Pool\nm = Pool(2)\n",
        # a layer factory: the class escapes as a value and its layers are built elsewhere (nnU-Net)
        "from torch import nn\ndef conv_for(dim):\n    return nn.Conv2d if dim == 2 else nn.Conv3d\n",
        "from torch import nn\nclass Block(nn.Module):\n    def __init__(self, conv_op=nn.Conv3d):\n        super().__init__()\n",
        "from torch import nn\nnet = make_unet(conv_op=nn.Conv3d)\n",
        "from torch import nn\nCONFIG = {'conv_op': nn.Conv3d}\n",
    )

    def check(self, site: Site):
        if site.api.family != "volumetric":
            return
        yield Hit(
            f"{describe_call(site)}: candle has no 3-D convolution or pooling op (no forward, no backward)",
            applicable(site),
            hint=self.fix_hint,
        )
