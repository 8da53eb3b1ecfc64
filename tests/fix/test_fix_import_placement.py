"""The added runtime import sits where the file imports torch, so the file still imports as before."""

from __future__ import annotations

import os
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
        "y = F.interpolate(x, scale_factor=2, mode='bilinear')\nz = F.relu\n"
    )
    text = fix_source(source, path="m.py").text
    assert text.startswith("import torch.nn.functional as F\nimport candle_port.runtime as candle_runtime\ntry:\n")


# Optional torch in every form the issue lists: without torch each module still imports (the
# runtime import runs only where torch's does); with torch each fixed function equals F.interpolate.
OPTIONAL_TORCH = {
    "inside_the_function": (
        "def up(x):\n    import torch.nn.functional as F\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    ),
    "under_if_has_torch": (
        "import os\n\nHAS_TORCH = 'NO_TORCH' not in os.environ\nif HAS_TORCH:\n    import torch.nn.functional as F\n\n\n"
        "def up(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    ),
    "try_else": (
        "try:\n    import torch\nexcept ImportError:\n    torch = None\nelse:\n    from torch.nn import functional as F\n\n\n"
        "def up(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    ),
    "with_suppress_import_error": (
        "from contextlib import suppress\n\nF = None\nwith suppress(ImportError):\n    import torch.nn.functional as F\n\n\n"
        "def up(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    ),
    "module_getattr": (
        "def __getattr__(name):\n    if name == 'up':\n        import torch.nn.functional as F\n\n"
        "        def up(x):\n            return F.interpolate(x, scale_factor=2, mode='bilinear')\n\n"
        "        return up\n    raise AttributeError(name)\n"
    ),
    "type_checking_and_a_lazy_import": (
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import torch\n\n\n"
        "def up(x):\n    import torch.nn.functional as F\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    ),
}


def test_optional_torch_in_every_form_still_imports_without_torch_and_computes_the_same(tmp_path: Path):
    for name, source in OPTIONAL_TORCH.items():
        result = fix_source(source, path=f"{name}.py")
        assert result.changed and len(result.fixed) == 1 and not result.refused, name
        (tmp_path / f"{name}.py").write_text(result.text, encoding="utf-8")
    names = sorted(OPTIONAL_TORCH)
    without = (
        "import sys; sys.modules['torch'] = None; sys.modules['candle_port'] = None\n"
        f"for name in {names!r}:\n    __import__(name)\nprint('imported')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", without], cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={**os.environ, "NO_TORCH": "1"},
    )
    assert out.returncode == 0 and out.stdout.strip() == "imported", out.stderr
    with_torch = (
        "import torch, torch.nn.functional as F\n"
        "x = torch.randn(1, 2, 3, 4, dtype=torch.float64)\nwant = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
        f"for name in {names!r}:\n    up = getattr(__import__(name), 'up')\n"
        "    assert (up(x) - want).abs().max() < 1e-12, name\nprint('same')\n"
    )
    out = subprocess.run([sys.executable, "-c", with_torch], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "same", out.stderr


def test_optional_torch_import_placement():
    text = fix_source(OPTIONAL_TORCH["with_suppress_import_error"], path="m.py").text
    assert "with suppress(ImportError):\n    import torch.nn.functional as F\n    import candle_port.runtime as candle_runtime\n" in text
    text = fix_source(OPTIONAL_TORCH["type_checking_and_a_lazy_import"], path="m.py").text
    assert "if TYPE_CHECKING:\n    import torch\n\n" in text
    assert "    import torch.nn.functional as F\n    import candle_port.runtime as candle_runtime\n    return" in text


def test_a_site_that_would_not_see_the_runtime_import_is_refused():
    """torch bound as a global by one function, used in another: no import there is seen by both."""
    source = (
        "def load():\n    global F\n    import torch.nn.functional as F\n\n\n"
        "def up(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    )
    result = fix_source(source, path="m.py")
    assert not result.changed and not result.fixed
    assert len(result.refused) == 1 and "torch is imported only inside other functions" in result.refused[0].reason
