"""CP115: Tensor.unfold, whose candle backward fails or permutes the gradient."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.pipeline.findings import Severity
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule
from candle_port.rules.cp106_pool_stride import literal


class TensorUnfold(Rule):
    """`x.unfold(dim, size, step)` (sliding windows: PatchTST's patches, audio framing): candle has
    `Tensor::unfold`, but records it as a reshape, so its backward reshapes the gradient back.

    Overlapping windows (step < size) change the element count and the backward fails with "shape
    mismatch in reshape"; where the counts match but `dim` is not the last dimension, the gradient
    is silently permuted (../shared/candle-ops.md, section 2.3, tensor.rs:2990; verify's op table
    confirms the backward failing). Windows that tile the last dimension (size == step, dim -1)
    are a plain reshape and train right: not reported. Found on neuralforecast's PatchTST, where no
    rule reported it.
    """

    code = "CP115"
    name = "tensor-unfold"
    summary = "Tensor.unfold: candle's backward fails on overlapping windows and permutes the gradient elsewhere"
    why = (
        "candle records Tensor::unfold as a reshape: overlapping windows fail its backward with a shape "
        "mismatch, and windows along a dimension other than the last get a permuted gradient (silently)"
    )
    source = "candle-core tensor.rs:2990, the Reshape arm of backprop.rs (docs/rules/CP115.md)"
    severity_note = "a warning when the size, step or dimension is not a literal"
    fix_hint = (
        "no drop-in: stack the windows with narrow (x.narrow(dim, i * step, size) for each i) along a new "
        "last dimension, which candle differentiates; windows that tile the last dimension are a reshape"
    )
    VALID = (
        "import torch.nn.functional as F\ncols = F.unfold(x, 3)\n",
        "patches = x.unfold(-1, 4, 4)\n",
        "patches = x.unfold(dimension=-1, size=8, step=8)\n",
        "from torch import nn\nu = nn.Unfold(3)\ny = u.unfold(x)\n",
        "y = dataset.unfold(1, 2)\n",
    )
    INVALID = (
        "patches = x.unfold(-1, 16, 8)\n",
        "frames = wave.unfold(1, 400, 160)\n",
        "tiles = x.unfold(2, 4, 4)\n",
        "import torch\nw = torch.Tensor.unfold(x, -1, 3, 1)\n",
        "w = x.unfold(dimension=d, size=s, step=s)\n",
    )

    def check(self, site: Site):
        if site.api.family != "tensor_unfold":
            return
        known = [literal(site.value(name)) for name in ("dimension", "size", "step")]
        (dim_known, dim), (size_known, size), (step_known, step) = known
        if dim_known and size_known and step_known:
            if size == step and dim == -1:
                return  # tiles the last dimension: a plain reshape, right in candle
            why = (
                f"overlapping windows (size {size} > step {step}): candle's backward fails with a shape mismatch"
                if isinstance(size, int) and isinstance(step, int) and size > step
                else "candle's backward permutes the gradient or fails (it reshapes it back)"
            )
            yield Hit(f"Tensor.unfold({dim}, {size}, {step}): {why}", applicable(site), hint=self.fix_hint)
            return
        yield Hit(
            "Tensor.unfold with a size, step or dimension not known statically: candle's backward fails on "
            "overlapping windows and permutes the gradient unless they tile the last dimension",
            applicable(site),
            severity=Severity.WARNING,
            hint=self.fix_hint,
        )
