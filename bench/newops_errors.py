"""Worst forward / backward differences of the grid_sample, transposed / 3-D convolution and 3-D
pooling runtime ops against torch's native ops, float32 and float64 (the table in docs/runtime-ops.md).

    PYTHONPATH=src python bench/newops_errors.py [--seeds 5]

For every op, over its configurations (the test cases) and the seeds: the largest absolute
difference of the output, and of every gradient (input, weight, bias, grid / theta) for a random
output gradient, each divided by max(1, the largest magnitude of torch's tensor) — i.e. absolute
for values up to 1, relative beyond. Inputs are standard normal.
"""

from __future__ import annotations

import argparse
import itertools
import warnings

import torch
import torch.nn.functional as F

from candle_port import runtime


def _cases():
    """(op name, input shapes, our fn, torch fn) for each configuration."""
    out = []
    for g, s, p, op, d in [(1, 1, 0, 0, 1), (2, 2, 1, 1, 1), (3, (2, 3), (1, 0), (1, 2), (1, 2)), (1, 3, 2, 0, 2), (6, 2, 1, 1, 1),
                           (2, (3, 2), 0, 0, 1)]:
        args = (s, p, op, g, d)
        out.append(("conv_transpose2d", [(2, 6, 5, 4), (6, 2, 3, 2), (2 * g,)],
                    lambda x, w, b, a=args: runtime.conv_transpose2d(x, w, b, *a), lambda x, w, b, a=args: F.conv_transpose2d(x, w, b, *a)))
    for g, s, p, op, d in [(1, 1, 0, 0, 1), (2, 2, 1, 1, 1), (3, 3, 2, 2, 2), (1, 4, 5, 0, 1), (2, 3, 0, 0, 1)]:
        args = (s, p, op, g, d)
        out.append(("conv_transpose1d", [(2, 6, 7), (6, 2, 3), (2 * g,)],
                    lambda x, w, b, a=args: runtime.conv_transpose1d(x, w, b, *a), lambda x, w, b, a=args: F.conv_transpose1d(x, w, b, *a)))
    for mode, pad, ac in itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [False, True]):
        args = (mode, pad, ac)
        out.append((f"grid_sample {mode}", [(2, 3, 5, 7), ("grid", 2, 4, 6)],
                    lambda x, g, a=args: runtime.grid_sample(x, g, *a), lambda x, g, a=args: F.grid_sample(x, g, *a)))
    for ac in (False, True):
        out.append(("affine_grid", [(3, 2, 3)], lambda t, a=ac: runtime.affine_grid(t, [3, 2, 5, 7], a),
                    lambda t, a=ac: F.affine_grid(t, [3, 2, 5, 7], a)))
    for g, s, p, d in [(1, 1, 0, 1), (2, 2, 1, 1), (3, (2, 1, 3), (1, 0, 2), (1, 2, 1)), (1, 1, "same", (2, 1, 1)), (6, 2, (2, 1, 1), 2)]:
        args = (s, p, d, g)
        out.append(("conv3d", [(1, 6, 6, 5, 7), (6, 6 // g, 3, 2, 3), (6,)],
                    lambda x, w, b, a=args: runtime.conv3d(x, w, b, *a), lambda x, w, b, a=args: F.conv3d(x, w, b, *a)))
    for g, s, p, op, d in [(1, 1, 0, 0, 1), (2, 2, 1, 1, 1), (3, (2, 1, 3), (1, 0, 2), (1, 0, 2), (1, 2, 1)),
                           (2, (3, 2, 3), 0, 0, 1)]:
        args = (s, p, op, g, d)
        out.append(("conv_transpose3d", [(2, 6, 4, 3, 5), (6, 2, 3, 2, 3), (2 * g,)],
                    lambda x, w, b, a=args: runtime.conv_transpose3d(x, w, b, *a), lambda x, w, b, a=args: F.conv_transpose3d(x, w, b, *a)))
    x5 = [(2, 3, 7, 6, 9)]
    for a in [(3, 2, 1, 1, False), (2, None, 0, 1, True), ((3, 2, 2), (1, 2, 3), (1, 1, 0), (2, 1, 1), True)]:
        out.append(("max_pool3d", x5, lambda x, a=a: runtime.max_pool3d(x, *a), lambda x, a=a: F.max_pool3d(x, *a)))
    for a in [(3, 2, 1, False, True, None), (3, 2, 1, True, False, None), ((2, 3, 2), (2, 1, 3), (1, 1, 0), True, True, None)]:
        out.append(("avg_pool3d", x5, lambda x, a=a: runtime.avg_pool3d(x, *a), lambda x, a=a: F.avg_pool3d(x, *a)))
    for s in [(2, 3, 4), 1, (None, 4, 5), (4, 4, 4)]:
        out.append(("adaptive_avg_pool3d", x5, lambda x, s=s: runtime.adaptive_avg_pool3d(x, s), lambda x, s=s: F.adaptive_avg_pool3d(x, s)))
        out.append(("adaptive_max_pool3d", x5, lambda x, s=s: runtime.adaptive_max_pool3d(x, s), lambda x, s=s: F.adaptive_max_pool3d(x, s)))
    return out


def _make(shapes, dtype, gen):
    ts = []
    for s in shapes:
        if s[0] == "grid":
            t = torch.rand(s[1:] + (2,), dtype=dtype, generator=gen) * 3 - 1.5
        else:
            t = torch.randn(s, dtype=dtype, generator=gen)
        ts.append(t.requires_grad_())
    return ts


def _err(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).abs().max() / b.abs().max().clamp_min(1)).item() if b.numel() else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    worst: dict = {}
    for name, shapes, ours, theirs in _cases():
        for dtype in (torch.float32, torch.float64):
            for seed in range(args.seeds):
                gen = torch.Generator().manual_seed(seed)
                ts = _make(shapes, dtype, gen)
                ref, out = theirs(*ts), ours(*ts)
                go = torch.randn(ref.shape, dtype=dtype, generator=gen)
                gr = torch.autograd.grad(ref, ts, go, allow_unused=True)
                go2 = torch.autograd.grad(out, ts, go, allow_unused=True)
                bwd = max(_err(torch.zeros_like(t) if b is None else b, torch.zeros_like(t) if a is None else a)
                          for a, b, t in zip(gr, go2, ts))
                key = (name, dtype)
                f0, b0 = worst.get(key, (0.0, 0.0))
                worst[key] = (max(f0, _err(out, ref)), max(b0, bwd))
    names = list(dict.fromkeys(k[0] for k in worst))
    print("| op | fwd f32 | bwd f32 | fwd f64 | bwd f64 |")
    print("|---|---|---|---|---|")
    for name in names:
        f32, f64 = worst[(name, torch.float32)], worst[(name, torch.float64)]
        print(f"| {name} | {f32[0]:.1e} | {f32[1]:.1e} | {f64[0]:.1e} | {f64[1]:.1e} |")


if __name__ == "__main__":
    main()
