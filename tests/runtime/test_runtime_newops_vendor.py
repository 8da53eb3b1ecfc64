"""`port-fix --vendor` carries the grid_sample, transposed / 3-D convolution and 3-D pooling ops:
the single-file runtime exports them and they compute what the package computes."""

from __future__ import annotations

import re

import torch

from candle_port import runtime
from candle_port.rewriters.vendor import build_vendored_source

NEW = [
    "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "MaxPool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices",
    "affine_grid", "avg_pool3d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "grid_sample",
    "max_pool3d", "max_pool3d_with_indices",
]


def test_vendored_runtime_has_the_new_ops(tmp_path):
    source = build_vendored_source()
    assert not re.search(r"^\s*(import|from)\s+candle_port", source, re.M)
    ns: dict = {"__name__": "candle_port_runtime"}
    exec(compile(source, str(tmp_path / "candle_port_runtime.py"), "exec"), ns)
    assert set(NEW) <= set(ns["__all__"]) and set(NEW) <= set(runtime.__all__)
    gen = torch.Generator().manual_seed(0)
    x5 = torch.randn(1, 4, 4, 5, 6, generator=gen)
    x4 = x5[:, :, 0]
    grid = torch.rand(1, 3, 3, 2, generator=gen) * 2 - 1
    calls = [
        ("grid_sample", (x4, grid, "bicubic", "reflection", False)),
        ("affine_grid", (torch.randn(2, 2, 3, generator=gen), [2, 1, 3, 4], False)),
        ("conv_transpose1d", (x4[:, :, 0], torch.randn(4, 1, 3, generator=gen), None, 2, 1, 1, 2)),
        ("conv_transpose2d", (x4, torch.randn(4, 1, 3, 3, generator=gen), None, 2, 1, 1, 2)),
        ("conv3d", (x5, torch.randn(2, 2, 3, 3, 3, generator=gen), None, 1, 1, 1, 2)),
        ("conv_transpose3d", (x5, torch.randn(4, 1, 2, 2, 2, generator=gen), None, 2)),
        ("max_pool3d", (x5, 3, 2, 1)),
        ("avg_pool3d", (x5, 3, 2, 1)),
        ("adaptive_avg_pool3d", (x5, (2, 3, 4))),
        ("adaptive_max_pool3d", (x5, 2)),
    ]
    for name, args in calls:
        torch.testing.assert_close(ns[name](*args), getattr(runtime, name)(*args), rtol=0, atol=0, msg=name)
    assert issubclass(ns["Conv3d"], torch.nn.Conv3d) and issubclass(ns["MaxPool3d"], torch.nn.MaxPool3d)
