#!/usr/bin/env bash
# Issue 15's tie check on one bundle: RUNS searches (`run-bundle`, fresh store and kernel cache
# each), then the mark each report gives LABEL, a point with base's own parameters. It must
# never read significantly faster or slower than base. Run on the GPU machine:
#
#   OUT=DIR [RUNS=5] bash .gpu/gpu-tie.sh BUNDLE LABEL
#
# Prints one line per search and PASS/FAIL; the stores, reports and logs stay in $OUT.
set -uo pipefail
out=${OUT:?set OUT to the folder for the results}
bundle=${1:?bundle directory}
label=${2:?the label of the point identical to base}
runs=${RUNS:-5}
mkdir -p "$out"
for r in $(seq 1 "$runs"); do
  rm -rf "$out/kernels-$r" "$out/tie-$r.db"*
  t0=$(date +%s.%N)
  GPUTUNE_KERNEL_CACHE="$out/kernels-$r" "$bundle/cargo-gputune" run-bundle "$bundle" \
    --db "$out/tie-$r.db" > "$out/tie-$r.log" 2>&1
  echo "tie-$r exit=$? wall_s=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.3f}')")" >> "$out/times.txt"
  "$bundle/cargo-gputune" report --db "$out/tie-$r.db" --top 100000 --format json \
    > "$out/tie-$r.report.json" 2> "$out/tie-$r.report.err"
  rm -rf "$out/kernels-$r"
done
python3 - "$out" "$label" "$runs" <<'PY'
import json, os, sys
out, label, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
bad = seen = 0
for r in range(1, runs + 1):
    try:
        variants = [v for g in json.load(open(os.path.join(out, f"tie-{r}.report.json")))["groups"]
                    for v in g["variants"]]
    except (OSError, ValueError, KeyError) as e:
        print(f"tie-{r}: no report ({e})")
        continue
    v = next((v for v in variants if v["variant"] == label), None)
    if v is None or v.get("score") is None:
        print(f"tie-{r}: {label} not scored")
        continue
    seen += 1
    bad += bool(v.get("significant"))
    print(f"tie-{r}: {label} score {v['score']:.4f}, {v.get('verdict') or 'within noise'} "
          f"(noise {v['noise'] * 100:.2f} %, significant: {v.get('significant')})")
print(f"Tie check, {label} in {seen} of {runs} searches: {'PASS' if seen and not bad else 'FAIL'}")
PY
