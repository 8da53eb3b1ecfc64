"""Skip parsing files whose text cannot hold a site.

Every site needs one of the API names written in the file as a whole identifier: a call
(`F.interpolate`), an import (`from torch.nn.functional import interpolate as up`), or a base
class (`class U(nn.Upsample)`), or a torch.nn class picked by name (`getattr(nn, mode)(...)`). So
a file where no identifier is an API's name has no site, and its
parse is skipped. The search finds API_NAME_FRAGMENTS by substring (fast), then reads the
identifier around each occurrence: `Upsample2D`, `self.upsamplers` or `max_pool_size` alone do not
send a file to the parser (65 of the 428 corpus files with a fragment have no API name), nor
does an API name in a comment or a string literal (71 of the other 363), nor a global adaptive
pool (`nn.AdaptiveAvgPool2d(1)`, `F.adaptive_avg_pool2d(x, (1, 1))`): an output size of 1 is a
mean or a max, which candle trains, so that call is never a finding (6 of torchvision's 41
candidate files hold nothing else).
A call of a project class or wrapper defined in another module is found by the second pass
(analysis/mentions.py). tests/test_corpus_truth.py (test_prefilter_loses_no_finding) proves on the
real corpus that this loses no finding.
"""

from __future__ import annotations

import bisect
import functools
import re

from candle_port.analysis.apis import ADAPTIVE_FUNCTIONS, ADAPTIVE_MODULES, API_NAME_FRAGMENTS, API_SHORT_NAMES

_IDENTIFIER_TAIL = re.compile(r"\w*")


def may_hold_sites(text: str) -> bool:
    code = CodeOffsets(text)
    return any(not _global_pool_call(text, name, start, end) and code.holds(start) for start, end, name in api_names(text))


def api_names(text: str):
    """(start, end, name) of each API name written in `text` as a whole identifier, comments and
    strings included: API_NAME_FRAGMENTS found by substring (fast), then the identifier around
    each read. In fragment order; a name holding two fragments comes twice."""
    for fragment in API_NAME_FRAGMENTS:
        at = text.find(fragment)
        while at != -1:
            start = at
            while start and (text[start - 1].isalnum() or text[start - 1] == "_"):
                start -= 1
            end = _IDENTIFIER_TAIL.match(text, at + len(fragment)).end()
            name = text[start:end]
            if name in API_SHORT_NAMES:
                yield start, end, name
            at = text.find(fragment, end)
    at = text.find("getattr(")
    while at != -1:  # a torch.nn class picked by name: `getattr(nn, pooling_mode)(...)` (N-HiTS)
        found = _GETATTR_NN.match(text, at + len("getattr("))
        if found and (at == 0 or not (text[at - 1].isalnum() or text[at - 1] in "_.")):
            yield at, found.end(), "getattr"
        at = text.find("getattr(", at + 1)


_GETATTR_NN = re.compile(r"\s*(?:torch\.)?nn\s*,")


# Output size 1 on every axis, as CP109 reads it (`_is_global`): 1, or a tuple or list of 1s, one per axis.
_ONES = {1: r"(?:1|\(\s*1\s*,\s*\)|\[\s*1\s*,?\s*\])", 2: r"(?:1|\(\s*1\s*,\s*1\s*,?\s*\)|\[\s*1\s*,\s*1\s*,?\s*\])"}


@functools.lru_cache(maxsize=None)
def _global_pool_arguments(module: bool, dims: int):
    """The arguments of a global pool call: a module's (1) or (output_size=1); a function's
    (name, 1), the input a plain (dotted) name. Compiled when first needed (a file with an
    adaptive pool), not at every start (1 ms)."""
    return re.compile(
        r"\(\s*"
        + ("" if module else r"(?:input\s*=\s*)?[A-Za-z_][\w.]*\s*,\s*")
        + rf"(?:output_size\s*=\s*)?{_ONES[dims]}\s*,?\s*\)"
    )


