//! Links candle with CUDA on a machine with no CUDA libraries but nvcc's (PyPI's wheels):
//!
//! - candle-kernels links `-lcudart`, and the wheel ships `libcudart.so.13` without the
//!   `libcudart.so` a linker looks for (as examples/candle-ops' build script handles it):
//!   a `libcudart.so` link beside it; the same for `libnvrtc.so`.
//! - candle-core as released links cudarc's libraries (`-lcuda -lcublas -lcublasLt -lcurand`,
//!   cudarc's `dynamic-linking`), which only a CUDA install or a driver provides: where none is
//!   found, a stub of each is compiled here with the library's real `SONAME` and the symbols
//!   `cuda-stubs.txt` lists, so that the executable records the library and the GPU machine's
//!   real one is loaded when it runs. The stubs are never run. tuned/ links the same ones.
//!
//! nvcc is found as candle-kernels' build finds it: `NVCC`, else `CUDA_HOME`, else `CUDA_PATH`.
use std::path::{Path, PathBuf};
use std::process::Command;

/// The libraries candle-core's cudarc links: link name, the `SONAME` of CUDA 13's, and the
/// symbol prefix that picks its symbols out of `cuda-stubs.txt` (longest prefix wins).
const LINKED: [(&str, &str, &str); 4] = [
    ("cuda", "libcuda.so.1", "cu"),
    ("cublas", "libcublas.so.13", "cublas"),
    ("cublasLt", "libcublasLt.so.13", "cublasLt"),
    ("curand", "libcurand.so.10", "curand"),
];

fn cuda_root() -> Option<PathBuf> {
    if let Some(nvcc) = std::env::var_os("NVCC") {
        // …/bin/nvcc → …
        return PathBuf::from(nvcc).parent()?.parent().map(PathBuf::from);
    }
    ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .find_map(|v| std::env::var_os(v).map(PathBuf::from))
}

/// Where a linker could find `lib{name}.so`: the toolkit's library folders and the system's.
fn found(root: Option<&Path>, name: &str) -> bool {
    let file = format!("lib{name}.so");
    let mut dirs: Vec<PathBuf> = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]
        .iter()
        .map(PathBuf::from)
        .collect();
    if let Some(root) = root {
        for sub in ["lib", "lib64", "lib/stubs", "lib64/stubs"] {
            dirs.push(root.join(sub));
        }
    }
    dirs.iter().any(|d| d.join(&file).exists())
}

/// `dir/lib{name}.so` → the toolkit's `lib{name}.so.{version}`, where only the latter exists.
fn unversioned_link(lib: &Path, dir: &Path, name: &str, version: &str) -> bool {
    let versioned = lib.join(format!("lib{name}.so.{version}"));
    if lib.join(format!("lib{name}.so")).exists() || !versioned.is_file() {
        return false;
    }
    // Both names: the linker's, and the loader's for the tests (see main).
    [format!("lib{name}.so"), format!("lib{name}.so.{version}")]
        .iter()
        .all(|file| {
            let link = dir.join(file);
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&versioned, &link).is_ok()
        })
}

/// Compiles `dir/lib{name}.so` with `soname`, defining `symbols` as empty functions.
fn stub(dir: &Path, name: &str, soname: &str, symbols: &[&str]) -> Result<(), String> {
    let c = dir.join(format!("{name}.c"));
    let body: String = symbols
        .iter()
        .map(|s| format!("void {s}(void) {{}}\n"))
        .collect();
    std::fs::write(&c, body).map_err(|e| format!("writing {}: {e}", c.display()))?;
    let out = dir.join(format!("lib{name}.so"));
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(format!("-Wl,-soname,{soname}"))
        .arg(&c)
        .status()
        .map_err(|e| format!("running cc: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cc failed ({status}) for {}", out.display()))
    }
}

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=cuda-stubs.txt");
    for var in ["NVCC", "CUDA_HOME", "CUDA_PATH", "CC"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    // src/ is shared with tuned/, whose `tuned` feature this package does not have.
    println!("cargo::rustc-check-cfg=cfg(feature, values(\"tuned\"))");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dir = out.join("cudalibs");
    let _ = std::fs::create_dir_all(&dir);
    let root = cuda_root();
    if let Some(lib) = root.as_ref().map(|r| r.join("lib")) {
        unversioned_link(&lib, &dir, "cudart", "13");
        unversioned_link(&lib, &dir, "nvrtc", "13");
    }
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    // tuned/ builds with this script too; the list sits beside it.
    let list = [
        manifest.join("cuda-stubs.txt"),
        manifest.join("../cuda-stubs.txt"),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .expect("cuda-stubs.txt beside build.rs");
    let text = std::fs::read_to_string(&list).expect("cuda-stubs.txt reads");
    let symbols: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for (name, soname, prefix) in LINKED {
        if found(root.as_deref(), name) {
            continue;
        }
        // Each symbol goes to the library of its longest matching prefix.
        let mine: Vec<&str> = symbols
            .iter()
            .copied()
            .filter(|s| {
                LINKED
                    .iter()
                    .filter(|(.., p)| s.starts_with(p))
                    .max_by_key(|(.., p)| p.len())
                    .is_some_and(|(.., p)| *p == prefix)
            })
            .collect();
        match stub(&dir, name, soname, &mine) {
            // The name the loader asks for, so that the tests of the released build can run
            // on this machine with LD_LIBRARY_PATH=target/cuda-stubs (they call no CUDA).
            Ok(()) => {
                let _ = std::fs::remove_file(dir.join(soname));
                let _ = std::os::unix::fs::symlink(format!("lib{name}.so"), dir.join(soname));
            }
            Err(e) => println!("cargo::warning=no link stub for lib{name}.so: {e}"),
        }
    }
    // A fixed path to the stubs (OUT_DIR's changes with the build's hash): target/cuda-stubs
    // beside cuda-stubs.txt.
    if let Some(home) = list.parent() {
        let stable = home.join("target/cuda-stubs");
        let _ = std::fs::create_dir_all(home.join("target"));
        let _ = std::fs::remove_file(&stable);
        let _ = std::os::unix::fs::symlink(&dir, &stable);
    }
    println!("cargo::rustc-link-search=native={}", dir.display());
}
