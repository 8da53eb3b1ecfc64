"""1-D convolution as a 2-D convolution of height 1, which candle trains right.

candle 0.11.0's CPU ``conv1d`` copies a non-contiguous kernel into a contiguous buffer, then
multiplies by the original storage anyway (candle-core/src/cpu_backend/mod.rs, ``fn conv1d``, the
im2col branch; candle PR #3836 is open). Its backward computes the weight gradient as a
``conv1d`` whose kernel is the transposed output gradient, which is non-contiguous whenever the
batch is above 1 and a group has more than one output channel: the weight gradient comes out
wrong, silently (measured in real candle: crates/candle-port-run/src/measure.rs, probes
"conv1d, batch 2, ..."). Its ``conv2d`` uses the copy, so the same convolution run as ``conv2d``
on (N, C, 1, L) with a (C_out, C_in/g, 1, k) kernel trains right.

Uneven or string padding is applied with ``F.pad`` and the trailing inputs no window reads are cut
(candle's conv2d backward needs equal H/W residuals; H's is 0), so the ``conv2d`` has one
stride, one dilation and no padding. Imports nothing but torch.
"""

from __future__ import annotations

from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from ._dispatch import use_native
from .transposed_conv import _IntArg

__all__ = ["Conv1d", "conv1d"]


def _c1_int(value) -> Optional[int]:
    """One int from ``value`` (an int or a 1-sequence), or None."""
    if isinstance(value, (tuple, list)):
        value = value[0] if len(value) == 1 else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _c1_pads(padding, kernel: int, stride: int, dilation: int) -> Optional[Tuple[int, int]]:
    """(left, right) zeros for ``padding`` (an int, a 1-sequence, "valid" or "same"), or None."""
    if padding == "valid":
        return 0, 0
    if padding == "same":
        if stride != 1:
            return None  # torch raises
        total = dilation * (kernel - 1)
        return total // 2, total - total // 2
    p = _c1_int(padding)
    return None if p is None or p < 0 else (p, p)


def conv1d(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    stride: _IntArg = 1,
    padding: Union[_IntArg, str] = 0,
    dilation: _IntArg = 1,
    groups: int = 1,
) -> torch.Tensor:
    r"""``F.conv1d`` (same signature, values and gradients) for candle.

    Input (N, C_in, L) or (C_in, L), weight (C_out, C_in/groups, k). Runs as ``conv2d`` of the
    input with a height-1 axis inserted (``unsqueeze(-2)``), zero-padded along L (by the conv's
    own ``(0, p)`` padding, or by ``F.pad`` where it is uneven or the inputs no window reads are
    cut), with the weight unsqueezed the same way (stride ``s``, dilation ``d``), squeezed after.
    The same in candle::

        let r = (l + 2 * p - d * (k - 1) - 1) % s;               // inputs no window reads
        let x = x.pad_with_zeros(2, p, p)?.narrow(2, 0, l + 2 * p - r)?.unsqueeze(2)?;
        let y = x.conv2d(&w.unsqueeze(2)?, 0, s, d, g)?.squeeze(2)?;   // never candle's conv1d
        // + bias.reshape((1, c_out, 1)) broadcast-added

    Invalid arguments go to torch's ``F.conv1d``, which raises its own error.

    >>> x, w = torch.randn(2, 4, 9), torch.randn(6, 2, 3)
    >>> torch.allclose(conv1d(x, w, None, 2, 1, 1, 2), F.conv1d(x, w, None, 2, 1, 1, 2))
    True
    """
    if use_native(input):  # plain eager mode: torch's kernel (``_dispatch``)
        return F.conv1d(input, weight, bias, stride, padding, dilation, groups)
    s, d = _c1_int(stride), _c1_int(dilation)
    ok = (
        isinstance(input, torch.Tensor)
        and isinstance(weight, torch.Tensor)
        and input.dim() in (2, 3)
        and weight.dim() == 3
        and input.is_floating_point()
        and input.numel() > 0
        and s is not None
        and d is not None
        and s > 0
        and d > 0
        and isinstance(groups, int)
    )
    pads = _c1_pads(padding, weight.shape[-1], s, d) if ok else None
    if pads is None:
        return F.conv1d(input, weight, bias, stride, padding, dilation, groups)  # torch raises or computes
    try:
        y = _c1_as_conv2d(input, weight, bias, s, pads, d, groups)
    except (RuntimeError, ValueError):  # shapes torch rejects: its own conv1d raises its own error
        return F.conv1d(input, weight, bias, stride, padding, dilation, groups)
    return y


def _c1_as_conv2d(input, weight, bias, s: int, pads: Tuple[int, int], d: int, groups: int) -> torch.Tensor:
    """The height-1 conv2d: even padding as conv2d's own (0, p) when no input is left unread,
    else ``F.pad`` (a negative right pad cuts the unread inputs)."""
    batched = input.dim() == 3
    x = (input if batched else input.unsqueeze(0)).unsqueeze(-2)
    left, right = pads
    unread = (x.shape[-1] + left + right - d * (weight.shape[-1] - 1) - 1) % s
    right -= unread
    if left == right:
        y = F.conv2d(x, weight.unsqueeze(-2), bias, s, (0, left), d, groups)
    else:
        y = F.conv2d(F.pad(x, (left, right)), weight.unsqueeze(-2), bias, s, 0, d, groups)
    y = y.squeeze(-2).contiguous()
    return y if batched else y.squeeze(0)


class Conv1d(nn.Conv1d):
    """``torch.nn.Conv1d`` whose convolution is :func:`conv1d` (same state_dict and padding modes;
    weight-norm parametrizations apply as in torch)."""

    def _conv_forward(self, input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv1d(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv1d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)
