#!/usr/bin/env bash
# Issue 46's start cost on a machine of several GPUs: N bench processes started at once, each on
# its own GPU, as `--devices` starts them, with every GPU visible to each (`--device I`) against
# each seeing only its own (`CUDA_VISIBLE_DEVICES=I --device 0`). Each process runs base of the
# 64-point SGEMM bundle to 10 samples; its `process` event's timeline says how long opening the
# device took and when the first sample came. 3 rounds of each, alternating.
#   OUT=DIR [H46=.gpu/h46] [COUNTS="1 2"] bash scripts/gpu/gpu-open-isolation.sh
# Writes DIR/open.txt (one line a process) and prints the medians per count and mode.
set -uo pipefail
out=${OUT:?set OUT to the folder for the results}
h=${H46:-.gpu/h46}
bundle=$h/sgemm-bundle
mkdir -p "$out"
export GPUTUNE_KERNEL_CACHE=$out/kernels
read -r bin bench label < <(python3 -c '
import json, sys
b = json.load(open(sys.argv[1] + "/bundle.json"))["benches"][0]
print(sys.argv[1] + "/" + b["units"][0]["bin"], b["bench"], b["function"]["name"] + ".base")
' "$bundle")
run() { # device, visible (or "all"), file
  local env=()
  if [ "$2" != all ]; then env=(env "CUDA_VISIBLE_DEVICES=$2"); fi
  "${env[@]}" "$bin" -b "$bench" --variant "$label" --no-batch --stopping-criterion sample-count \
    --target-samples 10 --device "$1" --jsonl "$3" > /dev/null 2>&1
}
# Warm the kernel cache and the driver once.
run 0 all "$out/warm.jsonl"
: > "$out/open.txt"
for n in ${COUNTS:-1 2}; do
  for r in 1 2 3; do
    for mode in all own; do
      pids=()
      for d in $(seq 0 $((n - 1))); do
        f=$out/n$n-$mode-r$r-d$d.jsonl
        if [ $mode = all ]; then run "$d" all "$f" & else run 0 "$d" "$f" & fi
        pids+=($!)
      done
      wait "${pids[@]}"
      for d in $(seq 0 $((n - 1))); do
        python3 - "$out/n$n-$mode-r$r-d$d.jsonl" "$n" "$mode" "$d" >> "$out/open.txt" << 'PY'
import json, sys
path, n, mode, d = sys.argv[1:]
tl = None
for line in open(path):
    e = json.loads(line)
    if e.get("event") == "process":
        tl = e["timeline"]
if tl:
    print(f"n={n} mode={mode} device={d} device_open={tl['device_open']:.3f} "
          f"first_sample={tl['first_sample'] or float('nan'):.3f} total={tl['total']:.3f}")
else:
    print(f"n={n} mode={mode} device={d} no process event")
PY
      done
    done
  done
done
python3 - "$out/open.txt" << 'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"n=(\d+) mode=(\w+) device=\d+ device_open=([\d.]+) first_sample=([\d.na]+) total=([\d.]+)", line)
    if m:
        r = rows.setdefault((int(m[1]), m[2]), [[], [], []])
        for i in range(3):
            r[i].append(float(m[3 + i]))
print("processes at once | GPUs each sees | device open: median (min–max) s | first sample | process total")
for (n, mode), (o, f, t) in sorted(rows.items()):
    s = lambda v: f"{statistics.median(v):.3f} ({min(v):.3f}–{max(v):.3f})"
    print(f"{n} | {'all' if mode == 'all' else 'its own'} | {s(o)} | {s(f)} | {s(t)}")
PY
rm -rf "$out/kernels" "$out"/*.jsonl
