#!/usr/bin/env bash
# issue 19: what a device's first vkCreateShaderModule and pipeline cost and load, and whether loading
# that early (beside instance and device creation) removes it: bench/c_floor/first_module.c,
# 5 fresh processes each way.   device run: source .gl/env.sh; bash bench/first_module.sh
set -euo pipefail
W=$(mktemp -d)
gcc -O2 -std=c11 -o "$W/fm" bench/c_floor/first_module.c bench/c_floor/floor_steps.c -ldl -lpthread
for _ in 1 2 3 4 5; do "$W/fm"; done | tee "$W/plain.txt"
libs=$(python3 -c "import json,sys; s=set(); [s.update(json.loads(l)['loaded_by_module'] + json.loads(l)['loaded_by_pipeline']) for l in open(sys.argv[1])]; print(' '.join('--preload '+x for x in sorted(s)))" "$W/plain.txt")
echo "preloading: $libs"
for _ in 1 2 3 4 5; do "$W/fm" $libs; done
rm -rf "$W"
