#!/usr/bin/env bash
# Measures a bench binary's `copy` bench (the device-to-device copy, the bandwidth roof of a
# memory-bound kernel) RUNS times, cold, with the entropy criterion, into $OUT/NAME/copy-R.json.
#   OUT=DIR [RUNS=3] bash .gpu/gpu-roof.sh NAME BINARY AXIS_ARGS...
set -uo pipefail
out=${OUT:?set OUT}/${1:?name}
bin=${2:?bench binary}
shift 2
mkdir -p "$out"
for r in $(seq 1 "${RUNS:-3}"); do
  "$bin" -b copy "$@" --no-batch --stopping-criterion entropy --json "$out/copy-$r.json" \
    > "$out/copy-$r.txt" 2>&1 || echo "copy $r exited $?" >> "$out/errors.txt"
done
