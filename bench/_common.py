"""Helpers shared by the benchmark scripts that run under either package (this repository's
cthreads or the reference `cthreads-gpu`, which has the same import name)."""

from __future__ import annotations

import importlib.util


def package_label() -> str:
    """Which `cthreads` is imported: ours (it has `cthreads.launch`) or the reference."""
    import cthreads

    if importlib.util.find_spec("cthreads.launch") is not None:
        return f"cthreads {getattr(cthreads, '__version__', '?')} (this repository)"
    try:
        from importlib.metadata import version

        return f"cthreads-gpu {version('cthreads-gpu')}"
    except Exception:  # noqa: BLE001 - metadata missing: still say it is the reference
        return "cthreads-gpu (version unknown)"
