#!/usr/bin/env bash
# Issue 45 on the GPU machine, the GPU half of the user's loop (docs/candle.md) in one call:
# 1. capture: the application itself (candle-llama-tuned, whose patched candle asks
#    examples/candle-ops' lookups) run once per model with GPUTUNE_CAPTURE, LAYERS (2) layers:
#    every layer launches the same shapes, so the distinct workloads are the full model's;
# 2. search: the bundle of every candle-ops function, built before anything was captured
#    (`build-gpu.sh candle`), run on exactly the captured workloads (`run-bundle --captured`);
# 3. the search's report per size (every captured shape, each variant against candle's launch)
#    and its top variants.
# Writes $OUT/loop/: captures/, MODEL-capture.txt (each run's output: its logits' checksum says
# whether they are finite), captured.db, per-size.txt, report.txt, times.txt.
#   OUT=DIR [MODELS="bf16 q4k q8_0 bert"] [LAYERS=2] [DECODE=64] bash .gpu/gpu-candle-loop.sh
# Built by `bash scripts/gpu/build-gpu.sh candle candle-llama` (.gpu/candle/).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT to the folder for logs, stores and reports}"
models=${MODELS:-bf16 q4k q8_0 bert}
layers=${LAYERS:-2}
decode=${DECODE:-64}
out=$OUT/loop
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$out/gpu.txt" 2>&1
bin=$(mktemp -d "${TMPDIR:-/tmp}/candle-loop.XXXXXX")
python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
  "$here/candle/candle-llama-tuned.xz" "$bin/candle-llama-tuned" \
  || { echo "error: cannot unpack $here/candle/candle-llama-tuned.xz" >&2; exit 1; }
chmod +x "$bin/candle-llama-tuned"

# name, command…: its output in $out/name.txt; appends "name exit=RC wall_s=S" to times.txt.
timed() {
  local name=$1 t0 rc
  shift
  t0=$(date +%s.%N)
  "$@" > "$out/$name.txt" 2>&1
  rc=$?
  echo "$name exit=$rc wall_s=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.2f}')")" | tee -a "$out/times.txt"
  if [ $rc != 0 ]; then tail -5 "$out/$name.txt"; fi
  return $rc
}

status=0
for model in $models; do
  GPUTUNE_CAPTURE=$out/captures timed "$model-capture" "$bin/candle-llama-tuned" --model "$model" \
    --layers "$layers" --runs 1 --decode "$decode" || status=1
done
ls "$out/captures" > "$out/captures.txt" 2>&1
b=$here/candle/candle-bundle
timed search "$b/cargo-gputune" run-bundle "$b" --captured "$out/captures" --db "$out/captured.db" || status=1
"$b/cargo-gputune" report --db "$out/captured.db" --per-size > "$out/per-size.txt" 2>&1
"$b/cargo-gputune" report --db "$out/captured.db" --top 20 > "$out/report.txt" 2>&1
"$b/cargo-gputune" report --db "$out/captured.db" --format json --top 1000 > "$out/report.json" 2>&1
grep -h "logits\|checksum\|NaN" "$out"/*-capture.txt | head -20
cat "$out/times.txt"
rm -rf "$bin"
exit $status
