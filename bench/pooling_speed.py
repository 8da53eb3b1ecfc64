"""Forward + backward time of candle_port.runtime's pools vs torch's native ones (same run).

    python bench/pooling_speed.py [--threads 2] [--repeat 5]

Prints one line per case, float32 on CPU: wall time of ours and torch's, their ratio (ours /
torch), and the ratio of process CPU time (all threads), which a loaded machine disturbs less.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from candle_port.runtime import pooling as P

CASES = [
    ("MaxPool2d(3,2,1) (8,64,112,112)", (8, 64, 112, 112), P.max_pool2d, F.max_pool2d, (3, 2, 1)),
    ("MaxPool2d(2) (8,64,64,64)", (8, 64, 64, 64), P.max_pool2d, F.max_pool2d, (2,)),
    ("AvgPool2d(3,1,1) (8,64,56,56)", (8, 64, 56, 56), P.avg_pool2d, F.avg_pool2d, (3, 1, 1)),
    ("AdaptiveAvgPool2d(7) (8,512,14,14)", (8, 512, 14, 14), P.adaptive_avg_pool2d, F.adaptive_avg_pool2d, (7,)),
    ("AdaptiveMaxPool2d(7) (8,512,14,14)", (8, 512, 14, 14), P.adaptive_max_pool2d, F.adaptive_max_pool2d, (7,)),
]


def _time(fn, x: torch.Tensor, args, repeat: int) -> tuple[float, float]:
    """Best wall time and best process CPU time of forward + backward."""
    best, best_cpu = float("inf"), float("inf")
    for _ in range(repeat + 1):
        xr = x.detach().requires_grad_()
        start, start_cpu = time.perf_counter(), time.process_time()
        y = fn(xr, *args)
        y.backward(torch.ones_like(y))
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    return best, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--channels-last", action="store_true")
    ns = parser.parse_args()
    torch.set_num_threads(ns.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {ns.threads} threads, float32, forward+backward, best of {ns.repeat}")
    for name, shape, ours, ref, args in CASES:
        x = torch.rand(shape) * 2 - 1
        if ns.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        (t_ours, c_ours), (t_ref, c_ref) = _time(ours, x, args, ns.repeat), _time(ref, x, args, ns.repeat)
        print(
            f"{name:36s} ours {t_ours * 1e3:7.2f} ms  torch {t_ref * 1e3:7.2f} ms  "
            f"ratio {t_ours / t_ref:5.2f}  cpu-time ratio {c_ours / c_ref:5.2f}"
        )


if __name__ == "__main__":
    main()
