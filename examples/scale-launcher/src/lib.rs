//! `y = a·x` launched from C++: `build.rs` compiles `src/launch.cu` (a kernel and its
//! `extern "C"` launcher) with nvcc once per variant into one static library, each variant's
//! `scale_launch` under its own symbol, and [`scale_cxx`] calls its variant's launcher through
//! FFI on the bench's stream. A production build links only base and the applied winners.

use std::sync::Arc;

use gputune_macros::{launchers, tune};
use gputune_runtime::cudarc::driver::sys::CUstream;
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use gputune_runtime::kernel::{launch_status, Launchers};
use gputune_runtime::BoxError;

static LAUNCH: Launchers = launchers!("src/launch.cu");

/// `scale_launch`'s signature in launch.cu.
type ScaleLaunch = unsafe extern "C" fn(*const f32, *mut f32, f32, u64, CUstream) -> i32;

/// `y[i] = a·x[i]` for the first `min(x.len(), y.len())` elements, enqueued on `stream` by
/// the variant's C++ launcher.
///
/// Tuned: 5 items-per-thread values × 4 block sizes = 20 variants, base 4 × 256.
#[tune(
    ipt = [1, 2, 4, 8, 16],
    tpb = [128, 256, 512, 1024],
    base(ipt = 4, tpb = 256),
    size(Elements = x.len().min(y.len()))
)]
pub fn scale_cxx(
    stream: &Arc<CudaStream>,
    x: &CudaSlice<f32>,
    y: &mut CudaSlice<f32>,
    a: f32,
) -> Result<(), BoxError> {
    let n = x.len().min(y.len()) as u64;
    // SAFETY: ScaleLaunch is scale_launch's signature in launch.cu.
    let launch: ScaleLaunch = unsafe { LAUNCH.get(TUNED, stream, "scale_launch", &[]) }?;
    let (x, _x_guard) = x.device_ptr(stream);
    let (y, _y_guard) = y.device_ptr_mut(stream);
    // SAFETY: x and y are device buffers of at least n floats on the stream's context, and
    // the launcher touches only indices below n.
    let code = unsafe { launch(x as *const f32, y as *mut f32, a, n, stream.cu_stream()) };
    launch_status(code)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use gputune_runtime::skipped;

    const BASE: gputune_runtime::tuned::Tuned = gputune_runtime::tuned::Tuned::new(
        "scale_cxx",
        &[("ipt", "IPT", "4"), ("tpb", "TPB", "256")],
        "4\u{1f}256",
    );

    /// The build linked base's launcher (where nvcc is installed): its address is a symbol of
    /// the static library, callable without a GPU being asked for anything.
    #[test]
    fn base_s_launcher_is_linked_under_its_own_symbol_where_nvcc_is_installed() {
        match LAUNCH.pointer(BASE, "scale_launch", &[]) {
            Ok(f) => assert_ne!(f as usize, 0),
            Err(e) if e.to_string().contains("nvcc was not found") => {
                return skipped("needs nvcc (the CUDA toolkit or PyPI's wheels)")
            }
            Err(e) => panic!("base's launcher: {e}"),
        }
        let e = LAUNCH
            .pointer(BASE, "no_such_launcher", &[])
            .expect_err("unknown");
        assert!(
            e.to_string().contains("no launcher `no_such_launcher`"),
            "{e}"
        );
    }
}
