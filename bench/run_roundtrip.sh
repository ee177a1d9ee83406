#!/usr/bin/env bash
# Tiny-dispatch round trip (submit + wait): cthreads.runtime next to a plain C Vulkan program
# with fence waits, in the same run. Builds both, prints a markdown table.
# Usage: bench/run_roundtrip.sh [iters]     (CTHREADS_DEVICE selects the device for both)
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS="${1:-2000}"
PY="${PYTHON:-python3}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
unset CTHREADS_VALIDATION

"$PY" -c "import cthreads._native" 2>/dev/null || "$PY" -m pip install -q -e .
make -s -C bench/c_roundtrip roundtrip
SPV="$("$PY" -c "from cthreads.runtime.shaders import SHADER_DIR; print(SHADER_DIR / 'fill_u32.spv')")"

C_OUT="$(bench/c_roundtrip/roundtrip "$SPV" "$ITERS")"
PY_OUT="$("$PY" bench/dispatch_roundtrip.py --iters "$ITERS" --json)"

"$PY" - "$C_OUT" "$PY_OUT" <<'PYEOF'
import json, sys
c_lines = sys.argv[1].splitlines()
c = {l.split()[0]: float(l.split()[1]) for l in c_lines[1:]}
py = json.loads(sys.argv[2])
print(f"device: {py['device']}\n")
print("| round trip (1 tiny dispatch, submit + wait) | µs |")
print("|---|---:|")
print(f"| C, fence wait, prerecorded command buffer | {c['prerecorded']:.1f} |")
print(f"| C, fence wait, re-recorded every time | {c['rerecorded']:.1f} |")
print(f"| C, recording barrier + push + dispatch (host, per command) | {c['record_barrier_push_dispatch']:.2f} |")
print(f"| C, recording push + dispatch (host, per command) | {c['record_push_dispatch']:.2f} |")
print(f"| cthreads, same command tuple resubmitted | {py['reused_us']:.1f} |")
print(f"| cthreads, push constants + command rebuilt | {py['rebuilt_us']:.1f} |")
print(f"| cthreads, native Device object directly | {py['native_us']:.1f} |")
print(f"| cthreads, 16 dispatches per submit (per dispatch) | {py['batch16_per_dispatch_us']:.1f} |")
PYEOF
