//! Backends time the user's launches; the measurement loop does not know which one it drives.
//!
//! A backend offers two primitives: one cold sample (caches flushed, launch latency hidden
//! where the device allows it) and one hot batch (back-to-back executions, nothing flushed).
//! Everything else — warm-up, stopping criteria, timeouts, statistics — lives in
//! [`crate::measure`].

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "cuda")]
pub mod kernel_cache;

use crate::device::DeviceInfo;
use crate::error::{BoxError, Result};
use crate::launch::Launch;

/// The user's launches for one execution, as the measurement loop hands them to a backend.
pub type Launches<'f> = dyn FnMut(&mut Launch<'_>) -> std::result::Result<(), BoxError> + 'f;

/// One cold sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColdSample {
    /// Device time of the launches in seconds (CUDA events, or the monotonic clock on a CPU).
    pub gpu_time: f64,
    /// Host wall time of the sample in seconds, launch overhead included.
    pub cpu_time: f64,
    /// The SM clock during the sample in Hz, where the backend can read it.
    pub sm_clock_rate: Option<f64>,
}

/// A device that can time launches.
pub trait Backend {
    /// Identity of the device.
    fn device(&self) -> &DeviceInfo;

    /// Times one execution of `launches` cold: last-level cache flushed first, and on a GPU
    /// the stream held by a spin kernel so that launch latency is hidden.
    fn cold_sample(&mut self, launches: &mut Launches<'_>) -> Result<ColdSample>;

    /// Starts a run of consecutive cold samples of one state (before its warm-up). A backend
    /// may put the next sample's cache flush on the device at the end of a sample; whatever
    /// ran between two runs (a verifying run, a hot loop, another state's setup) ran after
    /// that flush and left its data in the cache, so the run's first sample flushes afresh.
    fn begin_cold_run(&mut self) {}

    /// Times `count` back-to-back executions of `launches` without flushing and returns the
    /// total device time in seconds.
    fn hot_batch(&mut self, launches: &mut Launches<'_>, count: u64) -> Result<f64>;

    /// Whether cold samples hold the stream with a blocking (spin) kernel while the launches
    /// are enqueued. On by default where the device has one; off under a profiler, which
    /// serialises launches, so that a held stream would never run (nvbench's
    /// `--disable-blocking-kernel`).
    fn set_blocking_kernel(&mut self, _enabled: bool) {}

    /// The device's energy counter in joules: a running total, whose difference between two
    /// readings is what the device used between them. `Err` says why the device has none
    /// (no NVML, a GPU without the counter, a CPU). Only read: nothing is reset or set.
    fn energy_counter(&mut self) -> std::result::Result<f64, String> {
        Err(format!(
            "the {} backend has no energy counter (gputune reads NVIDIA GPUs' through NVML)",
            self.device().backend.as_str()
        ))
    }

    /// Fills the device's shared memory with NaN ahead of the next launches on its stream,
    /// before a verifying run, so that a kernel reading shared memory it never wrote fails
    /// verification rather than passing where the memory happened to hold zeros. Nothing on
    /// a CPU.
    fn poison_shared_memory(&mut self) -> Result<()> {
        Ok(())
    }

    /// The CUDA handles of this backend, if it is the CUDA backend.
    #[cfg(feature = "cuda")]
    fn cuda(&self) -> Option<&cuda::CudaHandles> {
        None
    }
}
