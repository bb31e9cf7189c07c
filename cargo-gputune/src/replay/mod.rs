//! `replay`: a strategy run against the recorded results of a store instead of a GPU
//! (Kernel Tuner's simulation mode), counted as the auto-tuning community counts:
//!
//! - an evaluation is a *unique* configuration: a point proposed again is served from what
//!   was already seen, costing neither an evaluation nor time;
//! - a failed point is an evaluation, and costs what the store recorded for it;
//! - the budget is evaluations (`max_evals`) and/or recorded seconds (`time_limit`: the build
//!   and run seconds of each evaluated point, which for an imported Kernel Tuner cache are its
//!   `compile_time` and `benchmark_time` + `verification_time`, what Kernel Tuner's simulation
//!   mode charges). As there, the limit is checked before each evaluation, so the evaluation
//!   that crosses it still counts;
//! - a store that recorded only part of its space is replayed over the recorded points: a
//!   point it never measured is not a point of the replayed space, never an evaluation
//!   without a score.
//!
//! Each point scores what the store recorded for it against base. Comparing strategies this
//! way costs nothing and repeats exactly.

mod table;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::{bail, Result};
use gputune_grammar::TuneSpec;
use gputune_protocol::Status;

use crate::results::{self, Group};
use crate::strategy::StrategyKind;
use crate::strategy::{self, Params, Settings, Strategy};

pub use table::{quartiles, table, to_json};

/// Consecutive rounds that bring no new point before a replay gives up on the strategy: a
/// strategy that only revisits would otherwise never end.
const STALLED_ROUNDS: usize = 64;

/// One tuned function's recorded search: the points it recorded and what each scored.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// What the tables call it: `package / bench.function [ct] on device`.
    pub title: String,
    /// The points replayed over: those of the space the store recorded, in the space's order
    /// (the measured variants, sorted, without a stored attribute).
    pub space: Vec<String>,
    /// Points of the declared space (after `require`), recorded or not.
    pub declared: usize,
    /// The parameter structure (empty without a stored attribute).
    pub params: Params,
    /// Each recorded point's score against base; `None`: it failed or was not scored.
    pub scores: HashMap<String, Option<f64>>,
    /// Each recorded point's build and run seconds.
    pub seconds: HashMap<String, f64>,
    /// The best recorded score and its label.
    pub best: (f64, String),
}

impl Recorded {
    /// The record of `g`, whose `#[tune]` attribute the store kept as `spec` (if it did);
    /// `None` when no point scored.
    pub fn of(g: &Group, spec: Option<&TuneSpec>) -> Option<Recorded> {
        let base = g.base();
        let mut scores = HashMap::new();
        let mut seconds = HashMap::new();
        for (label, ms) in &g.variants {
            if label == "base" {
                continue;
            }
            // As `report` ranks: a variant with any failed workload has no score.
            let score = if ms.iter().all(|m| m.status == Status::Ok) {
                results::score_of(base, ms).map(|s| s.score)
            } else {
                None
            };
            scores.insert(label.clone(), score);
            // A batch's build time is shared out among its variants and repeated on each
            // runtime workload's row; the runs add up.
            let build = ms
                .iter()
                .filter_map(|m| m.build_seconds)
                .fold(0.0, f64::max);
            let run: f64 = ms.iter().filter_map(|m| m.run_seconds).sum();
            seconds.insert(label.clone(), build + run);
        }
        let (space, declared, params) = match spec {
            Some(spec) => {
                let all: Vec<String> = spec.space().iter().map(|p| p.label()).collect();
                let declared = all.len();
                let recorded = all.into_iter().filter(|l| scores.contains_key(l)).collect();
                (recorded, declared, Params::from_spec(spec))
            }
            None => {
                // Sorted: a map's order differs between runs, and a seed must repeat.
                let mut labels: Vec<String> = scores.keys().cloned().collect();
                labels.sort();
                let n = labels.len();
                (labels, n, Params::default())
            }
        };
        // Only what is replayed over: a stale variant outside the declared space is neither
        // proposable nor the optimum.
        let in_space: HashSet<&String> = space.iter().collect();
        scores.retain(|l, _| in_space.contains(l));
        seconds.retain(|l, _| in_space.contains(l));
        let best = scores
            .iter()
            .filter_map(|(l, s)| Some(((*s)?, l.clone())))
            .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(&a.1)))?;
        Some(Recorded {
            title: crate::results::present::title(g),
            space,
            declared,
            params,
            scores,
            seconds,
            best,
        })
    }

    /// Points of the space that the store holds a result for (the points replayed over).
    pub fn recorded_points(&self) -> usize {
        self.space.len()
    }

    /// Whether the store recorded only part of the declared space.
    pub fn partial(&self) -> bool {
        self.space.len() < self.declared
    }
}

/// Why a replayed search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// `max_evals` unique points were evaluated.
    Evaluations,
    /// The recorded seconds passed `time_limit`.
    Time,
    /// Every point was evaluated.
    Space,
    /// The strategy proposed nothing new (it returned nothing, or only revisits for
    /// `STALLED_ROUNDS` rounds).
    Strategy,
}

impl Ended {
    /// Its name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Ended::Evaluations => "max-evals",
            Ended::Time => "time-limit",
            Ended::Space => "space",
            Ended::Strategy => "strategy",
        }
    }
}

