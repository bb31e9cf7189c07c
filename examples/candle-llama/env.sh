# Sourced by patch.sh's callers and the build scripts: one environment for both workspaces and
# examples/candle-ops, so that candle-kernels' nvcc build (minutes) is made once and shared
# (its build script reruns when NVCC or CUDA_COMPUTE_CAP change).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/examples/candle-ops/target}
export NVCC=${NVCC:-$root/target/nvcc/root/nvidia/cu13/bin/nvcc}
export CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90}
# cudarc (candle-core's `cuda-version-from-build-system`) reads the version from here, not from
# an nvcc on PATH.
export CUDARC_CUDA_VERSION=${CUDARC_CUDA_VERSION:-13000}
