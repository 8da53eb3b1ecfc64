"""The crate's speed table: candle-port-ops in candle vs candle's native forward and torch's CPU op.

    python bench/crate_speed.py [--threads 2] [--reps 5] [--only SUBSTRING] [--memory]

Runs ``cargo bench -p candle-port-ops --bench speed`` (crates/candle-port-ops/benches/speed.rs:
per op and shape, the crate's forward and forward+backward and candle's native forward, run
alternately) with ``RAYON_NUM_THREADS`` set to ``--threads`` (candle's CPU thread count), then
times each row's torch call on the same shape with ``torch.set_num_threads(--threads)``: forward
under no_grad, forward+backward as ``y.sum().backward()``, as the Rust side does. Times are medians
of ``--reps`` single calls after a warm-up. Prints a Markdown table with, per row, ours / candle
native forward and ours / torch forward+backward (the issue's goals: 1.5x and 2x), and candle's
autograd floor: what any op's forward+backward costs in candle on these sizes (the sum's backward
over the output and the accumulation of the input's gradient), with the ratio to torch of ours
less that floor.

``--memory`` prints instead the peak resident memory one call adds, each measured in a fresh
process (Linux's high-water mark reset before the call): the crate's forward and candle's native
forward, the crate's forward+backward and torch's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F  # noqa: F401  (the rows' torch calls name it)

ROOT = Path(__file__).resolve().parents[1]


def run_crate_bench(threads: int, reps: int, only: str | None) -> list:
    """The Rust bench's rows (its ``ROW {json}`` lines); its table goes to stderr as it runs."""
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads), "SPEED_BENCH_REPS": str(reps)}
    if only:
        env["SPEED_BENCH_ONLY"] = only
    cmd = ["cargo", "bench", "-q", "-p", "candle-port-ops", "--bench", "speed"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"crate_speed: {' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    rows = []
    for line in proc.stdout.splitlines():
        if line.startswith("ROW "):
            rows.append(json.loads(line[4:]))
        else:
            print(line, file=sys.stderr)
    return rows


def crate_peak_bytes(name: str, which: str, threads: int) -> int:
    """Peak bytes one call of the row's ``which`` (ours, ours_fb, native) adds, in a fresh process."""
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads), "SPEED_BENCH_ONLY": name,
           "SPEED_BENCH_MEMORY": which}
    cmd = ["cargo", "bench", "-q", "-p", "candle-port-ops", "--bench", "speed"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("MEM "):
            return json.loads(line[4:])["peak_extra_bytes"]
    sys.exit(f"crate_speed: no memory figure for {name} ({which}):\n{proc.stderr[-2000:]}")


_TORCH_PEAK = """
import json, sys, torch
import torch.nn.functional as F
row, fb, threads = json.loads(sys.argv[1]), sys.argv[2] == "fb", int(sys.argv[3])
torch.set_num_threads(threads)
op = eval("lambda x: " + row["torch"], {"F": F})
x = (torch.rand(row["shape"]) * 2 - 1).requires_grad_(fb)
def status(field):
    line = next(l for l in open("/proc/self/status") if l.startswith(field))
    return int(line.split()[1]) * 1024
open("/proc/self/clear_refs", "w").write("5")
before = status("VmRSS:")
if fb:
    op(x).sum().backward()
else:
    with torch.no_grad():
        op(x)
print(status("VmHWM:") - before)
"""


def torch_peak_bytes(row: dict, fb: bool, threads: int) -> int:
    """Peak bytes the row's torch call adds (forward, or forward+backward), in a fresh process."""
    args = [sys.executable, "-c", _TORCH_PEAK, json.dumps(row), "fb" if fb else "fwd", str(threads)]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"crate_speed: torch memory of {row['name']} failed:\n{proc.stderr[-2000:]}")
    return int(proc.stdout.strip())


def memory_table(rows: list, threads: int) -> None:
    """Per row, peak MB added by one call: ours vs candle native forward, ours vs torch f+b."""
    mb = 1 << 20
    print("| op and shape | ours fwd MB | candle fwd MB | ours / candle | ours f+b MB | torch f+b MB "
          "| ours / torch f+b |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"memory: {row['name']}", file=sys.stderr)
        ours = crate_peak_bytes(row["name"], "ours", threads)
        native = crate_peak_bytes(row["name"], "native", threads) if row["native_fwd_ms"] else None
        ours_fb = crate_peak_bytes(row["name"], "ours_fb", threads)
        torch_fb = torch_peak_bytes(row, True, threads)
        native_cell = "-" if native is None else f"{native / mb:.1f}"
        ratio = "-" if not native else f"{ours / native:.2f}"
        print(f"| {row['name']} | {ours / mb:.1f} | {native_cell} | {ratio} | {ours_fb / mb:.1f} "
              f"| {torch_fb / mb:.1f} | {ours_fb / torch_fb:.2f} |")


def median_ms(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def time_torch(row: dict, reps: int) -> tuple:
    """(forward ms, forward+backward ms) of the row's torch call."""
    op = eval(f"lambda x: {row['torch']}", {"F": F})  # the bench's own fixed strings
    x = torch.rand(row["shape"]) * 2 - 1
    with torch.no_grad():
        fwd = median_ms(lambda: op(x), reps)
    xg = x.clone().requires_grad_(True)

    def fb():
        xg.grad = None
        op(xg).sum().backward()

    return fwd, median_ms(fb, reps)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--only", help="rows whose name contains this")
    parser.add_argument("--memory", action="store_true",
                        help="peak memory per call, each in a fresh process, instead of times")
    args = parser.parse_args(argv)
    rows = run_crate_bench(args.threads, 1 if args.memory else args.reps, args.only)
    if args.memory:
        print(f"float32 CPU, {args.threads} threads, peak resident MB one call adds "
              f"(fresh process each)\n")
        memory_table(rows, args.threads)
        return 0
    torch.set_num_threads(args.threads)
    print(f"float32 CPU, {args.threads} threads, torch {torch.__version__.split('+')[0]}, "
          f"medians of {args.reps} calls (ms)\n")
    print("| op and shape | input | ours fwd | candle fwd | ours / candle fwd | torch fwd | ours f+b "
          "| torch f+b | ours / torch f+b | candle floor | (ours - floor) / torch |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        tf, tfb = time_torch(row, args.reps)
        native = "-" if row["native_fwd_ms"] is None else f"{row['native_fwd_ms']:.2f}"
        if row["native_unpadded"] and row["native_fwd_ms"] is not None:
            native += "*"
        ratio = "-" if row["native_ratio"] is None else f"{row['native_ratio']:.2f}"
        print(f"| {row['name']} | {tuple(row['shape'])} | {row['ours_fwd_ms']:.2f} | {native} | {ratio} "
              f"| {tf:.2f} | {row['ours_fb_ms']:.2f} | {tfb:.2f} | {row['ours_fb_ms'] / tfb:.2f} "
              f"| {row['candle_floor_ms']:.2f} | {(row['ours_fb_ms'] - row['candle_floor_ms']) / tfb:.2f} |")
    print("\n\\* candle's native pool has no padding: the same kernel and stride, unpadded.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
