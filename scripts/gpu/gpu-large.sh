#!/usr/bin/env bash
# Issue 17 on the GPU machine: the whole large space recorded once, then live searches of it
# by the guided strategies, each timed wall to wall with a fresh, empty kernel cache.
# Build the bundle on a development machine first (it travels as .gpu-large/, ~18 MB):
#
#   cargo gputune -p gputune-example-sgemm-large search --build-only \
#     --bundle .gpu-large/sgemm-large-bundle --batch-size 20000
#   OUT=DIR [RECORD_LIMIT=420] [RESUME=STORE] [EVALS=320] [STRATEGIES="surrogate …"] \
#     bash scripts/gpu/gpu-large.sh [BUNDLE]
#
# - record: `run-bundle BUNDLE` (the default deciding search: every point screened with 10
#   cold samples beside base, the finalists measured in full) into $OUT/record.db, cut at
#   RECORD_LIMIT seconds (SIGINT: nothing finished is lost); RESUME copies an earlier,
#   unfinished record.db in first, and the search goes on where it stopped. times.txt says
#   each part's wall time and exit code.
# - live: with STRATEGIES (default "surrogate genetic annealing") and the record complete,
#   `run-bundle BUNDLE --strategy S --max-evals EVALS --seed 1` into $OUT/live-S.db, each
#   followed by its JSON report.
set -uo pipefail
out=${OUT:?set OUT to the folder for the results}
bundle=${1:-.gpu-large/sgemm-large-bundle}
gputune=$bundle/cargo-gputune
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv > "$out/gpu.txt" 2>&1

# name, seconds, command…: runs it with its output in $out/name.log, interrupted (SIGINT, then
# SIGKILL 20 s later) past the limit, and appends "name exit=RC wall_s=S" to times.txt.
timed() {
  local name=$1 limit=$2 t0 rc
  shift 2
  t0=$(date +%s.%N)
  timeout -s INT -k 20 "$limit" "$@" > "$out/$name.log" 2>&1
  rc=$?
  echo "$name exit=$rc wall_s=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.3f}')")" | tee -a "$out/times.txt"
  return $rc
}

if [ -n "${RESUME:-}" ]; then
  cp "$RESUME" "$out/record.db"
fi
rm -rf "$out/kernels-record"
timed record "${RECORD_LIMIT:-420}" env GPUTUNE_KERNEL_CACHE="$out/kernels-record" \
  "$gputune" run-bundle "$bundle" --db "$out/record.db"
recorded=$?
rm -rf "$out/kernels-record"
"$gputune" report --db "$out/record.db" --top 20 > "$out/record.report.txt" 2>&1
tail -4 "$out/record.log"
if [ $recorded != 0 ]; then
  echo "the record is not complete (exit $recorded): no live searches" >&2
  exit 1
fi
for s in ${STRATEGIES:-surrogate genetic annealing}; do
  rm -rf "$out/kernels-$s"
  timed "live-$s" 300 env GPUTUNE_KERNEL_CACHE="$out/kernels-$s" "$gputune" run-bundle "$bundle" \
    --strategy "$s" --max-evals "${EVALS:-320}" --seed 1 --db "$out/live-$s.db"
  rm -rf "$out/kernels-$s"
  "$gputune" report --db "$out/live-$s.db" --top 1000000 --format json > "$out/live-$s.report.json" \
    2> "$out/live-$s.report.err"
  tail -2 "$out/live-$s.log"
done
"$gputune" report --db "$out/record.db" --top 1000000 --format json > "$out/record.report.json" \
  2> "$out/record.report.err"
