#!/usr/bin/env bash
# The CUDA fault-injection search, run from the repository root on the GPU machine (no Rust
# toolchain needed):
#   bash scripts/gpu/gpu-faults.sh [OUTDIR]          # OUTDIR defaults to $OUT
# Runs the bundle that scripts/gpu/build-gpu.sh built into .gpu/faults-bundle (BUNDLE=DIR for
# another) with its own cargo-gputune: base, then every variant of `fault_kernel`
# (examples/faults/src/cuda.rs), each failing in its own way, into OUTDIR/gputune.db. Writes
# the run's log (run-bundle.log), the report as a table (report.txt) and as JSON
# (report.json), and each variant's recorded status against the expected one (check.txt).
# Exits non-zero if the run failed or a variant was not recorded as expected.
set -uo pipefail
out=${1:-${OUT:-}}
if [ -z "$out" ]; then
  echo "usage: gpu-faults.sh OUTDIR (or set OUT)" >&2
  exit 2
fi
bundle=${BUNDLE:-.gpu/faults-bundle}
if [ ! -x "$bundle/cargo-gputune" ]; then
  echo "error: no bundle in $bundle: build it with scripts/gpu/build-gpu.sh on a machine with cargo" >&2
  exit 2
fi
mkdir -p "$out"
# libnvrtc compiles the variants at run time; GPU.md says where the toolkit keeps it.
if [ -d /usr/local/cuda/targets/x86_64-linux/lib ]; then
  export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv > "$out/gpu.txt" 2>&1
# A store from an earlier run would make this one measure nothing.
rm -f "$out/gputune.db" "$out/gputune.db-wal" "$out/gputune.db-shm"
status=0
"$bundle/cargo-gputune" run-bundle "$bundle" --db "$out/gputune.db" --color never \
  > "$out/run-bundle.log" 2>&1 || status=$?
echo "run-bundle exited $status" >> "$out/run-bundle.log"
cat "$out/run-bundle.log"
"$bundle/cargo-gputune" report --db "$out/gputune.db" --top 100 --color never \
  > "$out/report.txt" 2>&1 || status=1
"$bundle/cargo-gputune" report --db "$out/gputune.db" --top 100 --format json \
  > "$out/report.json" 2> "$out/report.stderr" || status=1
cat "$out/report.txt"
python3 - "$out/report.json" > "$out/check.txt" <<'PY' || status=1
import json, sys
expected = {"none": "ok", "compile": "build_failed", "launch": "invalid",
            "crash": "crashed", "hang": "timeout", "wrong": "verify_failed"}
doc = json.load(open(sys.argv[1]))
bad = 0
seen = set()
for group in doc.get("groups", []):
    for v in group.get("variants", []):
        label = v.get("variant", "")
        fault = label.split(".")[0].removeprefix("fault_") if label != "base" else "none"
        seen.add(fault)
        want = expected.get(fault, "?")
        ok = v.get("status") == want
        bad += not ok
        print(f"{'ok  ' if ok else 'BAD '} {label:28} {v.get('status')!s:14} expected {want:14} "
              f"{(v.get('message') or '')[:160]}")
groups = doc.get("groups") or [{}]
ranked = groups[0].get("variants") or [{}]
winner = ranked[0].get("variant") or "(none)"
print(f"winner: {winner}")
if not winner.startswith("fault_none."):
    print("BAD: the winner is not a correct (fault_none) variant"); bad += 1
missing = set(expected) - seen
if missing:
    print(f"BAD: no variant recorded for {sorted(missing)}"); bad += 1
sys.exit(1 if bad else 0)
PY
cat "$out/check.txt"
exit "$status"
