//! The CUDA backend: CUDA events around the user's launches, nvbench's cold-sample protocol.
//!
//! cudarc loads `libcuda` and `libnvrtc` at run time (unless the application links them:
//! `library`), so this module builds and unit-tests on machines without CUDA;
//! [`CudaBackend::open`] is where a missing driver turns into [`Error::NoDevice`] instead of
//! cudarc's panic.
//!
//! Every driver error becomes an [`Error`] through [`driver_error`], which classifies it
//! ([`driver_error_kind`]): a sticky error (an illegal address, a trap, a failed launch)
//! becomes [`Error::DeviceLost`], after which the bench process reports the state and ends;
//! a launch the kernel cannot take becomes [`Error::InvalidLaunch`]. [`check_launch`] finds
//! the most common invalid launches before anything is launched. NVRTC rejecting a source
//! is [`Error::Compile`].
//!
//! The two helper kernels (the spin kernel that holds the stream and the timestamp kernel that
//! reads the SM clock) are hand-written PTX, so measuring needs neither NVRTC nor a toolkit:
//! the driver JITs them for whatever GPU it finds.
//!
//! [`Error`]: crate::Error
//! [`Error::NoDevice`]: crate::Error::NoDevice
//! [`Error::DeviceLost`]: crate::Error::DeviceLost
//! [`Error::InvalidLaunch`]: crate::Error::InvalidLaunch
//! [`Error::Compile`]: crate::Error::Compile

pub mod compile_worker;
mod device;
mod energy;
mod errors;
mod handles;
pub mod include;
pub(crate) mod library;
mod limits;
mod mapped;
mod module;
pub mod nvml;
mod nvrtc;
mod precompile;
mod program;
mod provenance;
mod quiet;
mod shared_poison;
mod timing;

// What the error module classifies every CUDA error by; re-exported where it always was.
pub use crate::error::cuda::{driver_error_kind, INVALID_LAUNCH_ERRORS, STICKY_ERRORS};
pub use errors::driver_error;
pub use handles::{CudaHandles, LoweredNames};
pub use limits::{check_launch, LaunchLimits};
pub use nvrtc::{compiles_for, cuda_includes, lowered_names};
pub use precompile::{
    finish_compilations, CompileJob, Precompile, PrecompileSummary, COMPILE_THREADS_ENV,
};
pub use program::{Program, DEFAULT_STD};
pub use timing::{CudaBackend, DEFAULT_BLOCKING_TIMEOUT};

pub(crate) use device::current_device;
pub(crate) use device::device_cc;
pub(crate) use errors::describe;
pub(crate) use module::{load_module, load_static};
pub(crate) use precompile::compile_threads;
// verify's tests compile its kernels without loading them.
#[cfg(test)]
pub(crate) use nvrtc::compile_for;
