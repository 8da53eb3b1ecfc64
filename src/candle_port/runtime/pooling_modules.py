"""``nn.MaxPool2d`` and the other pooling modules, with forwards from :mod:`.pooling`.

Each class subclasses its torch counterpart and only replaces ``forward``, so constructor,
attributes, ``repr``/``extra_repr``, (empty) ``state_dict`` and ``isinstance`` checks are torch's
own; the forward composes only ops candle can differentiate. Under ``torch.jit.script`` the
forward is torch's own (TorchScript compiles only the ``torch.jit.is_scripting()`` branch; a
scripted model runs in torch, never in candle).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "MaxPool1d",
    "MaxPool2d",
]


class MaxPool1d(nn.MaxPool1d):
    """``torch.nn.MaxPool1d`` whose forward is :func:`max_pool1d` (candle-trainable)."""

    def forward(self, input: torch.Tensor):
        if torch.jit.is_scripting():  # torch's own forward (see the module docstring)
            return F.max_pool1d(
                input, self.kernel_size, self.stride, self.padding, self.dilation,
                ceil_mode=self.ceil_mode, return_indices=self.return_indices,
            )
        return max_pool1d(
            input, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices,
        )


class MaxPool2d(nn.MaxPool2d):
    """``torch.nn.MaxPool2d`` whose forward is :func:`max_pool2d` (candle-trainable)."""

    def forward(self, input: torch.Tensor):
        if torch.jit.is_scripting():  # torch's own forward (see the module docstring)
            return F.max_pool2d(
                input, self.kernel_size, self.stride, self.padding, self.dilation,
                ceil_mode=self.ceil_mode, return_indices=self.return_indices,
            )
        return max_pool2d(
            input, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices,
        )


class AvgPool1d(nn.AvgPool1d):
    """``torch.nn.AvgPool1d`` whose forward is :func:`avg_pool1d` (candle-trainable)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if torch.jit.is_scripting():  # torch's own forward (see the module docstring)
            return F.avg_pool1d(
                input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad
            )
        return avg_pool1d(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad
        )


class AvgPool2d(nn.AvgPool2d):
    """``torch.nn.AvgPool2d`` whose forward is :func:`avg_pool2d` (candle-trainable)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if torch.jit.is_scripting():  # torch's own forward (see the module docstring)
            return F.avg_pool2d(
                input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                self.count_include_pad, self.divisor_override,
            )
        return avg_pool2d(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )


class AdaptiveAvgPool1d(nn.AdaptiveAvgPool1d):
    """``torch.nn.AdaptiveAvgPool1d`` whose forward is :func:`adaptive_avg_pool1d`."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if torch.jit.is_scripting():  # torch's own forward (see the module docstring)
            return F.adaptive_avg_pool1d(input, self.output_size)
        return adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(nn.AdaptiveAvgPool2d):
    """``torch.nn.AdaptiveAvgPool2d`` whose forward is :func:`adaptive_avg_pool2d`."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if torch.jit.is_scripting():  # torch's own forward (see the module docstring)
            return F.adaptive_avg_pool2d(input, self.output_size)
        return adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(nn.AdaptiveMaxPool1d):
    """``torch.nn.AdaptiveMaxPool1d`` whose forward is :func:`adaptive_max_pool1d`."""

    def forward(self, input: torch.Tensor):
        if torch.jit.is_scripting():  # torch's own forward (see the module docstring)
            return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)
        return adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(nn.AdaptiveMaxPool2d):
    """``torch.nn.AdaptiveMaxPool2d`` whose forward is :func:`adaptive_max_pool2d`."""

    def forward(self, input: torch.Tensor):
        if torch.jit.is_scripting():  # torch's own forward (see the module docstring)
            return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)
        return adaptive_max_pool2d(input, self.output_size, self.return_indices)
