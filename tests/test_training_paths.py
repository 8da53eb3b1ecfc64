"""port-check is right about what matters (issue 36): a finding in code on no training path (a
method of a class that is no nn.Module or loss: a predictor, a validator, plotting, a data
transform) is a warning that says why, and port-fix leaves it alone; `--include-untrained`
restores errors and rewrites. analysis/training.py decides; tests/truth/training_paths.jsonl
holds ultralytics' and segment-anything's findings labelled by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from candle_port.api import check_source, fix_source
from candle_port.config import Config
from candle_port.pipeline.engine import check_paths

TRUTH = Path(__file__).resolve().parent / "truth" / "training_paths.jsonl"
BILINEAR = "F.interpolate(x, scale_factor=2, mode='bilinear')"


def _severity(body: str, config: Config | None = None) -> list[tuple[str, str]]:
    text = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n" + body
    return [(f.severity.value, f.message) for f in check_source(text, "model.py", config)]


@pytest.mark.parametrize(
    ("body", "trains"),
    [
        pytest.param(f"class Head(nn.Module):\n    def forward(self, x):\n        return {BILINEAR}\n", True, id="nn-module-method"),
        pytest.param(f"class Predictor:\n    def postprocess(self, x):\n        return {BILINEAR}\n", False, id="plain-class-method"),
        pytest.param(f"class Annotator(object):\n    def masks(self, x):\n        def inner():\n            return {BILINEAR}\n        return inner()\n", False, id="nested-in-a-plain-class-method"),
        pytest.param(f"class Base:\n    pass\n\n\nclass Validator(Base):\n    def run(self, x):\n        return {BILINEAR}\n", False, id="plain-local-base"),
        pytest.param(f"class SegLoss:\n    def __call__(self, x):\n        return {BILINEAR}\n", True, id="loss-class-without-bases"),
        pytest.param(f"class Base(nn.Module):\n    pass\n\n\nclass Net(Base):\n    def forward(self, x):\n        return {BILINEAR}\n", True, id="module-through-a-local-base"),
        pytest.param(f"import lightning as L\n\n\nclass Lit(L.LightningModule):\n    def training_step(self, x):\n        return {BILINEAR}\n", True, id="another-library-base"),
        pytest.param(f"class Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return {BILINEAR}\n", True, id="autograd-function"),
        pytest.param(f"def resize(x):\n    return {BILINEAR}\n", True, id="module-level-function"),
    ],
)
def test_a_site_is_off_a_training_path_only_in_a_plain_class(body, trains):
    (severity, message), = _severity(body)
    assert severity == ("error" if trains else "warning")
    assert ("not on a training path" in message) is not trains


def test_include_untrained_restores_the_error():
    body = f"class Predictor:\n    def postprocess(self, x):\n        return {BILINEAR}\n"
    assert _severity(body, Config(include_untrained=True)) == [
        ("error", "F.interpolate(mode='bilinear') has no backward in candle (upsample_bilinear2d)")
    ]


def test_a_base_class_in_another_module_is_followed_through_the_index(tmp_path):
    """ultralytics' `DetectionPredictor(BasePredictor)`: the base's module holds no site."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "base.py").write_text("class BasePredictor:\n    def __call__(self, x):\n        return x\n")
    (tmp_path / "pkg" / "predict.py").write_text(
        "import torch.nn.functional as F\n\nfrom pkg.base import BasePredictor\n\n\n"
        f"class Predictor(BasePredictor):\n    def postprocess(self, x):\n        return {BILINEAR}\n"
    )
    (tmp_path / "pkg" / "head.py").write_text(
        "import torch.nn.functional as F\nfrom torch import nn\n\n\n"
        f"class Head(nn.Module):\n    def forward(self, x):\n        return {BILINEAR}\n"
    )
    report = check_paths([str(tmp_path)], jobs=1)
    assert sorted((Path(f.path).name, f.severity.value) for f in report.findings) == [("head.py", "error"), ("predict.py", "warning")]


def test_port_fix_follows_the_decision():
    text = (
        "import torch.nn.functional as F\nfrom torch import nn\n\n\n"
        f"class Predictor:\n    def postprocess(self, x):\n        return {BILINEAR}\n\n\n"
        f"class Head(nn.Module):\n    def forward(self, x):\n        return {BILINEAR}\n"
    )
    result = fix_source(text)
    assert [f.line for f in result.fixed] == [12]
    assert [(s.line, s.reason.split(":")[0]) for s in result.skipped] == [(7, "not on a training path")]
    assert [f.line for f in fix_source(text, config=Config(include_untrained=True)).fixed] == [7, 12]


