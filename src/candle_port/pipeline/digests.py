"""Content digests for port-check's cache keys and index fingerprints, without loading OpenSSL.

`import hashlib` loads OpenSSL's libcrypto to offer its algorithms: about 3 ms of CPU, a thirtieth
of a port-check run on a small package. BLAKE2b is CPython's own C module (`_blake2`, which
hashlib re-exports): 630 MB/s against OpenSSL SHA-256's 890 on our 2-core machine, so hashing
the 40 MB corpus for the cache costs about 20 ms more, and every start 3 ms less. Nobody
compares these digests across tools: only port-check reads its cache.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter without CPython's private module
    from hashlib import blake2b


def new_digest(data: bytes = b""):
    """A BLAKE2b hash object (256-bit) fed with `data`: `.update()` more, then `.hexdigest()`."""
    return blake2b(data, digest_size=32)


def hex_digest(data: bytes) -> str:
    """The 64-hex-digit digest of `data`."""
    return new_digest(data).hexdigest()
