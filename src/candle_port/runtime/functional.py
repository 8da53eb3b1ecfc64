"""Drop-in replacements for ``torch.nn.functional.interpolate`` and its deprecated aliases.

Every mode and rank that ``F.interpolate`` accepts on CPU goes through a composition of ops candle
can differentiate once ported (see :func:`interpolate`); invalid combinations are passed to torch
so that it raises its own errors.
"""

from __future__ import annotations

from typing import List, Optional, get_type_hints

import torch
import torch.nn.functional as F
from torch._jit_internal import _overload

from .area import resize_area
from .bicubic import upsample_bicubic2d
from ._dispatch import use_native
from .bilinear import _output_size_and_scales, _resample, _Scale, _Size
from .nearest import upsample_nearest_nd
from .trilinear import upsample_trilinear3d

# F-named ops from their own modules, re-exported so that this module mirrors torch.nn.functional
from .convolution1d import conv1d  # noqa: E402
from .grid_sample import affine_grid, grid_sample  # noqa: E402
from .transposed_conv import conv_transpose1d, conv_transpose2d  # noqa: E402
from .volumetric_conv import conv3d, conv_transpose3d  # noqa: E402
from .volumetric_pooling import (  # noqa: E402
    adaptive_avg_pool3d,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool3d,
    max_pool3d,
    max_pool3d_with_indices,
)

__all__ = [
    "interpolate", "upsample", "upsample_bilinear", "upsample_nearest",
    "adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "affine_grid",
    "avg_pool3d", "conv1d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "grid_sample",
    "max_pool3d", "max_pool3d_with_indices",
]


_NEAREST_MODES = ("nearest", "nearest-exact")
_MODE_RANKS = {
    "nearest": (3, 4, 5),
    "nearest-exact": (3, 4, 5),
    "area": (3, 4, 5),
    "linear": (3,),
    "bilinear": (4,),
    "bicubic": (4,),
    "trilinear": (5,),
}


def _ours(input: torch.Tensor, mode: str, align_corners: Optional[bool], antialias: bool) -> bool:
    """Whether (mode, rank, dtype, flags) is a combination torch accepts and we compose.

    Everything else (invalid combinations included) goes to torch, which raises or computes."""
    if input.dim() not in _MODE_RANKS.get(mode, ()):
        return False
    if mode in _NEAREST_MODES or mode == "area":
        if align_corners is not None or antialias:
            return False
        return input.is_floating_point() or (mode in _NEAREST_MODES and input.dtype == torch.uint8)
    if not input.is_floating_point():
        return False  # uint8 bicubic / antialias: no gradient to keep, torch's kernel is fine
    if antialias:
        return mode in ("bilinear", "bicubic") and input.dtype in (torch.float32, torch.float64)
    return True


# TorchScript signatures: torch's own overloads of F.interpolate, so that a scripted model that
# calls this function compiles (its ``torch.jit.is_scripting()`` branch: torch's op).
@_overload
def interpolate(  # noqa: F811
    input: torch.Tensor,
    size: Optional[int] = None,
    scale_factor: Optional[List[float]] = None,
    mode: str = "nearest",
    align_corners: Optional[bool] = None,
    recompute_scale_factor: Optional[bool] = None,
    antialias: bool = False,
) -> torch.Tensor:
    pass


@_overload
def interpolate(  # noqa: F811
    input: torch.Tensor,
    size: Optional[List[int]] = None,
    scale_factor: Optional[List[float]] = None,
    mode: str = "nearest",
    align_corners: Optional[bool] = None,
    recompute_scale_factor: Optional[bool] = None,
    antialias: bool = False,
) -> torch.Tensor:
    pass


@_overload
def interpolate(  # noqa: F811
    input: torch.Tensor,
    size: Optional[int] = None,
    scale_factor: Optional[float] = None,
    mode: str = "nearest",
    align_corners: Optional[bool] = None,
    recompute_scale_factor: Optional[bool] = None,
    antialias: bool = False,
) -> torch.Tensor:
    pass


@_overload
def interpolate(  # noqa: F811
    input: torch.Tensor,
    size: Optional[List[int]] = None,
    scale_factor: Optional[float] = None,
    mode: str = "nearest",
    align_corners: Optional[bool] = None,
    recompute_scale_factor: Optional[bool] = None,
    antialias: bool = False,
) -> torch.Tensor:
    pass


# ``from __future__ import annotations`` makes the stubs' annotations strings, which
# TorchScript's signature reader rejects: give it the types they name.
for _stub in torch._jit_internal._get_fn_overloads(torch._jit_internal._qualified_name(interpolate)) or ():
    _stub.__annotations__ = get_type_hints(_stub)


