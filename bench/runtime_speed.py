"""Speed and memory of candle_port.runtime.upsample_bilinear2d against native F.interpolate.

Run: ``python bench/runtime_speed.py`` (add ``--variants`` to also time every per-axis
composition, which is how the default choice in ``bilinear.py`` was made).

Time: best of 5 repeats of the mean of several calls (the minimum resists load from other
processes better than the median), 2 threads, float32.
Memory: peak of the bytes held by torch's CPU allocator during one forward+backward, above what
was held before it started (input included in neither; output, saved tensors, temporaries and
gradients included), read from the torch profiler's memory events. Both sides measured the same
way in the same process.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from candle_port.runtime import upsample_bilinear2d  # noqa: E402

CASES = [
    ((8, 64, 64, 64), 2),
    ((2, 256, 32, 32), 4),
    ((1, 3, 512, 512), 2),
    ((16, 32, 128, 128), 2),
]
VARIANTS = {
    "auto": None,
    "dense": ("matmul", "matmul"),
    "band/gather": ("band", "gather"),
    "index/gather": ("index", "gather"),
}


def _time(fn, min_time: float = 0.15, repeats: int = 5) -> float:
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-6)
    n = max(1, int(min_time / one))
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - t0) / n)
    return min(runs)


def _peak_bytes(fn) -> int:
    fn()  # warm caches
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [
        e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"
    ]
    events.sort(key=lambda e: e.start_ns())
    cur = peak = 0
    for e in events:
        cur += e.nbytes()
        peak = max(peak, cur)
    return peak


def _ops(shape, scale, methods):
    x = torch.rand(shape, requires_grad=True)

    def native_f():
        with torch.no_grad():
            F.interpolate(x, scale_factor=scale, mode="bilinear", align_corners=False)

    def native_fb():
        y = F.interpolate(x, scale_factor=scale, mode="bilinear", align_corners=False)
        y.sum().backward()
        x.grad = None

    def ours_f():
        with torch.no_grad():
            upsample_bilinear2d(x, scale_factor=scale, _methods=methods)

    def ours_fb():
        y = upsample_bilinear2d(x, scale_factor=scale, _methods=methods)
        y.sum().backward()
        x.grad = None

    return native_f, native_fb, ours_f, ours_fb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", action="store_true", help="time every per-axis composition")
    ap.add_argument("--no-memory", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    names = list(VARIANTS) if args.variants else ["auto"]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32")
    head = (
        f"| {'shape':<18} | {'x':>2} | {'variant':<10} | {'native fwd ms':>13} | {'ours fwd ms':>11} "
        f"| {'ratio':>5} | {'native f+b ms':>13} | {'ours f+b ms':>11} | {'ratio':>5} "
        f"| {'native MiB':>10} | {'ours MiB':>8} | {'ratio':>5} |"
    )
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    for shape, scale in CASES:
        for name in names:
            nf, nfb, of, ofb = _ops(shape, scale, VARIANTS[name])
            tnf, tof = _time(nf), _time(of)
            tnfb, tofb = _time(nfb), _time(ofb)
            if args.no_memory:
                mn = mo = float("nan")
            else:
                mn, mo = _peak_bytes(nfb) / 2**20, _peak_bytes(ofb) / 2**20
            print(
                f"| {str(shape):<18} | {scale:>2} | {name:<10} | {tnf * 1e3:>13.2f} | {tof * 1e3:>11.2f} "
                f"| {tof / tnf:>5.2f} | {tnfb * 1e3:>13.2f} | {tofb * 1e3:>11.2f} | {tofb / tnfb:>5.2f} "
                f"| {mn:>10.1f} | {mo:>8.1f} | {mo / mn:>5.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
