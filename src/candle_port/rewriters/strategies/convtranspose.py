"""The convtranspose strategy: bilinear upsampling as a stride-s transposed convolution.

Exact at initialisation for an integer scale with align_corners=False; the module form gets a
learnable 1x1xKxK weight (a new parameter), the functional form a fixed kernel.
"""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.rewriters.strategies.base import Strategy, Target
from candle_port.rewriters.strategies.bilinear_only import bilinear_refusal

MODULE = "candle_port.runtime.convtranspose"
# API name -> attribute of candle_port.runtime.convtranspose (same signature as the API).
NAMES = {
    "interpolate": "upsample_bilinear_convtranspose",
    "upsample": "upsample_bilinear_convtranspose",
    "Upsample": "ConvTransposeUpsample",
}
MODULE_NOTE = (
    "new learnable parameter '<attribute>.weight' (1x1xKxK, exact bilinear at init): load old "
    "checkpoints with load_state_dict(..., strict=False)"
)
FUNCTION_NOTE = "fixed bilinear kernel: exact and differentiable in candle, not learnable"


class ConvTranspose(Strategy):
    name = "convtranspose"
    fixed_codes = ("CP101",)
    help = "learnable transposed conv, exact at init"
    replacement_subclasses_api = False  # ConvTransposeUpsample is an nn.Module, not an nn.Upsample

    def site_refusal(self, site: Site) -> str | None:
        return bilinear_refusal(self.name, site)

    def target(self, vendored_module: str | None) -> Target:
        if vendored_module is not None:
            return Target(vendored_module, "candle_runtime")
        return Target(MODULE, "candle_convtranspose")

    def replacement_name(self, site: Site) -> str:
        return NAMES[site.api.name]

    def note(self, site: Site) -> str:
        return MODULE_NOTE if site.api.is_module else FUNCTION_NOTE


CONVTRANSPOSE = ConvTranspose()
