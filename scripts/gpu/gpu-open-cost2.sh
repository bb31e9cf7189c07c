#!/usr/bin/env bash
# Issue 24 diagnosis, warm caches: run-bundle searches with the default compile workers and
# with one (GPUTUNE_COMPILE_THREADS=1), alternating; and the batch binary run directly over
# every variant (10 samples each), its events stamped, to see its start and its teardown.
#   OUT=DIR bash .gpu/gpu-open-cost2.sh PROBLEM
set -uo pipefail
OUT=${OUT:?}
here=$(dirname "$0"); problem=$1; bundle=$here/$problem-bundle
mkdir -p "$OUT"
export GPUTUNE_KERNEL_CACHE=$OUT/kernels
read -r bin bench labels axes < <(python3 -c '
import json, sys
b = json.load(open(sys.argv[1] + "/bundle.json"))["benches"][0]
u = b["units"][0]
f = b["function"]["name"]
print(sys.argv[1] + "/" + u["bin"], b["bench"], ",".join([f + ".base"] + [f + "." + l for l in u["labels"]]), " ".join(b["user_axes"]))
' "$bundle")
"$bundle/cargo-gputune" run-bundle "$bundle" --db "$OUT/untimed.db" > /dev/null 2>&1
stamp() {
  python3 -u -c '
import sys, time, json
t0 = float(sys.argv[1]); last = None
for line in sys.stdin:
    t = time.time() - t0
    if line.startswith("{\"event\":\"process\""):
        tl = json.loads(line)["timeline"]
        print(f"process event at {t:.3f} s: " + ", ".join(f"{k} {v:.3f}" for k, v in tl.items() if v is not None))
    elif line.startswith("{\"event\":\"provenance\""):
        print(f"first event at {t:.3f} s")
print(f"EOF at {time.time() - t0:.3f} s")
' "$1"
}
for r in 1 2 3; do
  for mode in default one; do
    if [ $mode = one ]; then export GPUTUNE_COMPILE_THREADS=1; else unset GPUTUNE_COMPILE_THREADS; fi
    t0=$(date +%s.%N)
    "$bundle/cargo-gputune" run-bundle "$bundle" --db "$OUT/$mode-$r.db" > "$OUT/$mode-$r.txt" 2>&1
    t1=$(date +%s.%N)
    echo "run-bundle $mode-$r: $(python3 -c "print(f'{$t1 - $t0:.3f}')") s; $(grep -o 'Time to the first.*' "$OUT/$mode-$r.txt")"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$bin" -b "$bench" $axes --variant "$labels" --no-batch --stopping-criterion sample-count \
      --target-samples 10 --jsonl /dev/stdout 2> /dev/null | stamp "$t0" | sed "s/^/direct $mode-$r: /"
  done
done
unset GPUTUNE_COMPILE_THREADS
rm -rf "$OUT/kernels" "$OUT"/*.db*
