//! The autotuner on CUDA: an event timer and the kernel's block-size limit, through cudarc.

use std::sync::Arc;

use cudarc::driver::sys::{CUevent_flags, CUfunction_attribute};
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaStream, DriverError};

use super::error::{Error, Result};
use super::timer::Timer;
use crate::backend::cuda::describe;
use crate::error::BoxError;

/// Times the work enqueued on one stream between `start` and `stop` with a pair of CUDA
/// events, as HOOMD-blue's autotuner does.
///
/// `stop` records the stop event and waits for it: the only synchronisation, and the
/// autotuner calls it only while tuning. Launch work on the stream given to [`new`](Self::new);
/// work on other streams is not timed.
#[derive(Debug)]
pub struct CudaEventTimer {
    stream: Arc<CudaStream>,
    start: CudaEvent,
    stop: CudaEvent,
    device: String,
}

impl CudaEventTimer {
    /// Creates the two timing events in `stream`'s context.
    pub fn new(stream: &Arc<CudaStream>) -> Result<CudaEventTimer> {
        let context = stream.context();
        let timing_event = || {
            // CU_EVENT_DEFAULT: timing enabled, and the wait spins rather than sleeps, which
            // keeps the host's reaction to a finished sample short.
            context
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver("creating a timing event"))
        };
        Ok(CudaEventTimer {
            start: timing_event()?,
            stop: timing_event()?,
            device: device_id(context)?,
            stream: stream.clone(),
        })
    }

    /// The stream whose work is timed.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

impl Timer for CudaEventTimer {
    fn start(&mut self) -> std::result::Result<(), BoxError> {
        self.start
            .record(&self.stream)
            .map_err(|e| boxed("recording the start event", e))
    }

    fn stop(&mut self) -> std::result::Result<f64, BoxError> {
        self.stop
            .record(&self.stream)
            .map_err(|e| boxed("recording the stop event", e))?;
        // elapsed_ms waits for both events.
        let ms = self
            .start
            .elapsed_ms(&self.stop)
            .map_err(|e| boxed("reading the event times", e))?;
        Ok(f64::from(ms) / 1e3)
    }

    fn device(&self) -> String {
        self.device.clone()
    }
}

/// The identity a CUDA device's winners are cached under: its name and architecture, as in
/// `NVIDIA H100 80GB HBM3 (sm_90)`.
pub fn device_id(context: &CudaContext) -> Result<String> {
    let name = context.name().map_err(driver("reading the device name"))?;
    let (major, minor) = context
        .compute_capability()
        .map_err(driver("reading the compute capability"))?;
    Ok(format!("{} (sm_{major}{minor})", name.trim()))
}

/// The largest block `function` can be launched with (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`):
/// at most the device's limit, less when the kernel's registers or `__launch_bounds__` say so.
///
/// Pass it to [`AutotunerBuilder::clamp_block_sizes`](super::AutotunerBuilder::clamp_block_sizes).
pub fn max_threads_per_block(function: &CudaFunction) -> Result<u32> {
    let max = function
        .get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        .map_err(driver("reading the kernel's maximum threads per block"))?;
    u32::try_from(max).ok().filter(|&m| m > 0).ok_or_else(|| {
        Error::Device(format!(
            "the driver reported {max} maximum threads per block"
        ))
    })
}

fn boxed(what: &str, e: DriverError) -> BoxError {
    format!("{what}: {}", describe(e)).into()
}

fn driver(what: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| Error::Device(format!("{what}: {}", describe(e)))
}
