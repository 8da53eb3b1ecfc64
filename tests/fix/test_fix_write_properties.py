"""Properties of the whole write path (bytes on disk), and corpus files with sites inserted at random.

For any mix of BOM, coding cookie and newline style, what port-fix writes is exactly the pure
rewrite encoded back the file's way, it compiles as Python reads it, and a second run changes
nothing. Bounded: few examples, small sources.
"""

from __future__ import annotations

import ast
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from candle_port.api import fix_source
from candle_port.rewriters.files import fix_files
from candle_port.rewriters.writeback import TEMP_SUFFIX
from candle_port.pipeline.sources import decode_source

HEADERS = ["import torch.nn.functional as F\n", "from torch.nn import functional as F\nfrom torch import nn\n"]
LINES = [
    "y = F.interpolate(x, scale_factor=2, mode='bilinear')\n",
    "s = 'caf\u00e9'  # a non-ASCII literal\n",
    "def f(x):\n    return F.interpolate(x, size=(3, 4), mode='bilinear')\n",
    "z = 1  \n",
    "# comment with trailing spaces   \n",
]
SITE = "y_inserted = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
CORPUS = Path(os.environ.get("CANDLE_PORT_CORPUS") or Path(__file__).resolve().parents[2] / ".corpus")


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    header=st.sampled_from(HEADERS),
    lines=st.lists(st.sampled_from(LINES), min_size=1, max_size=5),
    newline=st.sampled_from(["\n", "\r\n", "mixed"]),
    encoding=st.sampled_from(["utf-8", "utf-8-bom", "latin-1-cookie"]),
    strategy=st.sampled_from(["runtime", "nearest", "convtranspose"]),
)
def test_bytes_on_disk_are_the_pure_rewrite_encoded_back(header, lines, newline, encoding, strategy):
    text = header + "".join(lines)
    if encoding == "latin-1-cookie":
        text = "# -*- coding: latin-1 -*-\n" + text
    if newline == "\r\n":
        text = text.replace("\n", "\r\n")
    elif newline == "mixed":
        parts = text.split("\n")
        text = "".join(p + ("\r\n" if i % 2 else "\n") for i, p in enumerate(parts[:-1])) + parts[-1]
    data = text.encode("latin-1" if encoding == "latin-1-cookie" else "utf-8")
    if encoding == "utf-8-bom":
        data = b"\xef\xbb\xbf" + data
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "m.py"
        path.write_bytes(data)
        source = decode_source(data)
        expected = source.encode(fix_source(source.text, strategy=strategy, path=str(path)).text)
        report = fix_files([directory], strategy, jobs=1)
        assert not report.errors, report.errors
        written = path.read_bytes()
        assert written == expected
        assert written.startswith(b"\xef\xbb\xbf") == (encoding == "utf-8-bom")
        compile(written, str(path), "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        again = fix_files([directory], strategy, jobs=1)
        assert not again.changed and path.read_bytes() == written
        assert not [p for p in os.listdir(directory) if p.endswith(TEMP_SUFFIX)]


def _corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    picked = sorted(p for p in CORPUS.rglob("*.py") if 2000 < p.stat().st_size < 12000)
    return picked[:: max(1, len(picked) // 8)][:8]


@pytest.mark.corpus
def test_corpus_files_with_a_site_inserted_at_random(corpus_dir):
    files = _corpus_files()
    assert files, f"no corpus files under {CORPUS}"

    @settings(max_examples=16, deadline=None, suppress_health_check=list(HealthCheck))
    @given(index=st.integers(0, len(files) - 1), where=st.floats(0, 1), strategy=st.sampled_from(["runtime", "nearest"]))
    def inserted(index, where, strategy):
        text = files[index].read_text(encoding="utf-8")
        body = ast.parse(text).body
        future = [n.end_lineno for n in body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
        start = max(future, default=0)  # nothing may precede `from __future__` imports
        boundaries = [start] + [node.end_lineno for node in body if node.end_lineno > start]  # after a top-level statement
        at = boundaries[min(len(boundaries) - 1, int(where * len(boundaries)))]
        lines = text.splitlines(keepends=True)
        new = "".join(lines[:at]) + "import torch.nn.functional as F\n" + SITE + "".join(lines[at:])
        result = fix_source(new, strategy=strategy, path=files[index].name)
        assert result.error is None, result.error
        assert result.fixed, "the inserted site was not fixed"
        ast.parse(result.text)
        again = fix_source(result.text, strategy=strategy, path=files[index].name)
        assert not again.changed

    inserted()
