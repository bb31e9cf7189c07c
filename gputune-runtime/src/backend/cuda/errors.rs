//! Driver errors as the runtime's [`Error`], of the kind the error module classifies them by.

use cudarc::driver::DriverError;

use crate::error::cuda::driver_error_kind;
use crate::error::{Error, ErrorKind};

/// `CUDA_ERROR_NAME: description`, the way CUDA programmers recognise errors.
pub(crate) fn describe(e: DriverError) -> String {
    match (e.error_name(), e.error_string()) {
        (Ok(name), Ok(text)) => format!("{}: {}", name.to_string_lossy(), text.to_string_lossy()),
        _ => format!("{:?}", e.0),
    }
}

/// A driver error as an [`Error`] of its kind ([`driver_error_kind`]), saying what was being
/// done and naming the CUDA error.
pub fn driver_error(what: &str, e: DriverError) -> Error {
    let message = format!("{what}: {}", describe(e));
    match driver_error_kind(e.0) {
        ErrorKind::DeviceLost => Error::DeviceLost(message),
        ErrorKind::Invalid => Error::InvalidLaunch(message),
        ErrorKind::Compile => Error::Compile(message),
        _ => Error::Device(message),
    }
}

/// [`driver_error`] for `map_err`.
pub(super) fn device_error(what: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| driver_error(what, e)
}
