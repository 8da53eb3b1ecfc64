"""The second pass parses a file only when its text can call a project wrapper through an import,
and a name re-exported by star imports resolves to the module that defines it."""

from __future__ import annotations

from pathlib import Path

import pytest

from candle_port.analysis.mentions import WrapperCallFilter, call_words, imported_words
from candle_port.config import Config
from candle_port.pipeline.engine import check_paths

WRAPPER = (
    "import torch.nn.functional as F\n"
    "def resize(x, size, mode='nearest'):\n"
    "    return F.interpolate(x, size=size, mode=mode)\n"
    "class Processor:\n"
    "    def preprocess(self, x, mode='nearest'):\n"
    "        return F.interpolate(x, scale_factor=2, mode=mode)\n"
)

FILTER = WrapperCallFilter.for_names([("pkg.ops", "pkg.ops.resize"), ("pkg.ops", "pkg.ops.Processor.preprocess")])


CAN_CALL = [
    pytest.param("from pkg.ops import resize\nresize(x, 4, mode='bilinear')\n", id="from-import"),
    pytest.param("from .ops import resize as r\nr(x, 4, mode='bilinear')\n", id="aliased"),
    pytest.param("from pkg.ops import (\n    other,\n    resize,\n)\nresize(x, 4)\n", id="parenthesized"),
    pytest.param("from pkg.ops import other, \\\n    resize\nresize(x, 4)\n", id="backslash"),
    pytest.param("import pkg.ops as O\nO.resize(x, 4, mode='bilinear')\n", id="module-attribute"),
    pytest.param("from pkg.ops import *\nresize(x, 4)\n", id="star"),
    pytest.param("def f(x):\n    from pkg.ops import resize\n    return resize(x, 4)\n", id="function-level"),
    pytest.param("from pkg.ops import Processor\nProcessor.preprocess(p, x, mode='bilinear')\n", id="method-of-imported-class"),
    pytest.param("import pkg\npkg.ops.Processor . preprocess (p, x)\n", id="method-spaced"),
]


@pytest.mark.parametrize("text", CAN_CALL)
def test_a_file_that_can_call_a_wrapper_is_parsed(text: str):
    assert FILTER.may_call(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("def resize(x, size):\n    return x\nresize(x, 4)\n", id="own-function-same-name"),
        pytest.param("import cv2\nimg = cv2_resize(x)\n", id="longer-name"),
        pytest.param("# from pkg.ops import resize\nx = 1\n", id="comment-only"),
        pytest.param("s = 'resize'\n", id="string"),
        pytest.param("class P:\n    def preprocess(self, x):\n        return x\nP().preprocess(x)\n", id="own-method-same-name"),
        pytest.param("import numpy\nx = 1\n", id="unrelated"),
        pytest.param("from PIL import Image\nimg = Image.open(p)\nimg.resize((2, 2))\n", id="attribute-of-an-object"),
    ],
)
def test_a_file_that_cannot_call_a_wrapper_is_not(text: str):
    assert not FILTER.may_call(text)


# `resize` defined (or re-exported) only in pkg.models._hf_models.hf_onnx_community, as kornia's
# wrapper is in its models/_hf_models/hf_onnx_community.py; pkg/api.py aliases that module
# (`from .models._hf_models import hf_onnx_community as onnx`), pkg/everything.py star-imports it.
DEEP = "pkg.models._hf_models.hf_onnx_community"
DEEP_FILTER = WrapperCallFilter.for_names(
    [(DEEP, f"{DEEP}.resize")],
    [("pkg.api.onnx", DEEP), ("pkg.everything", DEEP), ("pkg.models.UNet", "pkg.models.unet.UNet")],
)
PIL_CALL = "img = image.resize((4, 4))\n"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("from ..models import UNet\n" + PIL_CALL, id="relative-import-of-a-package-above"),
        pytest.param("from pkg.models import UNet\n" + PIL_CALL, id="absolute-import-of-a-package-above"),
        pytest.param("import numpy as np\nfrom PIL import Image\n" + PIL_CALL, id="other-packages"),
        pytest.param("from ..models import (\n    UNet,  # the model\n    VAE,\n)\n" + PIL_CALL, id="parenthesized-with-comment"),
        pytest.param("import pkg.models.unet as U\n" + PIL_CALL, id="aliased-module-beside-it"),
    ],
)
def test_an_attribute_call_through_no_module_that_reaches_the_wrapper_is_not_parsed(text: str):
    """The words of `from ..models import UNet` (`models`) are among those of the wrapper's module,
    but `UNet.resize` cannot be it: the import statement's module, resolved, is compared."""
    assert not DEEP_FILTER.may_call(text, "pkg.pipelines")


