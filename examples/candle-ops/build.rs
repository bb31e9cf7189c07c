//! Generates the variants of the `#[tune]` launches (see gputune_runtime::build), compiles
//! `src/mmvq_gguf.cu`'s C++ launchers once per `mmvq` variant with nvcc, and lets
//! candle-kernels' `-lcudart` link where the CUDA runtime is PyPI's wheel, which ships
//! `libcudart.so.13` without the `libcudart.so` a linker looks for.
use gputune_runtime::build::nvcc::Nvcc;
use gputune_runtime::build::{Builder, CudaFile};

fn main() {
    if let Ok(nvcc) = Nvcc::find() {
        let lib = nvcc.root.join("lib");
        let versioned = lib.join("libcudart.so.13");
        if !lib.join("libcudart.so").exists() && versioned.is_file() {
            let out =
                std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
            let dir = out.join("cudart");
            let _ = std::fs::create_dir_all(&dir);
            let link = dir.join("libcudart.so");
            let _ = std::fs::remove_file(&link);
            if std::os::unix::fs::symlink(&versioned, &link).is_ok() {
                println!("cargo::rustc-link-search=native={}", dir.display());
            }
        }
    }
    Builder::new()
        .launchers(
            CudaFile::new("src/mmvq_gguf.cu")
                .functions(&["mmvq"])
                .launcher_names(&[
                    "launch_mmvq_gguf_q4_k_f32_plain",
                    "launch_mmvq_gguf_q8_0_f32_plain",
                    "mmvq_launch_status",
                ])
                // candle's file keeps the vector dots of the types this copy does not build.
                .option("-diag-suppress=177"),
        )
        .main();
}
