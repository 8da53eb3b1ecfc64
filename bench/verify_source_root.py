"""verify with a whole package as --source-root, first run (empty rewrite cache): only the files the
model imports rewritten (the default) against every file (--rewrite-all), in one run.

    PYTHONPATH=$PWD/src python bench/verify_source_root.py

The model is transformers' Segformer from a tiny config (tests/verify/test_verify_transformers.py),
the source root all of transformers (about 2,950 .py files). Each run gets its own empty rewrite
cache (CANDLE_PORT_VERIFY_CACHE), so both are first runs. Prints wall seconds, the rewrite's own
seconds and the files it read and changed, and the ratio. Needs transformers (a test extra).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = "transformers.models.segformer.modeling_segformer:SegformerForSemanticSegmentation"
CONFIG = "transformers.models.segformer.configuration_segformer:SegformerConfig"
KWARGS = {"depths": [1, 1, 1, 1], "hidden_sizes": [8, 16, 16, 16], "num_attention_heads": [1, 1, 1, 1],
          "mlp_ratios": [2, 2, 2, 2], "decoder_hidden_size": 16, "num_labels": 2}


def run(extra: list[str], package: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="candle-port-bench-cache-") as cache:
        env = dict(os.environ, CANDLE_PORT_VERIFY_CACHE=cache,
                   PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
        command = [sys.executable, "-m", "candle_port", "verify", MODEL, "--config-class", CONFIG, "--config-kwargs",
                   json.dumps(KWARGS), "--input-shape", "1,3,32,32", "--source-root", str(package),
                   "--output-format", "json", *extra]
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        wall = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"verify {' '.join(extra)} failed: {done.stderr.strip().splitlines()[-1:]}")
    data = json.loads(done.stdout)
    rewrite = data["rewrite"]
    return {"wall_s": round(wall, 1), "rewrite_s": rewrite["seconds"], "files_read": rewrite["scanned"],
            "not_imported": rewrite.get("not_imported", 0), "changed": len(rewrite["changed"]),
            "verdict": data["verdict"]}


def main() -> None:
    import transformers

    package = Path(transformers.__file__).parent
    print(f"transformers {transformers.__version__}: {sum(1 for _ in package.rglob('*.py'))} .py files")
    imported = run([], package)
    print(json.dumps({"run": "imported files (default)", **imported}))
    everything = run(["--rewrite-all"], package)
    print(json.dumps({"run": "--rewrite-all", **everything}))
    print(f"wall ratio --rewrite-all / default: {everything['wall_s'] / imported['wall_s']:.1f}x; "
          f"rewrite ratio: {everything['rewrite_s'] / max(imported['rewrite_s'], 0.01):.1f}x")


if __name__ == "__main__":
    main()
