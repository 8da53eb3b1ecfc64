"""CP114: F.unfold / F.fold (im2col / col2im) and nn.Unfold / nn.Fold, which candle has no op for."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call


class Im2col(Rule):
    """`F.unfold` / `nn.Unfold` (im2col: sliding patches as columns) and `F.fold` / `nn.Fold`
    (col2im): candle has neither (`aten.im2col` / `aten.col2im`; ../shared/candle-ops.md, the
    table of interpolate and pooling ops). T2T-ViT, involution and local-attention blocks use
    them. `Tensor.unfold` (a method, not reported by this rule) is a different op, which candle
    has but whose backward is broken (the same table).
    """

    code = "CP114"
    name = "im2col"
    summary = "F.unfold / F.fold or nn.Unfold / nn.Fold: candle has no im2col or col2im op"
    why = "candle has no im2col / col2im op (aten.im2col, aten.col2im)"
    source = "F.unfold -> aten.im2col, F.fold -> aten.col2im: no candle op (verify's op table; docs/rules/CP114.md)"
    fix_hint = (
        "no drop-in: build the patches with narrow (or index_select) per kernel offset and stack them, "
        "or use a conv2d whose kernel is the identity per patch position; fold is the transposed sum"
    )
    VALID = (
        "import torch\ny = x.unfold(2, 4, 4)\n",
        "def unfold(x, k): return x\ny = unfold(x, 3)\n",
        "from torch import nn\nm = nn.Conv2d(3, 8, 3)\n",
    )
    INVALID = (
        "import torch.nn.functional as F\ncols = F.unfold(x, kernel_size=3, padding=1)\n",
        "import torch.nn.functional as F\nx = F.fold(cols, (8, 8), kernel_size=2, stride=2)\n",
        "from torch import nn\nm = nn.Unfold(kernel_size=(2, 2), stride=2)\n",
        "import torch\nm = torch.nn.Fold(output_size=(4, 4), kernel_size=2)\n",
    )

    def check(self, site: Site):
        if site.api.family != "im2col":
            return
        yield Hit(
            f"{describe_call(site)}: candle has no im2col / col2im op (no forward, no backward)",
            applicable(site),
            hint=self.fix_hint,
        )
