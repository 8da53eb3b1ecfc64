"""port-fix reads the files that name no API in the main process and reports them unchanged,
without the fixer (libcst) or a process pool (rewriters/files.py); every other file goes to the
workers as before."""

from __future__ import annotations

from pathlib import Path

from candle_port.config import Config
from candle_port.rewriters import files as fix_files_module
from candle_port.rewriters.files import fix_files
from tests.conftest import modules_loaded_by

BILINEAR = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"


def _tree(root: Path) -> Path:
    root.mkdir()
    (root / "clean.py").write_text("import os\n")
    (root / "comment.py").write_text("# F.interpolate(x, mode='bilinear')\n")
    (root / "site.py").write_text(BILINEAR)
    (root / "binary.py").write_bytes(b"\x00\x01")
    (root / "syntax.py").write_text(BILINEAR + "def broken(:\n")
    return root


def _summary(report):
    return (
        report.files_seen,
        [(Path(r.path).name, r.changed, [f.code for f in r.fixed]) for r in report.results],
        sorted((Path(e.path).name, e.reason) for e in report.errors),
    )


def test_screening_changes_no_result_and_no_write(tmp_path, monkeypatch):
    screened = _summary(fix_files([str(_tree(tmp_path / "a"))], config=Config(), write=False, jobs=1))
    monkeypatch.setattr(fix_files_module, "_unchanged_without_fixer", lambda path, strategy: None)
    in_workers = _summary(fix_files([str(_tree(tmp_path / "b"))], config=Config(), write=False, jobs=1))
    assert screened == in_workers
    assert screened[0] == 5 and ("site.py", True, ["CP101"]) in screened[1]
    assert [name for name, _ in screened[2]] == ["binary.py", "syntax.py"]
    written = fix_files([str(tmp_path / "a")], config=Config(), jobs=1)
    assert (tmp_path / "a" / "clean.py").read_text() == "import os\n"
    assert "candle_port.runtime" in (tmp_path / "a" / "site.py").read_text()
    assert [Path(r.path).name for r in written.results if r.changed] == ["site.py"]


def test_port_fix_on_files_with_nothing_to_fix_imports_no_libcst_and_starts_no_pool(tmp_path):
    (tmp_path / "clean.py").write_text("import os\n")
    (tmp_path / "notes.py").write_text("# F.interpolate(x, mode='bilinear') in a comment only\n")
    heavy = ("libcst", "concurrent.futures", "multiprocessing", "candle_port.rewriters.fixer")
    assert modules_loaded_by("port_fix_entry", ["port-fix", str(tmp_path)], heavy, exit_code=0)[0] == []
    assert (tmp_path / "clean.py").read_text() == "import os\n"