@pytest.mark.parametrize(
    ("text", "package"),
    [
        pytest.param("from ..models._hf_models import hf_onnx_community\n" + PIL_CALL, "pkg.pipelines", id="relative"),
        pytest.param("from .._hf_models import hf_onnx_community as H\nH.resize(x)\n", "pkg.models.sub", id="relative-two-up"),
        pytest.param("from . import hf_onnx_community\n" + PIL_CALL, "pkg.models._hf_models", id="relative-same-package"),
        pytest.param("import pkg.models._hf_models.hf_onnx_community as H\n" + PIL_CALL, "other", id="absolute-as"),
        pytest.param("import pkg.models\n" + PIL_CALL, "other", id="import-binds-the-top-package"),
        pytest.param("from .. import models\n" + PIL_CALL, "pkg.pipelines", id="a-package-above-the-module"),
        pytest.param("from pkg.api import onnx\n" + PIL_CALL, "other", id="module-alias"),
        pytest.param("from pkg import api\n" + PIL_CALL, "other", id="package-of-a-module-alias"),
        pytest.param("from pkg.everything import x\nfrom pkg import everything\n" + PIL_CALL, "other", id="star-reexport"),
        pytest.param("import os; import pkg.models as M\n" + PIL_CALL, "other", id="after-a-semicolon"),
        pytest.param("try: from pkg.models import _hf_models\nexcept ImportError: pass\n" + PIL_CALL, "other", id="after-a-colon"),
        pytest.param("from pkg.models \\\n    import _hf_models\n" + PIL_CALL, "other", id="backslash-in-from"),
        pytest.param("def f():\n    from pkg import models\n    return models.x.resize(1)\n", "other", id="function-level"),
    ],
)
def test_an_attribute_call_through_a_module_that_reaches_the_wrapper_is_parsed(text: str, package: str):
    assert DEEP_FILTER.may_call(text, package)


@pytest.mark.parametrize(
    ("text", "package"),
    [
        pytest.param("from pkg.models import *\n" + PIL_CALL, "pkg.pipelines", id="star-import"),
        pytest.param("from numpy import *\n" + PIL_CALL, "pkg.pipelines", id="star-import-elsewhere"),
        pytest.param("import importlib\nm = importlib.import_module(name)\n" + PIL_CALL, "pkg.pipelines", id="importlib"),
        pytest.param("m = __import__(name)\n" + PIL_CALL, "pkg.pipelines", id="dunder-import"),
        pytest.param("from ..... import models\n" + PIL_CALL, "pkg.pipelines", id="relative-above-the-top"),
        pytest.param("from ..models import UNet\n" + PIL_CALL, None, id="package-not-known"),
        pytest.param("from ..models import UNet\n" + PIL_CALL, "", id="not-in-a-package"),
        pytest.param("from numpy \\\n    import linalg\n" + PIL_CALL, "pkg.pipelines", id="from-continued-by-backslash"),
    ],
)
def test_an_import_the_text_does_not_resolve_lets_the_file_through(text: str, package):
    assert DEEP_FILTER.may_call(text, package)


def test_a_file_importing_a_package_beside_the_wrappers_module_is_not_parsed_again(tmp_path: Path):
    """End to end: `from ..models import UNet` with PIL's `image.resize(` is not parsed in the
    second pass; the call through the wrapper's module, imported relatively, is a finding."""
    _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/models/__init__.py": "",
        "pkg/models/unet.py": "class UNet:\n    pass\n",
        "pkg/models/_hf_models/__init__.py": "",
        "pkg/models/_hf_models/hf_onnx_community.py": WRAPPER,
        "pkg/pipelines/__init__.py": "",
        "pkg/pipelines/pil.py": "from ..models import UNet\ndef f(image):\n    return UNet(), image.resize((4, 4))\n",
        "pkg/pipelines/user.py": (
            "from ..models._hf_models import hf_onnx_community as H\n"
            "def f(x):\n    return H.resize(x, 4, mode='bicubic')\n"
        ),
    })
    report = check_paths([str(tmp_path)], Config(), jobs=1)
    by_file = {Path(r.path).name: r for r in report.results}
    assert [(f.code, "bicubic" in f.message) for f in by_file["user.py"].findings] == [("CP104", True)]
    assert not by_file["pil.py"].parsed


