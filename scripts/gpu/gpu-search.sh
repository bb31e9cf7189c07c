#!/usr/bin/env bash
# Runs one bundle's whole search RUNS times on the GPU machine, each into a fresh store and with an
# empty kernel cache, timing `run-bundle` wall to wall; writes per run the log, the store, and the
# reports (text and JSON) to $OUT/NAME/. With WARM=1, once more with the last run's kernel cache.
#   OUT=DIR [RUNS=3] [WARM=1] [RUN_ARGS=--no-race] bash .gpu/gpu-search.sh NAME BUNDLE
# Summarise with `python3 .gpu/summarize-search.py DIR/NAME`.
set -uo pipefail
out=${OUT:?set OUT to the folder for logs, stores and reports}/${1:?name}
bundle=${2:?bundle directory}
runs=${RUNS:-3}
mkdir -p "$out"
touch "$out/times.txt"

search() { # name, kernel cache directory
  local name=$1
  rm -f "$out/$name.db" "$out/$name.db-wal" "$out/$name.db-shm"
  local t0 t1 rc
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086 # RUN_ARGS: extra run-bundle flags, e.g. --no-race
  GPUTUNE_KERNEL_CACHE=$2 "$bundle/cargo-gputune" run-bundle "$bundle" ${RUN_ARGS:-} --db "$out/$name.db" \
    > "$out/$name.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  echo "$name exit=$rc wall_s=$(python3 -c "print(f'{$t1 - $t0:.3f}')")" | tee -a "$out/times.txt"
  "$bundle/cargo-gputune" report --db "$out/$name.db" --top 10 > "$out/$name.report.txt" 2>&1
  "$bundle/cargo-gputune" report --db "$out/$name.db" --top 1000 --format json \
    > "$out/$name.report.json" 2> "$out/$name.report.err"
}

for r in $(seq 1 "$runs"); do
  rm -rf "$out/kernels-$r"
  search "search-$r" "$out/kernels-$r"
done
if [ "${WARM:-0}" = 1 ]; then
  # The same search with every kernel already in the disk cache (what a rerun costs).
  search "search-warm" "$out/kernels-$runs"
fi
for r in $(seq 1 "$runs"); do rm -rf "$out/kernels-$r"; done
