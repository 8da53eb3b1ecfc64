"""port-check runs on CPython's `ast` alone (issue 12), walks iteratively and checks what libcst cannot parse (issue 17)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from candle_port.pipeline.checker import check_text
from candle_port.config import Config
from candle_port.pipeline.engine import check_file, check_paths

HEADER = "import torch.nn.functional as F\n"
SITE = "y = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
LONG_AND_DEEP = {
    "500-term sum": "z = " + "+".join(["x"] * 500) + "\n",
    "500 elifs": "if a == 0:\n    pass\n" + "".join(f"elif a == {i}:\n    pass\n" for i in range(1, 500)),
    "500 concatenated literals": "s = " + " ".join(["'a'"] * 500) + "\n",
    "1,200-deep call chain": "w = x" + ".f()" * 1200 + "\n",
    "6,000 concatenated literals in brackets": "s = (" + " ".join(["'a'"] * 6000) + ")\n",
}


@pytest.mark.parametrize("tail", list(LONG_AND_DEEP.values()), ids=list(LONG_AND_DEEP))
def test_long_and_deep_valid_code_is_checked(tmp_path: Path, tail: str):
    path = tmp_path / "deep.py"
    path.write_text(HEADER + tail + SITE)
    result = check_file(str(path), Config())
    assert result.error is None, result.error
    assert [f.code for f in result.findings] == ["CP101"]


def test_the_site_inside_a_deep_chain_is_found():
    text = HEADER + "w = x" + ".f()" * 1200 + ".g(F.interpolate(x, scale_factor=2, mode='bilinear'))\n"
    assert [f.code for f in check_text(text, "t.py").findings] == ["CP101"]


def test_port_check_never_builds_a_libcst_tree(tmp_path: Path):
    (tmp_path / "m.py").write_text(HEADER + SITE)
    code = (
        "import sys\n"
        "from candle_port.pipeline.engine import check_paths\n"
        f"report = check_paths([{str(tmp_path)!r}], jobs=1)\n"
        "assert [f.code for f in report.findings] == ['CP101'], report.findings\n"
        "assert 'libcst' not in sys.modules, 'port-check imported libcst'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_syntax_error_is_what_cpython_rejects():
    result = check_text(HEADER + "def f(:\n" + SITE, "bad.py")
    assert result.error is not None and result.error.reason.startswith("syntax error")
    assert result.error.line == 2


def test_module_constant_and_enum_decide_the_mode():
    text = (
        "import enum\n" + HEADER + "_MODE = 'nearest-exact'\n"
        "class Mode(str, enum.Enum):\n    BILINEAR = 'bilinear'\n    BICUBIC = 'bicubic'\n"
        "a = F.interpolate(x, scale_factor=2, mode=_MODE)\n"
        "b = F.interpolate(x, scale_factor=2, mode=Mode.BICUBIC.value)\n"
        "c = F.interpolate(x, scale_factor=2, mode=Mode.BILINEAR)\n"
    )
    found = [(f.line, f.code) for f in check_text(text, "t.py").findings]
    assert found == [(7, "CP104"), (8, "CP104"), (9, "CP101")]


def test_a_rebound_module_name_is_not_a_constant():
    text = HEADER + "_MODE = 'nearest'\n_MODE = 'bilinear'\ny = F.interpolate(x, scale_factor=2, mode=_MODE)\n"
    assert [f.code for f in check_text(text, "t.py").findings] == ["CP102"]


def _package(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("from .ops import resize\n")
    (root / "ops.py").write_text(
        HEADER + "def resize(x, size, interpolation='bilinear'):\n    return F.interpolate(x, size, mode=interpolation)\n"
        "def resize2(x, size, mode='nearest'):\n    return resize(x, size, interpolation=mode)\n"
    )
    (root / "consts.py").write_text("import enum\nMODE = 'bicubic'\nclass M(enum.StrEnum):\n    NE = 'nearest-exact'\n")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "use.py").write_text(
        "from .. import resize\nfrom ..ops import resize2\nfrom ..consts import MODE, M\n" + HEADER
        + "a = resize(x, 2, interpolation='bilinear')\n"  # 5: CP101 at the call
        + "b = resize(x, 2)\n"  # 6: the wrapper's default, bilinear
        + "c = resize(x, 2, 'nearest')\n"  # 7: nothing
        + "d = resize2(x, 2, mode='bilinear')\n"  # 8: a wrapper of a wrapper
        + "e = F.interpolate(x, 2, mode=MODE)\n"  # 9: another module's constant
        + "f = F.interpolate(x, 2, mode=M.NE)\n"  # 10: another module's StrEnum
        + "g = resize2(x, 2)\n"  # 11: default nearest: nothing
    )
    return root


def test_wrappers_constants_and_enums_across_modules(tmp_path: Path):
    root = _package(tmp_path)
    report = check_paths([str(root)], Config(), jobs=1)
    assert not report.errors
    use = [(f.line, f.code) for f in report.findings if f.path.endswith("use.py")]
    assert use == [(5, "CP101"), (6, "CP101"), (8, "CP101"), (9, "CP104"), (10, "CP104")]
    messages = {f.line: f.message for f in report.findings if f.path.endswith("use.py")}
    assert "resize -> F.interpolate(mode='bilinear')" in messages[5]
    # The wrapper itself is reported once, where port-fix rewrites it.
    ops = [(f.line, f.code) for f in report.findings if f.path.endswith("ops.py")]
    assert ops == [(3, "CP102")]
    assert {w.rsplit(".", 1)[-1] for w in report.index.wrappers} == {"resize", "resize2"}


def test_a_namespace_subpackage_resolves_its_relative_imports(tmp_path: Path):
    """facenet_pytorch/models has no __init__.py: Python imports it as a namespace portion of the
    package, so `from .ops import resize` there is the package's wrapper, reported at the call."""
    root = _package(tmp_path)
    (root / "sub" / "__init__.py").unlink()
    report = check_paths([str(root)], Config(), jobs=1)
    use = [(f.line, f.code) for f in report.findings if f.path.endswith("use.py")]
    assert use == [(5, "CP101"), (6, "CP101"), (8, "CP101"), (9, "CP104"), (10, "CP104")]


