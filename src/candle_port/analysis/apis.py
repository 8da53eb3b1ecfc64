"""The PyTorch APIs candle-port knows: qualified names, signatures and defaults.

Signatures matter because arguments can be passed by position: mode is the 4th positional
argument of `F.interpolate` and the 3rd of `nn.Upsample`; ceil_mode is the 6th of `F.max_pool2d`
but the 6th of `nn.MaxPool2d` is return_indices.
"""

from __future__ import annotations

from candle_port.pipeline.records import Record


class Api(Record):
    """One API a rule looks at: its short name, positional parameters and fixed settings.

    `implied`: settings the API implies and does not accept (UpsamplingBilinear2d is
    align_corners=True). `family`: `interpolate` (every resize API), `grid_sample`, `pool`,
    `conv_transpose`, `adaptive_pool`, `volumetric` (3-D convolution and pooling, which candle
    has no op for), `conv1d` (whose candle weight gradient is wrong for batch > 1),
    `torchvision_ops` (RoI pooling and deformable convolution), `spectral` (FFT, STFT) or `im2col`
    (F.unfold / F.fold), which candle has no op for. `defaults`: defaults of this API's own parameters, over the shared ones in
    sites.py. The two dicts are not compared."""

    __slots__ = ("name", "params", "default_mode", "implied", "accepts_mode", "is_module", "family", "defaults")
    _uncompared = frozenset({"implied", "defaults"})

    def __init__(
        self,
        name: str,
        params: tuple[str, ...],
        default_mode: str,
        implied: dict | None = None,
        accepts_mode: bool = True,
        is_module: bool = False,
        family: str = "interpolate",
        defaults: dict | None = None,
    ) -> None:
        self.name = name
        self.params = params
        self.default_mode = default_mode
        self.implied = {} if implied is None else implied
        self.accepts_mode = accepts_mode
        self.is_module = is_module
        self.family = family
        self.defaults = {} if defaults is None else defaults


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
GRID_SAMPLE = Api(
    "grid_sample", ("input", "grid", "mode", "padding_mode", "align_corners"), "bilinear", family="grid_sample"
)
AFFINE_GRID = Api(
    "affine_grid", ("theta", "size", "align_corners"), "bilinear", accepts_mode=False, family="grid_sample"
)

# Pooling, transposed convolution and adaptive pooling (../shared/candle-ops.md, 3.2 and 3.3).
# They have no mode; `dims` in the name (1d/2d) is what the rules normalise tuples to.
_POOL_DEFAULTS = {
    "stride": None,
    "padding": 0,
    "dilation": 1,
    "ceil_mode": False,
    "return_indices": False,
    "count_include_pad": True,
    "divisor_override": None,
}
_CONV_T_DEFAULTS = {"stride": 1, "padding": 0, "output_padding": 0, "groups": 1, "dilation": 1, "bias": True}


def _pool(name: str, params: tuple[str, ...], is_module: bool) -> Api:
    return Api(name, params, "", accepts_mode=False, is_module=is_module, family="pool", defaults=_POOL_DEFAULTS)


def _conv_t(name: str, params: tuple[str, ...], is_module: bool) -> Api:
    return Api(
        name, params, "", accepts_mode=False, is_module=is_module, family="conv_transpose", defaults=_CONV_T_DEFAULTS
    )


def _adaptive(name: str, params: tuple[str, ...], is_module: bool) -> Api:
    return Api(
        name,
        params,
        "",
        accepts_mode=False,
        is_module=is_module,
        family="adaptive_pool",
        defaults={"return_indices": False},
    )


