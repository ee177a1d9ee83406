"""SHA-256 for cache keys and cache-entry checksums, without `hashlib`.

`import hashlib` loads OpenSSL's `_hashlib` first (~4-5 ms on the CI machine), and a warm
launch needs nothing but one digest of a few hundred bytes: CPython's own `_sha256` module
(`_sha2` from 3.12) gives the same digests for a fraction of that. hashlib is the fallback
where neither is built.
"""

from __future__ import annotations

try:
    from _sha2 import sha256  # CPython >= 3.12
except ImportError:
    try:
        from _sha256 import sha256  # CPython <= 3.11
    except ImportError:  # pragma: no cover - a Python built without them
        from hashlib import sha256

__all__ = ["sha256"]
