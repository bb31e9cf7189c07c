//! Stopping criteria: when has a state been sampled enough?
//!
//! A criterion sees each cold GPU time (in seconds) as it is measured and says when to stop.
//! The measurement loop wraps every criterion in the same outer rules — at least
//! `min-samples` samples, at most `timeout` seconds of wall time — so a criterion only
//! decides whether its own statistic has settled. The built-in criteria follow nvbench's
//! current sources (`nvbench/detail/stdrel_criterion.cxx` and `entropy_criterion.cxx`) rule
//! for rule, nvbench's own criterion tests included; their defaults are nvbench's and listed
//! on [`CriterionParams`]. Where arithmetic differs (exact centred sums, exact H for one
//! value), the stop does not: a generated-stream test holds both criteria to a plain
//! re-implementation of nvbench's rules.
//!
//! Custom criteria implement [`StoppingCriterion`] and are registered by name on
//! [`Criteria`]; the bench CLI's `--stopping-criterion NAME` then selects them:
//!
//! ```
//! use gputune_runtime::criterion::{Criteria, CriterionParams, StoppingCriterion};
//!
//! /// Stops once the total measured time reaches a budget.
//! struct TimeBudget { budget: f64, total: f64 }
//!
//! impl StoppingCriterion for TimeBudget {
//!     fn name(&self) -> &str { "time-budget" }
//!     fn params(&self) -> Vec<(String, f64)> { vec![("budget".into(), self.budget)] }
//!     fn initialize(&mut self) { self.total = 0.0; }
//!     fn add_measurement(&mut self, seconds: f64) { self.total += seconds; }
//!     fn is_finished(&self) -> bool { self.total >= self.budget }
//! }
//!
//! let mut criteria = Criteria::builtin();
//! criteria.register("time-budget", |p: &CriterionParams| {
//!     Box::new(TimeBudget { budget: p.extra.get("budget").copied().unwrap_or(0.1), total: 0.0 })
//! });
//! let mut c = criteria.create("time-budget", &CriterionParams::default()).expect("registered");
//! c.initialize();
//! c.add_measurement(0.2);
//! assert!(c.is_finished());
//! ```

mod either;
mod entropy;
#[cfg(test)]
mod nvbench_tests;
#[cfg(test)]
mod reference_tests;
mod sample_count;
mod stdrel;

pub use either::EntropyOrStdrel;
pub use entropy::Entropy;
pub use sample_count::SampleCount;
pub use stdrel::Stdrel;

use std::collections::BTreeMap;

/// Decides when a state has enough samples.
pub trait StoppingCriterion {
    /// The name `--stopping-criterion` selects it by.
    fn name(&self) -> &str;
    /// Its parameters and their values, for the JSON output.
    fn params(&self) -> Vec<(String, f64)>;
    /// Forgets everything seen; called before the first sample of each state.
    fn initialize(&mut self);
    /// Takes one cold GPU time in seconds.
    fn add_measurement(&mut self, seconds: f64);
    /// Whether enough has been seen. The loop asks only once `min-samples` are in.
    fn is_finished(&self) -> bool;
}

/// Parameters of the built-in criteria, with nvbench's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct CriterionParams {
    /// stdrel: stop once the relative standard deviation is below this fraction
    /// (`--max-noise` takes percent). Default 0.005 (0.5 %).
    pub max_noise: f64,
    /// stdrel: keep sampling while the total GPU time (mean × n) is at most this many
    /// seconds; 64 invalid noise estimates in a row stop stdrel even so. Default 0.5 s.
    pub min_time: f64,
    /// entropy: largest angle, in degrees, of the entropy trend line. Default 0.048.
    pub max_angle: f64,
    /// entropy: smallest coefficient of determination of the trend line. Default 0.36.
    pub min_r2: f64,
    /// sample-count: the number of samples to take. Default 100.
    pub target_samples: u64,
    /// Named values for custom criteria (`--criterion-param NAME=VALUE`).
    pub extra: BTreeMap<String, f64>,
}

impl Default for CriterionParams {
    fn default() -> Self {
        CriterionParams {
            max_noise: 0.005,
            min_time: 0.5,
            max_angle: 0.048,
            min_r2: 0.36,
            target_samples: 100,
            extra: BTreeMap::new(),
        }
    }
}

/// Builds a criterion from the parameters of a run.
pub type CriterionFactory = Box<dyn Fn(&CriterionParams) -> Box<dyn StoppingCriterion>>;

/// The criteria a bench binary knows, by name.
pub struct Criteria {
    factories: Vec<(String, CriterionFactory)>,
}

impl Criteria {
    /// `stdrel`, `entropy`, `sample-count` and `entropy-or-stdrel` (a search's default).
    pub fn builtin() -> Criteria {
        let mut c = Criteria {
            factories: Vec::new(),
        };
        c.register("stdrel", |p| Box::new(Stdrel::new(p.max_noise, p.min_time)));
        c.register("entropy", |p| Box::new(Entropy::new(p.max_angle, p.min_r2)));
        c.register("sample-count", |p| {
            Box::new(SampleCount::new(p.target_samples))
        });
        c.register(EntropyOrStdrel::NAME, |p| {
            Box::new(EntropyOrStdrel::new(
                Entropy::new(p.max_angle, p.min_r2),
                Stdrel::new(p.max_noise, p.min_time),
            ))
        });
        c
    }

    /// These criteria, leaving none behind.
    pub(crate) fn take(&mut self) -> Criteria {
        Criteria {
            factories: std::mem::take(&mut self.factories),
        }
    }

    /// Adds (or replaces) the criterion called `name`.
    pub fn register(
        &mut self,
        name: &str,
        factory: impl Fn(&CriterionParams) -> Box<dyn StoppingCriterion> + 'static,
    ) {
        self.factories.retain(|(n, _)| n != name);
        self.factories.push((name.to_string(), Box::new(factory)));
    }

    /// The registered names, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.factories.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// A fresh criterion called `name`, or `None` if no such criterion is registered.
    pub fn create(
        &self,
        name: &str,
        params: &CriterionParams,
    ) -> Option<Box<dyn StoppingCriterion>> {
        self.factories
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f(params))
    }
}

impl Default for Criteria {
    fn default() -> Self {
        Criteria::builtin()
    }
}

impl std::fmt::Debug for Criteria {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
