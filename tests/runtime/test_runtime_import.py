"""`import candle_port.runtime` imports nothing beyond what `import torch` imports (plus stdlib)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _imported(statement: str) -> set[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    names = set()
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        names.add(line.rsplit("|", 1)[-1].strip())
    return names


def test_runtime_imports_only_torch_and_itself():
    base = _imported("import torch")
    ours = _imported("import candle_port.runtime")
    assert "candle_port.runtime" in ours
    extra = ours - base
    allowed_stdlib = set(sys.stdlib_module_names)
    bad = sorted(
        name
        for name in extra
        if not (
            name == "candle_port"
            or name.startswith("candle_port.runtime")
            or name.split(".")[0] in allowed_stdlib
        )
    )
    assert not bad, f"candle_port.runtime pulls in: {bad}"
