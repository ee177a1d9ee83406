#!/usr/bin/env bash
# issue 19: what a device's first compute pipeline costs on the driver's disk cache, cold and
# warm, through an application VkPipelineCache or none, and with a throwaway pipeline built on
# a thread right after vkCreateDevice (--warm-up): bench/c_floor/first_module.c, 3 fresh
# processes per row; prints "cache options: device_ms first_pipeline_ms second_pipeline_ms
# warm_up_pipeline_ms" per process.   device run: source .gl/env.sh; bash bench/first_pipeline.sh
set -euo pipefail
W=$(mktemp -d)
gcc -O2 -std=c11 -o "$W/fm" bench/c_floor/first_module.c bench/c_floor/floor_steps.c -ldl -lpthread
show='import json,sys; d=json.load(sys.stdin); print(d["device_ms"], d["first_pipeline_ms"], d["second_pipeline_ms"], d["warm_up_pipeline_ms"])'
for opts in "" "--app-cache" "--push" "--warm-up 5" "--app-cache --warm-up 5"; do
  for cache in cold warm; do
    for _ in 1 2 3; do
      if [ $cache = cold ]; then d=$(mktemp -d -p "$W"); else d="$W/warm"; mkdir -p "$d"; fi
      [ $cache = warm ] && __GL_SHADER_DISK_CACHE_PATH=$d XDG_CACHE_HOME=$d "$W/fm" $opts >/dev/null
      printf '%s %s: ' "$cache" "${opts:-plain}"
      __GL_SHADER_DISK_CACHE_PATH=$d XDG_CACHE_HOME=$d "$W/fm" $opts | python3 -c "$show"
    done
  done
done
rm -rf "$W"
