"""CP112: torchvision.ops RoI pooling and deformable convolution, which candle has no op for."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call


class TorchvisionOps(Rule):
    """`roi_align`, `roi_pool`, `ps_roi_align`, `ps_roi_pool`, `deform_conv2d` and their modules
    (`RoIAlign`, `MultiScaleRoIAlign`, `DeformConv2d`, ...): no candle op, so no forward either.

    They are torchvision's custom ops (`torchvision::roi_align`, ...), which candle has no
    equivalent of (../shared/candle-ops.md, section 5). Two-stage detectors (Faster/Mask R-CNN's
    box and mask heads), deformable-convolution backbones (DCNv2) and instance-segmentation heads
    hit this before any backward does. A project's own pure-PyTorch function of the same name
    (kornia's ALIKED `deform_conv2d`) is not torchvision's and is not reported.
    """

    code = "CP112"
    name = "torchvision-op"
    summary = "RoI pooling or deformable convolution from torchvision.ops: candle has no op"
    why = "candle has no RoIAlign, RoIPool, position-sensitive RoI pooling or deformable convolution op"
    source = "torchvision custom ops with no candle equivalent (verify's op table; docs/rules/CP112.md)"
    fix_hint = (
        "no drop-in yet: compose RoI pooling from bilinear sampling at box-relative points (index_select "
        "of the four neighbours, weighted, as candle_port.runtime.grid_sample does) and deformable "
        "convolution from that sampling and a matmul, or keep this stage out of the candle port"
    )
    VALID = (
        "import torch.nn.functional as F\ny = F.grid_sample(x, g, align_corners=False)\n",
        # a project's own function of the same name (kornia's ALIKED)
        "def deform_conv2d(x, offset, weight):\n    return x\ny = deform_conv2d(x, o, w)\n",
        "from torchvision.ops import nms, box_iou\nkeep = nms(boxes, scores, 0.5)\n",
        # a type check, not a layer
        "from torchvision.ops import RoIAlign\nok = isinstance(m, RoIAlign)\n",
    )
    INVALID = (
        "from torchvision.ops import roi_align\ny = roi_align(x, boxes, (7, 7), 0.25, 2, True)\n",
        "import torchvision\ny = torchvision.ops.roi_pool(x, boxes, 7)\n",
        "from torchvision.ops import MultiScaleRoIAlign\npooler = MultiScaleRoIAlign(['0', '1'], 7, 2)\n",
        "from torchvision.ops.deform_conv import DeformConv2d\nm = DeformConv2d(8, 8, 3, padding=1)\n",
        "import torchvision.ops as ops\ny = ops.deform_conv2d(x, offset, w, mask=m)\n",
        "from torchvision.ops import ps_roi_align\ny = ps_roi_align(x, boxes, 7)\n",
        "from torchvision import ops\nclass Pooler(ops.RoIAlign):\n    pass\np = Pooler(7, 0.25, 2)\n",
    )

    def check(self, site: Site):
        if site.api.family != "torchvision_ops":
            return
        yield Hit(
            f"{describe_call(site)}: candle has no {site.api.name} op (no forward, no backward)",
            applicable(site),
            hint=self.fix_hint,
        )
