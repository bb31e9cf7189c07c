//! The timing loops: cold (one execution per sample, caches flushed) and hot (batches of
//! back-to-back executions). They drive any [`Backend`] and any [`StoppingCriterion`].
//!
//! Defaults are nvbench's and documented on [`ColdSettings`] and [`HotSettings`].

use std::time::Instant;

use serde::Serialize;

use crate::backend::{Backend, Launches};
use crate::criterion::StoppingCriterion;
use crate::error::Result;

pub mod energy;

/// Settings of the cold loop that surround every criterion.
#[derive(Debug, Clone, PartialEq)]
pub struct ColdSettings {
    /// No criterion may stop before this many samples. Default 10.
    pub min_samples: u64,
    /// Wall-clock limit of the loop in seconds; a state that hits it is marked timed out.
    /// Default 15.
    pub timeout: f64,
    /// Samples whose SM clock is below this fraction of the default clock are discarded as
    /// throttled. Default 0.75.
    pub throttle_threshold: f64,
    /// Stop early once the state is clearly slower than a known best (`--race`). Default off.
    pub race: Option<Race>,
    /// Run one unrecorded execution first. Default on; off under `--profile`, so that a
    /// profiler sees each kernel of a state exactly once per sample.
    pub warm_up: bool,
}

impl Default for ColdSettings {
    fn default() -> Self {
        ColdSettings {
            min_samples: 10,
            timeout: 15.0,
            throttle_threshold: 0.75,
            race: None,
            warm_up: true,
        }
    }
}

/// Racing, as tuners race candidates: a variant whose samples are clearly slower than the
/// fastest variant measured so far for the same state stops before its criterion does. A
/// search only needs to rank such a variant below the winner, not to know its time to the
/// last digit, and slow variants are where a search spends most of its samples.
///
/// The loop checks after [`Race::FIRST_CHECK`] samples and again each time the count doubles;
/// it stops when the first quartile of the samples so far is above `best · (1 + margin)`,
/// that is, when three quarters of them are more than `margin` slower than the best's
/// median. Noise alone does not do that: for a variant as fast as the best, the first
/// quartile sits below the best's median.
///
/// Under `--decide Z` ([`Race::confidence`]) there is no fixed margin: the loop checks from
/// [`Race::FIRST_DECISION`] samples on, each time the count grows by √2
/// ([`Race::is_decision_point`]), and stops when even the lower confidence bound of the
/// state's median (`Z` standard errors, [`crate::stats::median_interval`]) is above the upper
/// bound of the best's, which `margin` then carries: the state can no longer be the winner,
/// nor tie it within the noise of both. What remains in the race is measured in full.
///
/// Under `--decide` a state also gets an early look, after [`Race::EARLY_CHECK`] samples: a
/// screening need not take ten samples of a variant that three already place far behind.
/// Three samples give no confidence interval worth the name (their minimum is below the median
/// only seven times in eight), so the early look asks for more: even the fastest of the three
/// must be slower than the best's upper bound by more than their own spread (their noise),
/// and by [`Race::TIE_THRESHOLD`] besides (drift within a process). A race may stop a state
/// before `--min-samples`; the stopping criterion may not.
///
/// Under `--decide` with an equivalence margin ([`Race::tie`], `--tie-margin`), a state also
/// stops once its difference from the best is resolved to lie *within* the margin: at a
/// decision point, with `--min-samples` in, the ratio of the two medians' confidence bounds
/// (`Z` standard errors each) lies within `1 ± tie` on both sides ([`Race::tied`]). A finalist
/// that ties the leader then stops where it would otherwise run to its criterion (seconds, for
/// a noisy kernel the criterion never calls converged), and the ranking of the two is known to
/// within the margin. One that is resolved to be faster than the best is not stopped: it is the
/// new best, which later variants race against, and is measured in full.
/// [`Race::lost`] is the difference resolved beyond the best's bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Race {
    /// Median GPU time of the fastest variant so far for this state, seconds.
    pub best: f64,
    /// How much slower than `best` is clearly slower (`0.05` is 5 %): the `--race` fraction,
    /// or under `--decide` the best's upper confidence bound relative to its median.
    pub margin: f64,
    /// `--decide Z`: compare confidence bounds of the two medians, `Z` standard errors wide,
    /// instead of the state's first quartile with a fixed margin.
    pub confidence: Option<f64>,
    /// Under `--decide`, how far below `best` the best's lower confidence bound lies
    /// (relative, as `margin` is above it): the best's interval is
    /// `best·(1 − below) ..= best·(1 + margin)`.
    pub below: f64,
    /// The equivalence margin (`--tie-margin`, a fraction: 0.01 is 1 %): stop as tied once the
    /// state's median is resolved to lie within it of `best` ([`Race::tied`]). 0: never.
    pub tie: f64,
}

