#!/usr/bin/env bash
# Issue #5's GPU benchmark suite, run from the repository root on the GPU machine after
# `bash scripts/gpu/build-gpu.sh scale reduce transpose` on a development machine:
#   OUT=DIR bash .gpu/gpu-suite.sh [PART…]     (parts: scale reduce transpose; default all)
# Per part, the whole search of its bundle RUNS times (default 3), each into a fresh store with
# an empty kernel cache, timed wall to wall; the device-to-device copy of the same size (the
# roof) RUNS times; for scale also a warm-kernel-cache run and one search measuring every
# variant in full (--no-race, the reference for "best time any method finds"); for reduce also
# CuPy's CUB-backed sum (the reference time). Writes stores, logs, reports and DIR/summary.md
# (tables for BENCHMARKS.md).
set -uo pipefail
export OUT=${OUT:?set OUT to the folder for the results}
here=$(dirname "$0")
parts=${*:-scale reduce transpose}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv > "$OUT/gpu.txt" 2>&1
: > "$OUT/summary.md"

for part in $parts; do
  bundle=$here/$part-bundle
  base=$(ls "$bundle"/bin/*-base)
  "$base" --devices > "$OUT/devices.json" 2> "$OUT/devices.err"
  case $part in
    scale)
      WARM=1 bash "$here/gpu-search.sh" scale "$bundle"
      RUNS=1 RUN_ARGS=--no-race bash "$here/gpu-search.sh" scale-full "$bundle"
      bash "$here/gpu-roof.sh" scale "$base" -a 'T{ct}=f32' -a 'Elements{io}[pow2]=26'
      python3 "$here/summarize-search.py" "$OUT/scale" --reference-search "$OUT/scale-full" \
        --title "scale, 155 variants, 2^26 f32" >> "$OUT/summary.md"
      ;;
    reduce)
      bash "$here/gpu-search.sh" reduce "$bundle"
      bash "$here/gpu-roof.sh" reduce "$base" -a 'T{ct}=f32' -a 'Elements{io}[pow2]=28'
      python3 "$here/cupy-sum.py" "$OUT/reduce/reference.json" 28 "${RUNS:-3}" \
        > "$OUT/reduce/cupy.txt" 2>&1 || echo "cupy-sum.py exited $?" >> "$OUT/reduce/errors.txt"
      python3 "$here/summarize-search.py" "$OUT/reduce" \
        --title "two-pass sum, 2^28 f32" >> "$OUT/summary.md"
      ;;
    transpose)
      bash "$here/gpu-search.sh" transpose "$bundle"
      bash "$here/gpu-roof.sh" transpose "$base" -a 'T{ct}=f32' -a 'Side{io}[pow2]=14'
      python3 "$here/summarize-search.py" "$OUT/transpose" \
        --title "tiled transpose, 16384² f32" >> "$OUT/summary.md"
      ;;
    *) echo "unknown part $part" >&2 ;;
  esac
  echo >> "$OUT/summary.md"
done
cat "$OUT/summary.md"
