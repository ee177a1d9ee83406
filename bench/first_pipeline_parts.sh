#!/usr/bin/env bash
# issue 19: which of cthreads' device requests makes a device's first pipeline wait in the
# driver (a warm prepare()'s first build took ~10 ms after the open, 0.1 ms with the device
# opened 100 ms earlier): bench/c_floor/first_module.c --ask PART on a warm driver disk cache,
# no application cache, 3 fresh processes per row; prints "PART: device_ms first_pipeline_ms".
# Then the same with the device opened on a thread that ends first (--open-thread), as
# prepare()'s opener thread does.
#   device run: source .gl/env.sh; bash bench/first_pipeline_parts.sh
set -euo pipefail
W=$(mktemp -d)
gcc -O2 -std=c11 -o "$W/fm" bench/c_floor/first_module.c bench/c_floor/floor_steps.c -ldl -lpthread
export __GL_SHADER_DISK_CACHE_PATH=$W/glcache XDG_CACHE_HOME=$W/xdg
mkdir -p "$__GL_SHADER_DISK_CACHE_PATH"
show='import json,sys; d=json.load(sys.stdin); print(d["device_ms"], d["first_pipeline_ms"])'
for part in none all features atomicf extmem extsem coopmat bf16 execprops copyq; do
  args=(--api13)
  [ $part = none ] || args+=(--ask "$part")
  "$W/fm" "${args[@]}" >/dev/null  # fills the driver's cache for this device
  for _ in 1 2 3; do printf '%s: ' "$part"; "$W/fm" "${args[@]}" | python3 -c "$show"; done
done
for part in none all; do
  args=(--api13 --open-thread)
  [ $part = none ] || args+=(--ask "$part")
  for _ in 1 2 3; do printf '%s, opened on a thread: ' "$part"; "$W/fm" "${args[@]}" | python3 -c "$show"; done
done
rm -rf "$W"
