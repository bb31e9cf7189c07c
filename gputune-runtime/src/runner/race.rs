//! `--race`: the fastest median of each state so far, over the variants run.

use std::collections::HashMap;

use crate::measure::Race;
use crate::output::StateReport;
use crate::state::Outcome;

/// The best median GPU time of each state (by bench index and state name) over the
/// variants run so far, and the race a later variant of that state runs against.
pub(super) struct RaceBook {
    /// `--race`'s margin; `None` runs every state to its stopping criterion.
    margin: Option<f64>,
    fastest: HashMap<(usize, String), f64>,
}

impl RaceBook {
    pub(super) fn new(margin: Option<f64>) -> RaceBook {
        RaceBook {
            margin,
            fastest: HashMap::new(),
        }
    }

    /// What state `name` of bench `bench` races against: nothing without `--race`, or
    /// before any variant has set a best for it.
    pub(super) fn against(&self, bench: usize, name: &str) -> Option<Race> {
        let margin = self.margin?;
        let best = *self.fastest.get(&(bench, name.to_string()))?;
        Some(Race { best, margin })
    }

    /// Keeps the state's median as its best if it is a contender and faster.
    pub(super) fn record(&mut self, bench: usize, state: &StateReport) {
        if let Some(median) = contender(&state.outcome) {
            let best = self
                .fastest
                .entry((bench, state.name.clone()))
                .or_insert(median);
            *best = best.min(median);
        }
    }
}

/// The median GPU time a state sets as the best to race against: only a complete, verified,
/// successful measurement counts (one that timed out or lost a race is not a best).
fn contender(outcome: &Outcome) -> Option<f64> {
    let cold = outcome.cold.as_ref()?;
    let failed = outcome.error.is_some() || outcome.skipped.is_some();
    let unverified = outcome
        .verification
        .as_ref()
        .is_some_and(|v| v.failure().is_some());
    if failed || unverified || cold.timed_out || cold.raced.is_some() {
        return None;
    }
    crate::stats::Summary::of(&cold.gpu_times).map(|s| s.median)
}
