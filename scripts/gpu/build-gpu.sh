#!/usr/bin/env bash
# Builds what the GPU machine runs into .gpu/ (ignored by git, carried to the GPU machine, kept
# under 64 MiB). The GPU machine has no Rust toolchain; these binaries load libcuda and
# libnvrtc at run time, so they build anywhere.
#
#   bash scripts/gpu/build-gpu.sh [PART…]      (default: every part)
#
# Parts:
# - measurement: .gpu/scale, the scale bench with two variants compiled in (ipt 1 and 8 at
#   tpb 256), for gpu-measurement.sh (issue #2's measurement).
# - scale: .gpu/scale-bundle, `cargo gputune search --build-only --bundle` of the whole scale
#   space (155 variants, T=f32, 2^26 elements) with default search settings (its full
#   reference is `run-bundle --no-race` of the same bundle). For gpu-suite.sh (issue #5).
# - reduce: .gpu/reduce-bundle, the two-pass sum's space at 2^28 f32, default settings.
# - transpose: .gpu/transpose-bundle, the tiled transpose's space at 16384² f32, default settings.
# - autotune: .gpu/stencil-autotune and .gpu/stencil-bundle, the runtime autotuner's stencil and
#   the same kernel under #[tune], for gpu-autotune.sh (issue #7).
# - faults: .gpu/faults-bundle, the CUDA fault-injection search, for gpu-faults.sh (issue #6).
# - sgemm: .gpu/sgemm-bundle, the tiled SGEMM's space (64 points) at 4096², default settings.
# - hostloop: .gpu/hostloop-bundle, examples/hostloop (issue 47: inputs filled by host loops and
#   copied to the device) searched whole at default settings: its SGEMM (64 points, 4096²) and
#   its first-pass sum (128 points, 2^28 f32), for gpu-vs-kt.sh hostloop (with the kt part).
# - generate: .gpu/generate, the bench of the device-side data generators.
# - conv: .gpu/conv-bundle, the 2-D convolution's space (268 points) at 4096², default settings:
#   the kernel written after the defaults were settled, for gpu-vs-kt.sh conv.
# - conv-test: .gpu/conv-gpu-test, the convolution's GPU test (run it there as it is).
# - rowsum: .gpu/rowsum-bundle, the CUB row sums' space (54 points: block size, items per
#   thread, CUB's load and reduction algorithms) at 2^14 rows of 8192 f32, default settings, for
#   gpu-vs-kt.sh rowsum.
# - gemv: .gpu/gemv-bundle, the half-precision matrix-vector product's space (72 points, a
#   register limit among them) at 8192 x 8192 bf16, default settings, for gpu-vs-kt.sh gemv.
# - histogram: .gpu/histogram-bundle, the 256-bin histogram's space (240 points) at 2^26 keys,
#   default settings: the short kernel written for issue 24 before any default was tuned on
#   it, for gpu-vs-kt.sh histogram.
# - real-kernels: .gpu/real-kernels-test, the GPU test of kernels that include CUDA's headers,
#   CUB and an embedded header (issue 32; gpu-real-kernels.sh runs it and the two above).
# - large-base: .gpu/sgemm-large-base, the large space's bench as production builds it (base).
# - names: .gpu/cuda-names-test, the test that kernels are found by their C++ names on a GPU
#   (run it there as it is).
# - candle-mmvq: .gpu/candle/mmvq-bundle, candle's GGUF matrix-vector launchers (Q4_K, Q8_0)
#   over warps × rows a block at Llama-3-8B's decode shapes, and .gpu/candle/llama-ops, the
#   program whose launches gpu-candle-mmvq.sh captures (issue 45).
# - candle-captured: .gpu/candle/captured-bundle, every tuned function of examples/candle-ops
#   searched on exactly the workloads in CAPTURES=DIR (llama-ops's launches), for
#   gpu-candle-captured.sh (issue 45).
# - scale-sizes: .gpu/scale-sizes-bundle, the scale space (155 variants, T=f32) at four sizes,
#   2^16, 2^20, 2^24 and 2^28 elements (from a working set L2 holds many times over to one
#   streamed from HBM), for gpu-per-size.sh (issue 26's per-size winners, first call).
# - histogram-sizes: .gpu/histogram-sizes-bundle, the histogram's space (240 points) at 2^16,
#   2^20, 2^23 and 2^26 keys: few keys per block make the merge of the private histograms
#   weigh, many make the counting weigh (gpu-per-size.sh with BUNDLE=…).
# - per-size-prod: needs STORE=FILE, the store gpu-per-size.sh returned (EXAMPLE=scale by
#   default, or histogram with SIZE_AXIS=Keys: .gpu/EXAMPLE-per-size and .gpu/EXAMPLE-single). The two production
#   builds of the scale bench it compares (issue 26, second call): .gpu/scale-per-size from
#   `apply --per-size`, .gpu/scale-single from `apply` (one winner), each with the gputune.toml
#   it was built from beside it (.gpu/scale-per-size.toml, .gpu/scale-single.toml); the
#   example's own gputune.toml is put back as it was. For gpu-per-size-time.sh.
# - provenance: .gpu/scale-bundle (as the part `scale`, rebuilt so that it speaks this revision's
#   protocol), for gpu-provenance.sh (issue 33: provenance in report and check, UNDECIDED
#   settled by check --remeasure --bundle).
# - kt: Kernel Tuner 1.5 for gpu-vs-kt.sh (issue 15): its wheels and those of the dependencies
#   the GPU machine lacks (it has Python 3.12, numpy and CuPy, and no network) in .gpu/whl
#   (downloaded once), and the kernels' sources (scale, reduce, transpose, sgemm, conv, rowsum,
#   gemv and the header gemv.cu includes, half_vec.cuh) in .gpu/kt-src, for kt_tune.py.
# - energy: .gpu/energy/, for gpu-energy.sh (issue 29): the scale, reduce and SGEMM spaces (as the
#   parts scale, reduce and sgemm) searched with `--objective energy` (every variant's energy,
#   in full), and their own cargo-gputune (.gpu/energy/cargo-gputune, which the bundles run): it
#   speaks protocol 9, and the other parts' bundles keep the .gpu/cargo-gputune they were
#   built with. Built alone (`bash scripts/gpu/build-gpu.sh energy`), it leaves the rest of .gpu/
#   as it is.
# - build-paths: .gpu/paths/, issue 44's three ways a kernel is built, each searched whole at
#   default settings: ptx-bundle (examples/softmax-ptx, a shipped PTX module, launch-only block
#   sizes), nvcc-bundle (examples/scale-nvcc, nvcc at build time per variant, 155 points at 2^26
#   f32, built with an empty nvcc cache: .gpu/paths/nvcc-build.txt says how long it took),
#   launcher-bundle (examples/scale-launcher, C++ launchers, 20 points at 2^26) and
#   nvrtc-bundle (examples/scale-cuda, the same kernel and space as nvcc-bundle through NVRTC).
#   For gpu-build-paths.sh. Needs nvcc (CUDA_HOME, NVCC or PATH: docs/build-paths.md).
# - features: .gpu/gpu-features-test, the GPU test of opting in to more than 48 KiB of dynamic
#   shared memory and of verifying half-precision outputs on the device (run it there as it is).
# - candle: .gpu/candle/candle-bundle, examples/candle-ops (candle-kernels 0.11.1's rmsnorm,
#   layernorm and softmax as shipped, over the launches candle hard-codes) searched whole at
#   default settings, for gpu-candle.sh (issue 45). Its own workspace; building candle-kernels
#   needs nvcc and CUDA_COMPUTE_CAP (90 unless set) and takes about 8 minutes on 2 cores.
# - candle-llama: .gpu/candle/candle-llama (candle 0.11.1 as released) and
#   .gpu/candle/candle-llama-tuned (candle-nn and candle-core with the launch hooks of
#   examples/candle-llama/patches, answered by examples/candle-ops's lookups: the winners of its
#   gputune.toml, else candle's own launch) and .gpu/candle/candle-llama-hooks (the same build
#   with no winners: the hooks' cost alone), a synthetic Llama-3-8B's tokens per second, for
#   gpu-candle-llama.sh (issue 45). Runs examples/candle-llama/patch.sh first; shares
#   examples/candle-ops/target (candle-kernels' nvcc build) through examples/candle-llama/env.sh.
# - llmc: .gpu/llmc-bundle, karpathy/llm.c's layernorm and softmax forward kernels
#   (examples/llmc: 36 + 43 points of kernel version × block size at llm.c's sizes, default
#   settings), .gpu/llmc/gpu-test (base against llm.c's CPU references, run there as it is) and
#   llm.c's sources (.gpu/llmc/src), for gpu-llmc.sh (issue 47). Needs nvcc (NVCC, CUDA_HOME or
#   PATH; target/nvcc/root's when none is set): the build compiles llm.c's two files with it.
# The ncu check (gpu-ncu-check.sh) uses the scale, reduce, transpose, autotune, faults, sgemm,
# conv and large-base parts.
set -euo pipefail
cd "$(dirname "$0")/../.."
parts=${*:-measurement scale reduce transpose autotune faults sgemm conv large-base generate kt}
mkdir -p .gpu
# The bundles copy the cargo-gputune that builds them, so build a release one first.
cargo build --release --quiet -p cargo-gputune
gputune=$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/release/cargo-gputune

