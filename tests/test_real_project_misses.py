"""What a new user found port-check missing on projects nobody here wrote (issue 36): a str-Enum
of another module (monai's `InterpolateMode`), a subclass passing computed arguments through
`super().__init__` (ultralytics' `DWConvTranspose2d`), a mode kept on `self` and passed to a
resize helper (mmsegmentation's `Upsample`), and a nearest upsample whose input has a second
consumer (every U-Net, FPN and YOLO neck)."""

from __future__ import annotations

from pathlib import Path

import pytest

from candle_port.pipeline.engine import check_paths


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _codes(root: Path) -> list[tuple[str, str, str]]:
    report = check_paths([str(root)], jobs=1)
    assert not report.errors, report.errors
    return sorted((Path(f.path).relative_to(root).as_posix(), f.code, f.severity.value) for f in report.findings)


NET = (
    "import torch.nn as nn\nimport torch.nn.functional as F\n\nfrom pkg.{module} import InterpolateMode\n\n\n"
    "class Net(nn.Module):\n    def forward(self, x):\n        return F.interpolate(x, scale_factor=2, mode=InterpolateMode.BICUBIC{attr})\n"
)
STR_ENUM = "from enum import Enum\n\n\nclass StrEnum(str, Enum):\n    pass\n"
MODES = "class InterpolateMode(StrEnum):\n    NEAREST = 'nearest'\n    BICUBIC = 'bicubic'\n"


@pytest.mark.parametrize(
    "files",
    [
        pytest.param(
            {"pkg/__init__.py": "", "pkg/utils/__init__.py": "from .enums import InterpolateMode\n",
             "pkg/utils/enums.py": STR_ENUM + "\n\n" + MODES, "pkg/net.py": NET.format(module="utils", attr=".value")},
            id="re-exported-by-a-package-init",
        ),
        pytest.param(
            {"pkg/__init__.py": "", "pkg/base.py": STR_ENUM, "pkg/modes.py": "from pkg.base import StrEnum\n\n\n" + MODES,
             "pkg/net.py": NET.format(module="modes", attr=".value")},
            id="enum-base-in-another-module",
        ),
        pytest.param(
            {"pkg/__init__.py": "", "pkg/base.py": STR_ENUM, "pkg/modes.py": "from pkg.base import StrEnum\n\n\n" + MODES,
             "pkg/net.py": NET.format(module="modes", attr="")},
            id="str-member-without-value",
        ),
    ],
)
def test_str_enum_value_of_another_module_gives_the_real_mode(tmp_path, files):
    """`mode=InterpolateMode.BICUBIC.value` was CP102 (unknown): the enum's module names no API, so
    it was summarized only when the site's import named it directly, and its base `StrEnum` was
    recognized only in the same module."""
    assert _codes(_tree(tmp_path, files)) == [("pkg/net.py", "CP104", "error")]


def test_a_class_of_another_base_is_not_taken_for_an_enum(tmp_path):
    files = {
        "pkg/__init__.py": "", "pkg/base.py": "class Config:\n    pass\n",
        "pkg/modes.py": "from pkg.base import Config\n\n\nclass InterpolateMode(Config):\n    BICUBIC = 'bicubic'\n",
        "pkg/net.py": NET.format(module="modes", attr=".value"),
    }
    assert _codes(_tree(tmp_path, files)) == [("pkg/net.py", "CP102", "warning")]
