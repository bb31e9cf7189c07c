#!/usr/bin/env bash
# Issue 45 on the GPU machine: candle's rmsnorm, layernorm and softmax searched as candle ships
# them (examples/candle-ops), twice with an empty kernel cache; writes $OUT/candle/.
#   OUT=DIR [RUNS=2] bash .gpu/gpu-candle.sh
# Built by `bash scripts/gpu/build-gpu.sh candle` (.gpu/candle/).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT to the folder for logs, stores and reports}"
bundle=$here/candle/candle-bundle
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
RUNS=${RUNS:-2} bash "$here/gpu-search.sh" candle "$bundle"
"$bundle/cargo-gputune" report --db "$OUT/candle/search-1.db" --top 30 > "$OUT/candle/report-top30.txt" 2>&1
cat "$OUT/candle/times.txt"