def test_imported_modules_resolves_each_import_form():
    from candle_port.analysis.mentions import imported_modules

    text = (
        "import os, a.b.c\nimport d.e as f\nfrom .g import (h,\n  i as j)  # k\nfrom .. import l\n"
        "x = 1  # import m\ns = 'important'\nfrom n.o import p; import q\n"
        "    from r \\\n import t\n"
    )
    assert imported_modules(text, "pkg.sub") is None  # the last `from` is continued by a backslash
    text = text[: text.index("    from r")]
    assert imported_modules(text, "pkg.sub") == {"os", "a", "d.e", "pkg.sub.g.h", "pkg.sub.g.i", "pkg.l", "n.o.p", "q"}
    assert imported_modules("from .g import h\n", None) is None


def test_call_words_hold_every_name_a_file_can_call_a_wrapper_by():
    """The first pass keeps a skipped file's call words: a later pass reads the file again only if
    a wrapper's name is among them, so they must cover every text may_call accepts."""
    for case in CAN_CALL:
        words = call_words(case.values[0])
        assert FILTER.short_names() & words, case.id
    assert call_words("import numpy as np\nnp.zeros(3).reshape(1)\n") == {"numpy", "as", "np", "zeros", "reshape"}
    assert not FILTER.short_names() & call_words("def resize(x):\n    return x\nresize(1)\n")


def test_a_skipped_file_is_read_again_only_when_it_names_a_new_wrapper(tmp_path: Path, monkeypatch):
    """Files that name no wrapper are not read by the later passes (2,007-file corpus: 1,660 files
    read again before, 367 now), and a file that calls one is still found."""
    import candle_port.pipeline.engine as engine

    root = _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/ops.py": WRAPPER,
        "pkg/user.py": "from pkg.ops import resize\ny = resize(x, 4, mode='bilinear')\n",
        "pkg/star_user.py": "from pkg.ops import *\ny = resize(x, 4, mode='bilinear')\n",
        "pkg/other_star.py": "from pkg.ops import *\nz = zeros(3)\n",
        **{f"pkg/other{i}.py": f"import numpy as np\nz{i} = np.zeros(3)\n" for i in range(5)},
    })
    read_again: list[str] = []
    original = engine.check_file

    def spy(path, config, cache=None, index=None, *args, **kwargs):
        if index is not None:
            read_again.append(Path(path).name)
        return original(path, config, cache, index, *args, **kwargs)

    monkeypatch.setattr(engine, "check_file", spy)
    monkeypatch.setattr(engine, "map_files", lambda work, files, args, jobs, progress, on_crash=None: work((list(files), *args)))
    report = check_paths([str(root)], Config(), jobs=1)
    assert sorted((Path(f.path).name, f.code) for f in report.findings if "user" in f.path) == [
        ("star_user.py", "CP101"),
        ("user.py", "CP101"),
    ]
    assert {"user.py", "star_user.py"} <= set(read_again) and not any(name.startswith("other") for name in read_again)


def test_imported_words_reads_every_import_form():
    text = (
        "import os\nfrom .a import (b,\n c as d)\nx = 1  # import foo\n  from  x.y import z, \\\n  q\n"
        "from m import *\ndef f():\n    import torch.nn.functional as F\ns = 'important'\n"
    )
    words = imported_words(text)
    assert {"os", "a", "b", "c", "d", "x", "y", "z", "q", "m", "*", "torch", "nn", "functional", "F"} <= words
    assert "foo" not in words and "important" not in words


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_only_files_that_import_the_wrapper_are_parsed_again(tmp_path: Path):
    root = _tree(tmp_path / "pkg", {
        "__init__.py": "",
        "ops.py": WRAPPER,
        "user.py": "from pkg.ops import resize\ndef f(x):\n    return resize(x, 4, mode='bilinear')\n",
        "own.py": "def resize(x, size, mode='x'):\n    return x\ndef f(x):\n    return resize(x, 4, mode='bilinear')\n",
    })
    report = check_paths([str(root)], Config(), jobs=1)
    by_file = {Path(r.path).name: r for r in report.results}
    assert [f.code for f in by_file["user.py"].findings] == ["CP101"]
    assert by_file["own.py"].findings == [] and not by_file["own.py"].parsed


