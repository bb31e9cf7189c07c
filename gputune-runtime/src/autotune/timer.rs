//! How one sample of the autotuner is timed.
//!
//! The state machine never reads a clock itself: it calls [`Timer::start`] in `begin` and
//! [`Timer::stop`] in `end`, and only while it is tuning. Idle launches never touch the timer,
//! which is what makes them free on a GPU (no events, no synchronisation).

use std::time::Instant;

use crate::error::BoxError;

/// Times one sample: the work enqueued or run between `start` and `stop`.
pub trait Timer {
    /// Marks the start of a sample.
    fn start(&mut self) -> Result<(), BoxError>;

    /// Marks the end of the sample begun by the last `start` and returns its duration in
    /// seconds. A device timer waits here for the work to finish.
    fn stop(&mut self) -> Result<f64, BoxError>;

    /// Identity of what is timed (`cpu`, a GPU's name and architecture): winners are cached
    /// per device, because a winner on one GPU says nothing about another.
    fn device(&self) -> String;
}

/// Times host code with the monotonic clock.
///
/// Right for CPU work that has finished when `end` is called; asynchronous GPU launches
/// would be timed as the cost of enqueueing them.
#[derive(Debug, Clone, Default)]
pub struct CpuTimer {
    started: Option<Instant>,
}

impl CpuTimer {
    /// A timer that has not started.
    pub fn new() -> CpuTimer {
        CpuTimer::default()
    }
}

impl Timer for CpuTimer {
    fn start(&mut self) -> Result<(), BoxError> {
        self.started = Some(Instant::now());
        Ok(())
    }

    fn stop(&mut self) -> Result<f64, BoxError> {
        let started = self
            .started
            .take()
            .ok_or("CpuTimer::stop without a start")?;
        Ok(started.elapsed().as_secs_f64())
    }

    /// `cpu`: CPU winners are shared by every CPU this cache file sees, which is one machine
    /// for the default per-user location.
    fn device(&self) -> String {
        "cpu".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_timer_needs_a_start_and_reads_a_non_negative_duration() {
        let mut t = CpuTimer::new();
        assert!(t.stop().is_err());
        assert!(t.start().is_ok());
        let s = t.stop().unwrap_or(-1.0);
        assert!(s >= 0.0 && s.is_finite(), "{s}");
        // One reading per start.
        assert!(t.stop().is_err());
        assert_eq!(t.device(), "cpu");
    }
}
