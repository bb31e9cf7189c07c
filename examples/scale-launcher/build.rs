//! Generates the variants of `scale_cxx` and compiles the launchers of `src/launch.cu` with
//! nvcc once per variant this build compiles in, into one static library linked with the CUDA
//! runtime (see gputune_runtime::build::Builder).
use gputune_runtime::build::{Builder, CudaFile};

fn main() {
    Builder::new()
        .launchers(
            CudaFile::new("src/launch.cu")
                .functions(&["scale_cxx"])
                .launcher_names(&["scale_launch"]),
        )
        .main();
}
