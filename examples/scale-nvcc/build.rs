//! Generates the variants of `scale` and compiles `src/scale.cu` with nvcc once per variant
//! this build compiles in (see gputune_runtime::build::Builder).
use gputune_runtime::build::{Builder, CudaFile};

fn main() {
    Builder::new()
        .kernels(CudaFile::new("src/scale.cu").functions(&["scale"]))
        .main();
}
