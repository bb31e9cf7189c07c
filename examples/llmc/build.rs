//! Generates the variants of the `#[tune]` functions, and has nvcc compile each llm.c file once
//! with llm.c's Makefile's `--use_fast_math` (`-std=c++17`, `-O3` for device code and the
//! architecture, sm_90 unless GPUTUNE_CUDA_ARCHS says otherwise, are the build helper's and
//! nvcc's defaults). No tuned function is named: the tuning parameters change only the launch.
use gputune_runtime::build::{Builder, CudaFile};

/// Where CUDA has no cuBLAS (PyPI's nvcc wheels), common.h's `<cublas_v2.h>` and `<cublasLt.h>`
/// are these declarations of the names its host code uses; a system include directory comes
/// after the toolkit's, so a real cuBLAS wins. (A build script runs in the crate's directory.)
const STUB: &str = "--system-include=src/cublas-stub";

fn main() {
    let file = |path| CudaFile::new(path).option("--use_fast_math").option(STUB);
    let builder = Builder::new().kernels(file("src/layernorm_forward.cu"));
    builder.kernels(file("src/softmax_forward.cu")).main();
}
