"""``F.grid_sample`` (2-D: bilinear, nearest, bicubic; zeros, border, reflection padding) and
``F.affine_grid`` composed of ops candle can differentiate.

candle has no grid sampler and no affine grid generator (../shared/candle-ops.md 3.5). These
functions equal torch's CPU kernels (aten/src/ATen/native/cpu/GridSamplerKernel.cpp) in value and
in the gradients with respect to the input and the grid, and touch them only through:

* the grid: ``select``, ``mul`` / ``add`` / ``sub`` by constants, ``where`` (padding: clipping and
  reflection, whose gradient multipliers, 0 at and beyond the borders, +-1 inside a reflection,
  are torch's), products of the distances (the interpolation weights) and, for bicubic, the cubic
  convolution polynomials; ``floor`` / ``round`` / ``trunc`` / comparisons only on detached
  copies (integers in candle: no gradient, as in torch);
* the input: one ``constant_pad_nd`` that adds a zero column to the (N, C, H*W) planes, one
  ``gather`` (its backward scatters into zeros, i.e. torch's scatter-add) of all corners / taps
  at once, where a corner outside the input reads that zero column (an exact zero, never a
  multiplication by a 0/1 mask and no ``where`` over the gathered values: an inf / NaN in the
  input reaches only the outputs that read it, as in torch), then the weighted sum (``mul`` and
  ``sum`` over the taps; bicubic along x, then along y, as ATen).

Imports nothing but torch.
"""

from __future__ import annotations

import warnings
from typing import List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

from ._dispatch import use_native
from .transposed_conv import _tc_meta

__all__ = ["affine_grid", "grid_sample"]

_CUBIC_A = -0.75  # as UpSampleBicubic2d.h and the grid sampler


def _gs_unnormalize(g: torch.Tensor, size: int, align_corners: bool) -> torch.Tensor:
    """Grid coordinate in [-1, 1] to pixel coordinate, with ATen's vectorized rounding."""
    if align_corners:
        return (g + 1) * ((size - 1) / 2)
    return (g + 1) * (size / 2) - 0.5


def _gs_clip(x: torch.Tensor, size: int) -> torch.Tensor:
    """Clip to [0, size - 1]; NaN becomes 0; gradient 0 at and beyond the borders (ATen's
    clip_coordinates_get_grad), by ``where`` so that candle's gradient is the same."""
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    top = torch.full((), float(size - 1), dtype=x.dtype, device=x.device)
    lo = torch.where(x.detach() > 0, x, zero)
    return torch.where(lo.detach() < size - 1, lo, top)


def _gs_reflect(x: torch.Tensor, size: int, align_corners: bool) -> torch.Tensor:
    """ATen's reflect_coordinates(_get_grad): reflect into [low, low + span]; gradient -1 where
    the reflections flip the direction (an odd number of flips), +1 elsewhere."""
    if align_corners:
        if size <= 1:
            return torch.zeros_like(x).detach()
        low, twice_span = 0.0, 2.0 * (size - 1)
    else:
        low, twice_span = -0.5, 2.0 * size
    rel = x - low
    neg = rel.detach() < 0
    abs_in = torch.where(neg, -rel, rel)
    flips = torch.trunc(abs_in.detach() / twice_span)
    extra = abs_in - flips * twice_span
    reflected = twice_span - extra
    more = extra.detach() > reflected.detach()
    return torch.where(more, reflected, extra) + low


def _gs_source(g: torch.Tensor, size: int, padding_mode: str, align_corners: bool) -> torch.Tensor:
    x = _gs_unnormalize(g, size, align_corners)
    if padding_mode == "border":
        return _gs_clip(x, size)
    if padding_mode == "reflection":
        return _gs_clip(_gs_reflect(x, size, align_corners), size)
    return x


