//! What a search did: builds, bench processes, stored rows, and where the processes' time
//! went (their `process` events, summed), for `--json`, the closing lines and the tests.

use std::time::{Duration, Instant};

use anyhow::Result;
use gputune_protocol::Timeline;

use crate::measure::protocol::Session;

/// What a search did, for `--json` and the tests.
#[derive(Debug, Default)]
pub struct Counters {
    /// Builds that compiled variants (the production build of base is not counted when it
    /// was reused from an earlier search).
    pub builds: usize,
    /// Bench processes that measured something.
    pub runs: usize,
    /// Rows written to the store.
    pub stored: usize,
    /// Where the bench processes' time went, summed over those that said (`first_sample`:
    /// the earliest process's own).
    pub timeline: Timeline,
    /// When the first cold sample of the search was taken, as far as the processes said.
    pub first_sample_at: Option<Instant>,
    /// Wall time of the processes that sent a timeline, spawn to exit, summed: what exceeds
    /// `timeline.total` is spent outside the bench's own clock (exec and loading before its
    /// `main`, tearing the CUDA context down after its last event).
    pub process_wall: f64,
}

/// What [`crate::measure::runs::Plan::run`] ran: how many processes, and where their time went.
#[derive(Debug, Default)]
pub(crate) struct Ran {
    pub(crate) processes: usize,
    /// Each process's start, wall time (spawn to exit) and timeline, for those that sent one.
    pub(crate) timelines: Vec<(Instant, f64, Timeline)>,
    /// The last process, waiting for another pass ([`crate::measure::runs::RunRequest::keep`]).
    pub(crate) kept: Option<Session>,
}

impl Ran {
    /// Ends `session` (a process waiting for a pass that will not come) and keeps its
    /// timeline; its results were taken when its passes ended.
    pub(crate) fn ended(&mut self, session: Session, limit: Option<Duration>) -> Result<()> {
        let started = session.started();
        let (outcome, timeline) = session.close(limit)?;
        if let Some(t) = timeline {
            self.timelines.push((started, outcome.seconds, t));
        }
        Ok(())
    }
}

impl Counters {
    /// Adds what one call of [`crate::measure::runs::Plan::run`] ran (its kept process excepted,
    /// which is the caller's to keep or end).
    pub(crate) fn ran(&mut self, ran: Ran) {
        self.runs += ran.processes;
        for (started, wall, t) in ran.timelines {
            self.process_wall += wall;
            let sum = &mut self.timeline;
            sum.device_open += t.device_open;
            sum.setup += t.setup;
            sum.reference += t.reference;
            sum.compile_wait += t.compile_wait;
            sum.measure += t.measure;
            sum.kernels += t.kernels;
            sum.total += t.total;
            if let Some(first) = t.first_sample {
                let at = started + Duration::from_secs_f64(first);
                if self.first_sample_at.map_or(true, |a| at < a) {
                    self.first_sample_at = Some(at);
                }
            }
        }
    }

    /// Where the search's time went, in one line (issue 15's critical path): when its first cold
    /// sample was taken, and what its bench processes spent opening the device, setting up,
    /// computing reference outputs and waiting for kernels to compile, against measuring. `None`
    /// when no process said (benches of an older protocol).
    pub fn critical_path(&self, started: Instant) -> Option<String> {
        let counters = self;
        let t = &counters.timeline;
        if t.total <= 0.0 {
            return None;
        }
        let first = counters.first_sample_at.map_or("none".to_string(), |at| {
            format!(
                "{:.2} s",
                at.saturating_duration_since(started).as_secs_f64()
            )
        });
        let outside = (counters.process_wall - t.total).max(0.0);
        // The floor of measuring is the time the samples' kernels ran: the ratio says what each
        // sample cost beyond it (flushes, synchronisation, verification, the control).
        let floor = if t.kernels > 0.0 {
            format!(
                " (the kernels ran {:.2} s of it: overhead ratio {:.2})",
                t.kernels,
                t.measure / t.kernels
            )
        } else {
            String::new()
        };
        Some(format!(
            "Time to the first sample {first}; in {} bench process(es) of {:.2} s in all: \
         device open {:.2} s, setup {:.2} s, reference outputs {:.2} s, compile waits {:.2} s, \
         measuring {:.2} s{floor}; {outside:.2} s more before their clocks started or after \
         they stopped (exec, loading, teardown)",
            counters.runs, t.total, t.device_open, t.setup, t.reference, t.compile_wait, t.measure
        ))
    }
}
