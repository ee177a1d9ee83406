"""Suite-wide test setup: validation on, a private cache dir, and zero validation messages.

CTHREADS_VALIDATION=1 is set before anything from cthreads is imported, so every device the
suite makes runs under VK_LAYER_KHRONOS_validation; an autouse fixture fails any test after
which validation messages are pending.

Synchronization validation is on too (VK_LAYER_ENABLES, read by the 1.3.239 layer when an
instance is created; cthreads passes no VkValidationFeaturesEXT that would override it), within
command buffers and across queue submissions. It sees copies and fills only: kernels reach
their lists through buffer device addresses, which the layer does not track.
tests/faults/test_sync_validation.py proves the setting takes effect (a racy program yields
SYNC-HAZARD-WRITE-AFTER-WRITE). Set VK_LAYER_ENABLES yourself to override it.
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("CTHREADS_VALIDATION", "1")  # on in CI; a device run may set 0
SYNC_VALIDATION = (
    "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"
    ":VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT"
)
os.environ.setdefault("VK_LAYER_ENABLES", SYNC_VALIDATION)
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
# a GPU's first launch builds the form later launches use (tests look at what it prepared);
# tests/launch/test_vector_behind.py turns the default (the scalar form first) back on
os.environ.setdefault("CTHREADS_SCALAR_FIRST", "0")
if "CTHREADS_CACHE_DIR" not in os.environ:
    os.environ["CTHREADS_CACHE_DIR"] = tempfile.mkdtemp(prefix="cthreads-test-cache-")

import pytest


def _validation_messages(clear: bool = True) -> list[str]:
    try:
        from cthreads.runtime import validation_messages
    except ImportError:
        return []
    return validation_messages(clear)


@pytest.fixture(autouse=True)
def _no_validation_messages():
    """Fail the test if the Vulkan validation layer reported anything while it ran."""
    yield
    pending = _validation_messages(clear=True)
    if pending:
        pytest.fail(
            f"{len(pending)} Vulkan validation message(s):\n" + "\n".join(pending[:20]),
            pytrace=False,
        )


def _drop_prepared() -> None:
    from cthreads.launch import session

    for st in session.all_states():
        st.prepared.clear()


@pytest.fixture
def vector_form(monkeypatch):
    """Kernels compiled while the test runs take the 4-wide vector form on every device
    (`CTHREADS_VECTORIZE=1`): lavapipe's own target keeps the scalar form, and tests of the
    vector form's launches must still run it here. Kernels prepared before (a `prepare()` of
    every registered kernel in an earlier test) are dropped, before and after, so that the test
    prepares its kernels in the vector form and later tests theirs in the device's own form; a
    kernel keeps a C launcher made by a plain launch before the test, so tests that need one
    use kernels of their own."""
    monkeypatch.delenv("CTHREADS_NO_VECTORIZE", raising=False)
    monkeypatch.setenv("CTHREADS_VECTORIZE", "1")
    _drop_prepared()
    yield
    _drop_prepared()


def pytest_sessionfinish(session, exitstatus):
    """Tear Vulkan down (leak checks run in the layer) and fail on late messages."""
    try:
        from cthreads.runtime import shutdown
    except ImportError:
        return
    shutdown()
    pending = _validation_messages(clear=True)
    if pending:
        print(
            f"\n{len(pending)} Vulkan validation message(s) at shutdown:\n"
            + "\n".join(pending[:20])
        )
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    """The differential fuzz budget and seed, in the run's summary (quiet runs included), so a
    CI log says which kernels were tried."""
    import sys

    fuzz = sys.modules.get("test_differential")
    line = getattr(fuzz, "FUZZ_SUMMARY", None)
    if line:
        terminalreporter.write_line(line)
