#!/usr/bin/env bash
# Issue 32 on the GPU machine ("real kernels compile"), from the repository root after
# `bash scripts/gpu/build-gpu.sh real-kernels gemv rowsum kt` on a development machine:
#
#   OUT=DIR [RUNS=3] [COLD_RUNS=1] [SKIP_TEST=1] bash .gpu/gpu-real-kernels.sh [PROBLEM…]
#
# PROBLEM: gemv rowsum (default both).
#
# 1. .gpu/real-kernels-test: fp16, bf16, cooperative groups, CUB's BlockLoad, BlockRadixSort
#    and BlockReduce, and a header handed over by name compile through the kernel handle with
#    no include path written, launch and compute the right answers; a register limit as a
#    tuning parameter changes the registers recorded ($OUT/real-kernels.txt).
# 2. The two examples written for the issue (gemv: bf16 with a header of its own and a register
#    limit; rowsum: CUB's BlockLoad × BlockReduce) beside Kernel Tuner, cold and warm
#    (gpu-vs-kt.sh into $OUT/vs-kt; its summary.md), with a --no-race reference search each
#    (full.db), whose report, registers included, goes to $OUT/PROBLEM-report.txt.
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the results}
here=$(dirname "$0")
mkdir -p "$OUT"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
problems=${*:-gemv rowsum}
if [ "${SKIP_TEST:-0}" != 1 ]; then
  "$here/real-kernels-test" --nocapture --test-threads 1 > "$OUT/real-kernels.txt" 2>&1
  echo "real-kernels-test exit=$?" | tee -a "$OUT/real-kernels.txt"
fi
# shellcheck disable=SC2086 # a list of problems
OUT=$OUT/vs-kt RUNS=${RUNS:-3} COLD_RUNS=${COLD_RUNS:-1} MODES="cold warm" FULL=1 \
  FULL_ARGS=--no-race bash "$here/gpu-vs-kt.sh" $problems
for p in $problems; do
  "$here/cargo-gputune" report --db "$OUT/vs-kt/$p/full.db" --top 12 > "$OUT/$p-report.txt" 2>&1
done
