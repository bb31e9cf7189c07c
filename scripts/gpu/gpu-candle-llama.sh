#!/usr/bin/env bash
# Issue 45, deliverable 4, on the GPU machine: tokens per second of a synthetic Llama-3-8B in
# candle 0.11.1 as released (.gpu/candle/candle-llama) against candle with gputune's winners in
# (.gpu/candle/candle-llama-tuned), prefill (512 tokens) and decode, for each model (bf16, f16
# and Q4_K), the two binaries alternately (released, tuned, released, tuned, …: ROUNDS
# processes each, RUNS runs a process after a warm-up; with .gpu/candle/candle-llama-hooks, the
# tuned build without winners, a third in each round: the hooks' cost alone). One model is in
# GPU memory at a time (each process loads its own and frees it when it exits). Writes
# $OUT/llama/: one JSON and one log per process, summary.txt (median and range over every run of
# a binary, the ratios, the CUDA libraries each build mapped), gpu.txt, libs.txt (the libraries
# the binaries load) and gputune.toml (the winners the tuned one holds).
#   OUT=DIR [RUNS=5] [ROUNDS=2] [DECODE=64] [MODELS="bf16 f16 q4k q8_0 bert"] [LAYERS=32] [CAPTURE=1] \
#     bash .gpu/gpu-candle-llama.sh
# Built by `bash scripts/gpu/build-gpu.sh candle-llama`.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT to the folder for logs and results}"
runs=${RUNS:-5}
rounds=${ROUNDS:-2}
decode=${DECODE:-64}
models=${MODELS:-bf16 f16 q4k}
layers=${LAYERS:-32}
out=$OUT/llama
mkdir -p "$out"
# The binaries come in one xz-packed tar (build-gpu.sh): unpack them next to the results'
# folder. With the control (the tuned build with no winners) in it, each round runs it too.
bin=$(mktemp -d "${TMPDIR:-/tmp}/candle-llama.XXXXXX")
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  "$here/candle/candle-llama-builds.tar.xz" "$bin" \
  || { echo "error: cannot unpack $here/candle/candle-llama-builds.tar.xz" >&2; exit 1; }
chmod +x "$bin"/candle-llama*
builds="released tuned"
exes="candle-llama candle-llama-tuned"
if [ -f "$bin/candle-llama-hooks" ]; then
  builds="released tuned hooks"
  exes="$exes candle-llama-hooks"
fi
if [ -f "$here/candle/candle-llama-tuned.toml" ]; then
  cp "$here/candle/candle-llama-tuned.toml" "$out/gputune.toml"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$out/gpu.txt" 2>&1

# The binaries link cuBLAS, cuBLASLt, cuRAND, NVRTC and the CUDA runtime (candle-core as
# released links them, and the tuned builds link what it links): put the directories that hold
# them on the library path, from the system's cache, CUDA's install or Python's NVIDIA wheels.
site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2> /dev/null)
libdirs=
for lib in libcublas.so.13 libcublasLt.so.13 libcurand.so.10 libnvrtc.so.13 libcudart.so.13; do
  if ldconfig -p 2> /dev/null | grep -q " $lib "; then continue; fi
  found=$(find ${site:+"$site/nvidia"} /usr/local/cuda/lib64 /usr/local/cuda/targets \
    -name "$lib" 2> /dev/null | head -1)
  if [ -n "$found" ]; then
    dir=$(dirname "$found")
    case ":$libdirs:" in *":$dir:"*) ;; *) libdirs=$libdirs${libdirs:+:}$dir ;; esac
  else
    echo "warning: $lib not found (the released binary will not start without it)" | tee -a "$out/libs.txt"
  fi
done
export LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >> "$out/libs.txt"
for exe in $exes; do
  ldd "$bin/$exe" >> "$out/libs.txt" 2>&1
  if ldd "$bin/$exe" | grep -q "not found"; then
    echo "error: $exe misses libraries:" >&2
    ldd "$bin/$exe" | grep "not found" >&2
    exit 1
  fi
done