def test_the_cache_follows_the_index(tmp_path: Path):
    root = _package(tmp_path)
    cache = tmp_path / "cache"
    first = check_paths([str(root)], Config(), cache_dir=str(cache), jobs=1)
    assert any(f.line == 9 and f.code == "CP104" for f in first.findings)
    (root / "consts.py").write_text("import enum\nMODE = 'nearest'\nclass M(enum.StrEnum):\n    NE = 'nearest-exact'\n")
    second = check_paths([str(root)], Config(), cache_dir=str(cache), jobs=1)
    assert not any(f.line == 9 and f.path.endswith("use.py") for f in second.findings)
    warm = check_paths([str(root)], Config(), cache_dir=str(cache), jobs=1)
    assert [(f.path, f.line, f.code) for f in warm.findings] == [(f.path, f.line, f.code) for f in second.findings]


def test_line_starts_are_the_same_with_and_without_carriage_returns():
    """Source.starts takes a split-based path for text without \\r: both give every line's offset."""
    import re

    from candle_port.analysis.values import Source

    for text in ["", "a", "a\n", "a\nbb\n\nccc", "\n\n", "é\nx = 'ü'\n", "a\r\nb\rc\n", "x\r"]:
        expected = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
        assert Source(text).starts == expected, text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("def f(:\n    pass\n", id="names-no-api"),
        pytest.param(HEADER + "def f(:\n" + SITE, id="names-an-api"),
    ],
)
def test_one_text_reports_every_syntax_error(text):
    """check_source (and stdin) report a syntax error whether or not the text names an API, as
    docs/python-api.md says; text that names no API used to pass as "no findings"."""
    from candle_port.api import SourceSyntaxError, check_source

    with pytest.raises(SourceSyntaxError, match="syntax error"):
        check_source(text, "bad.py")


def test_stdin_reports_a_syntax_error_in_text_that_names_no_api():
    from tests.conftest import run_tool

    done = run_tool("-", "--stdin-filename", "bad.py", stdin=b"def f(:\n    pass\n")
    assert done.returncode == 3
    assert b"bad.py:1:7: syntax error" in done.stderr
