#!/usr/bin/env bash
# Builds the release bench binaries that the GPU machine runs into .gpu/ (ignored by git,
# carried to the GPU machine). The GPU machine has no Rust toolchain; these binaries load
# libcuda and libnvrtc at run time, so they build anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu
cargo build --release -p gputune-example-scale-cuda --benches --message-format=json \
  | python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["kind"] == ["bench"] and m.get("executable"):
        dst = ".gpu/" + m["target"]["name"]
        shutil.copy(m["executable"], dst)
        print("built", dst)
'
cp scripts/gpu-measurement.sh scripts/summarize-measurement.py .gpu/
du -sh .gpu
