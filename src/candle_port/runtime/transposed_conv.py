"""Transposed convolutions (1-D, 2-D with groups / output_padding / dilation) as plain convolutions.

candle's ``conv_transpose1d`` has no backward, its ``conv_transpose2d`` no ``groups`` argument and a
backward that ignores ``output_padding``; its ``conv2d`` has a full backward (with one stride, one
dilation, one padding and equal H/W residuals; ../shared/candle-ops.md 2.1), its ``conv1d`` a
wrong weight gradient for batch > 1 (CP111), so a 1-D transposed convolution runs as a 2-D one
of height 1. These functions equal torch's (values, input / weight / bias gradients) and touch
the input only through ``cat`` (one zero slice), ``index_select``, ``narrow``,
``constant_pad_nd``, ``stack`` and ``conv2d`` (stride 1):

    conv_transpose(x, w, s, p, op, g, d)
      = conv(dilate_s(x) padded by d(k-1)-p left and d(k-1)-p+op right,   # one index_select per axis
             flip(w) with in/out channels swapped per group, dilation d, groups g)

Every output element sums exactly the products torch's col2im sums (plus products with inserted
zeros, which are exact zeros for finite weights), so an inf / NaN in the input reaches only the
outputs it reaches in torch.

With dilation 1 and a stride above 1 (the decoder's ``ConvTranspose2d(c, c, 3, 2, 1, 1)``, a
depthwise or grouped up-convolution) no zeros are inserted: output ``s * q + rho`` reads only
the taps ``r, r + s, ...`` of the kernel (``r = (rho + p) mod s``), so each output residue is a
plain stride-1 convolution of the padded (or cropped: ``narrow``) input with those taps reversed,
and the ``prod(s)`` results are interleaved by ``stack`` and a reshape, then cut to the output
size (``_tc_polyphase``): ``prod(s)`` times fewer multiply-adds, 1.4-4x faster than the
zero-dilated form. Kernel == stride without padding stays one matmul. Imports nothing but torch.
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from typing import List, NamedTuple, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import _disable_current_modes

from ._dispatch import use_native
from ._recording import size_constant

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "conv_transpose1d", "conv_transpose2d"]

_IntArg = Union[int, Sequence[int]]


# ---------------------------------------------------------------------------------------------
# Shared helpers (also used by volumetric_conv.py and volumetric_pooling.py).


def _tc_meta(fn, *args, **kwargs) -> Optional[torch.Tensor]:
    """``fn`` on meta copies of the tensor arguments (torch checks them and gives the output
    shape), or None when torch rejects them (the caller then calls torch's op so that it raises)."""

    def meta(a):
        return torch.empty_like(a, device="meta") if isinstance(a, torch.Tensor) else a

    try:
        margs = [meta(a) for a in args]
        mkw = {k: meta(v) for k, v in kwargs.items()}
        if torch._C._len_torch_dispatch_stack() > 0:
            with _disable_current_modes():
                out = fn(*margs, **mkw)
        else:
            out = fn(*margs, **mkw)
    except Exception:
        return None
    return out[0] if isinstance(out, tuple) else out


def _tc_ints(v, n: int) -> Tuple[int, ...]:
    if isinstance(v, (list, tuple, torch.Size)):
        vals = tuple(int(e) for e in v)
        return vals * n if len(vals) == 1 else vals
    return (int(v),) * n


@lru_cache(maxsize=512)
def _tc_index(rows: Tuple[int, ...], device: torch.device) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.int64, device=device)


def _tc_take(x: torch.Tensor, dim: int, rows: Sequence[int]) -> torch.Tensor:
    """``x`` indexed along ``dim`` by ``rows``; a row equal to ``x.shape[dim]`` reads zeros (a zero
    slice is concatenated first). An identity selection returns ``x`` itself."""
    n = x.shape[dim]
    rows = tuple(int(r) for r in rows)
    if rows == tuple(range(n)):
        return x
    if any(r == n for r in rows):
        shape = list(x.shape)
        shape[dim] = 1
        x = torch.cat([x, x.new_zeros(shape)], dim)
    return x.index_select(dim, size_constant(_tc_index, rows, x.device))


