"""On-disk cache of compiled kernels (SPIR-V + launch contract), keyed by everything that
changes the output: kernel source and signature, options, compiler version, target caps.

Entries are written atomically (temporary file + rename) under the per-user cache directory and
carry a checksum, so a process killed mid-write never leaves an entry that loads wrong. Each
entry also names the key it was stored under: a file renamed, copied or swapped onto another
key's name is a miss (recompiled and overwritten), never another kernel run in its place.

A warm launch reads one entry, so this module stays cheap to load (issue 19): entries hold their
metadata in `marshal` form (built in; `json` costs ~4 ms to import) and every digest (these keys,
the checksums, `GpuKernel.source_key`) is `key_hash` below, not `hashlib` (which loads
OpenSSL). The checksum is verified before the metadata is unmarshalled, so a torn or damaged
file never reaches `marshal.loads`.
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from .. import config
from .artifact import CompiledKernel, PushField, PushLayout
from .ir_types import ListType, Param, Scalar

# `key_hash`: SHA-512 (its callers truncate it). Not SHA-256 (issue 19): CPython's module for
# SHA-512 (`_sha512`, `_sha2` from 3.12) is the one `random` (so `tempfile`) and numpy load,
# which a process has usually loaded already, while `_sha256` (3.11) is a shared library of its own,
# 0.4-0.6 ms to load on the lavapipe machine. hashlib only where neither module is built; every
# digest is the same whichever module gives it. (The module of this version is tried first: a
# failed import searches every sys.path entry.)
_SHA_MODULES = ("_sha2", "_sha512") if sys.version_info >= (3, 12) else ("_sha512", "_sha2")
try:
    key_hash = __import__(_SHA_MODULES[0]).sha512
except ImportError:
    try:
        key_hash = __import__(_SHA_MODULES[1]).sha512
    except ImportError:  # pragma: no cover - a Python built without them
        from hashlib import sha512 as key_hash

COMPILER_VERSION = "0.6.8"  # 0.6.8: subgroup_id() bounded by the minimum subgroup size, barriers order list memory only where a written list is reached before them; 0.6.7: tile guards without the tests that cannot fail; 0.6.6: vector-form kernels run one element per invocation when dispatched one invocation per element; 0.6.5: float32 / correctly rounded (one fma correction step), long elif chains flat, deep kernels located errors, bodies past 255 inputs read the parameter block; 0.6.4: float min/max keep Python's NaN and signed zero meaning on NVIDIA, float subgroup_min/max NaN if any lane is, range() counters never wrap past stop; 0.6.3: constant float->int casts saturate, -1.5 is a literal; 0.6.2: (-inf) ** y as Python; 0.6.1: f16 rounding in integer steps; 0.6: float % and ** keep the sign of zero as Python; 0.5: f16/i8/i16/u8/u16/u64, proven shared indexes unguarded; 0.4: f64/i64/u32 types; 0.3: 2-D grids
_MAGIC = b"CTK4"  # CTK4: SHA-512 checksum; CTK3: metadata in marshal form; CTK2: own key
_MARSHAL_VERSION = 4  # marshal's format, fixed so that any 3.x reads what another wrote

# Counts compilations that missed the cache in this process (tests assert on it, not timers).
stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0}


def cache_key(source_key: str, target_key: str) -> str:
    """The hex key of one kernel build (compiler options read from `config` are part of it;
    the vector form's own choice is a field of the target, so in `target_key`)."""
    options = {None: "vec-by-target", True: "vec", False: "novec"}[config.vector_form()]
    text = f"{COMPILER_VERSION}\0{source_key}\0{target_key}\0{options}"
    return key_hash(text.encode()).hexdigest()[:32]


def _type_to_data(t: Scalar | ListType) -> list:
    if isinstance(t, ListType):
        return ["list", t.elem.kind, t.elem.bits]
    return ["scalar", t.kind, t.bits]


def _type_from_data(data: list) -> Scalar | ListType:
    scalar = Scalar(data[1], data[2])
    return ListType(scalar) if data[0] == "list" else scalar


def encode(kernel: CompiledKernel, key: str | None = None) -> bytes:
    """Serialize a compiled kernel into cache-file bytes, stored under `key` (default: the
    kernel's own cache key)."""
    meta = {
        "entry_key": kernel.cache_key if key is None else key,
        "name": kernel.name,
        "params": [[p.name, _type_to_data(p.type), p.reads, p.writes] for p in kernel.params],
        "push": {
            "fields": [[f.role, f.param, f.offset, f.fmt] for f in kernel.push.fields],
            "size": kernel.push.size,
            "in_buffer": kernel.push.in_buffer,
        },
        "workgroup_size": list(kernel.workgroup_size),
        "observes_workgroup": kernel.observes_workgroup,
        "cache_key": kernel.cache_key,
        "ir_text": kernel.ir_text,
        "entry_point": kernel.entry_point,
        "elements_per_invocation": kernel.elements_per_invocation,
    }
    blob = marshal.dumps(meta, _MARSHAL_VERSION)
    body = len(blob).to_bytes(4, "little") + blob + kernel.spirv
    return _MAGIC + key_hash(body).digest()[:32] + body


def decode(data: bytes, key: str | None = None) -> CompiledKernel:
    """Inverse of `encode`; raises ValueError on any corruption, and when `key` is given and
    the entry was stored under another key (the file name alone is not trusted)."""
    if len(data) < 40 or data[:4] != _MAGIC:
        raise ValueError("not a cthreads kernel cache entry")
    digest, body = data[4:36], data[36:]
    if key_hash(body).digest()[:32] != digest:
        raise ValueError("cache entry checksum mismatch")
    n = int.from_bytes(body[:4], "little")
    meta = marshal.loads(body[4 : 4 + n])  # (EOFError, ValueError, TypeError on bad data)
    if not isinstance(meta, dict):
        raise ValueError("cache entry metadata is not a mapping")
    if key is not None and meta.get("entry_key") != key:
        raise ValueError(f"cache entry was stored under key {meta.get('entry_key')!r}, not {key!r}")
    spirv = body[4 + n :]
    push = meta["push"]
    return CompiledKernel(
        name=meta["name"],
        spirv=bytes(spirv),
        params=tuple(Param(nm, _type_from_data(t), r, w) for nm, t, r, w in meta["params"]),
        push=PushLayout(
            fields=tuple(PushField(*f) for f in push["fields"]),
            size=push["size"],
            in_buffer=push["in_buffer"],
        ),
        workgroup_size=tuple(meta["workgroup_size"]),
        observes_workgroup=meta["observes_workgroup"],
        cache_key=meta["cache_key"],
        ir_text=meta["ir_text"],
        entry_point=meta["entry_point"],
        elements_per_invocation=int(meta.get("elements_per_invocation", 1)),
    )


class KernelCache:
    """A directory of `<key>.ctk` files (plus an in-process dict in front of it)."""

    MAX_ENTRIES = 4096  # oldest entries beyond this are removed (generated-kernel workloads)
    MAX_MEMORY = 512  # compiled kernels kept in memory (the oldest go first)
    _TRIM_EVERY = 64  # puts between two looks at the directory's size

    def __init__(
        self, directory: Path | None, enabled: bool = True, max_entries: int | None = None
    ) -> None:
        self.directory = directory
        self.enabled = enabled and directory is not None
        self.max_entries = self.MAX_ENTRIES if max_entries is None else max_entries
        self._memory: dict[str, CompiledKernel] = {}
        self._puts = 0

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / f"{key}.ctk"

    def get(self, key: str) -> CompiledKernel | None:
        hit = self._memory.get(key)
        if hit is not None:
            stats["memory_hits"] += 1
            return hit
        if not self.enabled:
            return None
        path = self._path(key)
        try:
            kernel = decode(path.read_bytes(), key)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, EOFError):
            # A damaged entry, or one of another key, is a miss; remove it so it is rebuilt
            # cleanly.
            try:
                path.unlink()
            except OSError:
                pass
            return None
        self._remember(key, kernel)
        stats["disk_hits"] += 1
        return kernel

    def forget(self, key: str) -> None:
        """Drop the in-memory copy of one entry (its kernel is gone); the file stays."""
        self._memory.pop(key, None)

    def _remember(self, key: str, kernel: CompiledKernel) -> None:
        memory = self._memory
        memory.pop(key, None)
        memory[key] = kernel  # newest last: the dict's order is the age order
        while len(memory) > self.MAX_MEMORY:
            del memory[next(iter(memory))]  # the disk keeps it; a later get() reads it again

    def put(self, key: str, kernel: CompiledKernel) -> None:
        self._remember(key, kernel)
        if not self.enabled:
            return
        import tempfile  # (a cache miss only: a warm launch never writes)

        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(encode(kernel, key))
                os.replace(tmp, self._path(key))
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            # A read-only or full cache directory must never stop a launch.
            return
        self._puts += 1
        if self._puts % self._TRIM_EVERY == 1:
            self.trim()

    def trim(self) -> int:
        """Remove the oldest entries beyond `max_entries`; returns how many were removed."""
        if self.directory is None:
            return 0
        try:
            entries = sorted(
                ((p.stat().st_mtime, p) for p in self.directory.glob("*.ctk")), key=lambda e: e[0]
            )
        except OSError:
            return 0
        return _unlink_each(path for _, path in entries[: max(0, len(entries) - self.max_entries)])

    def clear(self) -> int:
        """Remove every entry; returns how many files were removed."""
        self._memory.clear()
        if self.directory is None or not self.directory.exists():
            return 0
        return _unlink_each(self.directory.glob("*.ctk"))


def _unlink_each(paths: Iterable[Path]) -> int:
    """Delete each file; how many went. One another process removed first is not an error."""
    removed = 0
    for path in paths:
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    return removed
