#!/usr/bin/env bash
# Watch the suite run on the GPU machine across several device calls, so that a run that takes
# the machine down still leaves its last minutes behind (sessions 6 and 7 lost the H200 during
# bench/device_suite.sh, with nothing coming back).
#   device run 1:  source .gl/env.sh; bash bench/device_watch.sh start 120   (carry .gl, .spv)
#   device run 2+: bash bench/device_watch.sh poll 150                      (within the 30 s idle)
# `start` builds, launches device_suite.sh detached (pytest -v past the suite's -q: each log names the test running)
# and a monitor (memory, processes, GPU memory every 3 s); both modes then wait up to S seconds
# and copy to $OUT: the monitor's tail, the last lines of every directory's log, and, once the
# suite is done, its summary and bundle. Environment as for device_suite.sh (DIRS, JOBS, ...).
set -uo pipefail
mode=$1; wait_s=${2:-120}
W=/tmp/watch; OUT=${OUT:-/tmp/watch-out}; mkdir -p "$W" "$OUT"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} PYTHONPATH=$PWD CTHREADS_SPIRV_TOOLS_NEW=${CTHREADS_SPIRV_TOOLS_NEW:-$PWD/.spv}
if [ "$mode" = start ]; then
  rm -rf "$W"/*; mkdir -p "$W/suite"
  python3 setup.py -q build_ext --inplace >"$W/build.log" 2>&1 || { tail -30 "$W/build.log"; exit 1; }
  OUT=$W/suite NO_BUILD=1 PYTEST_ARGS="-v -v" setsid nohup bash bench/device_suite.sh >"$W/suite.txt" 2>&1 < /dev/null &
  echo $! >"$W/suite.pid"
  setsid nohup bash -c '
    while true; do
      { date -u +%T; free -m | sed -n 2p; echo "procs $(ps -e --no-headers | wc -l)";
        ps -eo pid,rss,stat,etime,args --sort=-rss --no-headers | head -6 | cut -c1-160;
        nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader 2>&1 | head -1; } >>'"$W"'/mon.log
      sleep 3
    done' >/dev/null 2>&1 < /dev/null &
fi
t0=$(date +%s)
while [ $(( $(date +%s) - t0 )) -lt "$wait_s" ] && [ ! -s "$W/suite/summary.md" ]; do sleep 2; done
{ echo "== $(date -u +%T) suite alive: $(kill -0 "$(cat "$W/suite.pid")" 2>/dev/null && echo yes || echo no)"
  cat "$W/suite/dirs.txt" 2>/dev/null
  for f in "$W"/suite/log-*.txt; do [ -e "$f" ] && { echo "-- $f"; tail -c 600 "$f"; echo; }; done
  echo "== monitor"; tail -60 "$W/mon.log"; } >"$OUT/poll.txt" 2>&1
cp "$W/suite/summary.md" "$W/suite/suite-logs.tgz" "$W/suite.txt" "$OUT/" 2>/dev/null
tail -c 5000 "$OUT/poll.txt"
