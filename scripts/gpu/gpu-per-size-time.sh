#!/usr/bin/env bash
# Issue 26's GPU demonstration, second call: the production builds of the scale bench with
# one winner (.gpu/scale-single) and with per-size winners (.gpu/scale-per-size), both built
# by `STORE=… bash scripts/gpu/build-gpu.sh per-size-prod` from the first call's store, timed at
# every measured size. Each run is one bench process over the four sizes (cold, nvbench's
# stdrel criterion to 0.5 % noise, no --variant: the production dispatch chooses, and each
# state's JSON says which variant it ran); RUNS runs of each build, alternating single,
# per-size, single, … so that drift between processes hits both alike. The copy of the same
# sizes, once, is the HBM roof.
#
#   OUT=DIR [RUNS=5] [EXAMPLE=scale] [SIZES='Elements{io}[pow2]=[16,20,24,28]'] [SIZE_AXIS=Elements] \
#     [WORKLOAD='T{ct}=f32'] bash .gpu/gpu-per-size-time.sh
#
# EXAMPLE names the builds (.gpu/EXAMPLE-single, .gpu/EXAMPLE-per-size) and the bench; the
# scale example also has a copy bench, the HBM roof (skipped where the binary has none).
#
# Writes to $OUT: single-R.json / per-size-R.json (and .log), copy-1.json, gpu.txt, and
# summary.md (summarize-per-size.py: per size, the median over runs of each build's median
# time, the runs' range, the speedup, and whether the ranges are apart).
set -uo pipefail
out=${OUT:?set OUT to the folder for the JSON documents and the summary}
runs=${RUNS:-5}
example=${EXAMPLE:-scale}
sizes=${SIZES:-'Elements{io}[pow2]=[16,20,24,28]'}
workload=${WORKLOAD-'T{ct}=f32'}
export SIZE_AXIS=${SIZE_AXIS:-Elements}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,ecc.mode.current \
  --format=csv > "$out/gpu.txt" 2>&1
rc=0
for r in $(seq 1 "$runs"); do
  for kind in single per-size; do
    ".gpu/$example-$kind" -b "$example" ${workload:+-a "$workload"} -a "$sizes" \
      --json "$out/$kind-$r.json" > "$out/$kind-$r.log" 2>&1 || rc=1
  done
done
if [ "$example" = scale ]; then
  .gpu/scale-single -b copy -a 'T{ct}=f32' -a "$sizes" --json "$out/copy-1.json" \
    > "$out/copy-1.log" 2>&1 || rc=1
fi
python3 .gpu/summarize-per-size.py "$out" | tee "$out/summary.md"
exit $rc
