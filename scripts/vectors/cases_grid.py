"""Cases of the grid family: ``F.grid_sample`` (2-D input, the grid as a differentiated operand) and
``F.affine_grid`` (theta as the input).

Every mode (bilinear, nearest, bicubic) with every padding mode (zeros, border, reflection) and
both align_corners; grid points inside, outside (past several reflections) and a few exactly on
the borders; batch > 1. Shapes stay small so the committed vectors stay well under 400 KB.
"""

from __future__ import annotations

import torch


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _grid(n: int, h: int, w: int, seed: int, spread: float = 1.4) -> torch.Tensor:
    """Points in [-spread, spread], with the corners exactly at -1 / 1."""
    gen = torch.Generator().manual_seed(seed)
    g = (torch.rand((n, h, w, 2), generator=gen, dtype=torch.float64) * 2 - 1) * spread
    g[:, 0, 0] = -1.0
    g[:, -1, -1] = 1.0
    return g


def _nonfinite(x: torch.Tensor) -> torch.Tensor:
    """``x`` with one NaN and one inf pixel."""
    y = x.clone().reshape(-1)
    y[0], y[7] = float("nan"), float("inf")
    return y.reshape(x.shape)


def _sample(name, x, grid, **params):
    return {"name": name, "op": "grid_sample", "input": x, "operands": {"grid": grid}, "params": params}


def _grid_sample():
    out = []
    seed = 0
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for align in (False, True):
                seed += 1
                out.append(_sample(f"gs_{mode}_{padding}_{'ac' if align else 'noac'}", _x(2, 2, 4, 5, seed=seed),
                                   _grid(2, 3, 4, seed=100 + seed), mode=mode, padding_mode=padding,
                                   align_corners=align))
    out += [
        _sample("gs_bilinear_reflection_far", _x(1, 3, 3, 4, seed=50), _grid(1, 4, 4, seed=150, spread=3.5),
                mode="bilinear", padding_mode="reflection", align_corners=False),
        _sample("gs_bicubic_reflection_far_ac", _x(1, 2, 4, 3, seed=51), _grid(1, 3, 5, seed=151, spread=3.5),
                mode="bicubic", padding_mode="reflection", align_corners=True),
        _sample("gs_bilinear_width1", _x(1, 2, 3, 1, seed=52), _grid(1, 2, 3, seed=152),
                mode="bilinear", padding_mode="border", align_corners=True),
        _sample("gs_upsample", _x(1, 1, 3, 3, seed=53), _grid(1, 6, 7, seed=153, spread=1.0),
                mode="bilinear", padding_mode="zeros", align_corners=False),
    ]
    for mode in ("bilinear", "nearest", "bicubic"):
        out.append(_sample(f"gs_{mode}_nonfinite", _nonfinite(_x(1, 1, 4, 5, seed=54)), _grid(1, 3, 3, seed=154),
                           mode=mode, padding_mode="zeros", align_corners=False))
    return out


def _affine():
    theta = _x(2, 2, 3, seed=60)
    return [
        {"name": "affine_ac", "op": "affine_grid", "input": theta, "params": {"size": [2, 3, 4, 5], "align_corners": True}},
        {"name": "affine_noac", "op": "affine_grid", "input": theta, "params": {"size": [2, 3, 5, 4], "align_corners": False}},
        {"name": "affine_h1", "op": "affine_grid", "input": _x(1, 2, 3, seed=61),
         "params": {"size": [1, 1, 1, 6], "align_corners": False}},
    ]


def cases():
    return _grid_sample() + _affine()