_MAX_POOL_MODULE = ("kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode")
_MAX_POOL_F = ("input", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")
_AVG_POOL_MODULE = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")
_AVG_POOL_F = ("input",) + _AVG_POOL_MODULE
_CONV_T_MODULE = (
    "in_channels",
    "out_channels",
    "kernel_size",
    "stride",
    "padding",
    "output_padding",
    "groups",
    "bias",
    "dilation",
    "padding_mode",
)
_CONV_T_F = ("input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")

POOL_MODULES = {
    "MaxPool1d": _pool("MaxPool1d", _MAX_POOL_MODULE, True),
    "MaxPool2d": _pool("MaxPool2d", _MAX_POOL_MODULE, True),
    "AvgPool1d": _pool("AvgPool1d", _AVG_POOL_MODULE[:5], True),
    "AvgPool2d": _pool("AvgPool2d", _AVG_POOL_MODULE, True),
}
POOL_FUNCTIONS = {
    "max_pool1d": _pool("max_pool1d", _MAX_POOL_F, False),
    "max_pool2d": _pool("max_pool2d", _MAX_POOL_F, False),
    "max_pool1d_with_indices": _pool("max_pool1d_with_indices", _MAX_POOL_F, False),
    "max_pool2d_with_indices": _pool("max_pool2d_with_indices", _MAX_POOL_F, False),
    "avg_pool1d": _pool("avg_pool1d", _AVG_POOL_F[:6], False),
    "avg_pool2d": _pool("avg_pool2d", _AVG_POOL_F, False),
}
CONV_TRANSPOSE_MODULES = {
    "ConvTranspose1d": _conv_t("ConvTranspose1d", _CONV_T_MODULE, True),
    "ConvTranspose2d": _conv_t("ConvTranspose2d", _CONV_T_MODULE, True),
    # Lazy modules infer in_channels, so every other parameter moves one place left.
    "LazyConvTranspose1d": _conv_t("LazyConvTranspose1d", _CONV_T_MODULE[1:], True),
    "LazyConvTranspose2d": _conv_t("LazyConvTranspose2d", _CONV_T_MODULE[1:], True),
}
CONV_TRANSPOSE_FUNCTIONS = {
    "conv_transpose1d": _conv_t("conv_transpose1d", _CONV_T_F, False),
    "conv_transpose2d": _conv_t("conv_transpose2d", _CONV_T_F, False),
}
# 1-D convolution: candle 0.11.0 runs it, but its weight gradient is wrong for batch > 1 (CP111).
_CONV_MODULE = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias", "padding_mode")
_CONV_F = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
_CONV_DEFAULTS = {"stride": 1, "padding": 0, "dilation": 1, "groups": 1, "bias": True}


def _conv1d(name: str, params: tuple[str, ...], is_module: bool) -> Api:
    return Api(name, params, "", accepts_mode=False, is_module=is_module, family="conv1d", defaults=_CONV_DEFAULTS)


CONV1D_MODULES = {
    "Conv1d": _conv1d("Conv1d", _CONV_MODULE, True),
    "LazyConv1d": _conv1d("LazyConv1d", _CONV_MODULE[1:], True),  # in_channels is inferred
}
CONV1D_FUNCTIONS = {"conv1d": _conv1d("conv1d", _CONV_F, False)}
ADAPTIVE_MODULES = {
    name: _adaptive(name, ("output_size", "return_indices") if "Max" in name else ("output_size",), True)
    for name in ("AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d")
}
ADAPTIVE_FUNCTIONS = {
    name: _adaptive(name, ("input", "output_size", "return_indices") if "max" in name else ("input", "output_size"), False)
    for name in (
        "adaptive_avg_pool1d",
        "adaptive_avg_pool2d",
        "adaptive_max_pool1d",
        "adaptive_max_pool2d",
        "adaptive_max_pool1d_with_indices",
        "adaptive_max_pool2d_with_indices",
    )
}


def _no_candle_op(name: str, family: str, is_module: bool = False) -> Api:
    """An op candle has no equivalent of (3-D convolution and pooling, torchvision's detection ops,
    FFT, im2col): reported whatever its arguments, so no signature is needed."""
    return Api(name, (), "", accepts_mode=False, is_module=is_module, family=family)


def _volumetric(name: str, is_module: bool) -> Api:
    return _no_candle_op(name, "volumetric", is_module)


VOLUMETRIC_CONV_MODULES = {
    name: _volumetric(name, True) for name in ("Conv3d", "ConvTranspose3d", "LazyConv3d", "LazyConvTranspose3d")
}
VOLUMETRIC_POOL_MODULES = {
    name: _volumetric(name, True)
    for name in (
        "MaxPool3d",
        "AvgPool3d",
        "AdaptiveAvgPool3d",
        "AdaptiveMaxPool3d",
        "LPPool3d",
        "FractionalMaxPool3d",
        "MaxUnpool3d",
    )
}
VOLUMETRIC_FUNCTIONS = {
    name: _volumetric(name, False)
    for name in (
        "conv3d",
        "conv_transpose3d",
        "max_pool3d",
        "max_pool3d_with_indices",
        "avg_pool3d",
        "adaptive_avg_pool3d",
        "adaptive_max_pool3d",
        "adaptive_max_pool3d_with_indices",
        "lp_pool3d",
        "fractional_max_pool3d",
        "max_unpool3d",
    )
}

# torchvision.ops' custom ops (`torchvision::roi_align`, ...), by the submodule that defines each
# (../shared/candle-ops.md, section 5: Faster/Mask R-CNN heads, deformable convolution).
TORCHVISION_OPS = {
    "roi_align": ("roi_align", "RoIAlign"),
    "roi_pool": ("roi_pool", "RoIPool"),
    "ps_roi_align": ("ps_roi_align", "PSRoIAlign"),
    "ps_roi_pool": ("ps_roi_pool", "PSRoIPool"),
    "poolers": ("MultiScaleRoIAlign",),
    "deform_conv": ("deform_conv2d", "DeformConv2d"),
}

# torch.fft and the short-time Fourier transform: candle 0.11.0 has no FFT (CP113).
SPECTRAL_FUNCTIONS = {
    f"torch.fft.{name}": _no_candle_op(name, "spectral")
    for name in ("fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
                 "irfftn", "hfft", "ihfft")
}
SPECTRAL_FUNCTIONS.update({f"{module}.{name}": _no_candle_op(name, "spectral")
                           for module in ("torch", "torch.functional") for name in ("stft", "istft")})
# im2col / col2im (F.unfold, F.fold and their modules): no candle op (CP114).
IM2COL = {
    **{f"torch.nn.functional.{name}": _no_candle_op(name, "im2col") for name in ("unfold", "fold")},
    **{f"{module}.{name}": _no_candle_op(name, "im2col", is_module=True)
       for module in ("torch.nn", "torch.nn.modules", "torch.nn.modules.fold") for name in ("Unfold", "Fold")},
}

# Tensor.unfold (sliding windows as a view): candle has it, with a broken backward (CP115). Found on
# a tensor method call by sites._tensor_unfold, or written as torch.Tensor.unfold(x, ...).
TENSOR_UNFOLD = Api("unfold", ("dimension", "size", "step"), "", accepts_mode=False, family="tensor_unfold")

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
for _modules, _apis in (
    (("torch.nn", "torch.nn.modules", "torch.nn.modules.pooling"), {**POOL_MODULES, **ADAPTIVE_MODULES}),
    (("torch.nn", "torch.nn.modules", "torch.nn.modules.conv"), {**CONV_TRANSPOSE_MODULES, **VOLUMETRIC_CONV_MODULES, **CONV1D_MODULES}),
    (("torch.nn", "torch.nn.modules", "torch.nn.modules.pooling"), VOLUMETRIC_POOL_MODULES),
    ((_F,), {**POOL_FUNCTIONS, **CONV_TRANSPOSE_FUNCTIONS, **ADAPTIVE_FUNCTIONS, **VOLUMETRIC_FUNCTIONS, **CONV1D_FUNCTIONS}),
):
    for _module in _modules:
        for _name, _api in _apis.items():
            APIS_BY_QUALIFIED_NAME[f"{_module}.{_name}"] = _api
# torch.* has these too, with the functional signature (torch.max_pool2d's stride defaults to []).
for _name in ("max_pool1d", "max_pool2d", "avg_pool1d", "conv_transpose1d", "conv_transpose2d"):
    APIS_BY_QUALIFIED_NAME[f"torch.{_name}"] = {**POOL_FUNCTIONS, **CONV_TRANSPOSE_FUNCTIONS}[_name]
APIS_BY_QUALIFIED_NAME["torch.conv1d"] = CONV1D_FUNCTIONS["conv1d"]
for _name in ("adaptive_avg_pool1d", "adaptive_max_pool1d"):
    APIS_BY_QUALIFIED_NAME[f"torch.{_name}"] = ADAPTIVE_FUNCTIONS[_name]
for _name in ("conv3d", "conv_transpose3d", "max_pool3d", "max_pool3d_with_indices"):
    APIS_BY_QUALIFIED_NAME[f"torch.{_name}"] = VOLUMETRIC_FUNCTIONS[_name]

APIS_BY_QUALIFIED_NAME.update(SPECTRAL_FUNCTIONS)
APIS_BY_QUALIFIED_NAME.update(IM2COL)
for _submodule, _names in TORCHVISION_OPS.items():
    for _name in _names:
        _api = _no_candle_op(_name, "torchvision_ops", is_module=_name[0].isupper())
        APIS_BY_QUALIFIED_NAME[f"torchvision.ops.{_name}"] = _api
        APIS_BY_QUALIFIED_NAME[f"torchvision.ops.{_submodule}.{_name}"] = _api

# A file that holds none of these substrings cannot hold a site: every site needs an API name
# written somewhere in the file (a call, an import or a base class). See prefilter.py.
# "max_pool"/"avg_pool" also cover adaptive_*_pool*, "MaxPool"/"AvgPool" also Adaptive*Pool*,
# "Pool3d"/"pool3d" every 3-D pooling (MaxUnpool3d, lp_pool3d, ...).
API_NAME_FRAGMENTS = (
    "interpolate",
    "upsample",
    "Upsampl",
    "grid_sample",
    "affine_grid",
    "max_pool",
    "avg_pool",
    "MaxPool",
    "AvgPool",
    "ConvTranspose",
    "conv_transpose",
    "Conv3d",
    "conv3d",
    "Pool3d",
    "pool3d",
    "Conv1d",
    "conv1d",
    # torchvision.ops: "roi_align" also covers ps_roi_align, "RoIAlign" PSRoIAlign and MultiScaleRoIAlign
    "roi_align",
    "RoIAlign",
    "roi_pool",
    "RoIPool",
    "deform_conv",
    "DeformConv",
    # torch.fft (every transform's name holds "fft"), stft/istft; F.unfold / F.fold and modules
    "fft",
    "stft",
    "fold",
    "Fold",
)

# The identifier a site must spell (the last part of an API's qualified name): the prefilter's test.
API_SHORT_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in APIS_BY_QUALIFIED_NAME)

PARTIAL_QUALIFIED_NAMES = frozenset({"functools.partial"})

# The modes candle can run at all (forward) with a backward, per ../shared/candle-ops.md section 3.1.
MODES_WITHOUT_CANDLE_OP = {
    "bicubic": "candle has no bicubic upsampling op (PR #3385 is open and its backward bails)",
    "trilinear": "candle has no trilinear (5-D) upsampling op",
    "linear": "candle has no linear (1-D) upsampling op; emulating it with upsample_bilinear2d has no backward",
    "area": "mode='area' lowers to adaptive_avg_pool2d, which candle does not have",
    "nearest-exact": "candle's nearest uses a different index mapping and has no nearest-exact op",
}
