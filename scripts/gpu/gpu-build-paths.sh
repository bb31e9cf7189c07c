#!/usr/bin/env bash
# Issue 44 on the GPU machine: the three ways a kernel is built, each searched with an empty
# kernel cache (cold) RUNS times and once warm, through gpu-search.sh; and the NVRTC path on
# the same kernel and space as the nvcc one. Writes $OUT/{ptx,nvcc,launcher,nvrtc}/.
#   OUT=DIR [RUNS=3] bash .gpu/gpu-build-paths.sh
# Built by `bash scripts/gpu/build-gpu.sh build-paths` (.gpu/paths/).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT to the folder for logs, stores and reports}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
cp "$here/paths/nvcc-build.txt" "$OUT/" 2>/dev/null
# The bundles travel without their copies of cargo-gputune (64 MiB carry limit): put them back.
for name in ptx nvcc launcher nvrtc; do
  [ -e "$here/paths/$name-bundle/cargo-gputune" ] || cp "$here/paths/cargo-gputune" "$here/paths/$name-bundle/"
done
for name in ptx nvcc launcher nvrtc; do
  WARM=1 RUNS=${RUNS:-3} bash "$here/gpu-search.sh" "$name" "$here/paths/$name-bundle"
done
# What each path compiled on the GPU host: the compile waits of the first cold search.
for name in ptx nvcc launcher nvrtc; do
  echo "== $name"
  grep -iE "compile|measur|wall|variants|verify_failed|invalid|build_failed" "$OUT/$name/search-1.log" | tail -12
  head -20 "$OUT/$name/search-1.report.txt"
done > "$OUT/summary.txt" 2>&1
cat "$OUT"/*/times.txt