# Each 1-D and 2-D adaptive pool of analysis/apis.py: (a module, its dims), as CP109 reads them.
_ADAPTIVE_POOLS = {
    name: (api.is_module, 1 if "1d" in name.lower() else 2) for name, api in {**ADAPTIVE_MODULES, **ADAPTIVE_FUNCTIONS}.items()
}


def _global_pool_call(text: str, name: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` (`name`) is an attribute called with output size 1 (a global
    adaptive pool: never a finding). An import or a bare name is not: it may be aliased."""
    kind = _ADAPTIVE_POOLS.get(name)
    if kind is None or start == 0 or text[start - 1] != ".":
        return False
    return _global_pool_arguments(*kind).match(text, end) is not None


_QUOTE_OR_HASH = re.compile(r"[#'\"]")
_PREFIX_LETTERS = frozenset("rRbBuUfF")


class CodeOffsets:
    """Which offsets of a module's text are code, not in a comment or a string literal.

    A docstring or comment that says "bilinear interpolate" sent 65 corpus files (2.5 MB) to the
    parser for nothing. Comments and strings are found by searching for where they end (C speed),
    only as far into the text as asked; what this cannot read for sure (an f-string, an
    unterminated string) counts as code, so a file with a site is never skipped.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts: list[int] = []  # the comments and non-f strings read so far, in order
        self.ends: list[int] = []
        self.read_to = 0  # everything before this offset is read
        self.rest_is_code = False

    def holds(self, offset: int) -> bool:
        """Whether `offset` is in code (or may be)."""
        while not self.rest_is_code and self.read_to <= offset:
            self._read_next()
        i = bisect.bisect_right(self.starts, offset) - 1
        return i < 0 or offset >= self.ends[i]

    def _read_next(self) -> None:
        match = _QUOTE_OR_HASH.search(self.text, self.read_to)
        if match is None:
            self.rest_is_code = True
            return
        end, formatted = _lexeme_end(self.text, match.start())
        if end is None:
            self.rest_is_code = True  # an unterminated string: read no further
            return
        if not formatted:  # an f-string may hold code in its expressions
            self.starts.append(match.start())
            self.ends.append(end)
        self.read_to = end


def _lexeme_end(text: str, start: int) -> tuple[int | None, bool]:
    """(where the comment or string literal at `start` ends or None if it does not, whether it is
    an f-string)."""
    if text[start] == "#":
        end = _LINE_BREAK.search(text, start)  # "\r" alone ends a line too (old Mac files): Python reads it so
        return (len(text) if end is None else end.start()), False
    quote = text[start] * 3 if text.startswith(text[start] * 3, start) else text[start]
    prefix = start
    while prefix > start - 2 and prefix > 0 and text[prefix - 1] in _PREFIX_LETTERS:
        prefix -= 1
    formatted = "f" in text[prefix:start].lower() and not (prefix > 0 and (text[prefix - 1].isalnum() or text[prefix - 1] == "_"))
    at = start + len(quote)
    while True:
        close = text.find(quote, at)
        if close == -1:
            return None, formatted
        if len(quote) == 1:
            found = _LINE_BREAK.search(text, at, close)
            line_end = found.start() if found else -1
            if line_end != -1 and not _escaped(text, line_end):
                return None, formatted  # the line ends inside a one-line string: not what it seems
        if not _escaped(text, close):
            return close + len(quote), formatted
        at = close + 1


_LINE_BREAK = re.compile(r"[\r\n]")


def _escaped(text: str, at: int) -> bool:
    """Whether an odd number of backslashes precedes `text[at]`."""
    backslashes = 0
    while at - 1 - backslashes >= 0 and text[at - 1 - backslashes] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


# The first line of the module `port-fix --vendor` writes (rewriters/vendor.py HEADER): that
# module is candle-port's own runtime, never checked, reported or rewritten.
VENDORED_RUNTIME_MARK = '"""candle-port runtime, vendored by `port-fix --vendor`'


def is_vendored_runtime(text: str) -> bool:
    return text.lstrip("\ufeff").startswith(VENDORED_RUNTIME_MARK)
