//! The progress lines on stderr: one as a state starts, one as it ends.

use crate::output::{self, StateReport};

/// Counts the states started against the run's total.
pub(super) struct Progress {
    done: usize,
    total: usize,
}

impl Progress {
    pub(super) fn new(total: usize) -> Progress {
        Progress { done: 0, total }
    }

    /// `Run:  [3/12] bench [Device=0 N=2]`.
    pub(super) fn start(&mut self, bench: &str, state: &str) {
        self.done += 1;
        eprintln!("Run:  [{}/{}] {bench} [{state}]", self.done, self.total);
    }

    /// `Pass: …`, `Fail: …` or `Skip: …`.
    pub(super) fn finish(&self, state: &StateReport) {
        eprintln!("{}", outcome_line(state));
    }
}

fn outcome_line(s: &StateReport) -> String {
    let o = &s.outcome;
    if let Some(r) = &o.skipped {
        return format!("Skip: {r}");
    }
    if let Some(e) = &o.error {
        return format!("Fail: {e}");
    }
    match &o.cold {
        Some(c) => {
            let g = crate::stats::Summary::of(&c.gpu_times);
            let mut line = format!(
                "Pass: Cold: {} GPU, {} samples, {:.2}% noise{}",
                g.map_or("n/a".into(), |g| output::format_duration(g.mean)),
                c.gpu_times.len(),
                g.map_or(f64::NAN, |g| g.stdev_relative * 100.0),
                match (c.timed_out, c.raced, c.tied) {
                    (true, _, _) => ", timed out".to_string(),
                    (false, Some(r), _) => format!(
                        ", raced: more than {:.0}% slower than the best so far ({})",
                        r.margin * 100.0,
                        output::format_duration(r.best)
                    ),
                    (false, None, Some(r)) => format!(
                        ", tied: within {}% of the best so far ({})",
                        r.tie * 100.0,
                        output::format_duration(r.best)
                    ),
                    (false, None, None) => String::new(),
                }
            );
            if let Some(h) = &o.hot {
                line.push_str(&format!(
                    " | Batch: {} GPU, {} executions",
                    output::format_duration(h.mean()),
                    h.executions
                ));
            }
            line
        }
        None => "Fail: nothing measured".into(),
    }
}
