#!/usr/bin/env bash
# Issue 45 on the GPU machine: examples/candle-ops searched on the workloads llama-ops launched
# (captured by gpu-candle-mmvq.sh), RUNS times with an empty kernel cache, then with WARM=1 once
# more; and the default mmvq bundle (Q4_K and Q8_0 at Llama-3-8B's shapes) once; writes
# $OUT/captured/ and $OUT/mmvq/ with per-size reports.
#   OUT=DIR [RUNS=2] bash .gpu/gpu-candle-captured.sh
# Built by `bash scripts/gpu/build-gpu.sh candle-captured candle-mmvq` (.gpu/candle/).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT to the folder for logs, stores and reports}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
for name in captured mmvq; do
  bundle=$here/candle/$name-bundle
  runs=${RUNS:-2}
  if [ $name = mmvq ]; then runs=1; fi
  RUNS=$runs bash "$here/gpu-search.sh" "$name" "$bundle"
  "$bundle/cargo-gputune" report --db "$OUT/$name/search-1.db" --top 40 > "$OUT/$name/report-top40.txt" 2>&1
  "$bundle/cargo-gputune" report --db "$OUT/$name/search-1.db" --per-size > "$OUT/$name/per-size.txt" 2>&1
  cat "$OUT/$name/times.txt"
done
