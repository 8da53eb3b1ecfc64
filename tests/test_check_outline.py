"""port-check parses only the bodies that can hold a site (analysis/outline.py, relevance.py), and
finds what a whole parse finds: every case here is checked both ways."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import candle_port.pipeline.checker as checker
from candle_port.analysis.outline import Outline
from candle_port.analysis.relevance import Relevance
from candle_port.pipeline.checker import check_text
from candle_port.config import Config
from candle_port.pipeline.engine import check_paths


def _left_out_names(text: str) -> list[str]:
    outline = Outline.of(text)
    assert outline is not None
    return sorted(u.name for u in Relevance(outline).left_out())


def _both_ways(text: str) -> tuple[list, list]:
    """(findings with bodies left out, findings of the whole parse) as comparable dicts."""
    partial = check_text(text, "m.py", Config(), skip_unrelated=True)
    whole = check_text(text, "m.py", Config())
    return [f.to_dict() for f in partial.findings], [f.to_dict() for f in whole.findings]


def test_unrelated_bodies_are_left_out_and_line_numbers_kept():
    text = (
        "import torch.nn.functional as F\n"
        "def unrelated(x):\n"
        "    y = x + 1\n"
        "    return y\n"
        "class Net:\n"
        "    def __init__(self):\n"
        "        self.k = 3\n"
        "    def forward(self, x):\n"
        "        return F.interpolate(x, scale_factor=2, mode='bilinear')\n"
        "    def other(self):\n"
        "        return 1\n"
    )
    outline = Outline.of(text)
    left_out = Relevance(outline).left_out()
    assert sorted(u.name for u in left_out) == ["__init__", "other", "unrelated"]
    skeleton = outline.skeleton(left_out)
    assert skeleton.count("\n") == text.count("\n")
    assert skeleton.splitlines()[8] == text.splitlines()[8]  # the site's line, unchanged
    tree = ast.parse(skeleton)
    assert outline.matches(tree, left_out)
    partial, whole = _both_ways(text)
    assert partial == whole and [f["line"] for f in partial] == [9]


OUTLINE_CASES = [
    pytest.param("def f(\n    a,\n    b=1,\n):\n    return a\n", ["f"], id="multi-line-signature"),
    pytest.param("@register(\n    'x',\n)\ndef f():\n    return 1\n", ["f"], id="multi-line-decorator"),
    pytest.param("def f(): return 1\ndef g():\n    return 2\n", ["g"], id="one-line-def"),
    pytest.param('def f():\n    s = """\ndef not_a_function():\n"""\n    return s\n', ["f"], id="def-inside-string"),
    pytest.param("def f():\n    x = 1 + \\\n2\n    return x\n", ["f"], id="backslash-continuation"),
    pytest.param("def f():\r\n    return 1\r\ndef g():\r\n    return 2\r\n", ["f", "g"], id="crlf"),
    pytest.param("class A:\n\tdef f(self):\n\t\treturn 1\n", ["f"], id="tabs"),
    pytest.param("async def f():\n    await g()\n", ["f"], id="async"),
    pytest.param("def f(x=')'):  # (\n    return x\n", ["f"], id="brackets-in-strings-and-comments"),
]


@pytest.mark.parametrize(("text", "left_out"), OUTLINE_CASES)
def test_the_outline_reads_python_layouts(text: str, left_out: list[str]):
    assert _left_out_names(text) == left_out
    outline = Outline.of(text)
    units = Relevance(outline).left_out()
    skeleton = outline.skeleton(units)
    assert outline.matches(ast.parse(skeleton), units)
    assert len(skeleton.splitlines()) == len(text.splitlines())


def test_a_lone_carriage_return_or_a_form_feed_gives_no_outline():
    assert Outline.of("def f():\r    return 1\r") is None
    assert Outline.of("def f():\n    return 1\n\x0cdef g():\n    return 2\n") is None


def test_a_def_inside_an_f_string_falls_back_to_the_whole_parse():
    # The outline counts an f-string as code (it may hold code), so the `def` at column 0 inside
    # it looks like a function: the skeleton does not parse back as planned and the text is parsed whole.
    text = (
        "import torch.nn.functional as F\nx = 1\ns = f\"\"\"\ndef fake():\n    {x}\n\"\"\"\n"
        "def f(y):\n    return F.interpolate(y, mode='bilinear')\ndef g():\n    return 2\n"
    )
    partial, whole = _both_ways(text)
    assert partial == whole and [f["code"] for f in partial] == ["CP101"]


def test_a_misread_layout_falls_back_to_the_whole_parse():
    # A call continued on a line at column 0 ends the function early for the outline: the
    # skeleton does not parse, so the whole text is parsed and the site is found.
    text = "import torch.nn.functional as F\ndef f(x):\n    y = g(\n1)\n    return F.interpolate(x, mode='bilinear')\ndef h():\n    return 2\n"
    partial, whole = _both_ways(text)
    assert partial == whole and [f["code"] for f in partial] == ["CP101"]


def test_a_syntax_error_in_a_kept_body_is_reported_at_its_line():
    text = "import torch.nn.functional as F\ndef f(x):\n    return F.interpolate(x, mode='bilinear'\ndef g():\n    return 1\n"
    result = check_text(text, "m.py", Config(), skip_unrelated=True)
    assert result.error is not None and result.error.line is not None


NEEDED = [
    pytest.param(
        "import torch.nn.functional as F\nup = F.interpolate\ndef f(x):\n    return up(x, scale_factor=2, mode='bilinear')\n",
        id="module-alias",
    ),
    pytest.param(
        "from torch.nn.functional import interpolate as resize\ndef f(x):\n    return resize(x, scale_factor=2, mode='bilinear')\n",
        id="import-alias",
    ),
    pytest.param(
        "from torch import nn\nPOOLS = (\n    nn.MaxPool1d,\n    nn.MaxPool2d,\n)\ndef f(dim):\n    return POOLS[dim - 1](3, 2, 1)\n",
        id="collection-over-lines",
    ),
    pytest.param(
        "from torch import nn\nclass Up(nn.Upsample):\n    pass\nclass Up2(Up):\n    pass\ndef f():\n    return Up2(scale_factor=2, mode='bilinear')\n",
        id="subclass-of-subclass",
    ),
    pytest.param(
        "import torch.nn.functional as F\ndef resize(x, mode='nearest'):\n    return F.interpolate(x, scale_factor=2, mode=mode)\n"
        "def up(x, mode='nearest'):\n    return resize(x, mode)\ndef g(x):\n    return up(x, mode='bilinear')\n",
        id="wrapper-of-wrapper",
    ),
    pytest.param(
        "import torch.nn.functional as F\nclass Block:\n    def __init__(self, mode='nearest'):\n        self.mode = mode\n"
        "    def forward(self, x):\n        return F.interpolate(x, scale_factor=2, mode=self.mode)\n"
        "def build():\n    return Block(mode='bilinear')\n",
        id="class-wrapper",
    ),
    pytest.param(
        "import torch.nn.functional as F\nclass P:\n    def resize(self, x, mode):\n        return F.interpolate(x, scale_factor=2, mode=mode)\n"
        "    def run(self, x):\n        return self.resize(x, 'bilinear')\n",
        id="method-wrapper",
    ),
    pytest.param(
        "import torch.nn.functional as F\nMODE = 'nearest'\ndef setup():\n    global MODE\n    MODE = 'bilinear'\n"
        "def f(x):\n    return F.interpolate(x, scale_factor=2, mode=MODE)\n",
        id="global-rebinds-a-constant",
    ),
    pytest.param(
        "import torch.nn.functional as F\nclass S:\n    def __init__(self, m='bicubic'):\n        self.m = m\n    def set(self, m):\n        self.m = m\n"
        "    def step(self, x):\n        return F.interpolate(x, scale_factor=2, mode=self.m)\n",
        id="self-attribute-origin",
    ),
    pytest.param(
        "import torch\nimport torch.nn.functional as F\n@torch.no_grad()\ndef f(x):\n    return F.interpolate(x, scale_factor=2, mode='bilinear')\n",
        id="no-grad-decorator",
    ),
]


@pytest.mark.parametrize("text", NEEDED)
def test_what_a_site_needs_is_parsed(text: str):
    partial, whole = _both_ways(text)
    assert whole, "the case must hold a finding"
    assert partial == whole


@pytest.mark.parametrize(
    "imports",
    [
        pytest.param("from .ops import resize as r\n", id="import-alias"),
        pytest.param("from .ops import resize\nr = resize\n", id="module-level-alias"),
        pytest.param("from . import ops\n", id="module-attribute"),
    ],
)
def test_the_engine_finds_a_wrapper_called_from_a_body_left_out(tmp_path: Path, imports: str):
    """A body that calls another module's wrapper is left out by the first pass (it names no API)
    and checked in a later one, once the wrapper is known."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text(
        "import torch.nn.functional as F\ndef resize(x, mode='nearest'):\n    return F.interpolate(x, scale_factor=2, mode=mode)\n"
    )
    call = "ops.resize" if "import ops" in imports else "r"
    (package / "model.py").write_text(
        f"from torch import nn\n{imports}"
        "def head():\n    return nn.MaxPool2d(3, 2, 1)\n"
        f"def decode(x):\n    return {call}(x, mode='bilinear')\n"
    )
    lines = (package / "model.py").read_text().splitlines()
    site, pool = len(lines), lines.index("    return nn.MaxPool2d(3, 2, 1)") + 1
    cache = tmp_path / "cache"
    for run in ("cold", "from the cache"):  # a cached result keeps the words its left-out bodies call
        report = check_paths([str(package)], Config(), cache_dir=str(cache), jobs=1)
        found = sorted((Path(f.path).name, f.line, f.code) for f in report.findings)
        assert ("model.py", site, "CP101") in found, run
        assert ("model.py", pool, "CP106") in found, run


