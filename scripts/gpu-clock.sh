#!/usr/bin/env bash
# Issue 16's clock on the GPU machine, both timers side by side in one call:
# 1. the ncu check (gpu-ncu-check.sh) with each case measured by `--timer events` and
#    `--timer cupti`, against Nsight Compute;
# 2. searches of the scale, reduce, transpose and stencil bundles with the default timer (auto:
#    CUPTI) and with `--timer events` (a hard-linked copy of the bundle whose bench arguments
#    say so), alternating, RUNS each: wall time, winner and score, and the reports.
#
#   OUT=DIR [RUNS=2] [DEADLINE=540] bash .gpu/gpu-clock.sh
#
# No search starts after DEADLINE seconds (a device call has 600), and the ncu check gets at
# most 420; whatever ran is archived in OUT/clock.tgz.
# Needs the bundles of scripts/build-gpu.sh (parts scale reduce transpose autotune faults sgemm
# large-base).
set -uo pipefail
out=${OUT:?set OUT to the folder for the results}
runs=${RUNS:-2}
mkdir -p "$out"
if [ -d /usr/local/cuda/targets/x86_64-linux/lib ]; then
  export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
g=.gpu
ls -l /usr/local/cuda/extras/CUPTI/lib64/libcupti* /usr/local/cuda/targets/x86_64-linux/lib/libcupti* \
  > "$out/cupti-libs.txt" 2>&1

deadline=${DEADLINE:-540}
OUT="$out/ncu" timeout 420 bash "$g/gpu-ncu-check.sh" > "$out/ncu.log" 2>&1
echo "ncu check exit=$?" >> "$out/times.txt"

events_copy() { # bundle -> a copy whose benches run with --timer events
  local src=$1 dst=$1-events
  rm -rf "$dst"
  cp -al "$src" "$dst"
  rm "$dst/bundle.json"
  python3 - "$src/bundle.json" "$dst/bundle.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
for b in plan["benches"]:
    b["bench_args"] = b["bench_args"] + ["--timer", "events"]
json.dump(plan, open(sys.argv[2], "w"), indent=1)
PY
  echo "$dst"
}

for name in scale reduce transpose stencil; do
  bundle=$g/$name-bundle
  events=$(events_copy "$bundle")
  for r in $(seq 1 "$runs"); do
    for timer in auto events; do
      if [ "$SECONDS" -gt "$deadline" ]; then
        echo "$name-$timer-$r skipped: past the deadline" >> "$out/times.txt"
        continue
      fi
      dir=$bundle
      [ $timer = events ] && dir=$events
      tag=$name-$timer-$r
      rm -rf "$out/kernels" "$out/$tag.db"*
      t0=$(date +%s.%N)
      GPUTUNE_KERNEL_CACHE="$out/kernels" "$dir/cargo-gputune" run-bundle "$dir" \
        --db "$out/$tag.db" > "$out/$tag.log" 2>&1
      rc=$?
      echo "$tag exit=$rc wall_s=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.3f}')")" >> "$out/times.txt"
      "$dir/cargo-gputune" report --db "$out/$tag.db" --top 5 > "$out/$tag.report.txt" 2>&1
      "$dir/cargo-gputune" report --db "$out/$tag.db" --top 100000 --format json \
        > "$out/$tag.report.json" 2> "$out/$tag.report.err"
    done
  done
  rm -rf "$events" "$out/kernels"
done
grep -l "timed by CUDA events" "$out"/*.log > "$out/fallbacks.txt" 2>/dev/null
cat "$out/times.txt"
# Fewer than 8 files come back: one archive.
tar -C "$out" -czf /tmp/clock.tgz . && rm -rf "${out:?}"/* && mv /tmp/clock.tgz "$out/"
