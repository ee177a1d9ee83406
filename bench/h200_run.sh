#!/usr/bin/env bash
# One call on the lent GPU machine: build in place, test on the real driver, then run every
# benchmark next to its baseline (C Vulkan, cthreads-gpu 0.2.1, torch, cupy, hand-written GLSL).
# Results go to $OUT (at most 8 files come back from the device tool: keep the count low).   device run:  source .gl/env.sh; bash bench/h200_run.sh   (carry .gl, .whl)
set -uo pipefail
REPO=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export XDG_RUNTIME_DIR=/tmp PYTHONUNBUFFERED=1 PYTHONPATH=$REPO
python3 setup.py -q build_ext --inplace >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u +"run started %Y-%m-%d %H:%M UTC"
if [ -z "${SKIP_TESTS:-}" ] && ls .whl/pytest-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pytest*.whl .whl/pluggy*.whl \
    .whl/iniconfig*.whl .whl/packaging*.whl .whl/hypothesis*.whl .whl/sortedcontainers*.whl .whl/attrs*.whl
  # one directory at a time, each with its own limit: a slow or hanging directory shows by name
  for d in runtime launch residency compiler language misuse gpu; do
    t0=$(date +%s)
    res=$(PYTHONPATH=$REPO:/tmp/site CTHREADS_VALIDATION=1 timeout ${TEST_LIMIT:-150} python3 -m pytest -q \
      -p no:cacheprovider "tests/$d" 2>&1 | grep -E '^(FAILED|ERROR)|passed|failed' | head -8)
    echo "tests/$d ($(( $(date +%s) - t0 )) s): ${res:-no summary (timed out?)}"
  done
fi
[ -n "${VARIANTS:-}" ] && timeout 120 python3 bench/native_variants.py 2>&1 | tail -20
timeout 60 bash bench/run_roundtrip.sh 3000 | tee "$OUT/roundtrip.md"
timeout 90 python3 bench/launch.py --json "$OUT/launch_ours.json" > "$OUT/launch_ours.log" 2>&1; tail -14 "$OUT/launch_ours.log"
timeout 60 python3 bench/arena.py --json "$OUT/arena_ours.json" 2>&1 | tail -2
timeout 150 python3 -m bench.kernels.run --json "$OUT/kernels.json" --md "$OUT/kernels.md" > "$OUT/kernels.log" 2>&1; tail -3 "$OUT/kernels.log"
timeout 150 python3 bench/language.py --sum-log2 24,26,28 --mm 1000,2048,4096 --launches 20 --json "$OUT/language.json" 2>&1 | tail -8
timeout 60 python3 bench/prepare_compare.py --json "$OUT/prepare_ours.json" 2>&1 | tail -14
timeout 60 python3 bench/prepare_profile.py --json "$OUT/prepare_profile.json" > /dev/null 2>&1
timeout 150 python3 bench/wg_sweep.py --json "$OUT/wg_sweep.json" 2>&1 | tail -12
if ls .whl/cthreads_gpu*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/ref .whl/cthreads_gpu*.whl
  cd /tmp
  PYTHONPATH=/tmp/ref timeout 100 python3 "$REPO/bench/launch.py" --json "$OUT/launch_ref.json" > "$OUT/launch_ref.log" 2>&1; tail -14 "$OUT/launch_ref.log"
  PYTHONPATH=/tmp/ref timeout 60 python3 "$REPO/bench/arena.py" --kinds list --json "$OUT/arena_ref.json" 2>&1 | tail -2
  PYTHONPATH=/tmp/ref timeout 60 python3 "$REPO/bench/prepare_compare.py" --json "$OUT/prepare_ref.json" 2>&1 | tail -14
  PYTHONPATH=/tmp/ref timeout 80 python3 "$REPO/bench/saxpy_bandwidth.py" --lists --max-log2 26 --json "$OUT/saxpy_ref.json" 2>&1 | tail -6
fi
# The device tool returns at most 8 files: bundle everything into one.
(cd "$OUT" && tar czf /tmp/results.tgz . && find . -mindepth 1 -delete && mv /tmp/results.tgz .)