/// One replayed search.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Its seed.
    pub seed: u64,
    /// Unique points evaluated, failures included.
    pub evaluations: usize,
    /// Proposals of a point already evaluated: served again, not counted, not charged.
    pub revisits: usize,
    /// The best score found, and its label.
    pub best: Option<(f64, String)>,
    /// The best found over the best recorded (0 when nothing scored). With scores that are
    /// speedups over one base, this is the optimum's time over the time of the best found:
    /// the community's "fraction of the optimum".
    pub fraction: f64,
    /// The evaluation (from 1) that found the best.
    pub at: usize,
    /// Recorded seconds until that evaluation, included.
    pub seconds_to_best: f64,
    /// Recorded seconds of every evaluation.
    pub seconds: f64,
    /// Each improvement of the best found: the evaluation (from 1) and the best score over the
    /// best recorded from then on. A run of a larger budget is a run of a smaller one continued
    /// (the strategies do not see the budget), so this gives the fraction at every budget.
    pub curve: Vec<(usize, f64)>,
    /// Why it ended.
    pub ended: Ended,
}

/// The limits of a replay, as a search's.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Variants per batch.
    pub batch_size: usize,
    /// Unique variants to evaluate at most.
    pub max_evals: Option<usize>,
    /// Recorded seconds (build + run of each evaluated variant) after which no new variant
    /// is evaluated.
    pub time_limit: Option<f64>,
}

/// Replays `kind` with `seed` on `rec`.
pub fn replay(rec: &Recorded, kind: StrategyKind, seed: u64, limits: Limits) -> Result<Run> {
    replay_settings(rec, kind, seed, limits, Settings::default())
}

/// Replays `kind` with `seed` and the guided strategies' `settings` on `rec`.
pub fn replay_settings(
    rec: &Recorded,
    kind: StrategyKind,
    seed: u64,
    limits: Limits,
    settings: Settings,
) -> Result<Run> {
    let mut strategy = strategy::build_with(
        kind,
        seed,
        limits.max_evals,
        rec.params.clone(),
        rec.space.len(),
        settings,
    );
    replay_with(rec, strategy.as_mut(), seed, limits)
}

/// Replays `strategy` on `rec`; `seed` is only reported. A strategy that proposes a label
/// outside the replayed space, or more points than asked, is an error: replay checks the
/// strategies' contract too.
pub fn replay_with(
    rec: &Recorded,
    strategy: &mut dyn Strategy,
    seed: u64,
    limits: Limits,
) -> Result<Run> {
    let in_space: HashSet<&str> = rec.space.iter().map(String::as_str).collect();
    let limit = limits
        .max_evals
        .unwrap_or(rec.space.len())
        .min(rec.space.len());
    let out_of_time = |seconds: f64| limits.time_limit.is_some_and(|t| seconds > t);
    let mut scored: BTreeMap<String, Option<f64>> = BTreeMap::new();
    let mut run = Run {
        seed,
        evaluations: 0,
        revisits: 0,
        best: None,
        fraction: 0.0,
        at: 0,
        seconds_to_best: 0.0,
        seconds: 0.0,
        curve: Vec::new(),
        ended: Ended::Strategy,
    };
    let mut stalled = 0;
    // As the search's proposer: batches of at most `batch_size`, never past `max_evals`.
    run.ended = loop {
        if run.evaluations >= limit {
            break if limit == rec.space.len() {
                Ended::Space
            } else {
                Ended::Evaluations
            };
        }
        if out_of_time(run.seconds) {
            break Ended::Time;
        }
        let want = limits.batch_size.max(1).min(limit - run.evaluations);
        let batch = strategy.next(&rec.space, &scored, want);
        if batch.is_empty() {
            break Ended::Strategy;
        }
        if batch.len() > want {
            bail!(
                "{} proposed {} points, {want} asked",
                strategy.name(),
                batch.len()
            );
        }
        let before = run.evaluations;
        for label in batch {
            if !in_space.contains(label.as_str()) {
                bail!(
                    "{} proposed `{label}`, not a point of the replayed space{}",
                    strategy.name(),
                    if rec.partial() {
                        " (the points the store recorded)"
                    } else {
                        ""
                    }
                );
            }
            if scored.contains_key(&label) {
                run.revisits += 1;
                continue;
            }
            // Checked before each evaluation, as Kernel Tuner's simulation runner does
            // within a batch: the one that crosses the limit was started, so it counts.
            if out_of_time(run.seconds) {
                break;
            }
            let score = rec.scores.get(&label).copied().flatten();
            run.evaluations += 1;
            run.seconds += rec.seconds.get(&label).copied().unwrap_or(0.0);
            if let Some(s) = score {
                if run.best.as_ref().map_or(true, |(b, _)| s > *b) {
                    run.best = Some((s, label.clone()));
                    run.at = run.evaluations;
                    run.seconds_to_best = run.seconds;
                    run.curve.push((run.evaluations, s / rec.best.0));
                }
            }
            scored.insert(label, score);
        }
        stalled = if run.evaluations == before {
            stalled + 1
        } else {
            0
        };
        if stalled >= STALLED_ROUNDS {
            break Ended::Strategy;
        }
    };
    run.fraction = run.best.as_ref().map_or(0.0, |(b, _)| b / rec.best.0);
    Ok(run)
}

/// The CLI's name of `kind`.
pub fn kind_name(kind: StrategyKind) -> String {
    use clap::ValueEnum;
    kind.to_possible_value()
        .map_or_else(|| format!("{kind:?}"), |v| v.get_name().to_string())
}

/// The replays of one function.
#[derive(Debug, Clone)]
pub struct Replayed {
    /// What was replayed.
    pub record: Recorded,
    /// One run per seed.
    pub runs: Vec<Run>,
}
