#!/usr/bin/env bash
# The H200 checks and measurements session 6 could not run (its last device call lost the
# machine), in one call of at most ~8 minutes, after `bench/device_suite.sh` is green:
#   device run:  source .gl/env.sh; bash bench/h200_pending.sh        (carry .gl, .spv)
# Every step has its own time limit and writes its output to a file; `$OUT/pending.txt` (a
# one-line result per step) and `$OUT/pending.tgz` (every log and JSON) come back, so a step
# whose lines fall outside the device tool's returned tail is still readable.
# STEPS="tests bench" (default both) picks the halves; ONLY="copy_lane streams ..." single steps.
set -uo pipefail
REPO=$PWD
OUT=${OUT:-/tmp/pending}; mkdir -p "$OUT"
W=$(mktemp -d)
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} PYTHONUNBUFFERED=1 PYTHONPATH=$REPO
export CTHREADS_SPIRV_TOOLS_NEW=${CTHREADS_SPIRV_TOOLS_NEW:-$REPO/.spv}
PY=${PY:-python3}
[ -n "${NO_BUILD:-}" ] || $PY setup.py -q build_ext --inplace >"$W/build.log" 2>&1 \
  || { tail -30 "$W/build.log"; exit 1; }
STEPS=${STEPS:-tests bench}
summary="$OUT/pending.txt"; : >"$summary"

# step NAME LIMIT_S ENV... -- COMMAND...: run it, keep its log, note its exit status and the
# last line that says how it went
step() {
  local name=$1 limit=$2; shift 2
  # ONLY="name ..." runs just those steps
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  local t0; t0=$(date +%s)
  env "${envs[@]}" timeout -k 5 "$limit" "$@" >"$W/$name.log" 2>&1
  local rc=$?
  local last; last=$(grep -E 'passed|failed|error|ratio|best|handoff|ok' "$W/$name.log" | tail -1)
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s: ${last:0:240}" | tee -a "$summary"
}

pt="-m pytest -q -p no:cacheprovider --timeout 60 -o faulthandler_timeout=50"
if [[ $STEPS == *tests* ]]; then
  # the copy lane with validation on: the fix for the 04:09 sync hazards, then its default
  step copy_lane 150 CTHREADS_VALIDATION=1 CTHREADS_COPY_QUEUE=auto -- $PY $pt \
    tests/launch/test_copy_lane.py tests/launch/test_lanes.py tests/launch/test_streams.py
  step interop 150 CTHREADS_VALIDATION=1 -- $PY $pt tests/interop
  step tiles 120 CTHREADS_VALIDATION=0 -- $PY $pt tests/gpu/test_tiles_device.py \
    tests/compiler/test_tiles.py tests/testing/test_emulate_constants.py tests/testing/test_emulate_tiles.py
  step local_arrays 90 CTHREADS_VALIDATION=1 -- $PY $pt tests/language/test_local_arrays.py \
    tests/language/test_sgemm_bench.py tests/dask tests/devices
fi
if [[ $STEPS == *bench* ]]; then
  step streams 120 CTHREADS_COPY_QUEUE=auto -- $PY bench/streams.py --json "$W/streams.json"
  step bracket 90 -- $PY bench/bracket_launch.py --json "$W/bracket.json"
  step launch 90 -- $PY bench/launch.py --json "$W/launch.json"
  step sgemm 150 -- $PY bench/sgemm.py --sizes 2048,4096,8192 --launches 5 --json "$W/sgemm.json"
  step first_result 150 -- $PY bench/first_result.py --repeats 3 --no-taichi --json "$W/first.json" \
    --md "$W/first.md"
  step interop_bench 90 -- $PY bench/interop.py --json "$W/interop.json"
fi
(cd "$W" && tar czf "$OUT/pending.tgz" .)
rm -rf "$W"