status=0
for model in $models; do
  for round in $(seq 1 "$rounds"); do
    for build in $builds; do
      exe=$bin/candle-llama
      if [ $build != released ]; then exe=$bin/candle-llama-$build; fi
      name=$model-$build-$round
      t0=$(date +%s.%N)
      "$exe" --model "$model" --layers "$layers" --runs "$runs" --decode "$decode" \
        --json "$out/$name.json" > "$out/$name.txt" 2>&1
      rc=$?
      echo "$name exit=$rc wall_s=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')")" \
        | tee -a "$out/times.txt"
      if [ $rc != 0 ]; then
        status=1
        tail -5 "$out/$name.txt"
      fi
    done
  done
done

# CAPTURE=1: the tuned binary once more per model (one run, not timed) with GPUTUNE_CAPTURE,
# so that the lookups record the launches this application makes (issue 45's capture, from the
# real program): $OUT/llama/captures, for `cargo gputune search --captured`.
if [ "${CAPTURE:-0}" = 1 ]; then
  for model in $models; do
    GPUTUNE_CAPTURE=$out/captures "$bin/candle-llama-tuned" --model "$model" --layers "$layers" \
      --runs 1 --decode "$decode" > "$out/$model-capture.txt" 2>&1 \
      || { status=1; tail -5 "$out/$model-capture.txt"; }
  done
fi

python3 - "$out" << 'EOF' | tee "$out/summary.txt"
import glob, json, os, statistics, sys
out = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    with open(path) as f:
        d = json.load(f)
    # The build as the file is named (the control reports itself as `tuned`).
    build = os.path.basename(path)[len(d["model"]) + 1:].rsplit("-", 1)[0]
    r = rows.setdefault((d["model"], build), {"prefill": [], "decode": [], "gpu": d["gpu"]})
    r["prefill"] += [x["prefill_tokens_per_s"] for x in d["runs"]]
    r["decode"] += [x["decode_tokens_per_s"] for x in d["runs"]]
    r.setdefault("abs", []).append((d.get("logits_checksum") or {}).get("abs_sum"))
    r.setdefault("libs", set()).update(d.get("cuda_libraries") or [])
def show(v):
    return f"{statistics.median(v):.1f} ({min(v):.1f}–{max(v):.1f})"
gpus = sorted({r["gpu"] for r in rows.values()})
print(f"GPU: {', '.join(gpus)}; tokens/s, median (min–max) over every run of a binary")
print(f"{'model':6} {'candle':9} {'runs':>4}  {'prefill (512 tokens)':>26}  {'decode':>22}")
for model in ["bf16", "f16", "q4k", "q8_0", "bert"]:
    for build in ["released", "tuned", "hooks"]:
        r = rows.get((model, build))
        if r:
            print(f"{model:6} {build:9} {len(r['prefill']):>4}  {show(r['prefill']):>26}  {show(r['decode']):>22}")
    a, b = rows.get((model, "released")), rows.get((model, "tuned"))
    for name, x, y in [("tuned/rel", a, b), ("hooks/rel", a, rows.get((model, "hooks"))),
                       ("tuned/hooks", rows.get((model, "hooks")), b)]:
        if x and y:
            p = statistics.median(y["prefill"]) / statistics.median(x["prefill"])
            q = statistics.median(y["decode"]) / statistics.median(x["decode"])
            print(f"{model:6} {name:11} {'':>2}  {p:>25.3f}×  {q:>21.3f}×")
    if a and b:
        # The same weights in both builds: their last logits agree up to the order of sums.
        ra, rb = a["abs"][0], b["abs"][0]
        if ra and rb:
            print(f"{model:6} logits' sum of magnitudes: released {ra:.6e}, tuned {rb:.6e} "
                  f"(relative difference {abs(rb - ra) / ra:.2e})")
# Which cuBLAS each build ran with (all of them link it, as candle-core asks).
for (model, build), r in sorted(rows.items()):
    print(f"{model} {build}: CUDA libraries loaded: {', '.join(sorted(r['libs'])) or 'not recorded'}")
EOF
rm -rf "$bin"
exit $status
