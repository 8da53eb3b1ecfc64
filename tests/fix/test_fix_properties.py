"""Property: for generated and real sources, port-fix never crashes, never emits code that does
not parse, and is idempotent. Bounded to a few seconds (few examples, small sources)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from candle_port.api import fix_source

STRATEGIES = ("runtime", "nearest", "convtranspose")
CORPUS = Path(os.environ.get("CANDLE_PORT_CORPUS") or Path(__file__).resolve().parents[2] / ".corpus")

# Snippets that hold sites, stitched into programs so generated code exercises the rewriters.
HEADERS = [
    "import torch.nn.functional as F\n",
    "from torch.nn import functional as F\n",
    "from torch import nn\nF = nn.functional\n",
    '"""Doc."""\nfrom __future__ import annotations\nimport torch.nn.functional as F\nfrom torch import nn\n',
]
LINES = [
    "y = F.interpolate(x, scale_factor=2, mode='bilinear')\n",
    "y = F.interpolate(x, None, 2, 'bilinear', False)\n",
    "y = F.interpolate(x, size=(3, 4), mode=\"bilinear\", align_corners=True)\n",
    "y = F.upsample_bilinear(x, scale_factor=2)  # port: ignore\n",
    "y = F.interpolate(F.interpolate(x, scale_factor=2, mode='bilinear'), scale_factor=2,\n    mode='bilinear', align_corners=False,)\n",
    "def f(x, mode='bilinear'):\n    return F.interpolate(x, scale_factor=3, mode=mode)\n",
    "import torch.nn as nn\nm = nn.Sequential(nn.Upsample(scale_factor=2, mode='bilinear'))\n",
    "import functools\np = functools.partial(F.interpolate, mode='bilinear')\n",
    "candle_runtime = 1\n",
    "class U(nn.Upsample):\n    pass\nu = U(scale_factor=2, mode='bilinear')\n",
]


def _check(text: str, strategy: str) -> None:
    result = fix_source(text, strategy=strategy)
    if result.error is not None:
        assert not result.changed
        return
    ast.parse(result.text)
    again = fix_source(result.text, strategy=strategy)
    assert again.error is None
    assert not again.changed, (text, result.text, again.text)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    header=st.sampled_from(HEADERS),
    lines=st.lists(st.sampled_from(LINES), min_size=1, max_size=4),
    crlf=st.booleans(),
    strategy=st.sampled_from(STRATEGIES),
)
def test_stitched_sites(header, lines, crlf, strategy):
    text = header + "".join(lines)
    if crlf:
        text = text.replace("\n", "\r\n")
    _check(text, strategy)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(code=hypothesmith.from_grammar(auto_target=False).filter(lambda s: len(s) < 400), strategy=st.sampled_from(STRATEGIES))
def test_generated_programs(code, strategy):
    # Make most generated programs hold a site, at the end, after arbitrary code.
    _check("import torch.nn.functional as F\n" + code + "\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n", strategy)


def _corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    picked = []
    for path in sorted(CORPUS.rglob("*.py")):
        if path.stat().st_size < 6000 and "interpolate" in path.read_text(encoding="utf-8", errors="replace"):
            picked.append(path)
    return picked[:: max(1, len(picked) // 6)][:6]


@pytest.mark.corpus
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_corpus_files(strategy, corpus_dir):
    files = _corpus_files()
    assert files, f"no corpus files under {CORPUS}"
    for path in files:
        _check(path.read_text(encoding="utf-8"), strategy)
