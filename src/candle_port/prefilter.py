"""Skip parsing files whose text cannot hold a site.

Every site needs one of the API names written in the file: a call (`F.interpolate`), an import
(`from torch.nn.functional import interpolate as up`), or a base class (`class U(nn.Upsample)`).
So a file that contains none of API_NAME_FRAGMENTS has no site, and its parse is skipped.
tests/test_corpus_truth.py (test_prefilter_loses_no_finding) proves on the real corpus that this loses no finding.
"""

from __future__ import annotations

from candle_port.analysis.apis import API_NAME_FRAGMENTS


def may_hold_sites(text: str) -> bool:
    return any(fragment in text for fragment in API_NAME_FRAGMENTS)


# The first line of the module `port-fix --vendor` writes (rewriters/vendor.py HEADER): that
# module is candle-port's own runtime, never checked, reported or rewritten.
VENDORED_RUNTIME_MARK = '"""candle-port runtime, vendored by `port-fix --vendor`'


def is_vendored_runtime(text: str) -> bool:
    return text.lstrip("\ufeff").startswith(VENDORED_RUNTIME_MARK)
