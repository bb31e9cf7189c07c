//! Two builds in one script, as a project that ships PTX has them: the application's own
//! (its kernels to PTX with nvcc, as candle-kernels does with cudaforge; without nvcc an empty
//! module and a warning), and gputune's code generation for `#[tune]`.
use std::path::PathBuf;
use std::process::Command;

use gputune_runtime::build::nvcc::{self, Nvcc};

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let ptx = out.join("kernels.ptx");
    println!("cargo::rerun-if-changed=src/kernels.cu");
    for var in [
        "NVCC",
        "CUDA_HOME",
        "CUDA_PATH",
        nvcc::ARCHS_ENV,
        nvcc::COMPUTE_CAP_ENV,
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let arch = nvcc::archs(|v| std::env::var(v).ok())
        .ok()
        .and_then(|a| a.first().copied())
        .unwrap_or(nvcc::DEFAULT_ARCH);
    match Nvcc::find() {
        Ok(nvcc) => {
            let status = Command::new(&nvcc.path)
                .args(["--ptx", "-O3", "-std=c++17"])
                .arg(format!("-arch=compute_{arch}"))
                .arg("src/kernels.cu")
                .arg("-o")
                .arg(&ptx)
                .status()
                .expect("nvcc runs");
            assert!(status.success(), "nvcc failed on src/kernels.cu");
        }
        Err(e) => {
            println!("cargo::warning=the kernels are not built (an empty module): {e}");
            std::fs::write(&ptx, "").expect("OUT_DIR is writable");
        }
    }
    gputune_runtime::build::main();
}
