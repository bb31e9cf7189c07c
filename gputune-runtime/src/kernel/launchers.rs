//! C++ launchers: `extern "C"` host functions of a `.cu` file that launch their kernels with
//! `<<<…>>>`, compiled by nvcc at build time once per variant into one static library, each
//! variant's launcher under its own symbol (`Builder::launchers` in build.rs). A `#[tune]`
//! wrapper asks [`Launchers::get`] for its variant's launcher and calls it through FFI on the
//! bench's stream; production builds link only base and the applied winners.
//!
//! ```ignore
//! static LAUNCH: Launchers = gputune_macros::launchers!("src/launch.cu");
//! type ScaleLaunch = unsafe extern "C" fn(*const f32, *mut f32, u64, CUstream) -> i32;
//!
//! // SAFETY: `scale_launch` in launch.cu has this signature.
//! let launch: ScaleLaunch = unsafe { LAUNCH.get(TUNED, stream, "scale_launch", &[]) }?;
//! // SAFETY: the pointers are device buffers of n elements, the stream is the bench's.
//! launch_status(unsafe { launch(x, y, n, stream.cu_stream()) })?;
//! ```

use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::error::{Error, Result};
use crate::tuned::{Tuned, VALUE_SEPARATOR};

/// One variant's launchers in the static library, as the build helper's table lists them.
#[derive(Debug)]
pub struct LauncherImage {
    /// The tuned function whose variant it is (empty: an untuned launcher file).
    pub function: &'static str,
    /// The variant's values as its `TUNED` holds them.
    pub values: &'static str,
    /// The further defines it was compiled with.
    pub extra: &'static [(&'static str, &'static str)],
    /// nvcc's message where it rejected the source (then nothing of it is linked).
    pub error: &'static str,
    /// Each launcher's name in the source and its address under the variant's symbol.
    pub symbols: &'static [(&'static str, unsafe extern "C" fn())],
}

/// The C++ launchers of one `.cu` file, every compiled-in variant's: declare it once as a
/// `static` with `gputune_macros::launchers!`.
#[derive(Debug)]
pub struct Launchers {
    source: &'static str,
    table: &'static [LauncherImage],
}

impl Launchers {
    /// The launchers of `source` (its path in the crate, for messages) in `table`.
    pub const fn new(source: &'static str, table: &'static [LauncherImage]) -> Launchers {
        Launchers { source, table }
    }

    /// The launcher `name` of the variant `tuned` with `extra` defines, as the function
    /// pointer type `F` (`unsafe extern "C" fn(…) -> i32`), with `stream`'s context made
    /// current on this thread so that the CUDA runtime inside the launcher uses it.
    /// [`Error::Compile`] where nvcc rejected the variant (it is recorded `build_failed`) or
    /// the build did not compile it in.
    ///
    /// # Safety
    ///
    /// `F` must be an `extern "C"` function pointer type with the launcher's signature in
    /// the source.
    pub unsafe fn get<F: Copy>(
        &self,
        tuned: Tuned,
        stream: &Arc<CudaStream>,
        name: &str,
        extra: &[(&str, &str)],
    ) -> Result<F> {
        let pointer = self.pointer(tuned, name, extra)?;
        if std::mem::size_of::<F>() != std::mem::size_of::<unsafe extern "C" fn()>() {
            return Err(Error::Usage(format!(
                "Launchers::get::<{}>: not a function pointer type",
                std::any::type_name::<F>()
            )));
        }
        stream
            .context()
            .bind_to_thread()
            .map_err(|e| crate::backend::cuda::driver_error("binding the context", e))?;
        // SAFETY: the caller guarantees F is the launcher's function pointer type, and the
        // sizes match.
        Ok(unsafe { std::mem::transmute_copy::<unsafe extern "C" fn(), F>(&pointer) })
    }

    /// The address of launcher `name` of the variant, or why there is none.
    pub fn pointer(
        &self,
        tuned: Tuned,
        name: &str,
        extra: &[(&str, &str)],
    ) -> Result<unsafe extern "C" fn()> {
        let variant = || {
            if tuned.function().is_empty() {
                "the untuned launchers".to_string()
            } else {
                format!(
                    "`{}` ({})",
                    tuned.function(),
                    tuned.values().replace(VALUE_SEPARATOR, ",")
                )
            }
        };
        let image = self
            .table
            .iter()
            .find(|i| {
                i.function == tuned.function() && i.values == tuned.values() && i.extra == extra
            })
            .ok_or_else(|| {
                Error::Compile(format!(
                    "{}: no launchers of {} with defines {extra:?} were built: list the \
                     function and the define set in build.rs (`Builder::launchers(…)`)",
                    self.source,
                    variant()
                ))
            })?;
        if !image.error.is_empty() {
            return Err(Error::Compile(image.error.to_string()));
        }
        image
            .symbols
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                let names: Vec<&str> = image.symbols.iter().map(|(n, _)| *n).collect();
                Error::Compile(format!(
                    "{}: no launcher `{name}` in {}; its extern \"C\" functions are {}",
                    self.source,
                    variant(),
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ))
            })
    }
}