@pytest.mark.corpus
def test_real_projects_errors_are_where_training_can_reach(real_projects_dir):
    """Every labelled finding is found; every one on a training path stays an error (recall), only
    findings labelled off a training path became warnings, and the errors' precision rose."""
    rows = [json.loads(line) for line in TRUTH.read_text(encoding="utf-8").splitlines() if line.strip()]
    truth = {(r["path"], r["line"], r["code"]): r["on_training_path"] == "yes" for r in rows}
    found = {}
    for config in (Config(include_untrained=True), Config()):
        for package in ("ultralytics", "segment_anything"):
            root = real_projects_dir / package
            for f in check_paths([str(root / package)], config, cache_dir=None).findings:
                key = (Path(f.path).relative_to(root).as_posix(), f.line, f.code)
                found.setdefault(config.include_untrained, {})[key] = f.severity.value
    before, after = found[True], found[False]
    assert set(before) == set(after) == set(truth)
    assert all(after[key] == "error" for key, on_path in truth.items() if on_path and before[key] == "error")
    assert all(truth[key] is False for key in after if after[key] != before[key])

    def precision(severities):
        errors = [key for key, severity in severities.items() if severity == "error"]
        return sum(truth[key] for key in errors) / len(errors)

    assert precision(after) > precision(before)


def test_a_layer_built_in_a_plain_class_may_train():
    """A factory class building layers (kornia's `...Builder.build`): the layer trains wherever it
    is put, so its finding stays an error."""
    body = "class Builder:\n    def build(self):\n        return nn.Upsample(scale_factor=2, mode='bilinear')\n"
    assert [severity for severity, _ in _severity(body)] == ["error"]


def test_a_file_found_by_its_wrapper_call_follows_its_base_classes(tmp_path):
    """ultralytics' FastSAMPredictor: its file names no API (it calls the project's `scale_masks`,
    a wrapper), so it is parsed only in a later pass; its base chain (SegmentationPredictor,
    DetectionPredictor, BasePredictor) runs through modules with no site."""
    files = {
        "pkg/__init__.py": "",
        "pkg/ops.py": "import torch.nn.functional as F\n\n\ndef scale_masks(x, mode='bilinear'):\n    return F.interpolate(x, scale_factor=2, mode=mode)\n",
        "pkg/base.py": "class BasePredictor:\n    pass\n",
        "pkg/detect.py": "from pkg.base import BasePredictor\n\n\nclass DetectionPredictor(BasePredictor):\n    pass\n",
        "pkg/fast.py": "from pkg.detect import DetectionPredictor\nfrom pkg.ops import scale_masks\n\n\n"
                       "class FastPredictor(DetectionPredictor):\n    def postprocess(self, x):\n        return scale_masks(x)\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    report = check_paths([str(tmp_path)], jobs=1)
    assert sorted((Path(f.path).name, f.code, f.severity.value) for f in report.findings) == [
        ("fast.py", "CP101", "warning"), ("ops.py", "CP102", "warning"),
    ]


def test_port_fix_on_a_tree_follows_bases_in_other_modules(tmp_path):
    """ultralytics' predictors subclass a BasePredictor of another module: one file alone cannot
    tell, so port-fix asks port-check with the project index and leaves them alone."""
    from candle_port.api import fix_paths

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "base.py").write_text("class BasePredictor:\n    pass\n")
    predict = tmp_path / "pkg" / "predict.py"
    predict.write_text(
        "import torch.nn.functional as F\n\nfrom pkg.base import BasePredictor\n\n\n"
        f"class Predictor(BasePredictor):\n    def postprocess(self, x):\n        return {BILINEAR}\n"
    )
    report = fix_paths([str(tmp_path)], write=False)
    (result,) = [r for r in report.results if r.path == str(predict)]
    assert not result.fixed and [s.reason.split(":")[0] for s in result.skipped] == ["not on a training path"]
    report = fix_paths([str(tmp_path)], config=Config(include_untrained=True), write=False)
    assert [len(r.fixed) for r in report.results if r.path == str(predict)] == [1]


def test_a_plain_class_an_nn_module_constructs_may_train():
    """diffusers' attention processors: plain classes an nn.Module builds and calls in forward."""
    body = (
        f"class AttnProcessor:\n    def __call__(self, attn, x):\n        return {BILINEAR}\n\n\n"
        "class Attention(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.processor = AttnProcessor()\n"
    )
    assert [severity for severity, _ in _severity(body)] == ["error"]


def _predictor_tree(tmp_path, base: str) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(base)
    (pkg / "predict.py").write_text(
        "import torch.nn.functional as F\n\nfrom pkg.base import BasePredictor\n\n\n"
        f"class Predictor(BasePredictor):\n    def postprocess(self, x):\n        return {BILINEAR}\n"
    )
    return pkg


PLAIN_BASE = "class BasePredictor:\n    pass\n"
MODULE_BASE = "from torch import nn\n\n\nclass BasePredictor(nn.Module):\n    pass\n"


