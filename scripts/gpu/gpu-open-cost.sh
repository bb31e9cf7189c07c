#!/usr/bin/env bash
# What a bench process costs around its samples on the GPU machine (issue 24): its device
# opening alone, beside a `--devices` probe (as `run-bundle` runs them) and without compile
# workers, the probes' own wall times, and warm `run-bundle` searches stamped line by line.
#
#   OUT=DIR [RUNS=5] bash .gpu/gpu-open-cost.sh PROBLEM      (bundle in .gpu/PROBLEM-bundle)
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the results}
runs=${RUNS:-5}
here=$(dirname "$0")
problem=$1
bundle=$here/$problem-bundle
mkdir -p "$OUT"
read -r bin bench < <(python3 -c '
import json, sys
b = json.load(open(sys.argv[1] + "/bundle.json"))["benches"][0]
print(sys.argv[1] + "/" + b["base"], b["bench"])
' "$bundle")
now() { date +%s.%N; }
stamp() {
  python3 -u -c '
import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    sys.stdout.write(f"{time.time() - t0:7.3f} {line[:160].rstrip()}\n")
print(f"{time.time() - t0:7.3f} EOF")
' "$1"
}
secs() { python3 -c "print(f'{$2 - $1:.3f}')"; }
timeline() { # jsonl, name, outer wall
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, name, wall = sys.argv[1], sys.argv[2], float(sys.argv[3])
for line in open(path):
    e = json.loads(line)
    t = e.get("timeline") or (e.get("process") or {}).get("timeline")
    if t:
        print(f"{name}: wall {wall:.3f} s, in-process total {t['total']:.3f} s "
              f"(outside it {wall - t['total']:.3f} s), device open {t['device_open']:.3f} s, "
              f"setup {t['setup']:.3f} s, first sample {t.get('first_sample')}, "
              f"measure {t['measure']:.3f} s")
PY
}
args=(-b "$bench" --variant base --stopping-criterion sample-count --target-samples 10
  --min-samples 10 --no-batch)
for i in 1 2; do
  t0=$(now)
  "$bin" "${args[@]}" --jsonl /dev/stdout 2>&1 | stamp "$t0" | cut -c1-140 > "$OUT/stamped-$i.txt"
  echo "== stamped-$i (events as they come, the EOF when the process closed its output)"
  cat "$OUT/stamped-$i.txt"
done
for i in $(seq 1 "$runs"); do
  t0=$(now); "$bin" --devices -b "$bench" --device 0 > /dev/null 2>&1; t1=$(now)
  echo "devices-probe-$i: $(secs "$t0" "$t1") s"
  t0=$(now); "$bin" --list > /dev/null 2>&1; t1=$(now)
  echo "list-probe-$i: $(secs "$t0" "$t1") s"
  t0=$(now); "$bin" "${args[@]}" --jsonl "$OUT/alone-$i.jsonl" > /dev/null 2>&1; t1=$(now)
  timeline "$OUT/alone-$i.jsonl" "alone-$i" "$(secs "$t0" "$t1")"
  t0=$(now)
  "$bin" --devices -b "$bench" --device 0 > /dev/null 2>&1 &
  "$bin" "${args[@]}" --jsonl "$OUT/beside-$i.jsonl" > /dev/null 2>&1; t1=$(now)
  wait
  timeline "$OUT/beside-$i.jsonl" "beside-probe-$i" "$(secs "$t0" "$t1")"
  t0=$(now)
  GPUTUNE_COMPILE_THREADS=1 "$bin" "${args[@]}" --jsonl "$OUT/noworkers-$i.jsonl" > /dev/null 2>&1
  t1=$(now)
  timeline "$OUT/noworkers-$i.jsonl" "no-workers-$i" "$(secs "$t0" "$t1")"
done
export GPUTUNE_KERNEL_CACHE=$OUT/kernels
"$bundle/cargo-gputune" run-bundle "$bundle" --db "$OUT/untimed.db" > /dev/null 2>&1
for r in $(seq 1 3); do
  t0=$(now)
  "$bundle/cargo-gputune" run-bundle "$bundle" --db "$OUT/warm-$r.db" 2>&1 | stamp "$t0" > "$OUT/warm-$r.txt"
  echo "  end: $(secs "$t0" "$(now)") s" >> "$OUT/warm-$r.txt"
  cat "$OUT/warm-$r.txt"
done
rm -rf "$OUT/kernels"