def _tc_dilate_rows(n: int, stride: int, left: int, right: int) -> List[int]:
    """Rows of the zero-dilated (``stride - 1`` zeros between elements) input, padded by
    ``left`` / ``right`` (negative: cropped); ``n`` marks a zero."""
    length = (n - 1) * stride + 1 + left + right
    rows = []
    for q in range(length):
        src = q - left
        rows.append(src // stride if 0 <= src <= (n - 1) * stride and src % stride == 0 else n)
    return rows


def _tc_conv2d(x, w, bias, stride, pads, dilation, groups):
    """``F.conv2d`` of batched ``x`` with per-side ``pads`` ((top, bottom), (left, right)), called
    the way candle's conv2d can differentiate it: one stride, one dilation, one padding, equal
    H/W residuals (a different stride per axis: stride 1, then ``index_select`` of rows / columns;
    a different dilation per axis: zeros inserted in the kernel; uneven padding: ``F.pad``)."""
    sh, sw = stride
    dh, dw = dilation
    if dh != dw:
        kh, kw = w.shape[-2:]
        w = _tc_take(w, 2, _tc_dilate_rows(kh, dh, 0, 0))
        w = _tc_take(w, 3, _tc_dilate_rows(kw, dw, 0, 0))
        dh = dw = 1
    sub = None
    if sh != sw:
        sub, sh, sw = (stride, 1, 1)
    kh, kw = w.shape[-2:]
    (top, bottom), (left, right) = pads
    if sh > 1:
        rh = (x.shape[2] + top + bottom - dh * (kh - 1) - 1) % sh
        rw = (x.shape[3] + left + right - dw * (kw - 1) - 1) % sw
        if rh != rw:  # drop the trailing rows / columns no window reads
            bottom, right = bottom - rh, right - rw
    if top == bottom == left == right:
        y = F.conv2d(x, w, bias, sh, top, dh, groups)
    else:
        y = F.conv2d(F.pad(x, (left, right, top, bottom)), w, bias, sh, 0, dh, groups)
    if sub is not None:
        y = _tc_take(y, 2, range(0, y.shape[2], sub[0]))
        y = _tc_take(y, 3, range(0, y.shape[3], sub[1]))
    return y


def _tc_flip_weight(weight: torch.Tensor, groups: int, nd: int) -> torch.Tensor:
    """A transposed convolution's weight (C_in, C_out/g, *k) as the equivalent convolution's
    (C_out, C_in/g, *k): channels swapped within each group, every kernel axis reversed."""
    cin, cout_g = weight.shape[0], weight.shape[1]
    k = tuple(weight.shape[2:])
    w = weight.reshape((groups, cin // groups, cout_g) + k).transpose(1, 2).reshape((groups * cout_g, cin // groups) + k)
    for axis in range(nd):
        w = _tc_take(w, 2 + axis, range(k[axis] - 1, -1, -1))
    return w


def _tc_prepare(x, weight, stride, padding, output_padding, dilation, nd):
    """The zero-dilated, padded input (batched) for a transposed convolution."""
    k = weight.shape[2:]
    for axis in range(nd):
        left = dilation[axis] * (k[axis] - 1) - padding[axis]
        right = left + output_padding[axis]
        x = _tc_take(x, 2 + axis, _tc_dilate_rows(x.shape[2 + axis], stride[axis], left, right))
    return x


def _tc_valid(nd, input, weight, bias, s, p, op, d, groups) -> bool:
    """The checks torch's transposed convolution kernels make (its meta function skips some)."""
    if weight.dim() != nd + 2 or input.dim() not in (nd + 1, nd + 2) or len(s) != nd:
        return False
    if groups < 1 or weight.shape[0] % groups or input.shape[-nd - 1] != weight.shape[0]:
        return False
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[1] * groups):
        return False
    if any(v < 1 for v in s + d) or any(v < 0 for v in p + op):
        return False
    if weight.numel() == 0 or input.device != weight.device:
        return False
    return all(o < st or o < dl for o, st, dl in zip(op, s, d)) and input.dtype == weight.dtype


def _tc_blocks(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], groups: int, nd: int) -> torch.Tensor:
    """A transposed convolution with kernel == stride, no padding, output_padding or dilation
    (a U-Net / FPN up-convolution) of batched ``x``: the output windows tile the output without
    overlap, so it is one (batched, per group) matmul and a reshape / permute of its blocks."""
    n, cin = x.shape[0], x.shape[1]
    sizes = tuple(x.shape[2:])
    cout_g, k = weight.shape[1], tuple(weight.shape[2:])
    cin_g = cin // groups
    length = 1
    for v in sizes:
        length *= v
    out = tuple(s_ * k_ for s_, k_ in zip(sizes, k))
    cl = _tc_channels_last(x, k, (0,) * nd)
    if x.is_contiguous() or n == 1:
        # (N, g, C_out/g * K, C_in/g) @ (N, g, C_in/g, L): x is read in its own layout, so its
        # gradient (the matmul's) comes back contiguous, as torch's. A gradient built by views
        # of another layout has a batch stride torch's own kernels misread when N is 1
        # (batch_norm's backward in eval mode reads it as contiguous: wrong gradients upstream),
        # so a channels_last x of one sample is copied to this layout first (its gradient is then
        # contiguous, not channels_last as torch's, but canonical).
        xs = x.contiguous().reshape(n, groups, cin_g, length)
        ws = weight.reshape(groups, cin_g, -1).transpose(1, 2)
        y = torch.matmul(ws, xs)  # (N, g, C_out/g * K, L)
        y = y.reshape((n, groups * cout_g) + k + sizes)
        # (N, C_out, k_0.., S_0..) -> (N, C_out, S_0, k_0, S_1, k_1, ..)
        spatial = [a for i in range(nd) for a in (2 + nd + i, 2 + i)]
        y = y.permute([0, 1] + spatial).reshape((n, groups * cout_g) + out)
    else:
        # (g, N*L, C_in/g) @ (g, C_in/g, C_out/g * K), both contiguous for a channels_last x
        # (a strided or broadcast operand sends CPU bmm to a slow path)
        xs = x.reshape(n, groups, cin_g, length).permute(1, 0, 3, 2).reshape(groups, n * length, cin_g)
        ws = weight.reshape(groups, cin_g, -1)
        y = torch.bmm(xs, ws)  # (g, N*L, C_out/g * K)
        y = y.reshape((groups, n) + sizes + (cout_g,) + k)
        # (g, N, S_0.., C_out/g, k_0..) -> (N, g, C_out/g, S_0, k_0, S_1, k_1, ..), or for
        # channels_last input (N, S_0, k_0, .., g, C_out/g), torch's layout, in the same copy
        spatial = [a for i in range(nd) for a in (2 + i, 3 + nd + i)]
        if cl:
            y = y.permute([1] + spatial + [0, 2 + nd]).reshape((n,) + out + (groups * cout_g,)).movedim(-1, 1)
        else:
            y = y.permute([1, 0, 2 + nd] + spatial).reshape((n, groups * cout_g) + out)
    y = _tc_dense(y, cl)
    if bias is not None:
        y = y + bias.reshape((1, -1) + (1,) * nd)
    return y


class _TcPhase(NamedTuple):
    """One output residue ``rho`` of a transposed convolution along one axis (dilation 1):
    outputs ``s * q + rho`` read the taps ``first, first + s, ...`` (``taps`` of them) of the
    kernel, from the input padded by ``left`` / ``right`` (negative: cropped)."""

    first: int
    taps: int
    left: int
    right: int


def _tc_phases(n: int, k: int, s: int, p: int, out: int) -> Optional[Tuple[int, Tuple[_TcPhase, ...]]]:
    """(Q, the ``s`` residues' phases) for one axis, where output ``o = s * q + rho``, q in
    [0, Q); None when a residue reads no tap (a kernel shorter than the stride).

    ``y[s*q + rho] = sum_m x[q + c - m] * w[r + s*m]`` with ``r = (rho + p) mod s`` and
    ``c = (rho + p - r) / s``: a plain correlation of ``x`` (padded by ``taps - 1 - c`` on the
    left) with the taps ``r, r + s, ...`` reversed."""
    q_len = -(-out // s)
    phases = []
    for rho in range(s):
        r = (rho + p) % s
        c = (rho + p - r) // s
        taps = len(range(r, k, s))
        if taps == 0:
            return None
        left = taps - 1 - c
        phases.append(_TcPhase(r, taps, left, q_len + taps - 1 - left - n))
    return q_len, tuple(phases)


def _tc_pad(x: torch.Tensor, dim: int, left: int, right: int) -> torch.Tensor:
    """``x`` zero-padded (or cropped, for negative sides) along ``dim``: ``narrow`` and
    ``constant_pad_nd`` with non-negative pads, the forms candle differentiates."""
    if left < 0 or right < 0:
        start, stop = max(-left, 0), x.shape[dim] - max(-right, 0)
        x = x.narrow(dim, start, stop - start)
        left, right = max(left, 0), max(right, 0)
    if left or right:
        pads = [0, 0] * (x.dim() - 1 - dim) + [left, right]
        x = F.pad(x, pads)
    return x


def _tc_channels_last(x: torch.Tensor, stride: Sequence[int], output_padding: Sequence[int]) -> bool:
    """Whether torch's transposed convolution returns channels_last output for batched ``x``:
    2-D keeps a channels_last input's layout; 3-D keeps channels_last_3d only on its mkldnn path
    (float32 / bfloat16, every output_padding below its stride), else returns contiguous output
    (measured on torch 2.14's CPU kernels, every path here follows it)."""
    if x.dim() not in (4, 5) or x.shape[1] == 1 or x.is_contiguous():
        return False
    if x.dim() == 4:
        return x.is_contiguous(memory_format=torch.channels_last)
    return (
        x.is_contiguous(memory_format=torch.channels_last_3d)
        and x.dtype in (torch.float32, torch.bfloat16)
        and all(o < st for o, st in zip(output_padding, stride))
    )


def _tc_polyphase(x, weight, bias, s, p, op, d, groups, nd, conv=None):
    """A transposed convolution with dilation 1 as ``prod(s)`` plain stride-1 convolutions, one
    per output residue, each with its own taps of the kernel (no inserted zeros: ``prod(s)``
    times fewer multiply-adds than convolving the zero-dilated input), interleaved by one
    ``stack`` and a permuted reshape, then cut to the output size. ``conv(x, w, bias, groups)``:
    the stride-1 unpadded convolution (default ``conv2d``). None where it does not
    apply: a dilation above 1, every stride 1, or a residue that reads no tap."""
    if any(v != 1 for v in d) or all(v == 1 for v in s):
        return None
    k = tuple(weight.shape[2:])
    sizes = tuple(x.shape[2:])
    outs = tuple((n - 1) * st - 2 * pd + kk + o for n, st, pd, kk, o in zip(sizes, s, p, k, op))
    axes = [_tc_phases(n, kk, st, pd, o) for n, kk, st, pd, o in zip(sizes, k, s, p, outs)]
    if any(a is None for a in axes):
        return None
    q_lens = tuple(a[0] for a in axes)
    w = _tc_flip_weight(weight, groups, nd)  # (C_out, C_in/g, *k), every axis reversed
    if conv is None:
        def conv(xp, wp, b, g):
            return F.conv2d(xp, wp, b, 1, 0, 1, g)

    def phase_output(picks) -> torch.Tensor:
        xp, wp = x, w
        for axis, ph in enumerate(picks):
            xp = _tc_pad(xp, 2 + axis, ph.left, ph.right)
            # the reversed kernel holds tap t at k - 1 - t: taps r, r + s, ... reversed are the
            # positions k - 1 - r - s * (taps - 1), ..., k - 1 - r (step s)
            start = k[axis] - 1 - ph.first - s[axis] * (ph.taps - 1)
            wp = _tc_take(wp, 2 + axis, range(start, start + s[axis] * ph.taps, s[axis]))
        return conv(xp, wp, bias, groups)

    # residues in row-major order: (N, C, Q_1.., s_1 * s_2 ..) -> (N, C, Q_1, s_1, Q_2, s_2, ..),
    # or for channels_last input (N, Q_1, s_1, .., C), the layout torch returns, in the same copy
    y = torch.stack([phase_output(picks) for picks in itertools.product(*(a[1] for a in axes))], -1)
    y = y.reshape(y.shape[: 2 + nd] + tuple(s))
    spatial = [a for i in range(nd) for a in (2 + i, 2 + nd + i)]
    full = tuple(q * st for q, st in zip(q_lens, s))
    cl = _tc_channels_last(x, s, op)
    if cl:
        y = y.permute([0] + spatial + [1]).reshape((x.shape[0],) + full + (-1,)).movedim(-1, 1)
    else:
        y = y.permute([0, 1] + spatial).reshape((x.shape[0], -1) + full)
    for axis, o in enumerate(outs):
        if y.shape[2 + axis] != o:
            y = y.narrow(2 + axis, 0, o)
    # dense, as torch returns it (a user's .view() after the layer must keep working): a no-op
    # unless the output was cut, or a size-1 axis let reshape return a view with other strides
    return _tc_dense(y, cl)


def _tc_dense(y: torch.Tensor, channels_last: bool) -> torch.Tensor:
    if not channels_last:
        return y.contiguous()
    return y.contiguous(memory_format=torch.channels_last if y.dim() == 4 else torch.channels_last_3d)


def _tc_transposed(nd, torch_fn, input, weight, bias, stride, padding, output_padding, groups, dilation):
    args = (input, weight, bias, stride, padding, output_padding, groups, dilation)
    if use_native(input):  # plain eager mode: torch's kernel (``_dispatch``)
        return torch_fn(*args)
    try:
        s, p, op, d = (_tc_ints(v, nd) for v in (stride, padding, output_padding, dilation))
        ok = (
            isinstance(input, torch.Tensor)
            and isinstance(weight, torch.Tensor)
            and input.is_floating_point()
            and input.numel() > 0
            and len(s) == len(p) == len(op) == len(d) == nd
            and _tc_valid(nd, input, weight, bias, s, p, op, d, groups)
        )
    except (TypeError, ValueError):
        ok = False
    if ok:
        k = weight.shape[2:]
        sizes = input.shape[-nd:]
        ok = all((n - 1) * st - 2 * pd + dl * (kk - 1) + o + 1 > 0 for n, st, pd, dl, kk, o in zip(sizes, s, p, d, k, op))
    if not ok:
        return torch_fn(*args)  # torch raises, or computes what needs no composition
    if nd == 1:
        # candle 0.11.0's conv1d weight gradient is wrong for batch > 1 with > 1 output channel per
        # group (measured, docs/verify-candle.md): a 2-D transposed convolution of height 1, whose
        # conv2d candle differentiates right (a height-1 kernel makes the H dilation moot)
        y = _tc_transposed(2, F.conv_transpose2d, input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, s[0]),
                           (0, p[0]), (0, op[0]), groups, (d[0], d[0]))
        return y.squeeze(-2).contiguous()
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    if tuple(weight.shape[2:]) == s and not any(p + op) and all(v == 1 for v in d):
        y = _tc_blocks(x, weight, bias, groups, nd)
        return y if batched else y.squeeze(0)
    y = _tc_polyphase(x, weight, bias, s, p, op, d, groups, nd)
    if y is not None:
        return y if batched else y.squeeze(0)
    cl = _tc_channels_last(x, s, op)
    x = _tc_prepare(x, weight, s, p, op, d, nd)
    w = _tc_flip_weight(weight, groups, nd)
    y = _tc_dense(_tc_conv2d(x, w, bias, (1, 1), ((0, 0), (0, 0)), d, groups), cl)
    return y if batched else y.squeeze(0)


def conv_transpose1d(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    stride: _IntArg = 1,
    padding: _IntArg = 0,
    output_padding: _IntArg = 0,
    groups: int = 1,
    dilation: _IntArg = 1,
) -> torch.Tensor:
    r"""``F.conv_transpose1d`` (same signature, output, gradients) for candle.

    Input (N, C_in, L) or (C_in, L), weight (C_in, C_out/groups, k). Output length
    ``(L - 1) s - 2p + d (k - 1) + op + 1``.

    **Composition.** :func:`conv_transpose2d` on the input and weight with a height-1 axis
    inserted (``unsqueeze(-2)``; stride ``(1, s)``, padding ``(0, p)``), squeezed after: candle
    0.11.0's ``conv1d`` returns a wrong weight gradient for batch > 1 with more than one output
    channel per group (measured, docs/verify-candle.md), its ``conv2d`` a right one. Along L, an
    ``index_select`` with a host-built table inserts ``s - 1`` zeros between elements and pads
    ``d (k - 1) - p`` zeros left and that plus ``op`` right (a negative pad crops; the zeros come
    from one concatenated zero slice), then ``conv2d(stride 1, padding 0, dilation d, groups g)``
    with the weight reshaped to (C_out, C_in/g, 1, k) per group and reversed along k
    (``index_select``). The same in candle::

        let xz = Tensor::cat(&[&x, &x.zeros_like()?.narrow(2, 0, 1)?], 2)?;
        let xd = xz.index_select(&table, 2)?.unsqueeze(2)?;    // Op::IndexSelect
        let w = w.reshape((g, cin / g, cout_g, k))?.transpose(1, 2)?
                 .reshape((g * cout_g, cin / g, k))?.index_select(&rev_k, 2)?.unsqueeze(2)?;
        let y = xd.conv2d(&w, 0, 1, d, g)?.squeeze(2)?;        // Op::Conv2D, full backward
        // + bias.reshape((1, cout, 1)) broadcast-added; never candle's conv_transpose1d or conv1d

    With dilation 1 and stride above 1, outside that recipe and faster: one ``conv2d`` per output
    residue ``rho`` (taps ``r, r + s, ...`` reversed, input padded or cut per residue), the ``s``
    results ``stack``-ed on a last axis and reshaped, then cut to the output length (see the
    module docstring; the values are the same sums).
    """
    return _tc_transposed(1, F.conv_transpose1d, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    stride: _IntArg = 1,
    padding: _IntArg = 0,
    output_padding: _IntArg = 0,
    groups: int = 1,
    dilation: _IntArg = 1,
) -> torch.Tensor:
    r"""``F.conv_transpose2d`` with groups, output_padding and dilation, for candle.

    Input (N, C_in, H, W) or (C_in, H, W), weight (C_in, C_out/groups, k_h, k_w). As
    :func:`conv_transpose1d`, per axis (one ``index_select`` each), then one ``conv2d`` with
    stride 1, padding 0, dilation ``d`` and ``groups``; a different dilation per axis becomes
    zeros inserted in the (flipped) kernel, so candle's single-dilation conv2d takes it. With
    dilation 1 and a stride above 1: one stride-1 ``conv2d`` per output residue (s_h * s_w of
    them), interleaved by two ``stack``s and reshapes, as :func:`conv_transpose1d`.
    """
    return _tc_transposed(2, F.conv_transpose2d, input, weight, bias, stride, padding, output_padding, groups, dilation)


class ConvTranspose1d(nn.ConvTranspose1d):
    """``torch.nn.ConvTranspose1d`` whose forward is :func:`conv_transpose1d` (same state_dict)."""

    def forward(self, input: torch.Tensor, output_size: Optional[List[int]] = None) -> torch.Tensor:
        if self.padding_mode != "zeros":
            raise ValueError("Only `zeros` padding mode is supported for ConvTranspose1d")
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size, 1, self.dilation
        )
        return conv_transpose1d(
            input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation
        )


class ConvTranspose2d(nn.ConvTranspose2d):
    """``torch.nn.ConvTranspose2d`` whose forward is :func:`conv_transpose2d` (same state_dict)."""

    def forward(self, input: torch.Tensor, output_size: Optional[List[int]] = None) -> torch.Tensor:
        if self.padding_mode != "zeros":
            raise ValueError("Only `zeros` padding mode is supported for ConvTranspose2d")
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size, 2, self.dilation
        )
        return conv_transpose2d(
            input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation
        )
