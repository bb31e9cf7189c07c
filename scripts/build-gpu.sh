#!/usr/bin/env bash
# Builds what the GPU machine runs into .gpu/ (ignored by git, carried to the GPU machine, kept
# under 64 MiB). The GPU machine has no Rust toolchain; these binaries load libcuda and
# libnvrtc at run time, so they build anywhere.
#
# - .gpu/scale: the scale bench with two variants compiled in (ipt 1 and 8 at tpb 256), for
#   gpu-measurement.sh (issue #2's measurement).
# - .gpu/scale-bundle: `cargo gputune search --build-only --bundle` of the whole scale space
#   (155 variants, T=f32, 2^26 elements, no hot loop: a search scores cold times only), for
#   gpu-scale.sh (issue #5's search).
# - .gpu/stencil-autotune and .gpu/stencil-bundle: the runtime autotuner's stencil and the same
#   kernel under #[tune], for gpu-autotune.sh (issue #7).
# - .gpu/faults-bundle: the CUDA fault-injection search, for scripts/gpu-faults.sh (issue #6).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu
GPUTUNE_VARIANTS='scale.ipt_1.tpb_256,scale.ipt_8.tpb_256' \
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
# The bundles copy the cargo-gputune that builds them, so build a release one first.
cargo build --release --quiet -p cargo-gputune
gputune=$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/release/cargo-gputune
rm -rf .gpu/scale-bundle
"$gputune" gputune -p gputune-example-scale-cuda search --build-only --bundle .gpu/scale-bundle \
  -a 'T{ct}=f32' -a 'Elements{io}[pow2]=26' -- --no-batch
# The runtime autotuner's stencil (issue #7) and, as a bundle, the same kernel under #[tune]
# for `run-bundle` to rank its block sizes on the GPU machine.
cargo build --release --quiet -p gputune-example-stencil --features cuda --bin stencil-autotune
cp target/release/stencil-autotune .gpu/
rm -rf .gpu/stencil-bundle
"$gputune" gputune -p gputune-example-stencil -F cuda search --build-only --bundle .gpu/stencil-bundle
# The CUDA fault-injection search: sample counts, not noise, end each state, so that every
# state finishes well inside the run limit (1x base's run, at least 2 s) that kills the
# hanging variants. Run it there with `bash scripts/gpu-faults.sh OUTDIR`.
rm -rf .gpu/faults-bundle
"$gputune" gputune -p gputune-example-faults --features cuda --bench faults-cuda \
  search --build-only --bundle .gpu/faults-bundle --run-limit 1 -- \
  --stopping-criterion sample-count --target-samples 100 --no-batch
# The release and bench profiles strip already; strip again in case a profile changes.
if command -v strip > /dev/null; then
  strip .gpu/scale .gpu/stencil-autotune .gpu/*-bundle/cargo-gputune .gpu/*-bundle/bin/*
fi
cp scripts/gpu-measurement.sh scripts/summarize-measurement.py scripts/gpu-scale.sh \
  scripts/summarize-scale.py scripts/gpu-autotune.sh scripts/summarize-autotune.py .gpu/
du -sh .gpu .gpu/*-bundle
