"""The PyTorch APIs candle-port knows: qualified names, signatures and defaults.

Signatures matter because mode can be passed by position: it is the 4th positional argument of
`F.interpolate` and the 3rd of `nn.Upsample`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Api:
    """One upsampling/sampling API: its short name, positional parameters and fixed settings."""

    name: str
    params: tuple[str, ...]
    default_mode: str
    # Settings the API implies and does not accept (UpsamplingBilinear2d is align_corners=True).
    implied: dict = field(default_factory=dict, hash=False, compare=False)
    accepts_mode: bool = True
    is_module: bool = False

    @property
    def family(self) -> str:
        """`interpolate` for every resize API, `grid_sample` for the sampling ones."""
        return "grid_sample" if self.name in ("grid_sample", "affine_grid") else "interpolate"


_INTERPOLATE_PARAMS = (
    "input",
    "size",
    "scale_factor",
    "mode",
    "align_corners",
    "recompute_scale_factor",
    "antialias",
)

INTERPOLATE = Api("interpolate", _INTERPOLATE_PARAMS, "nearest")
UPSAMPLE = Api("upsample", _INTERPOLATE_PARAMS[:5], "nearest")
UPSAMPLE_BILINEAR = Api(
    "upsample_bilinear",
    ("input", "size", "scale_factor"),
    "bilinear",
    implied={"align_corners": True},
    accepts_mode=False,
)
UPSAMPLE_NEAREST = Api("upsample_nearest", ("input", "size", "scale_factor"), "nearest", accepts_mode=False)
UPSAMPLE_MODULE = Api(
    "Upsample",
    ("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor"),
    "nearest",
    is_module=True,
)
UPSAMPLING_BILINEAR_2D = Api(
    "UpsamplingBilinear2d",
    ("size", "scale_factor"),
    "bilinear",
    implied={"align_corners": True},
    accepts_mode=False,
    is_module=True,
)
UPSAMPLING_NEAREST_2D = Api(
    "UpsamplingNearest2d", ("size", "scale_factor"), "nearest", accepts_mode=False, is_module=True
)
GRID_SAMPLE = Api("grid_sample", ("input", "grid", "mode", "padding_mode", "align_corners"), "bilinear")
AFFINE_GRID = Api("affine_grid", ("theta", "size", "align_corners"), "bilinear", accepts_mode=False)

_F = "torch.nn.functional"
APIS_BY_QUALIFIED_NAME: dict[str, Api] = {
    f"{_F}.interpolate": INTERPOLATE,
    f"{_F}.upsample": UPSAMPLE,
    f"{_F}.upsample_bilinear": UPSAMPLE_BILINEAR,
    f"{_F}.upsample_nearest": UPSAMPLE_NEAREST,
    f"{_F}.grid_sample": GRID_SAMPLE,
    f"{_F}.affine_grid": AFFINE_GRID,
}
for _module in ("torch.nn", "torch.nn.modules", "torch.nn.modules.upsampling"):
    APIS_BY_QUALIFIED_NAME[f"{_module}.Upsample"] = UPSAMPLE_MODULE
    APIS_BY_QUALIFIED_NAME[f"{_module}.UpsamplingBilinear2d"] = UPSAMPLING_BILINEAR_2D
    APIS_BY_QUALIFIED_NAME[f"{_module}.UpsamplingNearest2d"] = UPSAMPLING_NEAREST_2D

# A file that holds none of these substrings cannot hold a site: every site needs an API name
# written somewhere in the file (a call, an import or a base class). See prefilter.py.
API_NAME_FRAGMENTS = ("interpolate", "upsample", "Upsampl", "grid_sample", "affine_grid")

PARTIAL_QUALIFIED_NAMES = frozenset({"functools.partial"})

# The modes candle can run at all (forward) with a backward, per ../shared/candle-ops.md section 3.1.
MODES_WITHOUT_CANDLE_OP = {
    "bicubic": "candle has no bicubic upsampling op (PR #3385 is open and its backward bails)",
    "trilinear": "candle has no trilinear (5-D) upsampling op",
    "linear": "candle has no linear (1-D) upsampling op; emulating it with upsample_bilinear2d has no backward",
    "area": "mode='area' lowers to adaptive_avg_pool2d, which candle does not have",
    "nearest-exact": "candle's nearest uses a different index mapping and has no nearest-exact op",
}
