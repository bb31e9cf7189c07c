//! Where CUDA's own headers are: the toolkit's include directory and CCCL's (CUB, Thrust,
//! libcu++, which CUDA 13 keeps under `include/cccl`), found without asking, and what to say
//! when a kernel includes a header NVRTC cannot open.
//!
//! The search, in order, takes the first directory that holds `cuda_fp16.h`:
//! 1. next to the NVRTC library this process loaded (`<lib>/../include`: a toolkit's
//!    `lib64/` or `targets/<arch>/lib/`, and PyPI's `nvidia/cu13/lib/`), so that the headers
//!    match the compiler;
//! 2. `$CUDA_HOME`, `$CUDA_PATH`, `$CUDA_ROOT` (their `include/` or `targets/<arch>/include/`);
//! 3. `/usr/local/cuda-<NVRTC's version>`, `/usr/local/cuda`, `/opt/cuda`, `/usr/lib/cuda`.
//!
//! `$GPUTUNE_INCLUDE_PATH` (directories separated by `:`) is searched before all of them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Extra include directories for every kernel, searched before CUDA's (`:`-separated).
pub const INCLUDE_PATH_ENV: &str = "GPUTUNE_INCLUDE_PATH";

/// The file whose presence makes a directory CUDA's include directory.
const MARKER: &str = "cuda_fp16.h";

/// The environment variables that may name a CUDA toolkit, in the order they are read.
const HOME_VARS: [&str; 3] = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"];

/// The `targets/` folders a toolkit keeps per-platform headers in.
const TARGETS: [&str; 3] = ["x86_64-linux", "sbsa-linux", "aarch64-linux"];

/// What the search for CUDA's headers found, and where it looked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CudaIncludes {
    /// The directories every kernel is compiled with (`-I`), in order: those of
    /// `$GPUTUNE_INCLUDE_PATH`, the toolkit's include directory, then CCCL's.
    pub dirs: Vec<PathBuf>,
    /// Every candidate toolkit directory looked at and what was there, in order.
    pub looked: Vec<String>,
}

