#!/usr/bin/env bash
# The whole test suite on the lent GPU machine: validation on, a per-test timeout, one pytest
# process per test directory (a crash or hang costs that directory, not the run), and a summary
# (passed/failed/skipped/timeouts per directory, device, driver, date) for docs/reliability.md.
#   device run:  source .gl/env.sh; bash bench/device_suite.sh        (carry .gl)
#   here:        OUT=/tmp/suite bash bench/device_suite.sh            (lavapipe)
# TEST_TIMEOUT (per test, s; default 120), DIR_LIMIT (per directory, s; default 420),
# DIRS (default: every directory of tests/), FUZZ="N SEED..." adds fuzz campaigns after the tests.
set -uo pipefail
REPO=$PWD
OUT=${OUT:-/tmp/device-suite}; mkdir -p "$OUT"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} PYTHONUNBUFFERED=1 PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}
export CTHREADS_VALIDATION=1
PY=${PY:-python3}
if [ -z "${NO_BUILD:-}" ]; then
  $PY setup.py -q build_ext --inplace >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
fi
$PY -c "import pytest_timeout" 2>/dev/null || { echo "pytest-timeout is missing" >&2; exit 1; }
# Validation on is the point of the run: stop before testing if the layer is missing (the
# suite would report every test as failed on teardown; .gl must carry vulkan-validationlayers).
ls /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json >/dev/null 2>&1 \
  || { echo "VK_LAYER_KHRONOS_validation is not installed: add the vulkan-validationlayers deb to .gl" >&2; exit 1; }
date -u +"suite started %Y-%m-%d %H:%M UTC"
DIRS=${DIRS:-$(cd tests && ls -d */ | tr -d / | tr '\n' ' ')}
# JOBS directories at once (default 4): separate processes, each its own Vulkan instance.
run_dir() {
  d=$1; t0=$(date +%s)
  # faulthandler dumps every thread's stack 10 s before the per-test timeout: a hang in C that
  # the timeout's signal cannot break still names its test and its stack in the log.
  tt=${TEST_TIMEOUT:-120}
  timeout -k 10 "${DIR_LIMIT:-420}" $PY -m pytest -q -p no:cacheprovider --timeout "$tt" -o faulthandler_timeout=$(( tt > 20 ? tt - 10 : tt )) ${PYTEST_ARGS:-} \
    --junitxml "$OUT/junit-$d.xml" "tests/$d" >"$OUT/log-$d.txt" 2>&1
  rc=$?
  echo "$d rc=$rc $(( $(date +%s) - t0 ))s" | tee -a "$OUT/dirs.txt"
  grep -E '^(FAILED|ERROR)|Timeout' "$OUT/log-$d.txt" | head -20
}
export -f run_dir; export OUT PY
printf '%s\n' $DIRS | xargs -P "${JOBS:-4}" -I{} bash -c 'run_dir {}'
if [ -n "${FUZZ:-}" ]; then  # campaigns in parallel too, each its own process
  set -- $FUZZ; n=$1; shift
  run_fuzz() {
    timeout -k 10 "${FUZZ_LIMIT:-300}" $PY -m cthreads.testing.fuzz "$2" --seed "$1" --no-shrink \
      >"$OUT/fuzz-$1.txt" 2>&1
    echo "fuzz $2 seed $1 rc=$? $(grep -E '^(FAILED|cthreads fuzz|ok|clean|PASS)' "$OUT/fuzz-$1.txt" | tail -1)" \
      | tee -a "$OUT/dirs.txt"
  }
  export -f run_fuzz; export FUZZ_LIMIT
  printf '%s\n' "$@" | xargs -P "${JOBS:-4}" -I{} bash -c "run_fuzz {} $n"
fi
$PY bench/suite_summary.py "$OUT" | tee "$OUT/summary.md"
# The device tool brings back at most 8 files: the summary plus one bundle of the rest.
(cd "$OUT" && tar czf /tmp/suite-logs.tgz --exclude summary.md . && find . -mindepth 1 ! -name summary.md -delete \
  && mv /tmp/suite-logs.tgz .)
