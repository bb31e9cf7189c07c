#!/usr/bin/env bash
# Issue 47 on the GPU machine: karpathy/llm.c's layernorm and softmax forward kernels
# (examples/llmc) tuned by gputune over kernel version × block size, beside llm.c's own sweep of
# the same kernels, so that the winners compare side by side. From the repository root, after
# `bash scripts/gpu/build-gpu.sh llmc` on a development machine:
#
#   OUT=DIR [PARTS="test search llmc"] [NVCC=/usr/local/cuda/bin/nvcc] bash .gpu/gpu-llmc.sh
#
# test:   .gpu/llmc/gpu-test, base of both functions (every variant's reference) against llm.c's
#         CPU references, every kernel found in its image, version 6's 102 KiB opt-in
#         ($OUT/llmc/gpu-test.txt).
# search: the bundle's search of both functions into a fresh store with an empty kernel cache,
#         then again with that cache kept (gpu-search.sh: search-1.*, search-warm.*, times.txt
#         with the wall times), and `report` ($OUT/llmc/report.txt).
# llmc:   llm.c's own programs built with nvcc as its Makefile builds them for sm_90
#         (`-O3 --use_fast_math`, `-lcublas -lcublasLt -std=c++17`; nvcc.txt), and its sweep of
#         each kernel version (`./layernorm_forward N`, `./softmax_forward N`: every block size,
#         checked against its CPU reference, then timed) into $OUT/llmc/llm.c/PROGRAM-N.txt.
# Then $OUT/llmc/summary.md (printed): per function, gputune's winner and llm.c's fastest
# version × block size, each timed by both. About 3 minutes for test and search, 3 to 5 for llmc
# (llm.c's softmax sweep fills and checks 411M floats on the CPU per version).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT to the folder for logs, stores and reports}"
out=$OUT/llmc
mkdir -p "$out/llm.c"
parts=" ${PARTS:-test search llmc} "
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
bundle=$here/llmc-bundle
[ -e "$bundle/cargo-gputune" ] || cp "$here/cargo-gputune" "$bundle/"

if [[ $parts == *" test "* ]]; then
  "$here/llmc/gpu-test" --nocapture --test-threads 1 > "$out/gpu-test.txt" 2>&1
  echo "gpu-test exit=$?" | tee -a "$out/gpu-test.txt"
fi

if [[ $parts == *" search "* ]]; then
  OUT=$OUT WARM=1 RUNS=1 bash "$here/gpu-search.sh" llmc "$bundle"
  "$bundle/cargo-gputune" report --db "$out/search-1.db" --top 50 > "$out/report.txt" 2>&1
fi

if [[ $parts == *" llmc "* ]]; then
  nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
  src=$here/llmc/src
  [ -d "$src" ] || src=$here/../examples/llmc/src
  build=$out/llm.c/build
  mkdir -p "$build"
  cp "$src"/layernorm_forward.cu "$src"/softmax_forward.cu "$src"/common.h "$build/"
  : > "$out/llm.c/times.txt"
  for prog in layernorm_forward softmax_forward; do
    # llm.c's dev/cuda/Makefile with GPU_COMPUTE_CAPABILITY=90.
    (cd "$build" && "$nvcc" -O3 --use_fast_math \
      --generate-code 'arch=compute_90,code=[compute_90,sm_90]' \
      -lcublas -lcublasLt -std=c++17 "$prog.cu" -o "$prog") >> "$out/llm.c/nvcc.txt" 2>&1
    echo "$prog: nvcc exit=$?" | tee -a "$out/llm.c/nvcc.txt"
    versions=$([ $prog = layernorm_forward ] && echo "1 2 3 4 5 6" || echo "1 2 3 4 5 6 7 8")
    for v in $versions; do
      t0=$(date +%s.%N)
      (cd "$build" && timeout 600 "./$prog" "$v") > "$out/llm.c/$prog-$v.txt" 2>&1
      rc=$?
      t1=$(date +%s.%N)
      echo "$prog $v exit=$rc wall_s=$(python3 -c "print(f'{$t1 - $t0:.1f}')")" \
        | tee -a "$out/llm.c/times.txt"
    done
  done
fi

python3 - "$out" << 'EOF' | tee "$out/summary.md"
import glob, json, os, re, sys

out = sys.argv[1]

def gputune(name):
    """{function: (winner, {variant: median cold time in ms})} from a search's report."""
    try:
        groups = json.load(open(os.path.join(out, f"{name}.report.json")))["groups"]
    except (OSError, ValueError, KeyError):
        return {}
    found = {}
    for g in groups:
        times = {v["variant"]: v["workloads"][0]["center"] * 1e3 for v in g["variants"]
                 if v["status"] == "ok" and v.get("workloads") and v["workloads"][0].get("center")}
        # The report ranks each group's variants: its first scored one is the winner.
        ranked = [v["variant"] for v in g["variants"]
                  if v["status"] == "ok" and v["score"] is not None]
        found[g["function"]] = (ranked[0] if ranked else None, times)
    return found

def llmc(prog):
    """{variant label: time in ms} from llm.c's sweep of every version, and the versions whose
    check against llm.c's CPU reference failed."""
    times, failed = {}, []
    for path in sorted(glob.glob(os.path.join(out, "llm.c", f"{prog}-*.txt"))):
        v = int(re.search(r"-(\d+)\.txt$", path).group(1))
        text = open(path, errors="replace").read()
        if "All results match" not in text:
            failed.append(v)
        for b, ms in re.findall(r"block_size\s+(\d+) \| time ([\d.]+) ms", text):
            if prog == "softmax_forward" and v == 3 and b != "32":
                continue  # llm.c's launcher of version 3 runs 32 threads whatever it is asked
            times[f"version_{v}.block_size_{b}"] = float(ms)
    return times, failed

def ms(t):
    return f"{t:.4f} ms" if t is not None else "-"

cold, warm = gputune("search-1"), gputune("search-warm")
print("## llm.c's kernels: gputune's winner against llm.c's own sweep\n")
for name in ("times.txt", "llm.c/times.txt"):
    if os.path.exists(os.path.join(out, name)):
        runs = "; ".join(line.strip() for line in open(os.path.join(out, name)))
        print(f"{name} (wall): {runs}\n")
print("| function | gputune's winner | its time (gputune / llm.c) | llm.c's fastest "
      "| its time (gputune / llm.c) | base (gputune) | warm search's winner "
      "| llm.c versions failing its own check |")
print("|---|---|---|---|---|---|---|---|")
for function in ("layernorm_forward", "softmax_forward"):
    winner, times = cold.get(function, (None, {}))
    theirs, failed = llmc(function)
    best = min(theirs, key=theirs.get) if theirs else None
    print(f"| {function} | {winner or '-'} | {ms(times.get(winner))} / {ms(theirs.get(winner))} "
          f"| {best or '-'} | {ms(times.get(best))} / {ms(theirs.get(best))} "
          f"| {ms(times.get('base'))} "
          f"| {warm.get(function, (None,))[0] or '-'} | {', '.join(map(str, failed)) or 'none'} |")
print("\ngputune: median cold GPU time (L2 flushed by reading twice its size before each "
      "sample); llm.c: mean of 2000 (layernorm) or 100 (softmax) single launches timed by "
      "events, L2 flushed by a memset before each (common.h's benchmark_kernel).")
EOF
