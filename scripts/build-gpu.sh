#!/usr/bin/env bash
# Builds the release bench binaries that the GPU machine runs, and the CUDA fault-injection
# bundle, into .gpu/ (ignored by git, carried to the GPU machine). The GPU machine has no
# Rust toolchain; these binaries load libcuda and libnvrtc at run time, so they build
# anywhere.
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
# The runtime autotuner's stencil (issue #7) and, as a bundle, the same kernel under #[tune]
# for `run-bundle` to rank its block sizes on the GPU machine.
cargo build --release -p gputune-example-stencil --features cuda --bin stencil-autotune
cp target/release/stencil-autotune .gpu/
rm -rf .gpu/stencil-bundle
cargo run --release -q -p cargo-gputune -- gputune -p gputune-example-stencil -F cuda \
  search --build-only --bundle .gpu/stencil-bundle
cp scripts/gpu-measurement.sh scripts/summarize-measurement.py .gpu/
# The CUDA fault-injection search as a bundle (its bench binaries and this cargo-gputune; the
# GPU machine needs no cargo): run it there with `bash scripts/gpu-faults.sh OUTDIR`. Sample
# counts, not noise, end each state, so that every state finishes well inside the run limit
# (1x base's run, at least 2 s) that kills the hanging variants.
rm -rf .gpu/faults-bundle
cargo run --release -p cargo-gputune -- gputune -p gputune-example-faults --features cuda \
  --bench faults-cuda search --build-only --bundle .gpu/faults-bundle --run-limit 1 -- \
  --stopping-criterion sample-count --target-samples 100 --no-batch
cp scripts/gpu-autotune.sh scripts/summarize-autotune.py .gpu/
strip .gpu/stencil-autotune .gpu/stencil-bundle/cargo-gputune .gpu/stencil-bundle/bin/* \
  .gpu/faults-bundle/cargo-gputune .gpu/faults-bundle/bin/* 2>/dev/null || true
du -sh .gpu
