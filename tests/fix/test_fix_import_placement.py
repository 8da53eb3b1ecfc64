"""The added runtime import sits where the file imports torch, so the file still imports as before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from candle_port.api import fix_source

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fix" / "runtime"


def test_optional_torch_module_still_imports_without_torch(tmp_path: Path):
    source = (FIXTURES / "torch_import_in_try_except.in.py").read_text(encoding="utf-8")
    result = fix_source(source, path="optional.py")
    assert result.changed and result.import_added
    (tmp_path / "optional.py").write_text(result.text, encoding="utf-8")
    code = "import sys; sys.modules['torch'] = None; sys.modules['candle_port'] = None\nimport optional\nprint(optional.HAS_TORCH)\n"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_import_follows_sys_path_setup(tmp_path: Path):
    """A vendored runtime found only through the script's own sys.path.insert is imported after it."""
    source = (
        "import os\nimport sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), 'vendor'))\n\n"
        "import torch.nn.functional as F\n\ny = F.interpolate\nz = F.interpolate(torch_x, scale_factor=2, mode='bilinear')\n"
    )
    result = fix_source(source, path="script.py", vendored_module="candle_port_runtime")
    lines = result.text.splitlines()
    assert lines.index("import candle_port_runtime as candle_runtime") > lines.index(
        "sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'vendor'))"
    )


def test_top_level_torch_import_wins_over_one_in_a_try():
    source = (
        "import torch.nn.functional as F\ntry:\n    import torch\nexcept ImportError:\n    pass\n"
        "y = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    )
    text = fix_source(source, path="m.py").text
    assert text.startswith("import torch.nn.functional as F\nimport candle_port.runtime as candle_runtime\ntry:\n")
