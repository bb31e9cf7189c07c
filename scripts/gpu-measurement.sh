#!/usr/bin/env bash
# The measurement benchmark of BENCHMARKS.md, run from the repository root on the GPU machine:
#   bash .gpu/gpu-measurement.sh OUTDIR
# Runs the scale kernel and a device-to-device copy of the same size in one process, cold and
# hot, ten times each with stdrel and with entropy, once with sample-count, and writes every
# JSON document plus a summary table (summary.md) to OUTDIR.
set -uo pipefail
out=${1:?usage: gpu-measurement.sh OUTDIR}
bin=$(dirname "$0")/scale
repeats=${REPEATS:-10}
mkdir -p "$out/json"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$out/gpu.txt" 2>&1
axes=(-a 'T{ct}=f32' -a 'Elements{io}[pow2]=[20,26]' -a 'IPT=[1,8]' -a 'TPB=256')
for criterion in stdrel entropy; do
  for r in $(seq 1 "$repeats"); do
    timeout 120 "$bin" -b scale -b copy "${axes[@]}" --stopping-criterion "$criterion" \
      --json "$out/json/$criterion-$r.json" > "$out/json/$criterion-$r.txt" 2>&1 \
      || echo "run $criterion $r exited $?" >> "$out/errors.txt"
  done
done
"$bin" -b scale -b copy "${axes[@]}" --stopping-criterion sample-count --target-samples 200 \
  --json "$out/json/sample-count-1.json" > "$out/json/sample-count-1.txt" 2>&1 \
  || echo "run sample-count exited $?" >> "$out/errors.txt"
# A bad criterion and a bad axis must fail with exit 2 and one line.
"$bin" --stopping-criterion nope > "$out/usage.txt" 2>&1; echo "exit $?" >> "$out/usage.txt"
"$bin" -a 'Elements{io}=5' >> "$out/usage.txt" 2>&1; echo "exit $?" >> "$out/usage.txt"
python3 "$(dirname "$0")/summarize-measurement.py" "$out/json" > "$out/summary.md"
cat "$out/summary.md"
