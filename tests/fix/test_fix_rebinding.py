"""A name bound to something else in the same scope is not trusted to be torch's: the site is refused."""

from __future__ import annotations

import pytest

from candle_port.api import fix_source

CALL = "y = F.interpolate(x, scale_factor=2, mode='bilinear')\n"

LEFT_ALONE = [
    pytest.param("import torch.nn.functional as F\ndel F\nimport my_ops as F\n" + CALL, id="del-then-import-other"),
    pytest.param("import torch.nn.functional as F\nfor F in ops:\n    " + CALL, id="for-target"),
    pytest.param("import torch.nn.functional as F\nwith ctx() as F:\n    " + CALL, id="with-target"),
    pytest.param("import torch.nn.functional as F\nmatch v:\n    case F:\n        " + CALL, id="match-capture"),
    pytest.param("import torch.nn.functional as F\nF = my_functional\n" + CALL, id="assigned-other-module"),
    pytest.param(
        "from torch.nn.functional import interpolate as up\nup = my_up\ny = up(x, scale_factor=2, mode='bilinear')\n",
        id="from-import-reassigned",
    ),
]

REWRITTEN = [
    pytest.param("import torch.nn.functional as F\n" + CALL, id="single-import"),
    pytest.param("try:\n    import torch.nn.functional as F\nexcept ImportError:\n    F = None\n" + CALL, id="none-fallback"),
    pytest.param(
        "try:\n    import torch.nn.functional as F\nexcept ImportError:\n    from torch.nn import functional as F\n" + CALL,
        id="two-forms-of-the-same-module",
    ),
    pytest.param("import torch.nn.functional as F\ndef f(F):\n    return F\n" + CALL, id="rebound-only-in-another-scope"),
]


@pytest.mark.parametrize("source", LEFT_ALONE)
def test_rebound_name_is_refused(source: str):
    result = fix_source(source, path="m.py")
    assert not result.changed and not result.fixed
    assert [r.code for r in result.refused] == ["CP101"]
    assert "also bound to something else in this scope" in result.refused[0].reason


@pytest.mark.parametrize("source", REWRITTEN)
def test_single_meaning_name_is_rewritten(source: str):
    result = fix_source(source, path="m.py")
    assert result.changed and len(result.fixed) == 1 and not result.refused
    assert "candle_runtime.interpolate(x" in result.text