def _gs_tap(xf: torch.Tensor, size: int, padding_mode: str, align_corners: bool):
    """Integer coordinate (detached float) of a tap -> (int64 index clamped into range, in-bound
    mask): ATen's compute_coordinates then its int bounds check (zeros padding only)."""
    if padding_mode == "border":
        xf = _gs_clip(xf, size)
    elif padding_mode == "reflection":
        xf = _gs_clip(_gs_reflect(xf, size, align_corners), size)
    inside = (xf > -1) & (xf < size)
    safe = torch.where(inside, xf, torch.zeros((), dtype=xf.dtype, device=xf.device))
    return safe.to(torch.int64), inside


def _gs_gather(x: torch.Tensor, iy: List[torch.Tensor], ix: List[torch.Tensor], masks: List[torch.Tensor]):
    """Values of ``x`` (N, C, H, W) at the K taps (each (N, P)), zero where the mask is False:
    one gather from the (N, C, H*W + 1) planes with a zero column padded on, which the masked
    taps read (an exact zero: no ``where`` over the gathered values, forward or backward, and an
    inf / NaN in the input reaches only the taps that read it); returns (N, C, K, P)."""
    n, c, h, w = x.shape
    p = ix[0].shape[1]
    slot = torch.full((), h * w, dtype=torch.int64, device=x.device)
    index = torch.stack([torch.where(m, yy * w + xx, slot) for yy, xx, m in zip(iy, ix, masks)], 1).reshape(n, 1, -1)
    planes = F.pad(x.reshape(n, c, h * w), (0, 1))  # the zero column the masked taps read
    vals = planes.gather(2, index.expand(n, c, index.shape[2]))
    return vals.reshape(n, c, len(ix), p)


