//! Generates the variants of the `#[tune]` launches (see gputune_runtime::build), and lets
//! candle-kernels' `-lcudart` link where the CUDA runtime is PyPI's wheel, which ships
//! `libcudart.so.13` without the `libcudart.so` a linker looks for.
use gputune_runtime::build::nvcc::Nvcc;

fn main() {
    if let Ok(nvcc) = Nvcc::find() {
        let lib = nvcc.root.join("lib");
        let versioned = lib.join("libcudart.so.13");
        if !lib.join("libcudart.so").exists() && versioned.is_file() {
            let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
            let dir = out.join("cudart");
            let _ = std::fs::create_dir_all(&dir);
            let link = dir.join("libcudart.so");
            let _ = std::fs::remove_file(&link);
            if std::os::unix::fs::symlink(&versioned, &link).is_ok() {
                println!("cargo::rustc-link-search=native={}", dir.display());
            }
        }
    }
    gputune_runtime::build::main();
}
