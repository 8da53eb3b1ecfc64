"""The runtime's speed table: every op at shapes from real models vs torch's native op, same run.

    python bench/runtime_table.py [--rounds 7] [--threads 2] [--only SUBSTRING] [--no-memory]
                                  [--clock wall|thread|process] [--same-process]
                                  [--path composition|eager]

For each row (float32, CPU, ``torch.set_num_threads(2)``): the forward ratio (no_grad), the
forward+backward ratio (``y.backward(g)`` with a fixed ``g``) and the peak-memory ratio of one
forward+backward, ours / native. Times: native and ours alternate for ``--rounds`` rounds, each
the mean of enough calls to last ~0.1 s; the ratio shown is the median of the per-round ratios
(back-to-back runs share the machine's load, so their ratio is steadier than either time when
other processes share the cores). Memory: peak bytes held by torch's CPU allocator during one
forward+backward above what was held before (profiler memory events), input excluded.
The last line gives the median of each ratio column and the largest one.

``--path composition`` (the default) times the runtime's compositions, under
``candle_port.runtime.composition()``: what verify traces and candle runs. ``--path eager`` times
the runtime as plain eager PyTorch calls it, where each op calls torch's own kernel
(runtime/_dispatch.py), so its ratios are the dispatch's overhead.

Each row runs in a fresh process (``--same-process``: all rows in this one). A row's times depend
on what the allocator holds: glibc serves a large block from a fresh mmap or from the heap
depending on what earlier allocations left there, and a fresh page costs a fault on first touch.
In one process the rows before a row changed its figures by up to 5x (channels_last
MaxPool2d(2): forward 0.86x alone, 4.2x after the other rows), so a row alone is what is measured.

``--clock thread`` (or ``process``) times by CPU time instead of the wall clock: with ``--threads 1``
that is the work done, which other processes on the cores disturb far less. (On cores shared
with other jobs, every multi-threaded op can wait a scheduler slice for its second thread: a
1M-float add measured 0.3 ms on 1 thread and 7.8 ms on 2 under load 3, so wall-clock ratios on
2 threads then count ops more than work.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import candle_port.runtime as R  # noqa: E402

CL = torch.channels_last


def _bilinear(size=None, scale=None, ac=False):
    def native(x):
        return F.interpolate(x, size=size, scale_factor=scale, mode="bilinear", align_corners=ac)

    def ours(x):
        return R.interpolate(x, size=size, scale_factor=scale, mode="bilinear", align_corners=ac)

    return native, ours


def _nearest(scale):
    return (
        lambda x: F.interpolate(x, scale_factor=scale, mode="nearest"),
        lambda x: R.interpolate(x, scale_factor=scale, mode="nearest"),
    )


def _pool(native_fn, ours_fn, *args):
    return (lambda x: native_fn(x, *args), lambda x: ours_fn(x, *args))


# (name, input shape, memory format, (native, ours))
ROWS = [
    ("SAM mask bilinear 256->1024", (1, 3, 256, 256), None, _bilinear(size=(1024, 1024))),
    ("mask bilinear 1024->1500x2000", (1, 3, 1024, 1024), None, _bilinear(size=(1500, 2000))),
    ("DPT/Segformer bilinear x4", (2, 256, 64, 64), None, _bilinear(scale=4)),
    ("DPT/Segformer bilinear x4 cl", (2, 256, 64, 64), CL, _bilinear(scale=4)),
    ("U-Net bilinear x2 (ac=True)", (8, 64, 64, 64), None, _bilinear(scale=2, ac=True)),
    ("U-Net bilinear x2 (ac=True) cl", (8, 64, 64, 64), CL, _bilinear(scale=2, ac=True)),
    ("U-Net nearest x2", (8, 64, 64, 64), None, _nearest(2)),
    ("U-Net nearest x2 cl", (8, 64, 64, 64), CL, _nearest(2)),
    ("ResNet stem MaxPool2d(3,2,1)", (8, 64, 112, 112), None, _pool(F.max_pool2d, R.max_pool2d, 3, 2, 1)),
    ("ResNet stem MaxPool2d(3,2,1) cl", (8, 64, 112, 112), CL, _pool(F.max_pool2d, R.max_pool2d, 3, 2, 1)),
    ("U-Net MaxPool2d(2)", (8, 64, 64, 64), None, _pool(F.max_pool2d, R.max_pool2d, 2)),
    ("U-Net MaxPool2d(2) cl", (8, 64, 64, 64), CL, _pool(F.max_pool2d, R.max_pool2d, 2)),
    ("AvgPool2d(3,1,1)", (8, 64, 56, 56), None, _pool(F.avg_pool2d, R.avg_pool2d, 3, 1, 1)),
    ("AvgPool2d(3,1,1) cl", (8, 64, 56, 56), CL, _pool(F.avg_pool2d, R.avg_pool2d, 3, 1, 1)),
    ("AdaptiveAvgPool2d(7)", (8, 512, 14, 14), None, _pool(F.adaptive_avg_pool2d, R.adaptive_avg_pool2d, 7)),
    ("AdaptiveAvgPool2d(7) cl", (8, 512, 14, 14), CL, _pool(F.adaptive_avg_pool2d, R.adaptive_avg_pool2d, 7)),
    ("AdaptiveMaxPool2d(7)", (8, 512, 14, 14), None, _pool(F.adaptive_max_pool2d, R.adaptive_max_pool2d, 7)),
    ("AdaptiveMaxPool2d(7) cl", (8, 512, 14, 14), CL, _pool(F.adaptive_max_pool2d, R.adaptive_max_pool2d, 7)),
]


def _calibrate(fn, min_time: float) -> int:
    fn()
    t0 = _CLOCK()
    fn()
    return max(1, int(min_time / max(_CLOCK() - t0, 1e-6)))


# --clock thread: CPU time of the calling thread (with --threads 1 all the work runs on it), so
# the ratio counts the work done and not the time other processes hold the cores; --clock process:
# CPU time of the whole process (all threads)
_CLOCK = time.perf_counter


def _run(fn, n: int) -> float:
    t0 = _CLOCK()
    for _ in range(n):
        fn()
    return (_CLOCK() - t0) / n


def paired(native, ours, rounds: int, min_time: float = 0.1):
    """(best native s, best ours s, median per-round ratio ours / native)."""
    n_a, n_b = _calibrate(native, min_time), _calibrate(ours, min_time)
    ta, tb, ratios = [], [], []
    for _ in range(rounds):
        a, b = _run(native, n_a), _run(ours, n_b)
        ta.append(a)
        tb.append(b)
        ratios.append(b / a)
    return min(ta), min(tb), statistics.median(ratios)


def peak_bytes(fn) -> int:
    fn()  # warm caches
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_ns())
    cur = peak = 0
    for e in events:
        cur += e.nbytes()
        peak = max(peak, cur)
    return peak


def closures(shape, fmt, pair):
    native, ours = pair
    x = torch.rand(shape) * 2 - 1
    if fmt is not None:
        x = x.contiguous(memory_format=fmt)
    x.requires_grad_()
    with torch.no_grad():
        g = torch.rand_like(native(x))

    def fwd(fn):
        def run():
            with torch.no_grad():
                fn(x)

        return run

    def fwd_bwd(fn):
        def run():
            fn(x).backward(g)
            x.grad = None

        return run

    return fwd(native), fwd(ours), fwd_bwd(native), fwd_bwd(ours)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="", help="rows whose name contains this")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument(
        "--clock",
        choices=("wall", "thread", "process"),
        default="wall",
        help="thread: the main thread's CPU time (use with --threads 1; steady on a loaded machine); "
        "process: the process's CPU time",
    )
    ap.add_argument("--same-process", action="store_true", help="measure every row in this process (see above)")
    ap.add_argument(
        "--path",
        choices=("composition", "eager"),
        default="composition",
        help="composition: the runtime's compositions (what verify traces and candle runs); "
        "eager: the runtime in plain eager mode, which calls torch's own kernels",
    )
    ap.add_argument("--row", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    with R.composition(args.path == "composition"):  # eager: even with CANDLE_PORT_RUNTIME=composition set
        _main(args)


def _main(args) -> None:
    global _CLOCK
    _CLOCK = {"wall": time.perf_counter, "thread": time.thread_time, "process": time.process_time}[args.clock]
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    clock = {"wall": "wall time", "thread": "main-thread CPU time", "process": "process CPU time"}[args.clock]
    if args.row is not None:  # one row, in a child process of an isolated run: its ratios as JSON
        print(json.dumps(_measure(ROWS[args.row], args)))
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, {clock}, median of {args.rounds} paired rounds, "
          f"runtime path: {args.path}")
    print("| op and shape | input | native fwd ms | fwd ratio | native f+b ms | f+b ratio | memory ratio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    cols = ([], [], [])
    for index, row in enumerate(ROWS):
        name, shape = row[0], row[1]
        if args.only and args.only not in name:
            continue
        tnf, rf, tnfb, rfb, rm = _measure(row, args) if args.same_process else _in_child(index, args)
        for c, v in zip(cols, (rf, rfb, rm)):
            c.append(v)
        print(
            f"| {name} | {tuple(shape)} | {tnf * 1e3:.2f} | {rf:.2f} | {tnfb * 1e3:.2f} | {rfb:.2f} | {rm:.2f} |",
            flush=True,
        )
    if cols[0]:
        med = [statistics.median(c) for c in cols]
        mx = [max(c) for c in cols]
        print(f"| **median** | | | {med[0]:.2f} | | {med[1]:.2f} | {med[2]:.2f} |")
        print(f"| **max** | | | {mx[0]:.2f} | | {mx[1]:.2f} | {mx[2]:.2f} |")


def _measure(row, args) -> list[float]:
    """[native forward s, forward ratio, native forward+backward s, its ratio, memory ratio]."""
    _, shape, fmt, pair = row
    nf, of, nfb, ofb = closures(shape, fmt, pair)
    tnf, _, rf = paired(nf, of, args.rounds)
    tnfb, _, rfb = paired(nfb, ofb, args.rounds)
    rm = float("nan") if args.no_memory else peak_bytes(ofb) / max(peak_bytes(nfb), 1)
    return [tnf, rf, tnfb, rfb, rm]


def _in_child(index: int, args) -> list[float]:
    """_measure for ROWS[index] in a fresh process (see the module docstring)."""
    command = [sys.executable, __file__, "--row", str(index), "--rounds", str(args.rounds), "--threads", str(args.threads),
               "--clock", args.clock, "--path", args.path] + (["--no-memory"] if args.no_memory else [])
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])

if __name__ == "__main__":
    main()