/// What the search reads of the machine: gathered once by [`Probe::of_this_process`], given
/// by tests as fake toolkit trees.
#[derive(Debug, Clone, Default)]
pub(crate) struct Probe {
    /// `$GPUTUNE_INCLUDE_PATH`.
    pub extra: Option<OsString>,
    /// The NVRTC library this process loaded.
    pub nvrtc_library: Option<PathBuf>,
    /// `CUDA_HOME` and its kin, where set.
    pub homes: Vec<(&'static str, OsString)>,
    /// NVRTC's version, for `/usr/local/cuda-X.Y`.
    pub nvrtc_version: Option<(i32, i32)>,
    /// The root the usual install paths are under (`/`; a fake tree in tests).
    pub root: PathBuf,
}

impl Probe {
    /// This process's environment and loaded NVRTC (of version `nvrtc_version`).
    pub(super) fn of_this_process(nvrtc_version: Option<(i32, i32)>) -> Probe {
        Probe {
            extra: std::env::var_os(INCLUDE_PATH_ENV),
            nvrtc_library: loaded_library("libnvrtc.so"),
            homes: HOME_VARS
                .iter()
                .filter_map(|v| std::env::var_os(v).map(|value| (*v, value)))
                .collect(),
            nvrtc_version,
            root: PathBuf::from("/"),
        }
    }
}

/// The search of the module documentation over what `probe` says of the machine.
pub(crate) fn search(probe: &Probe) -> CudaIncludes {
    let mut found = CudaIncludes::default();
    if let Some(extra) = &probe.extra {
        found
            .dirs
            .extend(std::env::split_paths(extra).filter(|p| !p.as_os_str().is_empty()));
    }
    let mut candidates: Vec<(PathBuf, String)> = Vec::new();
    if let Some(lib) = probe.nvrtc_library.as_deref().and_then(Path::parent) {
        let why = format!("next to the loaded {}", probe_library_name(probe));
        candidates.push((lib.join("../include"), why.clone()));
        candidates.push((lib.join("../../include"), why));
    }
    for (var, value) in &probe.homes {
        let home = PathBuf::from(value);
        candidates.push((home.join("include"), format!("${var}")));
        for target in TARGETS {
            candidates.push((
                home.join("targets").join(target).join("include"),
                format!("${var}"),
            ));
        }
    }
    let usual = probe.root.join("usr/local");
    let mut roots = Vec::new();
    if let Some((major, minor)) = probe.nvrtc_version {
        roots.push(usual.join(format!("cuda-{major}.{minor}")));
    }
    roots.push(usual.join("cuda"));
    roots.push(probe.root.join("opt/cuda"));
    roots.push(probe.root.join("usr/lib/cuda"));
    for root in roots {
        candidates.push((root.join("include"), "a usual install path".into()));
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    for (dir, why) in candidates {
        let dir = normalise(&dir);
        if seen.contains(&dir) {
            continue;
        }
        seen.push(dir.clone());
        if dir.join(MARKER).is_file() {
            found
                .looked
                .push(format!("{} ({why}): found", dir.display()));
            let cccl = dir.join("cccl");
            found.dirs.push(dir);
            if cccl.join("cub").is_dir() {
                found.dirs.push(cccl);
            }
            return found;
        }
        let what = if dir.is_dir() {
            format!("no {MARKER}")
        } else {
            "not there".into()
        };
        found
            .looked
            .push(format!("{} ({why}): {what}", dir.display()));
    }
    found
}

fn probe_library_name(probe: &Probe) -> String {
    probe
        .nvrtc_library
        .as_deref()
        .and_then(Path::file_name)
        .map_or_else(|| "NVRTC".into(), |n| n.to_string_lossy().into_owned())
}

/// `a/b/../c` as `a/c`, without touching the file system (symlinks stay as they are).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The path of the loaded shared library whose file name starts with `prefix`, from the
/// process's memory map (Linux); `None` elsewhere or when it is not loaded.
fn loaded_library(prefix: &str) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(PathBuf::from)
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
}

/// The headers NVRTC's log says it could not open (`cannot open source file "cub/cub.cuh"`).
pub(crate) fn missing_headers(log: &str) -> Vec<String> {
    const NEEDLE: &str = "cannot open source file \"";
    let mut missing: Vec<String> = Vec::new();
    let mut rest = log;
    while let Some(at) = rest.find(NEEDLE) {
        rest = &rest[at + NEEDLE.len()..];
        if let Some(end) = rest.find('"') {
            let name = rest[..end].to_string();
            if !missing.contains(&name) {
                missing.push(name);
            }
            rest = &rest[end..];
        }
    }
    missing
}

/// The C and C++ standard headers NVRTC does not have, and libcu++'s header that stands in.
fn standard_replacement(header: &str) -> Option<String> {
    const C: [&str; 12] = [
        "stdint", "stddef", "limits", "float", "math", "stdio", "stdlib", "string", "assert",
        "stdbool", "inttypes", "stdarg",
    ];
    const CPP: [&str; 14] = [
        "cstdint",
        "cstddef",
        "climits",
        "cfloat",
        "cmath",
        "cassert",
        "type_traits",
        "limits",
        "utility",
        "tuple",
        "array",
        "atomic",
        "complex",
        "functional",
    ];
    let stem = header.strip_suffix(".h").unwrap_or(header);
    if header.ends_with(".h") && C.contains(&stem) {
        return Some(format!("<cuda/std/c{stem}>"));
    }
    if !header.contains('.') && CPP.contains(&header) {
        return Some(format!("<cuda/std/{header}>"));
    }
    None
}

/// What to add to NVRTC's log where it says a C library name is undefined (`identifier
/// "INFINITY" is undefined`): NVRTC has no C library, and the names have CUDA spellings.
pub(crate) fn explain_undefined(log: &str) -> String {
    const NAMES: [(&str, &str); 9] = [
        ("INFINITY", "CUDART_INF_F (float) or CUDART_INF (double) from <math_constants.h>, or cuda::std::numeric_limits<float>::infinity() from <cuda/std/limits>"),
        ("NAN", "CUDART_NAN_F (float) or CUDART_NAN (double) from <math_constants.h>, or cuda::std::numeric_limits<float>::quiet_NaN()"),
        ("M_PI", "CUDART_PI_F (float) or CUDART_PI (double) from <math_constants.h>"),
        ("M_E", "a literal (2.718281828459045), or exp(1.0)"),
        ("M_SQRT2", "CUDART_SQRT_2_F or CUDART_SQRT_2 from <math_constants.h>"),
        ("FLT_MAX", "cuda::std::numeric_limits<float>::max() from <cuda/std/limits>, or CUDART_MAX_NORMAL_F from <math_constants.h>"),
        ("FLT_MIN", "cuda::std::numeric_limits<float>::min() from <cuda/std/limits>"),
        ("DBL_MAX", "cuda::std::numeric_limits<double>::max() from <cuda/std/limits>"),
        ("INT_MAX", "cuda::std::numeric_limits<int>::max() from <cuda/std/limits>"),
    ];
    let mut out = String::new();
    for (name, instead) in NAMES {
        if log.contains(&format!("identifier \"{name}\" is undefined")) {
            out.push_str(&format!(
                "\n`{name}` comes from the C library, which NVRTC does not have: use {instead}."
            ));
        }
    }
    out
}

/// What to add to NVRTC's log when it could not open `missing`: which headers, where gputune
/// looked, and how to add a directory. `dirs` are the directories the kernel was compiled
/// with, `embedded` the names of the headers handed to NVRTC with the source.
pub(crate) fn explain_missing(
    missing: &[String],
    dirs: &[PathBuf],
    embedded: &[&str],
    cuda: &CudaIncludes,
) -> String {
    let mut out = String::new();
    for header in missing {
        out.push_str(&format!("\nNVRTC could not open the header {header:?}."));
        if let Some(replacement) = standard_replacement(header) {
            out.push_str(&format!(
                " NVRTC has no C or C++ standard library: include {replacement} (libcu++, \
                 part of CCCL) instead."
            ));
        }
    }
    let listed = |items: Vec<String>| {
        if items.is_empty() {
            "none".to_string()
        } else {
            items.join(", ")
        }
    };
    out.push_str(&format!(
        "\nThe kernel was compiled with the include directories: {}; and the embedded headers: \
         {}.",
        listed(dirs.iter().map(|d| d.display().to_string()).collect()),
        listed(embedded.iter().map(|h| format!("{h:?}")).collect()),
    ));
    if !cuda.dirs.iter().any(|d| d.join(MARKER).is_file()) {
        out.push_str(&format!(
            "\nCUDA's own headers were not found; gputune looked at: {}.",
            listed(cuda.looked.clone())
        ));
    }
    out.push_str(&format!(
        "\nTo add a directory: `Kernel::include_dirs(&[\"…\"])` for one kernel, or \
         ${INCLUDE_PATH_ENV} (directories separated by `:`) for all; point $CUDA_HOME at a CUDA \
         toolkit for CUDA's headers; a header of your crate is embedded by \
         `gputune_macros::kernel!(\"src/kernel.cu\", \"name\")`, which finds the files it \
         includes with `#include \"…\"`."
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_library_names_nvrtc_lacks_are_answered_with_their_cuda_spellings() {
        let log = "k.cu(3): error: identifier \"INFINITY\" is undefined\n\
                   k.cu(4): error: identifier \"M_PI\" is undefined\n";
        let text = explain_undefined(log);
        assert!(
            text.contains("`INFINITY` comes from the C library"),
            "{text}"
        );
        assert!(text.contains("CUDART_INF_F"), "{text}");
        assert!(text.contains("CUDART_PI_F"), "{text}");
        assert!(!text.contains("NAN"), "{text}");
        assert_eq!(
            explain_undefined("error: identifier \"foo\" is undefined"),
            ""
        );
    }

    /// A throw-away directory tree, removed on drop.
    struct Tree(PathBuf);

    impl Tree {
        fn new(name: &str) -> Tree {
            let dir =
                std::env::temp_dir().join(format!("gputune-include-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("temp dir");
            Tree(dir)
        }

        /// Creates `rel` (a file, with its parents) under the tree.
        fn file(&self, rel: &str) -> &Tree {
            let path = self.0.join(rel);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("dirs");
            std::fs::write(path, "").expect("file");
            self
        }

        fn path(&self, rel: &str) -> PathBuf {
            self.0.join(rel)
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn probe(tree: &Tree) -> Probe {
        Probe {
            root: tree.0.clone(),
            ..Probe::default()
        }
    }

    #[test]
    fn the_toolkit_next_to_the_loaded_nvrtc_comes_first_with_cccl() {
        let tree = Tree::new("nvrtc");
        tree.file("cuda/targets/x86_64-linux/lib/libnvrtc.so.13")
            .file("cuda/targets/x86_64-linux/include/cuda_fp16.h")
            .file("cuda/targets/x86_64-linux/include/cccl/cub/cub.cuh")
            .file("usr/local/cuda/include/cuda_fp16.h");
        let found = search(&Probe {
            nvrtc_library: Some(tree.path("cuda/targets/x86_64-linux/lib/libnvrtc.so.13")),
            ..probe(&tree)
        });
        assert_eq!(
            found.dirs,
            [
                tree.path("cuda/targets/x86_64-linux/include"),
                tree.path("cuda/targets/x86_64-linux/include/cccl"),
            ]
        );
        assert!(found.looked[0].contains("next to the loaded libnvrtc.so.13"));
    }

    #[test]
    fn pypi_wheels_are_found_like_a_toolkit() {
        let tree = Tree::new("pypi");
        tree.file("site/nvidia/cu13/lib/libnvrtc.so.13")
            .file("site/nvidia/cu13/include/cuda_fp16.h")
            .file("site/nvidia/cu13/include/cccl/cub/cub.cuh");
        let found = search(&Probe {
            nvrtc_library: Some(tree.path("site/nvidia/cu13/lib/libnvrtc.so.13")),
            ..probe(&tree)
        });
        assert_eq!(found.dirs[0], tree.path("site/nvidia/cu13/include"));
        assert_eq!(found.dirs.len(), 2, "{found:?}");
    }

    #[test]
    fn cuda_home_then_the_versioned_then_the_usual_paths() {
        let tree = Tree::new("homes");
        tree.file("home-toolkit/targets/sbsa-linux/include/cuda_fp16.h")
            .file("usr/local/cuda-13.0/include/cuda_fp16.h")
            .file("usr/local/cuda/include/cuda_fp16.h");
        let home = search(&Probe {
            homes: vec![("CUDA_HOME", tree.path("home-toolkit").into())],
            nvrtc_version: Some((13, 0)),
            ..probe(&tree)
        });
        assert_eq!(
            home.dirs,
            [tree.path("home-toolkit/targets/sbsa-linux/include")]
        );
        let versioned = search(&Probe {
            nvrtc_version: Some((13, 0)),
            ..probe(&tree)
        });
        assert_eq!(versioned.dirs, [tree.path("usr/local/cuda-13.0/include")]);
        let plain = search(&Probe {
            nvrtc_version: Some((12, 8)),
            ..probe(&tree)
        });
        assert_eq!(plain.dirs, [tree.path("usr/local/cuda/include")]);
        assert!(
            plain.looked[0].contains("cuda-12.8") && plain.looked[0].ends_with("not there"),
            "{:?}",
            plain.looked
        );
    }

    #[test]
    fn no_toolkit_says_where_it_looked_and_keeps_the_extra_dirs() {
        let tree = Tree::new("none");
        tree.file("usr/local/cuda/include/cuda.h");
        let found = search(&Probe {
            extra: Some(std::env::join_paths(["/a", "/b"]).expect("paths")),
            ..probe(&tree)
        });
        assert_eq!(found.dirs, [PathBuf::from("/a"), PathBuf::from("/b")]);
        assert!(found
            .looked
            .iter()
            .any(|l| l.contains("usr/local/cuda/include") && l.ends_with("no cuda_fp16.h")));
        assert_eq!(found.looked.len(), 3, "{:?}", found.looked);
    }

    #[test]
    fn missing_headers_are_read_from_nvrtc_logs() {
        let log = "gputune_kernel.cu(1): catastrophic error: cannot open source file \
                   \"cuda_bf16.h\"\n  #include <cuda_bf16.h>\n\nx.cuh(3): catastrophic error: \
                   cannot open source file \"my_utils.cuh\" (no directories in search list)";
        assert_eq!(missing_headers(log), ["cuda_bf16.h", "my_utils.cuh"]);
        assert!(missing_headers("error: expected a \";\"").is_empty());
    }

    #[test]
    fn the_explanation_names_the_header_the_places_and_the_remedies() {
        let cuda = CudaIncludes {
            dirs: Vec::new(),
            looked: vec!["/usr/local/cuda/include (a usual install path): not there".into()],
        };
        let text = explain_missing(
            &["stdint.h".into(), "my_utils.cuh".into()],
            &[PathBuf::from("/extra")],
            &["common.cuh"],
            &cuda,
        );
        for needle in [
            "\"stdint.h\"",
            "<cuda/std/cstdint>",
            "\"my_utils.cuh\"",
            "/extra",
            "\"common.cuh\"",
            "/usr/local/cuda/include (a usual install path): not there",
            "GPUTUNE_INCLUDE_PATH",
            "CUDA_HOME",
            "kernel!",
        ] {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        }
        assert_eq!(
            standard_replacement("type_traits").as_deref(),
            Some("<cuda/std/type_traits>")
        );
        assert_eq!(standard_replacement("cub/cub.cuh"), None);
    }

    #[test]
    fn paths_normalise_without_the_file_system() {
        assert_eq!(
            normalise(Path::new("/a/lib/../include")),
            PathBuf::from("/a/include")
        );
    }
}