bundle() { # directory, then the search's arguments (bench flags after `--`)
  local dir=$1
  shift
  rm -rf "$dir"
  # --build-only and --bundle are the search's own flags: they go before a `--`, after which
  # everything is a bench flag (and cargo gputune refuses flags a bench does not know).
  local own=() bench=() after=0
  for a in "$@"; do
    if [ $after = 1 ]; then bench+=("$a"); elif [ "$a" = -- ]; then after=1; else own+=("$a"); fi
  done
  "$gputune" gputune "${own[@]}" --build-only --bundle "$dir" ${bench[@]+-- "${bench[@]}"}
}

# cargo's JSON messages on stdin; copies the executable of target $1 to .gpu/$2.
copy_artifact() {
  python3 -c '
import json, shutil, sys
target, dest = sys.argv[1], ".gpu/" + sys.argv[2]
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == target and m.get("executable"):
        shutil.copy(m["executable"], dest)
        print("built", dest)
' "$1" "$2"
}

for part in $parts; do
  case $part in
    measurement)
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
      ;;
    scale | provenance)
      bundle .gpu/scale-bundle -p gputune-example-scale-cuda search \
        -a 'T{ct}=f32' -a 'Elements{io}[pow2]=26'
      ;;
    build-paths)
      mkdir -p .gpu/paths
      bundle .gpu/paths/ptx-bundle -p gputune-example-softmax-ptx search
      # The nvcc path compiles at build time: time it from an empty nvcc cache.
      cache=$(mktemp -d)
      t0=$(date +%s.%N)
      GPUTUNE_KERNEL_CACHE=$cache bundle .gpu/paths/nvcc-bundle -p gputune-example-scale-nvcc \
        search -a 'Elements{io}[pow2]=26'
      t1=$(date +%s.%N)
      echo "nvcc-bundle build (nvcc cache empty, $(nproc) cores): $(python3 -c "print(f'{$t1 - $t0:.1f}')") s" \
        | tee .gpu/paths/nvcc-build.txt
      rm -rf "$cache"
      bundle .gpu/paths/launcher-bundle -p gputune-example-scale-launcher search \
        -a 'Elements{io}[pow2]=26'
      bundle .gpu/paths/nvrtc-bundle -p gputune-example-scale-cuda search \
        -a 'T{ct}=f32' -a 'Elements{io}[pow2]=26'
      ;;
    candle)
      mkdir -p .gpu/candle
      CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90} bundle .gpu/candle/candle-bundle \
        --manifest-path examples/candle-ops/Cargo.toml search
      ;;
    candle-mmvq)
      mkdir -p .gpu/candle
      CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90} bundle .gpu/candle/mmvq-bundle \
        --manifest-path examples/candle-ops/Cargo.toml search -R mmvq
      CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90} cargo build --release --quiet \
        --manifest-path examples/candle-ops/Cargo.toml --bin llama-ops
      cp examples/candle-ops/target/release/llama-ops .gpu/candle/llama-ops
      ;;
    candle-captured)
      # CAPTURES=DIR: what gpu-candle-mmvq.sh's llama-ops run captured (GPUTUNE_CAPTURE).
      mkdir -p .gpu/candle
      CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90} bundle .gpu/candle/captured-bundle \
        --manifest-path examples/candle-ops/Cargo.toml search \
        --captured "${CAPTURES:?candle-captured needs CAPTURES=DIR, the captured workloads}"
      ;;
    candle-llama)
      mkdir -p .gpu/candle
      (
        # shellcheck source=../../examples/candle-llama/env.sh
        source examples/candle-llama/env.sh
        bash examples/candle-llama/patch.sh
        cargo build --release --quiet --manifest-path examples/candle-llama/Cargo.toml
        # The stamp makes candle-ops' build script read its gputune.toml whatever its
        # timestamps say (the winners this binary carries).
        toml=examples/candle-ops/gputune.toml
        stamp=none
        if [ -f $toml ]; then stamp=$(sha256sum $toml | cut -c1-16); fi
        # The control first: the tuned build with no winners (candle-ops' gputune.toml moved
        # aside, so every lookup answers candle's own launch) measures what the hooks and the
        # tuned build's loading cost alone, apart from what the winners change.
        saved=$(mktemp)
        if [ -f $toml ]; then mv $toml "$saved"; fi
        GPUTUNE_TOML_STAMP=none GPUTUNE_VARIANTS= cargo build --release --quiet \
          --manifest-path examples/candle-llama/tuned/Cargo.toml \
          || { [ ! -s "$saved" ] || mv "$saved" $toml; exit 1; }
        cp "$CARGO_TARGET_DIR/release/candle-llama-tuned" .gpu/candle/candle-llama-hooks
        if [ -s "$saved" ]; then mv "$saved" $toml; else rm -f "$saved"; fi
        GPUTUNE_TOML_STAMP=$stamp GPUTUNE_VARIANTS= cargo build --release --quiet \
          --manifest-path examples/candle-llama/tuned/Cargo.toml
        cp "$CARGO_TARGET_DIR/release/candle-llama-tuned" .gpu/candle/candle-llama-tuned
        cp "$CARGO_TARGET_DIR/release/candle-llama" .gpu/candle/candle-llama
        # Each binary holds all of candle's kernels (54 MB stripped). One solid archive of the
        # three, with a dictionary larger than a binary, stores what they share once (7.6 MB,
        # where one xz each makes 20.6): gpu-candle-llama.sh unpacks it there. The loop
        # (gpu-candle-loop.sh) needs only the tuned one, xz-packed alone (7.2 MB).
        for exe in candle-llama candle-llama-tuned candle-llama-hooks; do
          strip .gpu/candle/$exe 2> /dev/null || true
        done
        tar -C .gpu/candle -cf - candle-llama candle-llama-tuned candle-llama-hooks \
          | xz -T0 --lzma2=preset=9e,dict=256MiB > .gpu/candle/candle-llama-builds.tar.xz
        xz -T0 -6 -f .gpu/candle/candle-llama-tuned
        rm -f .gpu/candle/candle-llama .gpu/candle/candle-llama-hooks .gpu/candle/candle-llama.xz \
          .gpu/candle/candle-llama-hooks.xz
        rm -f .gpu/candle/candle-llama-tuned.toml
        if [ -f $toml ]; then cp $toml .gpu/candle/candle-llama-tuned.toml; fi
        ls -la .gpu/candle/candle-llama*
      )
      ;;
    scale-sizes)
      bundle .gpu/scale-sizes-bundle -p gputune-example-scale-cuda search \
        -a 'T{ct}=f32' -a 'Elements{io}[pow2]=[16,20,24,28]'
      ;;
    histogram-sizes)
      bundle .gpu/histogram-sizes-bundle -p gputune-example-histogram-cuda search \
        -a 'Keys{io}[pow2]=[16,20,23,26]'
      ;;
    per-size-prod)
      store=${STORE:?per-size-prod needs STORE=FILE, the store of gpu-per-size.sh}
      example=${EXAMPLE:-scale}
      axis=${SIZE_AXIS:-Elements}
      pkg=gputune-example-$example-cuda
      toml=examples/$example-cuda/gputune.toml
      saved=$(mktemp)
      had=0
      if [ -f "$toml" ]; then cp "$toml" "$saved"; had=1; fi
      for kind in per-size single; do
        rm -f "$toml"
        flags=()
        if [ $kind = per-size ]; then flags=(--per-size --size-axis "$axis"); fi
        "$gputune" gputune -p "$pkg" --db "$store" apply ${flags[@]+"${flags[@]}"}
        cp "$toml" ".gpu/$example-$kind.toml"
        # The stamp makes the build script read the new file whatever its timestamps say.
        GPUTUNE_TOML_STAMP=$(sha256sum "$toml" | cut -c1-16) GPUTUNE_VARIANTS= \
          cargo build --release --quiet -p "$pkg" --bench "$example" \
          --message-format=json | copy_artifact "$example" "$example-$kind"
      done
      rm -f "$toml"
      if [ $had = 1 ]; then cp "$saved" "$toml"; fi
      rm -f "$saved"
      # The next plain build reads the example's own file (or none) again.
      touch "examples/$example-cuda/build.rs"
      ;;
    reduce)
      bundle .gpu/reduce-bundle -p gputune-example-reduce-cuda search \
        -a 'T{ct}=f32' -a 'Elements{io}[pow2]=28'
      ;;
    transpose)
      bundle .gpu/transpose-bundle -p gputune-example-transpose-cuda search \
        -a 'T{ct}=f32' -a 'Side{io}[pow2]=14'
      ;;
    autotune)
      cargo build --release --quiet -p gputune-example-stencil --features cuda --bin stencil-autotune
      cp target/release/stencil-autotune .gpu/
      bundle .gpu/stencil-bundle -p gputune-example-stencil -F cuda search
      ;;
    conv)
      bundle .gpu/conv-bundle -p gputune-example-conv-cuda search
      ;;
    conv-test)
      # The convolution's GPU test: every point on shapes no tile divides (run it there as it is).
      cargo test --release --quiet -p gputune-example-conv-cuda --test gpu --no-run \
        --message-format=json | copy_artifact gpu conv-gpu-test
      ;;
    large-base)
      # The large space's production build (base): one state for the ncu check.
      cargo build --release --quiet -p gputune-example-sgemm-large --bench sgemm-large \
        --message-format=json | copy_artifact sgemm-large sgemm-large-base
      ;;
    names)
      cargo test --quiet -p gputune-runtime --features cuda --test cuda_names --no-run \
        --message-format=json | copy_artifact cuda_names cuda-names-test
      ;;
    features)
      cargo test --quiet --release -p gputune-runtime --features cuda --test gpu_features \
        --no-run --message-format=json | copy_artifact gpu_features gpu-features-test
      ;;
    generate)
      cargo build --release --quiet -p gputune-runtime --features cuda --bench generate \
        --message-format=json | copy_artifact generate generate
      ;;
    sgemm)
      bundle .gpu/sgemm-bundle -p gputune-example-sgemm-cuda search
      ;;
    hostloop)
      bundle .gpu/hostloop-bundle -p gputune-example-hostloop search
      ;;
    energy)
      rm -rf .gpu/energy
      mkdir -p .gpu/energy
      bundle .gpu/energy/scale-bundle -p gputune-example-scale-cuda search --objective energy \
        -a 'T{ct}=f32' -a 'Elements{io}[pow2]=26'
      bundle .gpu/energy/reduce-bundle -p gputune-example-reduce-cuda search --objective energy \
        -a 'T{ct}=f32' -a 'Elements{io}[pow2]=28'
      bundle .gpu/energy/sgemm-bundle -p gputune-example-sgemm-cuda search --objective energy
      cp "$gputune" .gpu/energy/cargo-gputune
      for b in .gpu/energy/*-bundle; do
        printf '#!/bin/sh\nexec "$(dirname "$0")/../cargo-gputune" "$@"\n' > "$b/cargo-gputune"
        chmod +x "$b/cargo-gputune"
      done
      if command -v strip > /dev/null; then
        find .gpu/energy -type f -perm -u+x \( -name cargo-gputune -o -path '*/bin/*' \) \
          -exec strip {} + 2> /dev/null || true
      fi
      cp scripts/gpu/gpu-energy.sh .gpu/energy/
      ;;
    llmc)
      if [ -z "${NVCC:-}${CUDA_HOME:-}" ] && [ -x target/nvcc/root/nvidia/cu13/bin/nvcc ]; then
        export NVCC=$PWD/target/nvcc/root/nvidia/cu13/bin/nvcc
      fi
      rm -rf .gpu/llmc
      mkdir -p .gpu/llmc/src
      bundle .gpu/llmc-bundle -p gputune-example-llmc search
      # The bundle would carry nvcc's "not found" in place of llm.c's kernels: refuse that here.
      cargo test --release --quiet -p gputune-example-llmc --test build -- --nocapture 2>&1 \
        | tee .gpu/llmc/build-test.txt
      if grep -q skipped .gpu/llmc/build-test.txt; then
        echo "llmc: nvcc did not compile llm.c's files (see above; docs/build-paths.md)" >&2
        exit 2
      fi
      cargo test --release --quiet -p gputune-example-llmc --test gpu --no-run \
        --message-format=json | copy_artifact gpu llmc/gpu-test
      cp examples/llmc/src/layernorm_forward.cu examples/llmc/src/softmax_forward.cu \
        examples/llmc/src/common.h examples/llmc/src/LICENSE-llm.c .gpu/llmc/src/
      ;;
    rowsum)
      bundle .gpu/rowsum-bundle -p gputune-example-cub-rowsum search
      ;;
    gemv)
      # bf16 only: Kernel Tuner's side (kt_tune.py gemv) tunes bf16.
      bundle .gpu/gemv-bundle -p gputune-example-gemv-half search -a 'T=bf16'
      ;;
    histogram)
      bundle .gpu/histogram-bundle -p gputune-example-histogram-cuda search -a 'Keys{io}[pow2]=26'
      ;;
    real-kernels)
      # CUDA's headers, CUB, an embedded header and a register limit through the kernel handle
      # on a GPU (run it there as it is; gpu-real-kernels.sh does).
      cargo test --release --quiet -p gputune-runtime --features cuda --test real_kernels --no-run \
        --message-format=json | copy_artifact real_kernels real-kernels-test
      ;;
    faults)
      # Sample counts, not noise, end each state, so that every state finishes well inside the
      # run limit (1x base's run, at least 2 s) that kills the hanging variants.
      bundle .gpu/faults-bundle -p gputune-example-faults --features cuda --bench faults-cuda \
        search --run-limit 1 -- --stopping-criterion sample-count --target-samples 100
      ;;
    kt)
      # Pure-Python wheels but for python-constraint2 and rpds-py, for CPython 3.12 on x86-64.
      # Kernel Tuner also imports attrs (for jsonschema and referencing) and packaging, which
      # the GPU machine's Python has (checked on an H100 machine, 2026-11-23), as it has numpy,
      # scipy and CuPy 14.
      mkdir -p .gpu/whl
      have=1
      for w in kernel_tuner-1.5.0 python_constraint2 xmltodict jsonschema- jsonschema_specifications \
        referencing rpds_py; do
        ls .gpu/whl/"$w"*.whl > /dev/null 2>&1 || have=0
      done
      if [ $have = 0 ]; then
        python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .gpu/whl kernel_tuner==1.5.0 python-constraint2 xmltodict jsonschema jsonschema-specifications referencing rpds-py
      fi
      mkdir -p .gpu/kt-src
      cp examples/scale-cuda/src/scale.cu examples/reduce-cuda/src/reduce.cu \
        examples/transpose-cuda/src/transpose.cu examples/sgemm-cuda/src/sgemm.cu \
        examples/conv-cuda/src/conv.cu examples/cub-rowsum/src/rowsum.cu \
        examples/gemv-half/src/gemv.cu examples/gemv-half/src/half_vec.cuh \
        examples/histogram-cuda/src/histogram.cu .gpu/kt-src/
      ;;
    *)
      echo "unknown part $part (measurement, llmc, candle, candle-mmvq, candle-llama, energy, scale, provenance, scale-sizes, histogram-sizes, per-size-prod, reduce, transpose, autotune, faults, sgemm, hostloop, conv, conv-test, rowsum, gemv, histogram, real-kernels, large-base, generate, names, kt)" >&2
      exit 2
      ;;
  esac
done
# The energy part alone keeps the rest of .gpu/ (and its cargo-gputune) as it was.
if [ "$parts" = energy ]; then
  du -sh .gpu/energy .gpu/energy/*-bundle
  exit 0
fi
# One cargo-gputune for every bundle (each would otherwise carry its own 9 MB copy, and .gpu/
# must stay under 64 MiB): a bundle's `cargo-gputune` becomes a two-line script that runs it.
cp "$gputune" .gpu/cargo-gputune
for b in .gpu/*-bundle; do
  if [ -f "$b/cargo-gputune" ] && ! grep -q '^#!/bin/sh' "$b/cargo-gputune" 2> /dev/null; then
    printf '#!/bin/sh\nexec "$(dirname "$0")/../cargo-gputune" "$@"\n' > "$b/cargo-gputune"
    chmod +x "$b/cargo-gputune"
  fi
done
# The release and bench profiles strip already; strip again in case a profile changes.
if command -v strip > /dev/null; then
  find .gpu -maxdepth 3 -type f -perm -u+x \( -path '.gpu/cargo-gputune' -o -path '*/bin/*' \
    -o -name scale -o -name '*-single' -o -name '*-per-size' -o -name generate -o -name stencil-autotune -o -name cuda-names-test \) -exec strip {} + 2> /dev/null || true
fi
cp scripts/gpu/gpu-*.sh scripts/summaries/summarize-*.py scripts/gpu/cupy-sum.py scripts/gpu/ncu-check.py scripts/kt/kt_tune.py scripts/kt/kt_problems.py .gpu/
du -sh .gpu .gpu/*-bundle .gpu/candle 2> /dev/null || true
