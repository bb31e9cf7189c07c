//! Where a bench process's wall time goes: the `process` event of the protocol
//! ([`gputune_protocol::Timeline`]). What stands between a search and its samples (opening the
//! device, setup, reference outputs, waiting for NVRTC) is measured where it happens and summed
//! here. The sums are process-wide, as what they time is: the kernel cache and the setups kept
//! across states belong to the process, not to a state.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use gputune_protocol::Timeline;

/// A part of the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// Opening the devices.
    DeviceOpen = 0,
    /// `State::with_setup`'s setup closures.
    Setup = 1,
    /// Base's runs for verification's reference outputs.
    Reference = 2,
    /// Blocked on kernel compilation.
    CompileWait = 3,
    /// The measurement loops.
    Measure = 4,
}

static PARTS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];
/// Nanoseconds of the kept cold samples' device times.
static KERNELS: AtomicU64 = AtomicU64::new(0);
static START: OnceLock<Instant> = OnceLock::new();
static FIRST_SAMPLE: OnceLock<Duration> = OnceLock::new();

/// Marks the process's start (the first call wins).
pub(crate) fn start() {
    START.get_or_init(Instant::now);
}

/// Runs `f`, adding its wall time to `part`.
pub(crate) fn timed<T>(part: Part, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    let nanos = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
    PARTS[part as usize].fetch_add(nanos, Ordering::Relaxed);
    out
}

/// Adds a kept cold sample's device time (seconds): what the measuring time is compared with.
pub(crate) fn kernel_ran(seconds: f64) {
    if seconds.is_finite() && seconds > 0.0 {
        KERNELS.fetch_add((seconds * 1e9) as u64, Ordering::Relaxed);
    }
}

/// Notes that a cold sample was taken: the first one sets the time to first sample.
pub(crate) fn sample_taken() {
    if let Some(start) = START.get() {
        FIRST_SAMPLE.get_or_init(|| start.elapsed());
    }
}

/// The timeline so far.
pub(crate) fn snapshot() -> Timeline {
    let part = |p: Part| PARTS[p as usize].load(Ordering::Relaxed) as f64 * 1e-9;
    Timeline {
        first_sample: FIRST_SAMPLE.get().map(Duration::as_secs_f64),
        device_open: part(Part::DeviceOpen),
        setup: part(Part::Setup),
        reference: part(Part::Reference),
        compile_wait: part(Part::CompileWait),
        measure: part(Part::Measure),
        kernels: KERNELS.load(Ordering::Relaxed) as f64 * 1e-9,
        total: START.get().map_or(0.0, |s| s.elapsed().as_secs_f64()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_add_up_and_the_first_sample_is_kept() {
        start();
        let before = snapshot();
        timed(Part::Setup, || {
            std::thread::sleep(Duration::from_millis(20))
        });
        sample_taken();
        let first = snapshot().first_sample.expect("a first sample");
        sample_taken();
        let after = snapshot();
        assert!(after.setup - before.setup >= 0.019, "{after:?}");
        assert_eq!(after.first_sample, Some(first), "the first one stays");
        assert!(after.total >= first);
    }
}
