#!/usr/bin/env bash
# One call on the lent GPU machine: build in place, sanity-test on the real driver, then run the
# benchmarks next to their baselines (C Vulkan, cthreads-gpu 0.2.1, torch). Results go to $OUT.
#   device run:  source .gl/env.sh; bash bench/h200_run.sh      (carry .gl and .whl)
set -uo pipefail
REPO=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export XDG_RUNTIME_DIR=/tmp PYTHONUNBUFFERED=1 PYTHONPATH=$REPO
python3 setup.py -q build_ext --inplace >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
python3 -c "import cthreads.runtime as r; d=r.get_device(); print(d.info.name, d.info.driver_version, d.info.limits)"
if [ -z "${SKIP_TESTS:-}" ]; then
  CTHREADS_VALIDATION=${VALIDATION:-1} timeout 400 python3 -m pytest -q -p no:cacheprovider \
    tests/runtime tests/launch tests/residency tests/compiler tests/misuse 2>&1 | grep -E '^(FAILED|ERROR)|passed|failed' | head -20
fi
bash bench/run_roundtrip.sh 3000 | tee "$OUT/roundtrip.md"
python3 bench/launch.py --json "$OUT/launch_ours.json" | tail -16
timeout 400 python3 -m bench.kernels.run --compare-scalar --json "$OUT/kernels.json" --md "$OUT/kernels.md" > "$OUT/kernels.log" 2>&1; tail -3 "$OUT/kernels.log"
if ls .whl/cthreads_gpu*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/ref .whl/cthreads_gpu*.whl
  (cd /tmp && PYTHONPATH=/tmp/ref timeout 300 python3 "$REPO/bench/launch.py" --json "$OUT/launch_ref.json" | tail -16)
fi
