#!/usr/bin/env bash
# Checks gputune's clocks against the hardware's on the GPU machine (issue 16): every CUDA
# example's bench runs under Nsight Compute with `--profile`, base and winner of the tuned
# benches, and the same states under gputune's cold measurement, each side in RUNS processes;
# prints the ratio of the medians (scripts/gpu/ncu-check.py says how).
#   OUT=DIR [RUNS=3] [SAMPLES=5] bash .gpu/gpu-ncu-check.sh
# Needs the bundles of scripts/gpu/build-gpu.sh (parts scale reduce transpose autotune faults sgemm
# conv large-base).
set -uo pipefail
out=${OUT:?set OUT to the folder for the results}
mkdir -p "$out"
if [ -d /usr/local/cuda/targets/x86_64-linux/lib ]; then
  export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
export PATH=/usr/local/cuda/bin:$PATH
g=.gpu
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
ncu --version >> "$out/gpu.txt" 2>&1
# NAME:BINARY:BENCH:VARIANT:AXES (AXES separated by ';'). Winners: BENCHMARKS.md (H200).
python3 "$g/ncu-check.py" "$out" \
  "scale-base:$g/scale-bundle/bin/scale-base:scale:scale.base:T{ct}=f32;Elements{io}[pow2]=26" \
  "scale-winner:$g/scale-bundle/bin/scale-batch-1:scale:scale.ipt_4.tpb_192:T{ct}=f32;Elements{io}[pow2]=26" \
  "sum-base:$g/reduce-bundle/bin/reduce-base:sum:sum.base:T{ct}=f32;Elements{io}[pow2]=28" \
  "sum-winner:$g/reduce-bundle/bin/sum-batch-1:sum:sum.tpb_1024.ipt_4.vec_4.unroll_2:T{ct}=f32;Elements{io}[pow2]=28" \
  "transpose-base:$g/transpose-bundle/bin/transpose-base:transpose:transpose.base:T{ct}=f32;Side{io}[pow2]=14" \
  "transpose-winner:$g/transpose-bundle/bin/transpose-batch-1:transpose:transpose.tile_64.rows_8.pad_1:T{ct}=f32;Side{io}[pow2]=14" \
  "jacobi-base:$g/stencil-bundle/bin/jacobi-base:jacobi:sweep.base:" \
  "faults-correct:$g/faults-bundle/bin/faults-cuda-base:faults-cuda:fault_kernel.base:Elements{io}[pow2]=22" \
  "sgemm-base:$g/sgemm-bundle/bin/sgemm-base:sgemm:sgemm.base:N{io}[pow2]=12" \
  "sgemm-winner:$g/sgemm-bundle/bin/sgemm-batch-1:sgemm:sgemm.bm_64.bn_64.bk_8.tm_8.tn_4:N{io}[pow2]=12" \
  "sgemm-large-base:$g/sgemm-large-base:sgemm:sgemm.base:N{io}[pow2]=10" \
  "conv-base:$g/conv-bundle/bin/conv-base:conv:conv.base:" \
  "conv-winner:$g/conv-bundle/bin/conv-batch-1:conv:conv.block_x_16.block_y_8.tile_x_4.tile_y_4.pad_0:" \
  | tee "$out/ncu-check.out"
