#!/usr/bin/env bash
# Where a cold search's first second goes (issue 24): the probes `run-bundle` makes of the bench
# binary before it starts the search (`--list`, `--devices`), each timed as a process, then
# RUNS cold searches of the bundle (a fresh store and an empty kernel cache each), every line
# they print stamped with the seconds since the search started. Run on the GPU machine:
#
#   OUT=DIR [RUNS=2] bash .gpu/gpu-cold-trace.sh PROBLEM…      (bundles in .gpu/PROBLEM-bundle)
#
# Writes $OUT/PROBLEM/probes.txt and trace-R.txt, and prints both.
set -uo pipefail
export OUT=${OUT:?set OUT to the folder for the results}
runs=${RUNS:-2}
here=$(dirname "$0")

# Seconds since $t0, for each line on stdin.
stamp() {
  python3 -u -c '
import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    sys.stdout.write(f"{time.time() - t0:7.3f} {line}")
' "$1"
}

# name, command…: the command's wall time as a process, appended to probes.txt.
probe() {
  local name=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$@" > /dev/null 2>&1
  t1=$(date +%s.%N)
  echo "$name $(python3 -c "print(f'{$t1 - $t0:.3f}')") s" >> "$out/probes.txt"
}

for problem in "$@"; do
  bundle=$here/$problem-bundle
  out=$OUT/$problem
  mkdir -p "$out"
  : > "$out/probes.txt"
  base=$(python3 -c '
import json, sys
b = json.load(open(sys.argv[1] + "/bundle.json"))["benches"][0]
print(sys.argv[1] + "/" + b["base"], b["bench"])
' "$bundle") || { echo "no bundle $bundle" >&2; continue; }
  read -r bin bench <<< "$base"
  for i in 1 2 3; do
    probe "devices-$i" "$bin" --devices -b "$bench" --device 0
    probe "list-$i" "$bin" --list
  done
  for r in $(seq 1 "$runs"); do
    rm -rf "$out/kernels" "$out/trace-$r.db"*
    t0=$(date +%s.%N)
    GPUTUNE_KERNEL_CACHE=$out/kernels "$bundle/cargo-gputune" run-bundle "$bundle" \
      --db "$out/trace-$r.db" 2>&1 | stamp "$t0" > "$out/trace-$r.txt"
    echo "  end: $(python3 -c "import time; print(f'{time.time() - $t0:.3f}')") s" >> "$out/trace-$r.txt"
  done
  rm -rf "$out/kernels"
  echo "== $problem"
  cat "$out/probes.txt" "$out"/trace-*.txt
done
