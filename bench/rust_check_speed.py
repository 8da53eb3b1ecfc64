"""port-check on a Rust crate vs the floor: a bare tree-sitter-rust parse of the same files.

    python bench/rust_check_speed.py [CRATE] [--repeat 3] [--clippy]

CRATE defaults to candle-transformers 0.11.0 in cargo's registry (~/.cargo/registry/src/*/);
any unpacked crate works. Both sides run as a fresh interpreter (what a user pays): the floor
imports tree-sitter, reads every `*.rs` file under CRATE (target/ left out) and parses each; port-check runs
`--no-cache -j 1` (one core, cold). Timed by the CPU seconds of the child process (the machine
may be shared); the median of --repeat runs, and the ratio, are printed. `--clippy`: also
`cargo clippy --lib` on a copy of the crate (what users run today), once untimed so that its
dependencies are built (in CARGO_TARGET_DIR when set), then timed after touching src/lib.rs: the
crate's own check, the cost of every later run.
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOOR = """
import os, sys
from tree_sitter import Language, Parser
import tree_sitter_rust
parser = Parser(Language(tree_sitter_rust.language()))
for directory, subdirs, names in os.walk(sys.argv[1]):
    subdirs[:] = [d for d in subdirs if d != "target"]
    for name in names:
        if name.endswith(".rs"):
            with open(os.path.join(directory, name), "rb") as handle:
                parser.parse(handle.read())
"""


def cpu_seconds(command: list[str], cwd: str | None = None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one child run (its whole process tree)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def default_crate() -> str:
    found = sorted(glob.glob(os.path.expanduser("~/.cargo/registry/src/*/candle-transformers-0.11.0")))
    if not found:
        sys.exit("no candle-transformers 0.11.0 in ~/.cargo/registry: pass a crate directory")
    return found[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("crate", nargs="?", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--clippy", action="store_true", help="also time cargo clippy on the crate")
    args = parser.parse_args()
    crate = args.crate or default_crate()
    files = sum(name.endswith(".rs") for _, _, names in os.walk(crate) for name in names)
    floor = [cpu_seconds([sys.executable, "-c", FLOOR, crate]) for _ in range(args.repeat)]
    check = [cpu_seconds([sys.executable, "-m", "candle_port", "check", "--no-cache", "-j", "1", "--quiet", crate]) for _ in range(args.repeat)]
    floor_cpu = statistics.median(c for c, _ in floor)
    check_cpu = statistics.median(c for c, _ in check)
    print(f"{crate}: {files} .rs files")
    print(f"tree-sitter parse (floor): {floor_cpu:.2f} s CPU (wall {statistics.median(w for _, w in floor):.2f} s)")
    print(f"port-check --no-cache -j 1: {check_cpu:.2f} s CPU (wall {statistics.median(w for _, w in check):.2f} s)")
    print(f"ratio port-check / floor: {check_cpu / floor_cpu:.2f}x")
    if args.clippy:
        clippy_cpu = clippy_seconds(crate, args.repeat)
        print(f"cargo clippy --lib (dependencies built): {clippy_cpu:.2f} s CPU")
        print(f"ratio cargo clippy / port-check: {clippy_cpu / check_cpu:.1f}x")


def clippy_seconds(crate: str, repeat: int) -> float:
    cargo = shutil.which("cargo") or sys.exit("--clippy needs cargo (https://rustup.rs)")
    with tempfile.TemporaryDirectory() as work:
        copy = Path(work) / "crate"
        shutil.copytree(crate, copy, ignore=shutil.ignore_patterns("target"))
        subprocess.run([cargo, "clippy", "--lib", "--quiet"], cwd=copy, check=True, capture_output=True)  # builds the dependencies
        runs = []
        for _ in range(repeat):
            (copy / "src" / "lib.rs").touch()
            runs.append(cpu_seconds([cargo, "clippy", "--lib", "--quiet"], cwd=str(copy))[0])
        return statistics.median(runs)


if __name__ == "__main__":
    main()