/// A launcher's return value as a CUDA runtime error code (`cudaGetLastError()` after the
/// launch, `0` success) as a result: a configuration the kernel cannot take is
/// [`Error::InvalidLaunch`] (the variant is `invalid`), an image without code for this GPU is
/// [`Error::Compile`], a sticky error is [`Error::DeviceLost`], anything else
/// [`Error::Device`].
pub fn launch_status(code: i32) -> Result<()> {
    let message = || {
        format!(
            "the launcher returned cudaError {code} ({})",
            error_name(code)
        )
    };
    match code {
        0 => Ok(()),
        // cudaErrorInvalidConfiguration, cudaErrorLaunchOutOfResources,
        // cudaErrorCooperativeLaunchTooLarge
        9 | 701 | 720 => Err(Error::InvalidLaunch(message())),
        // cudaErrorNoKernelImageForDevice, cudaErrorInvalidPtx, cudaErrorUnsupportedPtxVersion
        209 | 218 | 222 => Err(Error::Compile(format!(
            "{}: the launcher's library has no code this GPU can run (build for its \
             architecture with GPUTUNE_CUDA_ARCHS)",
            message()
        ))),
        // cudaErrorIllegalAddress, cudaErrorLaunchTimeout, cudaErrorAssert, …, cudaErrorLaunchFailure
        700 | 702 | 710 | 714..=719 => Err(Error::DeviceLost(message())),
        _ => Err(Error::Device(message())),
    }
}

fn error_name(code: i32) -> &'static str {
    match code {
        1 => "cudaErrorInvalidValue",
        2 => "cudaErrorMemoryAllocation",
        9 => "cudaErrorInvalidConfiguration",
        98 => "cudaErrorInvalidDeviceFunction",
        209 => "cudaErrorNoKernelImageForDevice",
        218 => "cudaErrorInvalidPtx",
        222 => "cudaErrorUnsupportedPtxVersion",
        700 => "cudaErrorIllegalAddress",
        701 => "cudaErrorLaunchOutOfResources",
        702 => "cudaErrorLaunchTimeout",
        710 => "cudaErrorAssert",
        719 => "cudaErrorLaunchFailure",
        720 => "cudaErrorCooperativeLaunchTooLarge",
        _ => "see cudaGetErrorName",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn first() {}
    extern "C" fn second() {}

    static TABLE: &[LauncherImage] = &[
        LauncherImage {
            function: "scale",
            values: "4\u{1f}256",
            extra: &[],
            error: "",
            symbols: &[("scale_launch", first), ("copy_launch", second)],
        },
        LauncherImage {
            function: "scale",
            values: "8\u{1f}128",
            extra: &[],
            error: "nvcc 13.0.88 rejected src/launch.cu: expected a `;`",
            symbols: &[],
        },
    ];

    const BASE: Tuned = Tuned::new(
        "scale",
        &[("ipt", "IPT", "4"), ("tpb", "TPB", "256")],
        "4\u{1f}256",
    );
    const FAILED: Tuned = Tuned::new(
        "scale",
        &[("ipt", "IPT", "4"), ("tpb", "TPB", "256")],
        "8\u{1f}128",
    );
    const MISSING: Tuned = Tuned::new(
        "scale",
        &[("ipt", "IPT", "4"), ("tpb", "TPB", "256")],
        "16\u{1f}64",
    );

    #[test]
    fn a_variant_s_launcher_is_its_own_symbol() {
        let l = Launchers::new("src/launch.cu", TABLE);
        let f = l.pointer(BASE, "scale_launch", &[]).expect("built");
        assert_eq!(f as usize, first as *const () as usize);
        let g = l.pointer(BASE, "copy_launch", &[]).expect("built");
        assert_eq!(g as usize, second as *const () as usize);
    }

    #[test]
    fn a_rejected_missing_or_unknown_launcher_is_a_build_failure_that_says_which() {
        let l = Launchers::new("src/launch.cu", TABLE);
        let e = l
            .pointer(FAILED, "scale_launch", &[])
            .expect_err("rejected");
        assert!(matches!(&e, Error::Compile(m) if m.contains("expected a `;`")));
        let e = l
            .pointer(MISSING, "scale_launch", &[])
            .expect_err("not built");
        assert!(matches!(&e, Error::Compile(m) if m.contains("(16,64)") && m.contains("build.rs")));
        let e = l.pointer(BASE, "nope", &[]).expect_err("no such launcher");
        assert!(
            matches!(&e, Error::Compile(m) if m.contains("scale_launch, copy_launch")),
            "{e}"
        );
    }

    #[test]
    fn launcher_codes_become_the_runtime_s_failure_kinds() {
        use crate::error::ErrorKind;
        assert!(launch_status(0).is_ok());
        let kind = |c| launch_status(c).expect_err("a failure").kind();
        assert_eq!(kind(9), ErrorKind::Invalid);
        assert_eq!(kind(701), ErrorKind::Invalid);
        assert_eq!(kind(209), ErrorKind::Compile);
        assert_eq!(kind(700), ErrorKind::DeviceLost);
        assert_eq!(kind(1), ErrorKind::Launch);
        assert!(launch_status(9)
            .expect_err("invalid")
            .to_string()
            .contains("cudaErrorInvalidConfiguration"));
    }
}
