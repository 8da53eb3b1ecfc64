"""port-check vs TorchFix on the same real corpus, in one run: files per second and the ratio.

    python bench/check_speed.py [--corpus .corpus] [--subset segmentation_models_pytorch,kornia]

TorchFix 0.7 pins libcst<1.6, so it runs from its own venv (.bench-venv, created on first use).
Both tools get the same files, are timed by wall clock and by the CPU seconds of their process
tree (the machine may be shared; CPU seconds are the fairer figure), and port-check runs without
its cache. Then port-check's cache is measured: a cold run that fills it and a warm run that reads it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_VENV = ROOT / ".bench-venv"


def timed(command: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user+sys of children) and exit code of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def torchfix_command() -> list[str]:
    exe = BENCH_VENV / "bin" / "torchfix"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
        subprocess.run([str(BENCH_VENV / "bin" / "pip"), "install", "-q", "torchfix==0.7.0"], check=True)
    return [str(exe)]


def port_check_command() -> list[str]:
    return [sys.executable, "-m", "candle_port", "check", "--quiet", "--exit-zero"]


def count_files(paths: list[Path]) -> tuple[int, float]:
    files = [f for p in paths for f in p.rglob("*.py")]
    return len(files), sum(f.stat().st_size for f in files) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(ROOT / ".corpus"))
    parser.add_argument("--subset", default="segmentation_models_pytorch", help="packages TorchFix also runs on")
    args = parser.parse_args()
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        sys.exit(f"no corpus at {corpus}: run bash ../shared/corpus/fetch.sh {corpus}")
    subset = [corpus / name for name in args.subset.split(",")]
    n_files, megabytes = count_files(subset)
    print(f"subset: {args.subset} ({n_files} files, {megabytes:.1f} MB); {os.cpu_count()} cores")

    ours = timed([*port_check_command(), "--no-cache", *map(str, subset)])
    theirs = timed([*torchfix_command(), *map(str, subset)])
    print(f"{'tool':<28}{'wall s':>9}{'CPU s':>9}{'files/s (wall)':>16}{'files/s (CPU)':>15}")
    for name, (wall, cpu, _rc) in (("port-check (no cache)", ours), ("TorchFix 0.7.0", theirs)):
        print(f"{name:<28}{wall:9.2f}{cpu:9.2f}{n_files / wall:16.1f}{n_files / cpu:15.1f}")
    print(f"ratio port-check / TorchFix: {theirs[0] / ours[0]:.1f}x by wall clock, {theirs[1] / ours[1]:.1f}x by CPU seconds")

    all_files, all_mb = count_files([corpus])
    cache = Path(tempfile.mkdtemp(prefix="candle-port-cache-"))
    try:
        cold = timed([*port_check_command(), "--cache-dir", str(cache), str(corpus)])
        warm = timed([*port_check_command(), "--cache-dir", str(cache), str(corpus)])
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"\nwhole corpus ({all_files} files, {all_mb:.1f} MB), port-check with cache:")
    print(f"cold {cold[0]:.2f} s wall ({cold[1]:.2f} CPU s), {all_files / cold[0]:.0f} files/s")
    print(f"warm {warm[0]:.2f} s wall ({warm[1]:.2f} CPU s), {all_files / warm[0]:.0f} files/s")
    print(f"ratio cold / warm: {cold[0] / warm[0]:.1f}x")

    clean = Path(tempfile.mkdtemp()) / "clean.py"
    clean.write_text("import torch\n\nx = torch.zeros(2)\n")
    runs = [timed([*port_check_command(), "--no-cache", str(clean)])[0] for _ in range(5)]
    print(f"\none clean small file, interpreter start included: best {min(runs):.3f} s, median {sorted(runs)[2]:.3f} s")


if __name__ == "__main__":
    main()
