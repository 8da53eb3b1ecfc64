"""Speed and memory of candle_port.runtime.upsample_bilinear2d against native F.interpolate.

Run: ``python bench/runtime_speed.py`` (add ``--variants`` to also time every per-axis
composition, which is how the default choice in ``bilinear.py`` was made; ``--modes`` adds rows
for nearest, nearest-exact, bicubic, trilinear and area through ``interpolate``).

Time: native and ours alternate for --rounds rounds, each the mean of enough calls to last
0.1 s; the table shows the best wall time of each, the median of the per-round wall-time ratios
(back-to-back runs share the machine's load, so their ratio is steadier than either time) and the
median ratio of process CPU time ("cpu r": the work done, least sensitive to other processes), 2 threads, float32.
Memory: peak of the bytes held by torch's CPU allocator during one forward+backward, above what
was held before it started (input included in neither; output, saved tensors, temporaries and
gradients included), read from the torch profiler's memory events. Both sides measured the same
way in the same process.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from candle_port.runtime import interpolate, upsample_bilinear2d  # noqa: E402

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
    "dense/gather": ("matmul", "gather"),
    "index/gather": ("index", "gather"),
}


# --modes: the other interpolate modes, (mode, shape, scale), through candle_port.runtime.interpolate
MODE_CASES = [
    ("nearest", (8, 64, 64, 64), 2),
    ("nearest", (8, 64, 64, 64), 1.5),
    ("nearest-exact", (8, 64, 64, 64), 1.5),
    ("bicubic", (8, 64, 64, 64), 2),
    ("trilinear", (2, 32, 16, 32, 32), 2),
    ("area", (8, 64, 64, 64), 0.5),
]


def _calibrate(fn, min_time: float) -> int:
    fn()
    t0 = time.perf_counter()
    fn()
    return max(1, int(min_time / max(time.perf_counter() - t0, 1e-6)))


def _run(fn, n: int):
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n, (time.process_time() - c0) / n


def _paired(native, ours, rounds: int, min_time: float = 0.1):
    """Alternate native and ours; return (best native s, best ours s, median per-round ratio of
    wall time, median per-round ratio of process CPU time).

    The machine may be shared: the best time approximates an unloaded run, and the ratio of two
    runs made back to back is steadier than either time."""
    n_a, n_b = _calibrate(native, min_time), _calibrate(ours, min_time)
    ta, tb, ratios, cpu_ratios = [], [], [], []
    for _ in range(rounds):
        (a, ca), (b, cb) = _run(native, n_a), _run(ours, n_b)
        ta.append(a)
        tb.append(b)
        ratios.append(b / a)
        cpu_ratios.append(cb / max(ca, 1e-9))
    return min(ta), min(tb), statistics.median(ratios), statistics.median(cpu_ratios)


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


def _ops(shape, scale, methods, mode="bilinear"):
    x = torch.rand(shape, requires_grad=True)

    def native(t):
        return F.interpolate(t, scale_factor=scale, mode=mode)

    if mode == "bilinear":

        def ours(t):
            return upsample_bilinear2d(t, scale_factor=scale, _methods=methods)

    else:

        def ours(t):
            return interpolate(t, scale_factor=scale, mode=mode)

    def native_f():
        with torch.no_grad():
            native(x)

    def native_fb():
        native(x).sum().backward()
        x.grad = None

    def ours_f():
        with torch.no_grad():
            ours(x)

    def ours_fb():
        ours(x).sum().backward()
        x.grad = None

    return native_f, native_fb, ours_f, ours_fb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", action="store_true", help="time every per-axis composition")
    ap.add_argument("--modes", action="store_true", help="also time the other interpolate modes")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--rounds", type=int, default=9, help="alternating native/ours rounds")
    args = ap.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    names = list(VARIANTS) if args.variants else ["auto"]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32")
    head = (
        f"| {'shape':<18} | {'x':>2} | {'variant':<10} | {'native fwd ms':>13} | {'ours fwd ms':>11} "
        f"| {'ratio':>5} | {'cpu r':>5} | {'native f+b ms':>13} | {'ours f+b ms':>11} | {'ratio':>5} | {'cpu r':>5} "
        f"| {'native MiB':>10} | {'ours MiB':>8} | {'ratio':>5} |"
    )
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    rows = [(shape, scale, name, "bilinear") for shape, scale in CASES for name in names]
    if args.modes:
        rows += [(shape, scale, mode, mode) for mode, shape, scale in MODE_CASES]
    for shape, scale, name, mode in rows:
        nf, nfb, of, ofb = _ops(shape, scale, VARIANTS.get(name), mode)
        tnf, tof, rf, cf = _paired(nf, of, args.rounds)
        tnfb, tofb, rfb, cfb = _paired(nfb, ofb, args.rounds)
        if args.no_memory:
            mn = mo = float("nan")
        else:
            mn, mo = _peak_bytes(nfb) / 2**20, _peak_bytes(ofb) / 2**20
        print(
            f"| {str(shape):<18} | {scale:>2} | {name:<10} | {tnf * 1e3:>13.2f} | {tof * 1e3:>11.2f} "
            f"| {rf:>5.2f} | {cf:>5.2f} | {tnfb * 1e3:>13.2f} | {tofb * 1e3:>11.2f} | {rfb:>5.2f} | {cfb:>5.2f} "
            f"| {mn:>10.1f} | {mo:>8.1f} | {mo / mn:>5.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