def _gs_weighted(values: Sequence[torch.Tensor], weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """``v_0 * w_0 + v_1 * w_1 + ...`` summed left to right as ATen's kernels do, one
    ``addcmul`` per term; ``values`` (N, C, P), ``weights`` (N, P). Forward+backward about 20%
    faster than a product of the stacked taps summed over the tap axis, and closer to torch:
    bilinear outputs bitwise equal to torch's 93-100% (100% with align_corners), against 64-73%
    (what still differs is the coordinate arithmetic)."""
    out = values[0] * weights[0].unsqueeze(1)
    for value, weight in zip(values[1:], weights[1:]):
        out = torch.addcmul(out, value, weight.unsqueeze(1))
    return out


def _gs_cubic(t: torch.Tensor) -> Tuple[torch.Tensor, ...]:
    """ATen's cubic convolution coefficients for the 4 taps at distance t from the floor.

    Each is its value at ``t`` (computed without gradient) plus ``(t - t.detach())`` times its
    derivative, so the gradient w.r.t. ``t`` is one product with the derivative polynomial, as
    ATen's backward computes it: autograd through the chain of products would turn an infinite
    input value into ``inf * 0 = NaN`` (or ``inf - inf``) where torch's grid gradient is +-inf
    (the crate's twin, crates/candle-port-ops/src/grid/sample.rs, does the same)."""
    a = _CUBIC_A
    td = t.detach()
    delta = t - td  # value 0, gradient 1

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a

    def near_d(x):
        return (3 * (a + 2) * x - 2 * (a + 3)) * x

    def far_d(x):
        return (3 * a * x - 10 * a) * x + 8 * a

    t1, u, u1 = td + 1, 1 - td, 2 - td
    return (
        far(t1) + delta * far_d(t1),
        near(td) + delta * near_d(td),
        near(u) - delta * near_d(u),
        far(u1) - delta * far_d(u1),
    )


def _gs_sample(x, grid, mode, padding_mode, align_corners):
    n, c, h, w = x.shape
    ho, wo = grid.shape[1], grid.shape[2]
    g = grid.reshape(n, ho * wo, 2)
    gx, gy = g.select(2, 0), g.select(2, 1)
    if mode == "bicubic":
        sx, sy = _gs_unnormalize(gx, w, align_corners), _gs_unnormalize(gy, h, align_corners)
        fx, fy = sx.detach().floor(), sy.detach().floor()
        cx, cy = _gs_cubic(sx - fx), _gs_cubic(sy - fy)
        iys, ixs, masks = [], [], []
        for j in range(4):
            yy, my = _gs_tap(fy + (j - 1), h, padding_mode, align_corners)
            for i in range(4):
                xx, mx = _gs_tap(fx + (i - 1), w, padding_mode, align_corners)
                iys.append(yy)
                ixs.append(xx)
                masks.append(mx & my)
        taps = _gs_gather(x, iys, ixs, masks).unbind(2)  # 16 x (N, C, P): row j, column i
        # along x within each row, then along y, each a left-to-right sum of products: ATen's
        # order (unbind's backward is one stack, where per-tap slices would each materialize a
        # zero tensor)
        rows = [_gs_weighted(taps[4 * j : 4 * j + 4], cx) for j in range(4)]
        return _gs_weighted(rows, cy).reshape(n, c, ho, wo)
    sx = _gs_source(gx, w, padding_mode, align_corners)
    sy = _gs_source(gy, h, padding_mode, align_corners)
    if mode == "nearest":
        xx, mx = _gs_tap(sx.detach().round(), w, "zeros", align_corners)
        yy, my = _gs_tap(sy.detach().round(), h, "zeros", align_corners)
        out = _gs_gather(x, [yy], [xx], [mx & my])  # (N, C, 1, P)
        if grid.requires_grad:  # torch's grid gradient is zeros: a where that never picks the grid
            never = torch.zeros((), dtype=torch.bool, device=x.device)
            out = torch.where(never, gx.unsqueeze(1).unsqueeze(2), out)
        return out.reshape(n, c, ho, wo)
    fx, fy = sx.detach().floor(), sy.detach().floor()
    we = sx - fx  # distance to the west column
    ea = 1 - we
    no = sy - fy
    so = 1 - no
    weights = [so * ea, so * we, no * ea, no * we]  # nw, ne, sw, se
    x_w, m_w = _gs_tap(fx, w, "zeros", align_corners)
    x_e, m_e = _gs_tap(fx + 1, w, "zeros", align_corners)
    y_n, m_n = _gs_tap(fy, h, "zeros", align_corners)
    y_s, m_s = _gs_tap(fy + 1, h, "zeros", align_corners)
    v = _gs_gather(x, [y_n, y_n, y_s, y_s], [x_w, x_e, x_w, x_e], [m_n & m_w, m_n & m_e, m_s & m_w, m_s & m_e])
    out = _gs_weighted(v.unbind(2), weights)  # nw, ne, sw, se: ATen's order
    return out.reshape(n, c, ho, wo)


def grid_sample(
    input: torch.Tensor,
    grid: torch.Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: Optional[bool] = None,
) -> torch.Tensor:
    r"""``F.grid_sample`` for 4-D input (N, C, H, W) and grid (N, H_out, W_out, 2), made of ops
    candle differentiates; output, input gradient and grid gradient equal torch's.

    Pixel coordinates: ``x = (g + 1) (W - 1) / 2`` (align_corners) or ``(g + 1) W / 2 - 0.5``;
    ``border`` clips them to [0, W - 1] (gradient 0 at and beyond the edges), ``reflection``
    reflects them (about -0.5 and W - 0.5, or 0 and W - 1 with align_corners), then clips.

    * ``bilinear``: corners ``floor(x)``, ``floor(x) + 1`` (likewise y), weights the products of
      the distances to the opposite sides; corners outside the input read 0.
    * ``nearest``: ``round(x)`` (half to even); the grid gets torch's zero gradient (through a
      ``where`` whose condition is always false, so no arithmetic touches the values).
    * ``bicubic``: the 4 x 4 taps around ``floor`` of the *unpadded* coordinate, each tap's
      integer coordinate padded on its own (as ATen), cubic convolution weights with A = -0.75.

    The same in candle (Rust), for ``x`` (n, c, h, w) and ``grid`` (n, ho, wo, 2), bilinear::

        let g = grid.reshape((n, ho * wo, 2))?;
        let sx = ((g.narrow(2, 0, 1)?.squeeze(2)? + 1.0)? * (w as f64 / 2.0))? - 0.5;  // + padding (where_cond)
        let fx = sx.detach().floor()?;                        // no graph
        // corners: idx = y * w + x (u32, no grad), inb masks (u8); weights nw = (1 - (sy - fy)) * (1 - (sx - fx)) ...
        // a tap outside the input reads the padded zero column: idx = inb ? y * w + x : h * w
        let planes = x.reshape((n, c, h * w))?.pad_with_zeros(2, 0, 1)?;
        let v = planes.gather(&idx.broadcast_as((n, c, 4 * p))?.contiguous()?, 2)?;
        // out = v_nw * nw + v_ne * ne + v_sw * sw + v_se * se  (broadcast_mul / add)

    5-D input (3-D sampling), non-floating dtypes and rejected arguments go to ``F.grid_sample``
    itself (which computes or raises).
    """
    if (
        use_native(input)  # plain eager mode: torch's kernel (``_dispatch``)
        or input.dim() != 4
        or grid.dim() != 4
        or grid.shape[0] != input.shape[0]
        or grid.shape[3] != 2
        or grid.dtype != input.dtype
        or grid.device != input.device
        or not input.is_floating_point()
        or mode not in ("bilinear", "nearest", "bicubic")
        or padding_mode not in ("zeros", "border", "reflection")
        or input.numel() == 0
        or grid.numel() == 0
    ):
        return F.grid_sample(input, grid, mode, padding_mode, align_corners)  # torch raises or computes
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed "
            "to align_corners=False since 1.3.0. Please specify "
            "align_corners=True if the old behavior is desired. "
            "See the documentation of grid_sample for details.",
            stacklevel=2,
        )
    return _gs_sample(input, grid, mode, padding_mode, bool(align_corners))


