"""--vendor: the runtime flattened into one torch-only module, imported by fixed files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


from candle_port.api import fix_paths
from candle_port.rewriters.vendor import build_vendored_source, vendored_module_name

TOLERANCE = 1e-12


def test_vendored_module_is_self_contained_and_equal(tmp_path: Path):
    (tmp_path / "candle_port_runtime.py").write_text(build_vendored_source(), encoding="utf-8")
    code = (
        "import sys; sys.modules['candle_port'] = None\n"  # importing candle_port must fail
        "import torch, torch.nn.functional as F, candle_port_runtime as r\n"
        "x = torch.randn(2, 3, 5, 7, dtype=torch.float64)\n"
        "for s in (2, 3):\n"
        "    want = F.interpolate(x, scale_factor=s, mode='bilinear')\n"
        "    assert (r.interpolate(x, scale_factor=s, mode='bilinear') - want).abs().max() < 1e-12\n"
        "    assert (r.upsample_bilinear_convtranspose(x, scale_factor=s) - want).abs().max() < 1e-12\n"
        "    assert (r.ConvTransposeUpsample(scale_factor=s).double()(x) - want).abs().max() < 1e-6\n"
        "assert isinstance(r.Upsample(scale_factor=2), torch.nn.Upsample)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "candle_port" not in "".join(
        line for line in build_vendored_source().splitlines(keepends=True) if line.startswith(("import", "from"))
    )


def test_vendored_module_name(tmp_path: Path):
    assert vendored_module_name(tmp_path / "third_party") == "candle_port_runtime"
    pkg = tmp_path / "mypkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    assert vendored_module_name(pkg / "sub" / "vendor") == "mypkg.sub.vendor.candle_port_runtime"


def test_fix_with_vendor_in_a_package_imports_from_there(tmp_path: Path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(
        "import torch.nn.functional as F\n\ndef up(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
    )
    report = fix_paths([str(pkg)], "runtime", vendor=str(pkg / "_vendor"))
    assert len(report.fixed) == 1 and report.vendored
    text = (pkg / "model.py").read_text()
    assert "import mypkg._vendor.candle_port_runtime as candle_runtime" in text
    assert (pkg / "_vendor" / "__init__.py").exists()
    code = (
        "import sys; sys.modules['candle_port'] = None\n"
        "import torch, torch.nn.functional as F\nfrom mypkg.model import up\n"
        "x = torch.randn(1, 2, 3, 4, dtype=torch.float64)\n"
        "assert (up(x) - F.interpolate(x, scale_factor=2, mode='bilinear')).abs().max() < 1e-12\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # A second run changes nothing and does not fix the vendored file itself.
    again = fix_paths([str(pkg)], "runtime", vendor=str(pkg / "_vendor"))
    assert not again.changed and not again.fixed
