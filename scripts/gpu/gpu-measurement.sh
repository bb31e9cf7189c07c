#!/usr/bin/env bash
# The measurement benchmark of BENCHMARKS.md, run from the repository root on the GPU machine:
#   bash .gpu/gpu-measurement.sh OUTDIR
# Runs the scale kernel (variants ipt_1.tpb_256 and ipt_8.tpb_256, compiled into .gpu/scale by
# build-gpu.sh) and, in the next process, a device-to-device copy of the same size, cold and
# hot, ten times each with stdrel and with entropy, once with sample-count, and writes every
# JSON document plus a summary table (summary.md) to OUTDIR.
set -uo pipefail
out=${1:?usage: gpu-measurement.sh OUTDIR}
bin=$(dirname "$0")/scale
repeats=${REPEATS:-10}
mkdir -p "$out/json"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$out/gpu.txt" 2>&1
axes=(-a 'T{ct}=f32' -a 'Elements{io}[pow2]=[20,26]')
# scale is tuned: its variants are chosen with --variant, and a --variant run holds only benches
# that tune, so the copy runs in the next process.
variants=scale.ipt_1.tpb_256,scale.ipt_8.tpb_256
measure() { # criterion, run name, extra flags…
  local criterion=$1 name=$2
  shift 2
  timeout 120 "$bin" -b scale --variant "$variants" "${axes[@]}" --stopping-criterion "$criterion" "$@" \
    --json "$out/json/$name.json" > "$out/json/$name.txt" 2>&1 \
    || echo "run $name (scale) exited $?" >> "$out/errors.txt"
  timeout 120 "$bin" -b copy "${axes[@]}" --stopping-criterion "$criterion" "$@" \
    --json "$out/json/$name.copy.json" > "$out/json/$name.copy.txt" 2>&1 \
    || echo "run $name (copy) exited $?" >> "$out/errors.txt"
}
for criterion in stdrel entropy; do
  for r in $(seq 1 "$repeats"); do
    measure "$criterion" "$criterion-$r"
  done
done
measure sample-count sample-count-1 --target-samples 200
# A bad criterion and a bad axis must fail with exit 2 and one line.
"$bin" --stopping-criterion nope > "$out/usage.txt" 2>&1; echo "exit $?" >> "$out/usage.txt"
"$bin" -a 'Elements{io}=5' >> "$out/usage.txt" 2>&1; echo "exit $?" >> "$out/usage.txt"
python3 "$(dirname "$0")/summarize-measurement.py" "$out/json" > "$out/summary.md"
cat "$out/summary.md"