def _gs_linspace(steps: int, align_corners: bool, dtype, device) -> torch.Tensor:
    """ATen's linspace_from_neg_one."""
    if steps <= 1:
        return torch.zeros(1, dtype=dtype, device=device)
    r = torch.linspace(-1, 1, steps, dtype=dtype, device=device)
    if not align_corners:
        r = r * (steps - 1) / steps
    return r


def _gs_base_grid(sizes: Tuple[int, ...], align_corners: bool, dtype, device) -> torch.Tensor:
    """The (prod(sizes), nd + 1) base grid of ATen's affine_grid_generator: x fastest, then y
    (then z), and a column of ones."""
    spatial = sizes[::-1]  # W, H (, D)
    axes = [_gs_linspace(s, align_corners, dtype, device) for s in spatial]
    shape = tuple(sizes) + (len(sizes) + 1,)
    base = torch.ones(shape, dtype=dtype, device=device)
    nd = len(sizes)
    for k, ax in enumerate(axes):  # k = 0: x along the last spatial dim
        view = [1] * nd
        view[nd - 1 - k] = ax.shape[0]
        base[..., k] = ax.reshape(view)
    return base.reshape(-1, nd + 1)


def affine_grid(theta: torch.Tensor, size: List[int], align_corners: Optional[bool] = None) -> torch.Tensor:
    r"""``F.affine_grid`` (4-D and 5-D sizes) as one ``bmm`` of a constant base grid with
    ``theta^T``: ``grid[n, h, w] = theta[n] @ (x_w, y_h, 1)`` with ATen's ``x_w = linspace(-1, 1,
    W)`` (times ``(W - 1) / W`` without align_corners). Value and gradient equal torch's (its
    own decomposition, with the base built once on the host instead of per batch element).
    candle: ``base.broadcast_left(n)?.matmul(&theta.transpose(1, 2)?)?`` (Op::Matmul).
    """
    if use_native(theta):  # plain eager mode: torch's kernel (``_dispatch``)
        return F.affine_grid(theta, size, align_corners)
    meta = _tc_meta(F.affine_grid, theta, size, align_corners)
    if meta is None or not theta.is_floating_point() or meta.numel() == 0:
        return F.affine_grid(theta, size, align_corners)
    sizes = tuple(int(s) for s in size[2:])
    n = theta.shape[0]
    base = _gs_base_grid(sizes, bool(align_corners), theta.dtype, theta.device)
    grid = torch.bmm(base.expand(n, base.shape[0], base.shape[1]), theta.transpose(1, 2))
    return grid.reshape((n,) + sizes + (len(sizes),))
