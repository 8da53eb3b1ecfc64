"""port-fix removes the torch imports its rewrite left unused, never one the user left unused (issue 36).

Fixture pair: fixtures/fix/runtime/import_made_unused_by_the_fix.{in,out}.py. The invariant below
is pyflakes' F401 (an imported name never read) computed with symtable, on every fixture.
"""

from __future__ import annotations

import symtable
from pathlib import Path

import pytest

from candle_port.api import fix_source
from candle_port.pipeline.sources import decode_source

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fix"
CASES = sorted(FIXTURES.glob("*/*.in.py"))


def never_read_imports(text: str) -> set[str]:
    """Top-level imported names no scope reads (F401), by symtable: what ruff would flag."""
    top = symtable.symtable(text, "m.py", "exec")
    read: set[str] = set()
    pending = [top]
    while pending:
        table = pending.pop()
        pending.extend(table.get_children())
        read |= {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    import ast

    top_level = {  # the imports port-fix may remove: top-level statements (not inside try/if)
        alias.asname or alias.name.split(".")[0]
        for statement in ast.parse(text).body
        if isinstance(statement, (ast.Import, ast.ImportFrom))
        for alias in statement.names
    }
    imported = {s.get_name() for s in top.get_symbols() if s.is_imported()} & top_level
    # A name written as a word in a string (`__all__`, a string annotation) counts as read, as
    # port-fix counts it (unused_imports.py keeps such an import: lookalikes_unchanged's string).
    import re

    in_strings = {word for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  for word in re.findall(r"\w+", node.value)}
    return imported - read - in_strings - {"candle_runtime", "candle_convtranspose"}


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name[: -len('.in.py')]}")
def test_a_fix_leaves_no_import_unused_that_was_used(case: Path):
    text = decode_source(case.read_bytes()).text
    result = fix_source(text, strategy=case.parent.name, path=case.name)
    assert never_read_imports(result.text) <= never_read_imports(text)


LEFT_ALONE = {
    "the-users-own-unused-import": ("import torch.nn.functional as F\nfrom torch.nn import init\n", "init"),
    "still-used-elsewhere": ("import torch.nn.functional as F\nz = F.relu(x)\n", "F"),
    "named-in-all": ("import torch.nn.functional as F\n__all__ = ['F']\n", "F"),
    "string-annotation": ("import torch.nn.functional as F\ndef g(f: 'F.Callable'): ...\n", "F"),
    "noqa-f401-comment": ("import torch.nn.functional as F  # noqa: F401\n", "F"),
    "another-comment": ("import torch.nn.functional as F  # the functional API\n", "F"),
    "docstring-names-it-but-code-reads-it": ('"""Uses F."""\nimport torch.nn.functional as F\nz = F.relu(x)\n', "F"),
    "shares-its-line": ("import torch.nn.functional as F; import os\n", "F"),
    "inside-a-try": ("try:\n    import torch.nn.functional as F\nexcept ImportError:\n    pass\n", "F"),
}
SITE = "y = F.interpolate(x, scale_factor=2, mode='bilinear')\n"


@pytest.mark.parametrize(("header", "name"), LEFT_ALONE.values(), ids=LEFT_ALONE.keys())
def test_imports_left_alone(header: str, name: str):
    result = fix_source(header + SITE, path="m.py")
    assert result.changed and result.fixed
    assert name not in result.imports_removed
    assert next(line for line in header.splitlines() if name in line) in result.text


REWRITTEN = {
    "its-only-use-was-fixed": (
        "import torch.nn.functional as F\n" + SITE,
        "import candle_port.runtime as candle_runtime\ny = candle_runtime.interpolate(x, scale_factor=2, mode='bilinear')\n",
    ),
    "one-name-of-several": (
        "from torch.nn.functional import interpolate, relu\ny = relu(interpolate(x, scale_factor=2, mode='bilinear'))\n",
        "from torch.nn.functional import relu\nimport candle_port.runtime as candle_runtime\n"
        "y = relu(candle_runtime.interpolate(x, scale_factor=2, mode='bilinear'))\n",
    ),
    "a-noqa-for-another-code-goes-with-its-line": (
        "import torch.nn.functional as F  # noqa: E402\n" + SITE,
        "import candle_port.runtime as candle_runtime\ny = candle_runtime.interpolate(x, scale_factor=2, mode='bilinear')\n",
    ),
    "crlf-kept": (
        "from torch.nn.functional import interpolate as up, relu\r\ny = relu(up(x, scale_factor=2, mode='bilinear'))\r\n",
        "from torch.nn.functional import relu\r\nimport candle_port.runtime as candle_runtime\r\n"
        "y = relu(candle_runtime.interpolate(x, scale_factor=2, mode='bilinear'))\r\n",
    ),
}


def test_a_packages_init_keeps_its_imports_they_may_be_re_exports():
    before = "from torch.nn import Upsample\nup = Upsample(scale_factor=2, mode='bilinear')\n"
    result = fix_source(before, path="pkg/__init__.py")
    assert result.fixed and result.text.startswith("from torch.nn import Upsample\n") and not result.imports_removed
    assert not fix_source(before, path="pkg/layers.py").text.startswith("from torch.nn import Upsample\n")


@pytest.mark.parametrize(("before", "after"), REWRITTEN.values(), ids=REWRITTEN.keys())
def test_imports_the_fix_made_unused_are_removed(before: str, after: str):
    result = fix_source(before, path="m.py")
    assert result.text == after
    assert not fix_source(result.text, path="m.py").changed