def interpolate(  # noqa: F811
    input: torch.Tensor,
    size: _Size = None,
    scale_factor: _Scale = None,
    mode: str = "nearest",
    align_corners: Optional[bool] = None,
    recompute_scale_factor: Optional[bool] = None,
    antialias: bool = False,
) -> torch.Tensor:
    """``F.interpolate`` made candle-trainable: every mode goes through ops candle can differentiate.

    Same signature, output, gradient and memory format as ``torch.nn.functional.interpolate``
    (to float rounding where the op computes, bitwise for the nearest modes). By mode:

    * ``nearest`` / ``nearest-exact`` (3-D, 4-D, 5-D, float or uint8):
      :func:`upsample_nearest_nd`, one ``index_select`` per axis;
    * ``linear`` (3-D), ``bilinear`` (4-D, also ``antialias=True``), ``trilinear`` (5-D):
      :func:`upsample_bilinear2d` / :func:`upsample_trilinear3d`, per-axis plans and GEMMs;
    * ``bicubic`` (4-D, also ``antialias=True``): :func:`upsample_bicubic2d`, two GEMMs;
    * ``area`` (3-D, 4-D, 5-D): :func:`resize_area`, one averaging GEMM per axis.

    Passed to torch unchanged (so torch computes or raises exactly as before): invalid
    combinations (``align_corners`` or ``antialias`` with nearest / area, a rank the mode does
    not have, unknown modes, empty or non-positive sizes), integer input other than uint8
    nearest (no gradient to keep), and antialias with half types (ATen raises for those).

    **TorchScript and tracing.** Under ``torch.jit.script`` (TorchScript compiles only the
    ``torch.jit.is_scripting()`` branch) and while ``torch.jit.trace`` records, this is
    ``F.interpolate`` itself: a scripted or traced model runs in torch, never in candle, and
    torch's op keeps a trace's output size a function of the input's size. make_fx,
    torch.export and torch.compile trace the composition.

    **Eager mode.** With nothing tracing and a plain tensor input this is ``F.interpolate``
    itself (what eager PyTorch gives anyway); ``with composition():`` or
    ``CANDLE_PORT_RUNTIME=composition`` runs the composition there too (``_dispatch``).
    """
    if torch.jit.is_scripting():
        return F.interpolate(
            input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias
        )
    else:
        return _interpolate(
            input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias
        )


def _interpolate(
    input: torch.Tensor,
    size: _Size,
    scale_factor: _Scale,
    mode: str,
    align_corners: Optional[bool],
    recompute_scale_factor: Optional[bool],
    antialias: bool,
) -> torch.Tensor:
    if use_native(input) or torch.jit.is_tracing() or not _ours(input, mode, align_corners, antialias):
        # plain eager mode (``_dispatch``): torch's kernel is what the user gets anyway.
        # torch.jit.trace: torch's op, which records the output size as a function of the
        # input's (a traced composition would bake the traced sizes in); the trace runs in torch.
        return F.interpolate(
            input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias
        )
    ndim = input.dim() - 2
    if mode in ("bilinear", "linear"):
        return _resample(
            input,
            size,
            scale_factor,
            bool(align_corners),
            recompute_scale_factor,
            ndim,
            None,
            antialias,
        )
    if mode == "trilinear":
        return upsample_trilinear3d(input, size, scale_factor, align_corners, recompute_scale_factor)
    out, scales = _output_size_and_scales(input, size, scale_factor, recompute_scale_factor, ndim)
    if input.shape[1] == 0 or min(list(input.shape[2:]) + out) <= 0:
        return F.interpolate(
            input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias
        )
    if mode in _NEAREST_MODES:
        return upsample_nearest_nd(input, out, scales, mode == "nearest-exact")
    if mode == "bicubic":
        return upsample_bicubic2d(input, out, scales, bool(align_corners), antialias)
    return resize_area(input, out)


def upsample(
    input: torch.Tensor,
    size: _Size = None,
    scale_factor: _Scale = None,
    mode: str = "nearest",
    align_corners: Optional[bool] = None,
) -> torch.Tensor:
    """Like the deprecated ``F.upsample``: :func:`interpolate` (without the deprecation warning)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_bilinear(
    input: torch.Tensor, size: _Size = None, scale_factor: _Scale = None
) -> torch.Tensor:
    """Like ``F.upsample_bilinear``: bilinear with ``align_corners=True``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def upsample_nearest(
    input: torch.Tensor, size: _Size = None, scale_factor: _Scale = None
) -> torch.Tensor:
    """Like ``F.upsample_nearest``: :func:`interpolate` with ``mode="nearest"``."""
    return interpolate(input, size, scale_factor, mode="nearest")