def test_a_star_reexport_resolves_to_the_module_that_defines_the_name(tmp_path: Path):
    # `pkg/__init__` (summarized: it holds a site) star-imports `a` (no `resize`) before `ops`: the
    # call must still resolve to ops.resize, not to the first star module.
    root = _tree(tmp_path / "pkg", {
        "__init__.py": "from .a import *\nfrom .ops import *\nimport torch.nn.functional as F\nup = lambda x: F.interpolate(x, scale_factor=2)\n",
        "a.py": "import torch.nn.functional as F\ndef other(x):\n    return F.interpolate(x, scale_factor=2)\n",
        "ops.py": WRAPPER,
        "user.py": "from pkg import resize\ndef f(x):\n    return resize(x, 4, mode='bicubic')\n",
    })
    report = check_paths([str(root)], Config(), jobs=1)
    user = next(r for r in report.results if r.path.endswith("user.py"))
    assert [(f.code, "bicubic" in f.message) for f in user.findings] == [("CP104", True)]


def test_a_wrapper_reexported_under_another_name_is_still_a_wrapper(tmp_path: Path):
    # The index skips callees whose last name no wrapper has, unless an import renames it: `up` is
    # `ops.resize` through pkg/__init__ (which holds a site, so it is summarized).
    root = _tree(tmp_path / "pkg", {
        "__init__.py": "from .ops import resize as up\nimport torch.nn.functional as F\ng = lambda x: F.interpolate(x, scale_factor=2)\n",
        "ops.py": WRAPPER,
        "user.py": "from pkg import up\ndef f(x):\n    return up(x, 4, mode='bicubic')\n",
        "other.py": "from pkg import resize2\ndef f(x):\n    return resize2(x, 4, mode='bicubic')\n",
    })
    report = check_paths([str(root)], Config(), jobs=1)
    by_file = {Path(r.path).name: r for r in report.results}
    assert [(f.code, "bicubic" in f.message) for f in by_file["user.py"].findings] == [("CP104", True)]
    assert by_file["other.py"].findings == []


def test_a_file_first_parsed_later_finds_its_own_wrapper_of_a_wrapper(tmp_path: Path):
    # user.py names no API (the second pass parses it: it calls ops.resize). Its own `up` passes
    # its parameter to resize's mode, so the call of `up` with a literal mode is a site.
    root = _tree(tmp_path / "pkg", {
        "__init__.py": "",
        "ops.py": WRAPPER,
        "user.py": "from pkg.ops import resize\ndef up(x, how='nearest'):\n    return resize(x, 4, mode=how)\ny = up(x, how='bicubic')\n",
    })
    report = check_paths([str(root)], Config(), jobs=1)
    user = next(r for r in report.results if r.path.endswith("user.py"))
    assert [(f.line, f.code) for f in user.findings] == [(4, "CP104")]


def test_a_wrapper_called_as_an_attribute_of_a_module_that_reexports_it(tmp_path: Path):
    # `.resize(` counts only where an import names a module that defines or re-exports it: `api`
    # re-exports ops.resize (api/__init__ holds a site, so it is summarized).
    _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/ops.py": WRAPPER,
        "api/__init__.py": "from pkg.ops import resize\nimport torch.nn.functional as F\ng = lambda x: F.interpolate(x, scale_factor=2)\n",
        "user.py": "import api as A\ny = A.resize(x, 4, mode='bicubic')\n",
        "pil.py": "from PIL import Image\nimg = Image.open('a.png').resize((4, 4))\n",
    })
    report = check_paths([str(tmp_path)], Config(), jobs=1)
    by_file = {Path(r.path).name: r for r in report.results}
    assert [(f.code, "bicubic" in f.message) for f in by_file["user.py"].findings] == [("CP104", True)]
    assert not by_file["pil.py"].parsed


