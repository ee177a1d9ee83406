"""`key_hash`: the one hash of cache keys and cache-entry checksums (SHA-512, truncated by its
callers), without `hashlib`.

`import hashlib` loads OpenSSL's `_hashlib` first (~4-5 ms on the CI machine), and a warm
launch needs nothing but a few digests of a few hundred bytes. SHA-512 rather than SHA-256
(issue 19): CPython's module for it (`_sha512`, `_sha2` from 3.12) is the one `random` and so
`tempfile` load, which a process has usually loaded already, while `_sha256` (3.11) is a
shared library of its own, 0.4-0.6 ms to load on the lavapipe machine. hashlib is the fallback
where neither module is built. Every key and checksum is the same whichever module gives it.
"""

from __future__ import annotations

import sys

# (the module of this version first: a failed import searches every sys.path entry)
_MODULES = ("_sha2", "_sha512") if sys.version_info >= (3, 12) else ("_sha512", "_sha2")
try:
    key_hash = __import__(_MODULES[0]).sha512
except ImportError:
    try:
        key_hash = __import__(_MODULES[1]).sha512
    except ImportError:  # pragma: no cover - a Python built without them
        from hashlib import sha512 as key_hash

__all__ = ["key_hash"]
