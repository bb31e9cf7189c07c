#!/usr/bin/env bash
# The scale search of BENCHMARKS.md (issue #5), run from the repository root on the GPU machine
# after scripts/build-gpu.sh on a development machine:
#   OUT=DIR bash .gpu/gpu-scale.sh [BUNDLE]        (BUNDLE defaults to .gpu/scale-bundle)
# Runs the whole search of the bundle (155 variants of scale, T=f32, 2^26 elements, each
# verified against base on the GPU, then timed cold with the entropy criterion) RUNS times
# (default 3), each into a fresh store and with an empty kernel cache, timing the whole
# `run-bundle` wall to wall; then once more with the last run's kernel cache (warm); then the
# device-to-device copy of the same size, the bandwidth roof, RUNS times. Writes the logs,
# stores, reports, copy JSON and summary.md to $OUT.
set -uo pipefail
out=${OUT:?set OUT to the folder for logs, JSON, stores and the summary}
here=$(dirname "$0")
bundle=${1:-$here/scale-bundle}
runs=${RUNS:-3}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv \
  > "$out/gpu.txt" 2>&1
"$bundle/bin/scale-base" -b scale --devices > "$out/devices.json" 2> "$out/devices.err"
: > "$out/times.txt"

search() { # name, kernel cache directory
  local name=$1
  rm -f "$out/$name.db" "$out/$name.db-wal" "$out/$name.db-shm"
  local t0 t1 rc
  t0=$(date +%s.%N)
  GPUTUNE_KERNEL_CACHE=$2 "$bundle/cargo-gputune" run-bundle "$bundle" --db "$out/$name.db" \
    > "$out/$name.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  echo "$name exit=$rc wall_s=$(python3 -c "print(f'{$t1 - $t0:.3f}')")" | tee -a "$out/times.txt"
  "$bundle/cargo-gputune" report --db "$out/$name.db" --top 10 > "$out/$name.report.txt" 2>&1
  "$bundle/cargo-gputune" report --db "$out/$name.db" --coverage >> "$out/$name.report.txt" 2>&1
  "$bundle/cargo-gputune" report --db "$out/$name.db" --top 1000 --format json \
    > "$out/$name.report.json" 2> "$out/$name.report.err"
}

for r in $(seq 1 "$runs"); do
  rm -rf "$out/kernels-$r"
  search "search-$r" "$out/kernels-$r"
done
# The same search with every kernel already in the disk cache (what a rerun costs).
search "search-warm" "$out/kernels-$runs"

for r in $(seq 1 "$runs"); do
  "$bundle/bin/scale-base" -b copy -a 'T{ct}=f32' -a 'Elements{io}[pow2]=26' \
    --stopping-criterion entropy --json "$out/copy-$r.json" > "$out/copy-$r.txt" 2>&1 \
    || echo "copy $r exited $?" >> "$out/errors.txt"
done

python3 "$here/summarize-scale.py" "$out" > "$out/summary.md"
cat "$out/summary.md"