impl Race {
    /// Samples before the first check (`--race`).
    pub const FIRST_CHECK: usize = 20;
    /// Samples before the first check under `--decide`: a screening of a few samples.
    pub const FIRST_DECISION: usize = 10;
    /// Samples at `--decide`'s early look, before [`Race::FIRST_DECISION`].
    pub const EARLY_CHECK: usize = 3;
    /// A shift no early look reads as "behind": the drift of a warming GPU within one process
    /// reaches a few tenths of a per cent (the same 0.5 % under which `cargo gputune` calls
    /// two medians a tie).
    pub const TIE_THRESHOLD: f64 = 0.005;

    /// Whether `samples` (the kept GPU times so far) lose the race at this count.
    pub fn lost(&self, samples: &[f64]) -> bool {
        let n = samples.len();
        if self.confidence.is_some() && n == Race::EARLY_CHECK {
            return self.far_behind(samples);
        }
        let checkpoint = match self.confidence {
            Some(_) => Race::is_decision_point(n),
            None => n % Race::FIRST_CHECK == 0 && (n / Race::FIRST_CHECK).is_power_of_two(),
        };
        if !checkpoint {
            return false;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let fast_end = match self.confidence {
            Some(z) => crate::stats::median_interval(&sorted, z).0,
            None => crate::stats::quantile_sorted(&sorted, 0.25),
        };
        fast_end > self.best * (1.0 + self.margin)
    }

    /// Whether `--decide` checks at `n` samples: [`Race::FIRST_DECISION`] · √2^k, rounded
    /// (10, 14, 20, 28, 40, 57, 80, 113, 160, 226, 320, …). Looks twice as dense as doubling
    /// stop a loser at most 41 % past the count that separates it rather than 100 %: in a
    /// search's finals, where near misses are raced to a few hundred samples, that overshoot
    /// was a quarter of their samples (the sum on an H200, 2026-11-27). The extra looks cost a
    /// sort each, and each still asks both intervals to part at `Z` standard errors.
    pub fn is_decision_point(n: usize) -> bool {
        let first = Race::FIRST_DECISION as f64;
        if (n as f64) < first {
            return false;
        }
        // The k whose point is nearest n; n is a point when that point rounds to it.
        let k = (2.0 * (n as f64 / first).log2()).round();
        (first * k.exp2().sqrt()).round() as usize == n
    }

    /// Whether `samples` (the kept GPU times so far) tie the best at this count: under
    /// `--decide Z` with a margin, at a decision point, the state's median interval against
    /// the best's puts their ratio within `1 ± tie`: `lower / best_upper ≥ 1 − tie` and
    /// `upper / best_lower ≤ 1 + tie`.
    pub fn tied(&self, samples: &[f64]) -> bool {
        let Some(z) = self.confidence else {
            return false;
        };
        if !(self.tie > 0.0 && self.best > 0.0 && Race::is_decision_point(samples.len())) {
            return false;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let (lower, upper) = crate::stats::median_interval(&sorted, z);
        let best_lower = self.best * (1.0 - self.below);
        let best_upper = self.best * (1.0 + self.margin);
        best_lower > 0.0
            && lower >= best_upper * (1.0 - self.tie)
            && upper <= best_lower * (1.0 + self.tie)
    }

    /// The early look: the fastest sample is behind the best's upper bound by more than the
    /// samples' own spread and [`Race::TIE_THRESHOLD`].
    fn far_behind(&self, samples: &[f64]) -> bool {
        let fastest = samples.iter().copied().fold(f64::INFINITY, f64::min);
        let slowest = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !(fastest > 0.0 && slowest.is_finite()) {
            return false;
        }
        let spread = (slowest - fastest) / fastest;
        fastest > self.best * (1.0 + self.margin) * (1.0 + Race::TIE_THRESHOLD) * (1.0 + spread)
    }
}

/// What the cold loop measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColdMeasurement {
    /// Device time of each kept sample, seconds.
    pub gpu_times: Vec<f64>,
    /// Host wall time of each kept sample, seconds.
    pub cpu_times: Vec<f64>,
    /// SM clock of each kept sample in Hz, where the backend reads it.
    pub sm_clock_rates: Vec<f64>,
    /// Samples discarded because the SM clock was throttled.
    pub throttled_samples: u64,
    /// Whether the wall-clock timeout ended the loop rather than the criterion.
    pub timed_out: bool,
    /// The race this state lost, if it did ([`ColdSettings::race`]): it stopped early, clearly
    /// slower than that best.
    pub raced: Option<Race>,
    /// The race whose best this state tied ([`Race::tied`]): it stopped once its difference
    /// from that best was resolved to lie within the equivalence margin.
    pub tied: Option<Race>,
    /// Wall time of the whole loop, warm-up included, seconds.
    pub wall_time: f64,
}

/// Runs `launches` once cold as a warm-up (module loading, first-touch allocation and
/// instruction caches stay out of the numbers), then samples until `criterion` is satisfied
/// and `min_samples` are in, or until the timeout.
pub fn measure_cold(
    backend: &mut dyn Backend,
    launches: &mut Launches<'_>,
    criterion: &mut dyn StoppingCriterion,
    settings: &ColdSettings,
) -> Result<ColdMeasurement> {
    let start = Instant::now();
    crate::timeline::timed(crate::timeline::Part::Measure, || {
        measure_cold_with_clock(backend, launches, criterion, settings, &|| {
            start.elapsed().as_secs_f64()
        })
    })
}

/// [`measure_cold`] with an explicit wall clock (seconds since the start), so that the
/// timeout can be tested deterministically.
pub fn measure_cold_with_clock(
    backend: &mut dyn Backend,
    launches: &mut Launches<'_>,
    criterion: &mut dyn StoppingCriterion,
    settings: &ColdSettings,
    clock: &dyn Fn() -> f64,
) -> Result<ColdMeasurement> {
    let throttle_floor = backend
        .device()
        .sm_default_clock_rate
        .map(|hz| hz * settings.throttle_threshold);
    backend.begin_cold_run();
    if settings.warm_up {
        backend.cold_sample(launches)?;
    }

    criterion.initialize();
    let mut m = ColdMeasurement {
        gpu_times: Vec::new(),
        cpu_times: Vec::new(),
        sm_clock_rates: Vec::new(),
        throttled_samples: 0,
        timed_out: false,
        raced: None,
        tied: None,
        wall_time: 0.0,
    };
    loop {
        let sample = backend.cold_sample(launches)?;
        let throttled =
            matches!((sample.sm_clock_rate, throttle_floor), (Some(c), Some(f)) if c < f);
        if throttled {
            m.throttled_samples += 1;
        } else {
            crate::timeline::sample_taken();
            m.gpu_times.push(sample.gpu_time);
            crate::timeline::kernel_ran(sample.gpu_time);
            m.cpu_times.push(sample.cpu_time);
            if let Some(c) = sample.sm_clock_rate {
                m.sm_clock_rates.push(c);
            }
            criterion.add_measurement(sample.gpu_time);
            if m.gpu_times.len() as u64 >= settings.min_samples && criterion.is_finished() {
                break;
            }
            if let Some(race) = settings.race.filter(|r| r.lost(&m.gpu_times)) {
                m.raced = Some(race);
                break;
            }
            // A tie is a measurement of its own, so it takes the floor of samples a
            // criterion would; a race's loss need not.
            let floor = m.gpu_times.len() as u64 >= settings.min_samples;
            if let Some(race) = settings.race.filter(|r| floor && r.tied(&m.gpu_times)) {
                m.tied = Some(race);
                break;
            }
        }
        if clock() > settings.timeout {
            m.timed_out = true;
            break;
        }
    }
    m.wall_time = clock();
    Ok(m)
}

/// Settings of the hot (batch) loop.
#[derive(Debug, Clone, PartialEq)]
pub struct HotSettings {
    /// Keep launching batches until their total device time reaches this many seconds.
    /// Default 0.5.
    pub batch_target_time: f64,
    /// Each batch aims at this fraction of the target time, so the target is reached in
    /// about ten batches and a per-batch spread exists. Default 0.1.
    pub batch_fraction: f64,
    /// At least this many batches. Default 3.
    pub min_batches: u64,
    /// Wall-clock limit in seconds. Default 15.
    pub timeout: f64,
}

impl Default for HotSettings {
    fn default() -> Self {
        HotSettings {
            batch_target_time: 0.5,
            batch_fraction: 0.1,
            min_batches: 3,
            timeout: 15.0,
        }
    }
}

/// What the hot loop measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HotMeasurement {
    /// Executions per batch.
    pub batch_size: u64,
    /// Mean device time of one execution in each batch, seconds.
    pub batch_means: Vec<f64>,
    /// All executions timed.
    pub executions: u64,
    /// Total device time of all batches, seconds.
    pub total_time: f64,
    /// Whether the wall-clock timeout ended the loop.
    pub timed_out: bool,
}

