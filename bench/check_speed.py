"""port-check vs ruff and TorchFix on the same real corpus, in one run: CPU seconds and ratios.

    python bench/check_speed.py [--corpus .corpus] [--subset segmentation_models_pytorch,kornia] [--also DIR ...]

ruff (`check --select E,F --no-cache`) runs on the whole corpus, as port-check does (cold, no cache);
TorchFix on the subset, as port-check again; `--also DIR`: port-check and ruff on another tree
(a real package fetched beside the corpus), with the Python floor: the interpreter starting, reading
the files and parsing the relevant ones with `ast`, and nothing else. Tools come from the `bench` extra (ruff; TorchFix 0.7.0
installed with --no-deps: it declares libcst<1.6 but runs with ours), else from .bench-venv.
Every tool is timed by wall clock and by the CPU seconds of its process tree (the machine may be
shared; CPU seconds are the fairer figure). Then port-check's cache: a cold run that fills it and a
warm run that reads it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_VENV = ROOT / ".bench-venv"


def timed(command: list[str], env: dict | None = None) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user+sys of children) and exit code of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


# The least any Python linter of these files costs: start the interpreter, walk the tree, read each
# file, keep those that name an API (the prefilter's test) and parse them with CPython's `ast`,
# nothing else. Printed beside each --also tree: on a small package this alone is most of 3x ruff.
PYTHON_FLOOR = """
import ast, os, re, sys
names = re.compile(r"interpolate|upsample|Upsampl|grid_sample|affine_grid|max_pool|avg_pool|MaxPool|AvgPool|ConvTranspose|conv_transpose|Conv3d|conv3d|Pool3d|pool3d|Conv1d|conv1d")
for root, dirs, files in os.walk(sys.argv[1]):
    for name in files:
        if name.endswith(".py"):
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                text = f.read()
            if names.search(text):
                for node in ast.walk(ast.parse(text)):
                    pass
"""


def tool(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def torchfix_command() -> list[str]:
    found = tool("torchfix")
    if found:
        return [found]
    exe = BENCH_VENV / "bin" / "torchfix"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
        subprocess.run([str(BENCH_VENV / "bin" / "pip"), "install", "-q", "torchfix==0.7.0"], check=True)
    return [str(exe)]


def port_check_command() -> list[str]:
    """port-check as a user runs it: its own console script (not `candle-port check`, which loads
    typer first), or the same entry function where the script is not installed beside Python."""
    script = tool("port-check")
    if script:
        return [script, "--quiet", "--exit-zero"]
    entry = "import sys; from candle_port.cli.entry import port_check_entry; sys.argv[0] = 'port-check'; port_check_entry()"
    return [sys.executable, "-c", entry, "--quiet", "--exit-zero"]


def count_files(paths: list[Path]) -> tuple[int, float]:
    files = [f for p in paths for f in p.rglob("*.py")]
    return len(files), sum(f.stat().st_size for f in files) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(ROOT / ".corpus"))
    parser.add_argument("--subset", default="segmentation_models_pytorch", help="packages TorchFix also runs on")
    parser.add_argument("--skip-cache", action="store_true", help="skip the cold/warm cache and clean-file runs")
    parser.add_argument("--also", action="append", default=[], metavar="DIR", help="another tree to run port-check and ruff on (repeatable)")
    parser.add_argument(
        "--repeat", type=int, default=5, metavar="N",
        help="paired runs (port-check, then ruff) per --also tree: small trees scatter by 20%% run to run",
    )
    args = parser.parse_args()
    # Every tool runs as installed: pip writes bytecode at install, so port-check compiles none of
    # its modules at start. A shell with PYTHONDONTWRITEBYTECODE=1 would add that to every run.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        sys.exit(f"no corpus at {corpus}: run bash ../shared/corpus/fetch.sh {corpus}")
    subset = [corpus / name for name in args.subset.split(",")]
    n_files, megabytes = count_files(subset)
    print(f"subset: {args.subset} ({n_files} files, {megabytes:.1f} MB); {os.cpu_count()} cores")

    all_files, all_mb = count_files([corpus])
    ruff = tool("ruff")
    if ruff is None:
        sys.exit("ruff not found: pip install -e '.[bench]'")
    whole_ours = timed([*port_check_command(), "--no-cache", str(corpus)])
    whole_ruff = timed([ruff, "check", "--select", "E,F", "--no-cache", "--exit-zero", "-q", str(corpus)])
    print(f"\nwhole corpus ({all_files} files, {all_mb:.1f} MB):")
    print(f"{'tool':<34}{'wall s':>9}{'CPU s':>9}")
    for name, (wall, cpu, _rc) in (("port-check (no cache)", whole_ours), ("ruff check --select E,F --no-cache", whole_ruff)):
        print(f"{name:<34}{wall:9.2f}{cpu:9.2f}")
    print(f"ratio port-check / ruff: {whole_ours[1] / whole_ruff[1]:.2f}x the CPU seconds ({whole_ours[0] / whole_ruff[0]:.2f}x wall)")
    for tree in map(Path, args.also):
        files, mb = count_files([tree])
        ours, theirs, ratios, floors = [], [], [], []
        for _ in range(max(1, args.repeat)):
            ours.append(timed([*port_check_command(), "--no-cache", str(tree)])[1])
            theirs.append(timed([ruff, "check", "--select", "E,F", "--no-cache", "--exit-zero", "-q", str(tree)])[1])
            floors.append(timed([sys.executable, "-c", PYTHON_FLOOR, str(tree)])[1])
            ratios.append(ours[-1] / max(theirs[-1], 1e-3))
        print(
            f"{tree.name} ({files} files, {mb:.1f} MB), {len(ratios)} paired runs: port-check {statistics.median(ours):.3f} CPU s, "
            f"ruff {statistics.median(theirs):.3f}: {statistics.median(ratios):.2f}x (runs {min(ratios):.2f}-{max(ratios):.2f}x); "
            f"Python floor (start, read, ast.parse, nothing else) {statistics.median(floors):.3f} CPU s = "
            f"{statistics.median(floors) / max(statistics.median(theirs), 1e-3):.2f}x ruff"
        )

    print(f"\nsubset {args.subset} ({n_files} files, {megabytes:.1f} MB):")
    ours = timed([*port_check_command(), "--no-cache", *map(str, subset)])
    theirs = timed([*torchfix_command(), *map(str, subset)])
    print(f"{'tool':<28}{'wall s':>9}{'CPU s':>9}{'files/s (wall)':>16}{'files/s (CPU)':>15}")
    for name, (wall, cpu, _rc) in (("port-check (no cache)", ours), ("TorchFix 0.7.0", theirs)):
        print(f"{name:<28}{wall:9.2f}{cpu:9.2f}{n_files / wall:16.1f}{n_files / cpu:15.1f}")
    print(f"ratio TorchFix / port-check: {theirs[0] / ours[0]:.1f}x by wall clock, {theirs[1] / ours[1]:.1f}x by CPU seconds")

    if args.skip_cache:
        return
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
    timed([*port_check_command(), "--no-cache", str(clean)])  # bytecode written before the first timing
    runs = [timed([*port_check_command(), "--no-cache", str(clean)])[0] for _ in range(5)]
    print(f"\none clean small file, interpreter start included (bytecode cached): best {min(runs):.3f} s, median {sorted(runs)[2]:.3f} s")


if __name__ == "__main__":
    main()
