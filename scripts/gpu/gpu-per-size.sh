#!/usr/bin/env bash
# Issue 26's GPU demonstration, first call: the scale kernel (155 variants, f32) searched at
# four sizes, 2^16, 2^20, 2^24 and 2^28 elements: from a working set L2 holds many times over
# (a grid too small to fill the GPU at base's 1024 elements per block) to one streamed from
# HBM. By default every variant is measured in full at every size (`--no-race`), so that each
# size's best is known on full samples, not on screening ones; RUN_ARGS= (empty) runs the
# default deciding search instead.
#
#   OUT=DIR [RUN_ARGS=--no-race] [BUNDLE=.gpu/scale-sizes-bundle] bash .gpu/gpu-per-size.sh
#
# Needs .gpu/scale-sizes-bundle (`bash scripts/gpu/build-gpu.sh scale-sizes`). Writes to $OUT:
# per-size.db (the store to apply from: bring it back), search.log, gpu.txt, time.txt, and
# the reports: report.txt (top 10 per compile-time workload), per-size.txt and per-size.json
# (`report --per-size`: each size's best against the single winner).
set -uo pipefail
out=${OUT:?set OUT to the folder for the store, logs and reports}
bundle=${BUNDLE:-.gpu/scale-sizes-bundle}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,ecc.mode.current \
  --format=csv > "$out/gpu.txt" 2>&1
rm -f "$out/per-size.db" "$out/per-size.db-wal" "$out/per-size.db-shm"
t0=$(date +%s.%N)
# shellcheck disable=SC2086 # RUN_ARGS: run-bundle flags, --no-race unless set
"$bundle/cargo-gputune" run-bundle "$bundle" ${RUN_ARGS---no-race} --db "$out/per-size.db" \
  > "$out/search.log" 2>&1
rc=$?
t1=$(date +%s.%N)
echo "search exit=$rc wall_s=$(python3 -c "print(f'{$t1 - $t0:.3f}')")" | tee "$out/time.txt"
"$bundle/cargo-gputune" report --db "$out/per-size.db" --top 10 > "$out/report.txt" 2>&1
"$bundle/cargo-gputune" report --db "$out/per-size.db" --per-size > "$out/per-size.txt" 2>&1
"$bundle/cargo-gputune" report --db "$out/per-size.db" --per-size --format json \
  > "$out/per-size.json" 2> "$out/per-size.err"
cat "$out/per-size.txt"
exit $rc