def _verdicts(pkg: Path, cache: Path) -> list[tuple[str, str, bool]]:
    report = check_paths([str(pkg)], Config(), cache_dir=str(cache), jobs=1)
    return [(Path(f.path).name, f.severity.value, "not on a training path" in f.message) for f in report.findings]


@pytest.mark.parametrize(
    ("first", "then", "verdict"),
    [
        pytest.param(PLAIN_BASE, MODULE_BASE, ("error", False), id="plain-base-becomes-a-module"),
        pytest.param(MODULE_BASE, PLAIN_BASE, ("warning", True), id="module-base-becomes-plain"),
    ],
)
def test_a_cached_file_follows_its_base_class_edited_in_another_file(tmp_path, monkeypatch, first, then, verdict):
    """The cache keeps what decides predict.py's verdict (its base's qualified name), not the
    verdict: each run decides with its own index, so editing base.py alone flips it, and
    predict.py is answered from the cache, not checked again."""
    pkg = _predictor_tree(tmp_path, first)
    cache = tmp_path / "cache"
    before = _verdicts(pkg, cache)
    assert before == [("predict.py", "warning" if first == PLAIN_BASE else "error", first == PLAIN_BASE)]
    assert _verdicts(pkg, cache) == before  # warm

    import candle_port.pipeline.checker as checker

    real = checker.check_text

    def not_predict(text, path, *args, **kwargs):
        assert not path.endswith("predict.py"), "predict.py was checked again"
        return real(text, path, *args, **kwargs)

    monkeypatch.setattr(checker, "check_text", not_predict)
    (pkg / "base.py").write_text(then)
    assert _verdicts(pkg, cache) == [("predict.py", *verdict)]
    (pkg / "base.py").write_text(first)
    assert _verdicts(pkg, cache) == before


def test_the_verdict_is_the_same_with_and_without_the_cache(tmp_path):
    """A file whose class is named by another class of its module (diffusers' processors): the
    decision reads that class's bases in another module, with the cache cold, warm or absent."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(PLAIN_BASE)
    (pkg / "attention.py").write_text(
        "import torch.nn.functional as F\n\nfrom pkg.base import BasePredictor\n\n\n"
        f"class Processor(BasePredictor):\n    def __call__(self, x):\n        return {BILINEAR}\n\n\n"
        "class Attention(BasePredictor):\n    def __init__(self):\n        self.processor = Processor()\n"
    )
    cache = tmp_path / "cache"
    plain = [("attention.py", "warning", True)]
    assert _verdicts(pkg, cache) == plain
    assert _verdicts(pkg, cache) == plain
    assert [(Path(f.path).name, f.severity.value) for f in check_paths([str(pkg)], Config(), jobs=1).findings] == [("attention.py", "warning")]
    (pkg / "base.py").write_text(MODULE_BASE)  # both classes are nn.Modules now
    assert _verdicts(pkg, cache) == [("attention.py", "error", False)]


def test_a_plain_class_named_only_by_plain_classes_of_other_modules_bases(tmp_path):
    """Processor is baseless and named by Attention, whose base is a plain class in another module:
    no class that trains names it. Decided with the whole index; before, the first pass (which
    cannot see base.py) kept it an error unless attention.py happened to be checked again."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(f"import torch.nn.functional as F\n\n\ndef helper(x):\n    return {BILINEAR}\n\n\n" + PLAIN_BASE)
    (pkg / "attention.py").write_text(
        "import torch.nn.functional as F\n\nfrom pkg.base import BasePredictor\n\n\n"
        f"class Processor:\n    def __call__(self, x):\n        return {BILINEAR}\n\n\n"
        "class Attention(BasePredictor):\n    def __init__(self):\n        self.processor = Processor()\n"
    )
    found = {Path(f.path).name: f.severity.value for f in check_paths([str(pkg)], Config(), jobs=1).findings}
    assert found == {"attention.py": "warning", "base.py": "error"}
    (pkg / "base.py").write_text(f"import torch.nn.functional as F\n\n\ndef helper(x):\n    return {BILINEAR}\n\n\n" + MODULE_BASE)
    found = {Path(f.path).name: f.severity.value for f in check_paths([str(pkg)], Config(), jobs=1).findings}
    assert found == {"attention.py": "error", "base.py": "error"}


def test_port_fix_with_a_warm_cache_still_leaves_the_site_alone(tmp_path):
    """port-fix asks port-check, whose cache did not keep a finding's `untrained` (before: the
    second run rewrote the predictor's resize). The cache keeps the condition now."""
    from candle_port.api import fix_paths

    pkg = _predictor_tree(tmp_path, PLAIN_BASE)
    config = Config(cache_dir=str(tmp_path / "cache"))
    for _ in range(2):
        report = fix_paths([str(pkg)], config=config, write=False)
        (result,) = [r for r in report.results if r.path.endswith("predict.py")]
        assert not result.fixed and [s.reason.split(":")[0] for s in result.skipped] == ["not on a training path"]