def test_star_imports_in_a_cycle_terminate(tmp_path: Path):
    root = _tree(tmp_path / "pkg", {
        "__init__.py": "from .a import *\n",
        "a.py": "from .b import *\nimport torch.nn.functional as F\ndef g(x):\n    return F.interpolate(x, scale_factor=2)\n",
        "b.py": "from .a import *\nfrom pkg.ops import *\n",
        "ops.py": WRAPPER,
        "user.py": "from pkg import resize, missing\ndef f(x):\n    return resize(x, 4, mode='bilinear') + missing(x)\n",
    })
    report = check_paths([str(root)], Config(), jobs=1)
    user = next(r for r in report.results if r.path.endswith("user.py"))
    assert [f.code for f in user.findings] == ["CP101"]


def test_a_project_subclass_built_in_a_file_without_api_names_is_found(tmp_path: Path):
    # `layers.Resizer` subclasses nn.Upsample; `model.py` spells no API name at all.
    root = _tree(tmp_path / "pkg", {
        "__init__.py": "",
        "layers.py": "from torch import nn\nclass Resizer(nn.Upsample):\n    pass\n",
        "model.py": "from pkg.layers import Resizer\nup = Resizer(scale_factor=2, mode='bilinear')\n",
    })
    report = check_paths([str(root)], Config(), jobs=1)
    model = next(r for r in report.results if r.path.endswith("model.py"))
    assert [f.code for f in model.findings] == ["CP101"]


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        pytest.param("import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2)\n", True, id="call"),
        pytest.param("from torch.nn.functional import interpolate as up\n", True, id="import"),
        pytest.param("from torch import nn\nclass U(nn.Upsample):\n    pass\n", True, id="base-class"),
        pytest.param("x = nn.MaxPool2d(2)\n", True, id="module"),
        pytest.param("from diffusers import Upsample2D\nself.upsamplers = [Upsample2D(c)]\n", False, id="look-alike-names"),
        pytest.param("max_pool_size = 3\nuse_conv3d_stem = True\n", False, id="config-words"),
        pytest.param("x = 1\n", False, id="nothing"),
        # An API name only in a comment or a string literal holds no site.
        pytest.param("# F.interpolate(x)\nx = 1\n", False, id="comment"),
        pytest.param('"""Resize with bilinear interpolate."""\nx = 1\n', False, id="docstring"),
        pytest.param("s = 'interpolate'\nt = b\"MaxPool2d\"\n", False, id="strings"),
        pytest.param('s = "a\\"interpolate"\n', False, id="escaped-quote"),
        pytest.param("'''one \\''' interpolate'''\n", False, id="escaped-triple-quote"),
        pytest.param('if"interpolate" in x:\n    pass\n', False, id="string-after-keyword"),
        pytest.param('s = "a\\\ninterpolate"\n', False, id="continued-line"),
        # ...and anything not read for sure counts as code.
        pytest.param('s = "x"  # upsample\ny = F.interpolate(x)\n', True, id="after-comment"),
        pytest.param('"""doc"""\n# max_pool2d\n"upsample"\nnn.Upsample(2)\n', True, id="after-strings"),
        pytest.param('s = f"{F.interpolate(x)}"\n', True, id="f-string"),
        pytest.param('s = rf"{F.interpolate(x)}"\n', True, id="rf-string"),
        pytest.param('s = "unterminated\ny = F.interpolate(x)\n', True, id="unterminated"),
        pytest.param('s = r"\\\\"; y = F.interpolate(x)\n', True, id="raw-backslashes"),
        # A global adaptive pool (output size 1: a mean or a max) is never a finding...
        pytest.param("from torch import nn\np = nn.AdaptiveAvgPool2d(1)\n", False, id="global-pool-module"),
        pytest.param("from torch import nn\np = nn.AdaptiveMaxPool2d(output_size=(1, 1))\n", False, id="global-pool-keyword"),
        pytest.param("from torch import nn\np = nn.AdaptiveAvgPool1d([1])\n", False, id="global-pool-1d"),
        pytest.param("import torch.nn.functional as F\ny = F.adaptive_avg_pool2d(x.h, (1, 1))\n", False, id="global-pool-function"),
        pytest.param("import torch.nn.functional as F\ny = F.adaptive_max_pool2d_with_indices(x, 1)\n", False, id="global-pool-with-indices"),
        # ...but any other size, a tuple the wrong length, an import, a bare name or an input that
        # is not a plain name is read by the parser.
        pytest.param("from torch import nn\np = nn.AdaptiveAvgPool2d(7)\n", True, id="pool-size-7"),
        pytest.param("from torch import nn\np = nn.AdaptiveAvgPool2d((1, 2))\n", True, id="pool-size-1x2"),
        pytest.param("from torch import nn\np = nn.AdaptiveAvgPool1d((1, 1))\n", True, id="pool-1d-two-sizes"),
        pytest.param("from torch.nn import AdaptiveAvgPool2d\np = AdaptiveAvgPool2d(1)\n", True, id="pool-imported"),
        pytest.param("import torch.nn.functional as F\ny = F.adaptive_avg_pool2d(f(x), 1)\n", True, id="pool-input-call"),
        pytest.param("from torch import nn\np = nn.AdaptiveAvgPool3d(1)\n", True, id="pool-3d"),
        pytest.param("from torch import nn\np = nn.AdaptiveAvgPool2d(1)\nq = nn.MaxPool2d(3)\n", True, id="pool-and-site"),
    ],
)
def test_the_prefilter_wants_a_whole_api_name(text: str, holds: bool):
    import ast
    import tokenize
    from io import StringIO

    from candle_port.analysis.apis import API_SHORT_NAMES
    from candle_port.pipeline.prefilter import may_hold_sites

    from candle_port.pipeline.checker import check_text

    assert may_hold_sites(text) is holds
    if not holds:  # a skipped text parses and has no finding; it names no API but a global pool
        ast.parse(text)
        assert check_text(text, "t.py", Config()).findings == []
        names = {t.string for t in tokenize.generate_tokens(StringIO(text).readline) if t.type == tokenize.NAME}
        assert not names & API_SHORT_NAMES - {"AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AdaptiveAvgPool1d", "adaptive_avg_pool2d", "adaptive_max_pool2d_with_indices"}


