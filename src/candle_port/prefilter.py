"""Skip parsing files whose text cannot hold a site.

Every site needs one of the API names written in the file as a whole identifier: a call
(`F.interpolate`), an import (`from torch.nn.functional import interpolate as up`), or a base
class (`class U(nn.Upsample)`). So a file where no identifier is an API's name has no site, and its
parse is skipped. The search finds API_NAME_FRAGMENTS by substring (fast), then reads the
identifier around each occurrence: `Upsample2D`, `self.upsamplers` or `max_pool_size` alone do not
send a file to the parser (65 of the 428 corpus files with a fragment have no API name).
A call of a project class or wrapper defined in another module is found by the second pass
(analysis/mentions.py). tests/test_corpus_truth.py (test_prefilter_loses_no_finding) proves on the
real corpus that this loses no finding.
"""

from __future__ import annotations

import re

from candle_port.analysis.apis import API_NAME_FRAGMENTS, API_SHORT_NAMES

_IDENTIFIER_TAIL = re.compile(r"\w*")


def may_hold_sites(text: str) -> bool:
    for fragment in API_NAME_FRAGMENTS:
        at = text.find(fragment)
        while at != -1:
            start = at
            while start and (text[start - 1].isalnum() or text[start - 1] == "_"):
                start -= 1
            end = _IDENTIFIER_TAIL.match(text, at + len(fragment)).end()
            if text[start:end] in API_SHORT_NAMES:
                return True
            at = text.find(fragment, end)
    return False


# The first line of the module `port-fix --vendor` writes (rewriters/vendor.py HEADER): that
# module is candle-port's own runtime, never checked, reported or rewritten.
VENDORED_RUNTIME_MARK = '"""candle-port runtime, vendored by `port-fix --vendor`'


def is_vendored_runtime(text: str) -> bool:
    return text.lstrip("\ufeff").startswith(VENDORED_RUNTIME_MARK)
