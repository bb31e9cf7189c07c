#!/usr/bin/env bash
# The runtime-autotuner benchmark of BENCHMARKS.md (issue #7), run from the repository root on
# the GPU machine after scripts/gpu/build-gpu.sh:
#   bash .gpu/gpu-autotune.sh OUTDIR
# Three runs of 200 000 tuned Jacobi sweeps, each with a fresh autotuner cache, then one that
# starts from the third run's cache; then three `run-bundle` searches of the same kernel under
# #[tune] (32 block sizes), each into a fresh store. Writes every JSON document and a summary
# (summary.md) to OUTDIR.
set -uo pipefail
out=${1:?usage: gpu-autotune.sh OUTDIR}
here=$(dirname "$0")
repeats=${REPEATS:-3}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$out/gpu.txt" 2>&1
for r in $(seq 1 "$repeats"); do
  rm -f "$out/autotune-cache.json"
  timeout 300 "$here/stencil-autotune" --cache "$out/autotune-cache.json" \
    --json "$out/autotune-$r.json" > /dev/null 2> "$out/autotune-$r.stderr" \
    || echo "autotune run $r exited $?" >> "$out/errors.txt"
done
timeout 300 "$here/stencil-autotune" --cache "$out/autotune-cache.json" \
  --json "$out/autotune-cached.json" > /dev/null 2> "$out/autotune-cached.stderr" \
  || echo "cached autotune run exited $?" >> "$out/errors.txt"
bundle="$here/stencil-bundle"
for r in $(seq 1 "$repeats"); do
  start=$(date +%s.%N)
  timeout 500 "$bundle/cargo-gputune" run-bundle "$bundle" --db "$out/search-$r.db" \
    > "$out/search-$r.txt" 2>&1 || echo "search $r exited $?" >> "$out/errors.txt"
  end=$(date +%s.%N)
  echo "$start $end" > "$out/search-$r.wall"
  "$bundle/cargo-gputune" report --db "$out/search-$r.db" --top 40 --format json \
    > "$out/search-$r.json" 2>> "$out/errors.txt"
done
python3 "$here/summarize-autotune.py" "$out" > "$out/summary.md"
cat "$out/summary.md"
