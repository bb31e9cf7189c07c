#!/usr/bin/env bash
# Where a cold sample's time goes on the GPU machine (issue 24): one bench binary's base,
# measured for a fixed number of samples, its measuring time against its kernels' own time,
# and, where Nsight Systems is installed, the kernels and API calls of those samples.
#
#   OUT=DIR [NSYS=0] bash .gpu/gpu-sample-cost.sh BENCH_BINARY BENCH [SAMPLES]
#
# NSYS=0 skips the profile (for A/B runs of two binaries).
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the results}
bin=$1 bench=$2 samples=${3:-2000}
mkdir -p "$OUT"
args=(-b "$bench" --variant base --stopping-criterion sample-count --target-samples "$samples"
  --min-samples "$samples" --no-batch)
run() { # name, extra flags…
  local name=$1
  shift
  "$bin" "${args[@]}" "$@" --jsonl "$OUT/$name.jsonl" > "$OUT/$name.out" 2> "$OUT/$name.err"
  python3 - "$OUT/$name.jsonl" "$name" <<'PY'
import json, sys
path, name = sys.argv[1], sys.argv[2]
for line in open(path):
    e = json.loads(line)
    t = e.get("timeline") or (e.get("process") or {}).get("timeline")
    if t:
        m, k = t["measure"], t["kernels"]
        print(f"{name}: measuring {m:.3f} s, kernels {k:.3f} s, ratio {m / k:.2f}, "
              f"device open {t['device_open']:.3f} s, setup {t['setup']:.3f} s, total {t['total']:.3f} s")
PY
}
run default
run no-blocking --disable-blocking-kernel
if [ "${NSYS:-1}" = 0 ]; then
  :
elif command -v nsys > /dev/null || [ -x /usr/local/cuda/bin/nsys ]; then
  nsys=$(command -v nsys || echo /usr/local/cuda/bin/nsys)
  "$nsys" profile -o "$OUT/prof" --force-overwrite true --stats=true "$bin" "${args[@]}" \
    > "$OUT/nsys.txt" 2>&1
  grep -A25 'cuda_gpu_kern_sum\|cuda_api_sum' "$OUT/nsys.txt" | head -80
else
  echo "nsys not found"
fi
