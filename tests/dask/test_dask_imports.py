"""cthreads.dask is an optional extra: without dask it says how to install it, and neither
`import cthreads` nor `import cthreads.gpu` ever loads dask (fresh interpreters)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# a finder that makes dask and distributed look uninstalled, whatever the machine has
NO_DASK = r"""
import sys
class _Gone:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Gone())
"""


def _python(code: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


def test_without_dask_the_import_error_names_the_extra():
    proc = _python(
        NO_DASK
        + "\ntry:\n    import cthreads.dask\nexcept ImportError as exc:\n    print(exc)\n"
        + "else:\n    print('imported')\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "pip install cthreads[dask]" in proc.stdout, proc.stdout


def test_cthreads_and_cthreads_gpu_never_import_dask():
    proc = _python(
        NO_DASK
        + "\nimport json, cthreads, cthreads.gpu\n"
        + "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        + "('dask', 'distributed') or m.startswith('cthreads.dask'))))\n"
    )
    assert proc.returncode == 0, proc.stderr  # the finder would have raised on any dask import
    assert json.loads(proc.stdout.splitlines()[-1]) == []
