"""SHA-256 for cache keys and cache-entry checksums, without `hashlib`.

`import hashlib` loads OpenSSL's `_hashlib` first (~4-5 ms on the CI machine), and a warm
launch needs nothing but one digest of a few hundred bytes: CPython's own `_sha256` module
(`_sha2` from 3.12) gives the same digests for a fraction of that. hashlib is the fallback
where neither is built.
"""

from __future__ import annotations

import sys

# (the module of this version first: a failed import searches every sys.path entry)
_MODULES = ("_sha2", "_sha256") if sys.version_info >= (3, 12) else ("_sha256", "_sha2")
try:
    sha256 = __import__(_MODULES[0]).sha256
except ImportError:
    try:
        sha256 = __import__(_MODULES[1]).sha256
    except ImportError:  # pragma: no cover - a Python built without them
        from hashlib import sha256

__all__ = ["sha256"]
