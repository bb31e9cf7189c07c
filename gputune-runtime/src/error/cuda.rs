//! What kind of failure a CUDA error is.
//!
//! [`ErrorKind::of`] classifies the cudarc errors a bench's own calls return, so these tables
//! sit below everything that reports errors, the CUDA backend included, which re-exports
//! them as `backend::cuda::{STICKY_ERRORS, INVALID_LAUNCH_ERRORS, driver_error_kind}`.

use cudarc::driver::{sys, DriverError};

use super::ErrorKind;

/// Driver errors after which the context cannot be used again: every later call returns
/// the same error, and (as the driver API documentation says of each) "to continue using
/// CUDA, the process must be terminated and relaunched". Uncorrectable ECC and NVLink errors
/// are here too: nothing the context holds can be trusted after them.
pub const STICKY_ERRORS: [sys::CUresult; 12] = {
    use sys::CUresult as R;
    [
        R::CUDA_ERROR_ECC_UNCORRECTABLE,
        R::CUDA_ERROR_NVLINK_UNCORRECTABLE,
        R::CUDA_ERROR_ILLEGAL_ADDRESS,
        R::CUDA_ERROR_LAUNCH_TIMEOUT,
        R::CUDA_ERROR_ASSERT,
        R::CUDA_ERROR_HARDWARE_STACK_ERROR,
        R::CUDA_ERROR_ILLEGAL_INSTRUCTION,
        R::CUDA_ERROR_MISALIGNED_ADDRESS,
        R::CUDA_ERROR_INVALID_ADDRESS_SPACE,
        R::CUDA_ERROR_INVALID_PC,
        R::CUDA_ERROR_LAUNCH_FAILED,
        R::CUDA_ERROR_EXTERNAL_DEVICE,
    ]
};

/// Launches the kernel cannot take: too many resources for its block, a cooperative grid
/// larger than can be co-resident, a bad cluster shape. The variant is not a valid point.
pub const INVALID_LAUNCH_ERRORS: [sys::CUresult; 3] = {
    use sys::CUresult as R;
    [
        R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        R::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
        R::CUDA_ERROR_INVALID_CLUSTER_SIZE,
    ]
};

/// What kind of failure a driver error is: [`ErrorKind::DeviceLost`] for the
/// [`STICKY_ERRORS`], [`ErrorKind::Invalid`] for the [`INVALID_LAUNCH_ERRORS`],
/// [`ErrorKind::Compile`] for PTX the driver's JIT rejects, else [`ErrorKind::Launch`].
pub fn driver_error_kind(code: sys::CUresult) -> ErrorKind {
    if STICKY_ERRORS.contains(&code) {
        ErrorKind::DeviceLost
    } else if INVALID_LAUNCH_ERRORS.contains(&code) {
        ErrorKind::Invalid
    } else if code == sys::CUresult::CUDA_ERROR_INVALID_PTX {
        ErrorKind::Compile
    } else {
        ErrorKind::Launch
    }
}

/// The kind of a cudarc error that a bench's own cudarc calls returned (a `DriverError`, or
/// NVRTC's `CompileError`); `None` for other errors.
pub(super) fn cudarc_error_kind(e: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    if let Some(d) = e.downcast_ref::<DriverError>() {
        return Some(driver_error_kind(d.0));
    }
    e.downcast_ref::<cudarc::nvrtc::CompileError>()
        .map(|c| match c {
            cudarc::nvrtc::CompileError::CompileError { .. } => ErrorKind::Compile,
            _ => ErrorKind::Other,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::error::KindOf;

    #[test]
    fn sticky_errors_lose_the_device_and_others_do_not() {
        use sys::CUresult as R;
        for code in [
            R::CUDA_ERROR_ILLEGAL_ADDRESS,
            R::CUDA_ERROR_LAUNCH_FAILED,
            R::CUDA_ERROR_ILLEGAL_INSTRUCTION,
            R::CUDA_ERROR_MISALIGNED_ADDRESS,
            R::CUDA_ERROR_HARDWARE_STACK_ERROR,
            R::CUDA_ERROR_INVALID_PC,
            R::CUDA_ERROR_INVALID_ADDRESS_SPACE,
            R::CUDA_ERROR_ASSERT,
            R::CUDA_ERROR_LAUNCH_TIMEOUT,
            R::CUDA_ERROR_EXTERNAL_DEVICE,
            R::CUDA_ERROR_ECC_UNCORRECTABLE,
        ] {
            assert_eq!(driver_error_kind(code), ErrorKind::DeviceLost, "{code:?}");
        }
        // Errors that leave the context usable: the state fails, the process goes on.
        for code in [
            R::CUDA_ERROR_INVALID_VALUE,
            R::CUDA_ERROR_OUT_OF_MEMORY,
            R::CUDA_ERROR_NOT_READY,
            R::CUDA_ERROR_INVALID_HANDLE,
            R::CUDA_ERROR_NOT_FOUND,
            R::CUDA_ERROR_TIMEOUT,
            R::CUDA_ERROR_UNKNOWN,
        ] {
            assert_eq!(driver_error_kind(code), ErrorKind::Launch, "{code:?}");
        }
        assert_eq!(
            driver_error_kind(R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES),
            ErrorKind::Invalid
        );
        assert_eq!(
            driver_error_kind(R::CUDA_ERROR_INVALID_PTX),
            ErrorKind::Compile
        );
    }

    #[test]
    fn a_bench_s_own_cudarc_errors_are_classified_through_the_box() {
        // What `?` on a cudarc call inside a bench function produces.
        let lost: crate::BoxError =
            Box::new(DriverError(sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert_eq!(ErrorKind::of(lost.as_ref()), ErrorKind::DeviceLost);
        let failed = Error::Launch(Box::new(DriverError(
            sys::CUresult::CUDA_ERROR_INVALID_VALUE,
        )));
        assert_eq!(failed.kind(), ErrorKind::Launch);
        let too_big = Error::Launch(Box::new(DriverError(
            sys::CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        )));
        assert_eq!(too_big.kind(), ErrorKind::Invalid);
    }
}