def test_every_api_name_contains_a_fragment():
    from candle_port.analysis.apis import API_NAME_FRAGMENTS, API_SHORT_NAMES

    assert all(any(fragment in name for fragment in API_NAME_FRAGMENTS) for name in API_SHORT_NAMES)


def test_an_overlay_patches_the_stored_definer_table_exactly():
    """overlay() derives its definer table from the stored index's; it must equal a rebuilt one."""
    from candle_port.analysis.index import ModuleSummary, ProjectIndex

    def summary(module, constants=(), classes=(), wrappers=(), passes=()):
        return ModuleSummary(
            module, module.replace(".", "/") + ".py", constants={c: ["x"] for c in constants},
            classes={c: ["torch.nn.Upsample"] for c in classes},
            wrappers=[{"name": f"{module}.{w}", "params": ["x", "mode"], "param": "mode", "default": None,
                       "api": "torch.nn.functional.interpolate", "line": 1, "path": "p.py", "level": 0} for w in wrappers],
            passes=list(passes),
        )

    stored = summary("pkg.a", constants=["MODE", "OLD"], classes=["Up"], wrappers=["resize"])
    index = ProjectIndex([
        stored,
        summary("pkg.b", constants=["MODE"], passes=[["pkg.b.up", ["x", "how"], "how", None, 3, ["pkg.a.resize"], "mode", None]]),
        summary("pkg.c", classes=["Up"]),
    ])
    assert "pkg.b.up" in index.wrappers  # a wrapper of a wrapper from the fixed point
    for changed in (
        summary("pkg.a", constants=["MODE", "NEW"], wrappers=["resize", "scale"]),
        summary("pkg.b", constants=["OTHER"], passes=[["pkg.b.up", ["x", "how"], "how", None, 3, ["pkg.a.resize"], "mode", None]]),
        summary("pkg.d", classes=["Up"], wrappers=["warp"]),
    ):
        over = index.overlay(changed)
        patched = {name: sorted(s.module for s in found) for name, found in over._definers().items() if found}
        del over._definer_table
        rebuilt = {name: sorted(s.module for s in found) for name, found in over._definers().items() if found}
        assert patched == rebuilt, changed.module
