#!/usr/bin/env bash
# Issue 45 on the GPU machine: llama-ops's launches captured (GPUTUNE_CAPTURE), then candle's
# GGUF matrix-vector launchers (Q4_K, Q8_0; warps × rows a block) searched at Llama-3-8B's decode
# shapes RUNS times with an empty kernel cache; writes $OUT/captures/, $OUT/llama-ops.txt and
# $OUT/mmvq/.
#   OUT=DIR [RUNS=2] bash .gpu/gpu-candle-mmvq.sh
# Built by `bash scripts/gpu/build-gpu.sh candle-mmvq` (.gpu/candle/).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT to the folder for logs, stores and reports}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/captures"
t0=$(date +%s.%N)
GPUTUNE_CAPTURE=$OUT/captures "$here/candle/llama-ops" > "$OUT/llama-ops.txt" 2>&1
echo "llama-ops exit=$? wall_s=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.3f}')")" | tee -a "$OUT/llama-ops.txt"
bundle=$here/candle/mmvq-bundle
RUNS=${RUNS:-2} bash "$here/gpu-search.sh" mmvq "$bundle"
"$bundle/cargo-gputune" report --db "$OUT/mmvq/search-1.db" --top 60 > "$OUT/mmvq/report-top60.txt" 2>&1
cat "$OUT/mmvq/times.txt" "$OUT/llama-ops.txt"