impl HotMeasurement {
    /// Mean device time of one execution over all batches, seconds.
    pub fn mean(&self) -> f64 {
        self.total_time / self.executions as f64
    }
}

/// Runs batches of back-to-back executions without flushing. `estimate` (seconds per
/// execution, usually the cold mean) sizes the batches.
pub fn measure_hot(
    backend: &mut dyn Backend,
    launches: &mut Launches<'_>,
    estimate: f64,
    settings: &HotSettings,
) -> Result<HotMeasurement> {
    let start = Instant::now();
    let per_batch = settings.batch_target_time * settings.batch_fraction;
    let batch_size = if estimate > 0.0 && estimate.is_finite() {
        ((per_batch / estimate).ceil() as u64).clamp(1, 1 << 20)
    } else {
        1
    };
    let mut m = HotMeasurement {
        batch_size,
        batch_means: Vec::new(),
        executions: 0,
        total_time: 0.0,
        timed_out: false,
    };
    while m.total_time < settings.batch_target_time
        || (m.batch_means.len() as u64) < settings.min_batches
    {
        let t = backend.hot_batch(launches, batch_size)?;
        m.total_time += t;
        m.executions += batch_size;
        m.batch_means.push(t / batch_size as f64);
        if start.elapsed().as_secs_f64() > settings.timeout {
            m.timed_out = true;
            break;
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests;
