"""Forward + backward time of the grid_sample, transposed / 3-D convolution and 3-D pooling
runtime ops against torch's native ops (indicative table in docs/runtime-ops.md).

    PYTHONPATH=src python bench/newops_speed.py [--reps 7]

float32, 2 threads; per op the minimum over the repetitions of the process CPU time of one
``op(...).sum().backward()`` (the work done: the least sensitive figure on a shared machine),
torch's and ours, and their ratio.
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch
import torch.nn.functional as F

from candle_port import runtime as R

ROWS = [
    ("conv1d (8,64,4096) k7 p3 (audio encoder)", lambda x, w: R.conv1d(x, w, None, 1, 3),
     lambda x, w: F.conv1d(x, w, None, 1, 3), [(8, 64, 4096), (64, 64, 7)]),
    ("conv1d (8,64,4096) k8 s4 (downsampling)", lambda x, w: R.conv1d(x, w, None, 4),
     lambda x, w: F.conv1d(x, w, None, 4), [(8, 64, 4096), (128, 64, 8)]),
    ("conv_transpose1d (8,64,256) k4 s2 p1", lambda x, w: R.conv_transpose1d(x, w, None, 2, 1),
     lambda x, w: F.conv_transpose1d(x, w, None, 2, 1), [(8, 64, 256), (64, 32, 4)]),
    ("conv_transpose2d (4,64,32,32) k4 s2 p1", lambda x, w: R.conv_transpose2d(x, w, None, 2, 1),
     lambda x, w: F.conv_transpose2d(x, w, None, 2, 1), [(4, 64, 32, 32), (64, 32, 4, 4)]),
    ("conv_transpose2d (4,64,32,32) k4 s2 p1 groups 64", lambda x, w: R.conv_transpose2d(x, w, None, 2, 1, 0, 64),
     lambda x, w: F.conv_transpose2d(x, w, None, 2, 1, 0, 64), [(4, 64, 32, 32), (64, 1, 4, 4)]),
    ("conv_transpose2d (4,64,32,32) k2 s2 (matmul path)", lambda x, w: R.conv_transpose2d(x, w, None, 2),
     lambda x, w: F.conv_transpose2d(x, w, None, 2), [(4, 64, 32, 32), (64, 32, 2, 2)]),
    ("grid_sample bilinear (4,32,64,64), 64x64 grid", lambda x, g: R.grid_sample(x, g, align_corners=False),
     lambda x, g: F.grid_sample(x, g, align_corners=False), [(4, 32, 64, 64), ("grid", 4, 64, 64, 2)]),
    ("grid_sample bicubic (4,32,64,64), 64x64 grid", lambda x, g: R.grid_sample(x, g, "bicubic", align_corners=False),
     lambda x, g: F.grid_sample(x, g, "bicubic", align_corners=False), [(4, 32, 64, 64), ("grid", 4, 64, 64, 2)]),
    ("conv3d (2,32,16,32,32) k3 p1", lambda x, w: R.conv3d(x, w, None, 1, 1),
     lambda x, w: F.conv3d(x, w, None, 1, 1), [(2, 32, 16, 32, 32), (32, 32, 3, 3, 3)]),
    ("conv_transpose3d (2,32,8,16,16) k2 s2 (matmul path)", lambda x, w: R.conv_transpose3d(x, w, None, 2),
     lambda x, w: F.conv_transpose3d(x, w, None, 2), [(2, 32, 8, 16, 16), (32, 16, 2, 2, 2)]),
    ("conv_transpose3d (2,32,8,16,16) k3 s2 p1 op1", lambda x, w: R.conv_transpose3d(x, w, None, 2, 1, 1),
     lambda x, w: F.conv_transpose3d(x, w, None, 2, 1, 1), [(2, 32, 8, 16, 16), (32, 16, 3, 3, 3)]),
    ("max_pool3d (2,32,16,32,32) k3 s2 p1", lambda x: R.max_pool3d(x, 3, 2, 1),
     lambda x: F.max_pool3d(x, 3, 2, 1), [(2, 32, 16, 32, 32)]),
    ("avg_pool3d (2,32,16,32,32) k2", lambda x: R.avg_pool3d(x, 2), lambda x: F.avg_pool3d(x, 2), [(2, 32, 16, 32, 32)]),
    ("adaptive_avg_pool3d (2,32,16,32,32) -> 1", lambda x: R.adaptive_avg_pool3d(x, 1),
     lambda x: F.adaptive_avg_pool3d(x, 1), [(2, 32, 16, 32, 32)]),
    ("adaptive_max_pool3d (2,32,16,32,32) -> (4,4,4)", lambda x: R.adaptive_max_pool3d(x, 4),
     lambda x: F.adaptive_max_pool3d(x, 4), [(2, 32, 16, 32, 32)]),
]


def _time(fn, tensors, reps: int) -> float:
    fn(*tensors).sum().backward()
    best = float("inf")
    for _ in range(reps):
        start = time.process_time()
        fn(*tensors).sum().backward()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(0)
    print("| op, shape (fwd + bwd, f32, 2 threads) | torch ms | runtime ms | ratio |")
    print("|---|---|---|---|")
    for name, ours, theirs, shapes in ROWS:
        tensors = [
            (torch.rand(s[1:], generator=gen) * 2 - 1 if s[0] == "grid" else torch.randn(s, generator=gen)).requires_grad_()
            for s in shapes
        ]
        t_ref, t_ours = _time(theirs, tensors, args.reps), _time(ours, tensors, args.reps)
        print(f"| {name} | {t_ref * 1e3:.1f} | {t_ours * 1e3:.1f} | {t_ours / t_ref:.2f} |")


if __name__ == "__main__":
    main()