def test_left_out_bodies_change_nothing_the_engine_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for i, text in enumerate(p.values[0] for p in NEEDED):
        (tmp_path / f"m{i}.py").write_text(text)
    partial = [f.to_dict() for f in check_paths([str(tmp_path)], Config(), cache_dir=None).findings]
    monkeypatch.setattr(checker, "_scan_needed_bodies", lambda *args: None)
    whole = [f.to_dict() for f in check_paths([str(tmp_path)], Config(), cache_dir=None).findings]
    assert partial == whole and len(whole) >= len(NEEDED)


def test_a_later_pass_keeps_a_modules_own_wrapper_of_a_wrapper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """In a later pass, a project wrapper's name that this module defines itself counts bare only
    once the scan finds it a local wrapper: `rotate` (calling the local wrapper `_apply`) must stay
    a wrapper, so that another module's `rotate(x, mode='bilinear')` is reported."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "import torch.nn.functional as F\nfrom .b import helper\n"
        "def _apply(x, grid, mode):\n    return F.grid_sample(x, grid, mode=mode)\n"
        "def rotate(x, grid, mode='nearest'):\n    return _apply(x, grid, mode)\n"
        "def other(x):\n    return helper(x, mode='bicubic')\n"
    )
    (package / "b.py").write_text(
        "from torch import nn\nimport torch.nn.functional as F\nfrom .a import rotate\n"
        "def helper(x, mode='nearest'):\n    return F.interpolate(x, scale_factor=2, mode=mode)\n"
        "def head():\n    return nn.MaxPool2d(3, 2, 1)\n"
        "def spin(x, grid):\n    return rotate(x, grid, mode='bilinear')\n"
    )
    partial = check_paths([str(package)], Config(), cache_dir=None, jobs=1)
    monkeypatch.setattr(checker, "_scan_needed_bodies", lambda *args: None)
    whole = check_paths([str(package)], Config(), cache_dir=None, jobs=1)
    assert sorted(partial.index.wrappers) == sorted(whole.index.wrappers)
    assert "pkg.a.rotate" in partial.index.wrappers
    assert [f.to_dict() for f in partial.findings] == [f.to_dict() for f in whole.findings]
    assert any(f.path.endswith("b.py") and f.line == 9 and f.code == "CP105" for f in partial.findings)


def test_every_api_name_is_found_through_the_prefilters_fragments():
    from candle_port.analysis.apis import API_SHORT_NAMES
    from candle_port.analysis.relevance import _api_occurrences

    text = "".join(f"x = {name}(y)  # {name}_not\n" for name in sorted(API_SHORT_NAMES))
    found = {text[at : at + 40].split("(")[0] for at in _api_occurrences(text)}
    assert found == set(API_SHORT_NAMES)
