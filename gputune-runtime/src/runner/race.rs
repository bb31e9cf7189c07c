//! `--race` and `--decide`: the fastest median of each state so far, over the variants run.

use std::collections::HashMap;

use crate::measure::Race;
use crate::output::StateReport;
use crate::state::Outcome;

/// The best median GPU time of each state (by bench index and state name) over the
/// variants run so far, and the race a later variant of that state runs against.
pub(super) struct RaceBook {
    rule: Rule,
    /// The best state so far: its median and the lower and upper confidence bounds of its
    /// median.
    fastest: HashMap<(usize, String), (f64, f64, f64)>,
}

/// How states race, from the flags.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// Every state runs to its stopping criterion.
    Off,
    /// `--race FRACTION`.
    Margin(f64),
    /// `--decide Z`, with `--tie-margin` (0: none).
    Confidence(f64, f64),
}

impl RaceBook {
    /// The book for `--race margin` or `--decide z` (at most one is given), with `--tie-margin`.
    pub(super) fn new(margin: Option<f64>, confidence: Option<f64>, tie: Option<f64>) -> RaceBook {
        let rule = match (confidence, margin) {
            (Some(z), _) => Rule::Confidence(z, tie.unwrap_or(0.0)),
            (None, Some(m)) => Rule::Margin(m),
            (None, None) => Rule::Off,
        };
        RaceBook {
            rule,
            fastest: HashMap::new(),
        }
    }

    /// What state `name` of bench `bench` races against: nothing without `--race` or
    /// `--decide`, or before any variant has set a best for it.
    pub(super) fn against(&self, bench: usize, name: &str) -> Option<Race> {
        let (best, lower, upper) = *self.fastest.get(&(bench, name.to_string()))?;
        match self.rule {
            Rule::Off => None,
            Rule::Margin(margin) => Some(Race {
                best,
                margin,
                confidence: None,
                below: 0.0,
                tie: 0.0,
            }),
            Rule::Confidence(z, tie) => Some(Race {
                best,
                margin: (upper / best - 1.0).max(0.0),
                confidence: Some(z),
                below: (1.0 - lower / best).clamp(0.0, 1.0),
                tie,
            }),
        }
    }

    /// Keeps the state as its best if it is a contender with a lower median.
    pub(super) fn record(&mut self, bench: usize, state: &StateReport) {
        // Without a race nothing reads the book; with a margin only the median is needed.
        let z = match self.rule {
            Rule::Off => return,
            Rule::Margin(_) => None,
            Rule::Confidence(z, _) => Some(z),
        };
        if let Some(found) = contender(&state.outcome, z) {
            let best = self
                .fastest
                .entry((bench, state.name.clone()))
                .or_insert(found);
            if found.0 < best.0 {
                *best = found;
            }
        }
    }
}

/// The median GPU time a state sets as the best to race against, and the lower and upper
/// bounds of its confidence interval at `z` (the median itself without one): only a complete,
/// verified, successful measurement counts (one that timed out, lost a race or stopped as a
/// tie is not a best: the leader is measured in full).
fn contender(outcome: &Outcome, z: Option<f64>) -> Option<(f64, f64, f64)> {
    let cold = outcome.cold.as_ref()?;
    let failed = outcome.error.is_some() || outcome.skipped.is_some();
    let unverified = outcome
        .verification
        .as_ref()
        .is_some_and(|v| v.failure().is_some());
    if failed || unverified || cold.timed_out || cold.raced.is_some() || cold.tied.is_some() {
        return None;
    }
    let median = crate::stats::Summary::of(&cold.gpu_times)?.median;
    let Some(z) = z else {
        return Some((median, median, median));
    };
    let mut sorted = cold.gpu_times.clone();
    sorted.sort_by(f64::total_cmp);
    let (lower, upper) = crate::stats::median_interval(&sorted, z);
    Some((median, lower.min(median), upper.max(median)))
}
