//! Whether CUDA's driver and NVRTC libraries can be loaded, asked before anything calls them.
//!
//! cudarc links CUDA one way per build: it loads the libraries at run time unless some crate of
//! the build asks it to link them (candle as released asks for `dynamic-linking`). gputune
//! takes cudarc's `fallback-dynamic-loading`, so a bench binary loads at run time (it builds
//! and unit-tests without CUDA), while an application's production build keeps the linking the
//! application chose: it then runs the very libraries its released build runs. cudarc's own
//! presence check exists only where it loads at run time, hence this one, which tries the
//! library names cudarc tries (its `get_lib_name_candidates`, for CUDA 13) in either build.

use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};

/// The CUDA major version the workspace's cudarc is built for (its `cuda-13000` feature).
const CUDA_MAJOR: &str = "13";
/// Its minor version.
const CUDA_MINOR: &str = "0";

/// The file names cudarc tries for library `name` (`cuda`, `nvrtc`), in its order.
fn candidates(name: &str) -> Vec<String> {
    let (p, s) = (DLL_PREFIX, DLL_SUFFIX);
    let (major, minor) = (CUDA_MAJOR, CUDA_MINOR);
    let width = if cfg!(target_pointer_width = "32") {
        "32"
    } else {
        "64"
    };
    vec![
        format!("{p}{name}{s}"),
        format!("{p}{name}{width}{s}"),
        format!("{p}{name}{width}_{major}{s}"),
        format!("{p}{name}{width}_{major}{minor}{s}"),
        format!("{p}{name}{width}_{major}{minor}_0{s}"),
        format!("{p}{name}{width}_{major}0_{minor}{s}"),
        format!("{p}{name}{width}_10{s}"),
        format!("{p}{name}{width}_11{s}"),
        format!("{p}{name}{width}_12{s}"),
        format!("{p}{name}{width}_{major}0_0{s}"),
        format!("{p}{name}{width}_9{s}"),
        format!("{p}{name}{s}.{major}"),
        format!("{p}{name}{s}.12"),
        format!("{p}{name}{s}.11"),
        format!("{p}{name}{s}.10"),
        format!("{p}{name}{s}.9"),
        format!("{p}{name}{s}.1"),
    ]
}

/// Whether one of `names`' candidate files loads. Where cudarc links CUDA, the library is
/// already mapped (the process could not have started otherwise) and this is true.
fn present(names: &[&str]) -> bool {
    names.iter().flat_map(|n| candidates(n)).any(|file| {
        // SAFETY: loading a shared library runs its initialisers; CUDA's libraries' are the
        // ones cudarc's own check and first call run too, and nothing of it is called here.
        unsafe { libloading::Library::new(file) }.is_ok()
    })
}

/// Whether the NVIDIA driver library (`libcuda`) loads.
pub(crate) fn driver_present() -> bool {
    present(&["cuda", "nvcuda"])
}

/// Whether NVRTC (`libnvrtc`) loads.
pub(crate) fn nvrtc_present() -> bool {
    present(&["nvrtc"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_candidates_are_cudarcs_for_cuda_13() {
        // cudarc's list is public where it loads at run time, as it does in this workspace:
        // the copy must not drift from it.
        for name in ["cuda", "nvrtc"] {
            assert_eq!(candidates(name), cudarc::get_lib_name_candidates(name));
        }
    }

    #[test]
    fn the_checks_agree_with_cudarcs_own() {
        // SAFETY: both only try to dlopen.
        assert_eq!(driver_present(), unsafe {
            cudarc::driver::sys::is_culib_present()
        });
        assert_eq!(nvrtc_present(), unsafe {
            cudarc::nvrtc::sys::is_culib_present()
        });
    }
}
