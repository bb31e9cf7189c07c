//! `replay`: a strategy run against the recorded results of a store instead of a GPU
//! (Kernel Tuner's simulation mode). Each proposed point scores what the store recorded for
//! it against base; a failed or unrecorded point scores `None`, as a failure does in a
//! search. What a real search would have spent is the recorded build and run time of the
//! points evaluated. Comparing strategies this way costs nothing and repeats exactly.

use std::collections::{BTreeMap, HashMap};

use anyhow::{bail, Result};
use gputune_grammar::TuneSpec;
use gputune_protocol::Status;
use serde_json::{json, Value};

use crate::cli::StrategyKind;
use crate::results::{self, Group};
use crate::strategy::{self, Params};

/// One tuned function's recorded search: its space and what each point scored.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// What the tables call it: `package / bench.function [ct] on device`.
    pub title: String,
    /// The space's labels (from the stored attribute, else the measured variants).
    pub space: Vec<String>,
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
        let (space, params) = match spec {
            Some(spec) => (
                spec.space().iter().map(|p| p.label()).collect(),
                Params::from_spec(spec),
            ),
            None => (scores.keys().cloned().collect(), Params::default()),
        };
        let best = scores
            .iter()
            .filter_map(|(l, s)| Some(((*s)?, l.clone())))
            .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(&a.1)))?;
        Some(Recorded {
            title: format!(
                "{} / {}.{} [{}] on {}",
                g.package,
                g.bench,
                g.function,
                g.ct_workload,
                g.device_name()
            ),
            space,
            params,
            scores,
            seconds,
            best,
        })
    }

    /// Points of the space that the store holds a result for.
    pub fn recorded_points(&self) -> usize {
        self.space
            .iter()
            .filter(|l| self.scores.contains_key(*l))
            .count()
    }
}

/// One replayed search.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Its seed.
    pub seed: u64,
    /// Points evaluated.
    pub evaluations: usize,
    /// The best score found, and its label.
    pub best: Option<(f64, String)>,
    /// The best found over the best recorded (0 when nothing scored).
    pub fraction: f64,
    /// The evaluation (from 1) that found the best.
    pub at: usize,
    /// Recorded seconds until that evaluation, included.
    pub seconds_to_best: f64,
    /// Recorded seconds of every evaluation.
    pub seconds: f64,
}

/// The limits of a replay, as a search's.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Variants per batch.
    pub batch_size: usize,
    /// Variants to evaluate at most.
    pub max_evals: Option<usize>,
}

/// Replays `kind` with `seed` on `rec`. A strategy that proposes a label outside the space
/// or one already evaluated is an error: replay checks the strategies' contract too.
pub fn replay(rec: &Recorded, kind: StrategyKind, seed: u64, limits: Limits) -> Result<Run> {
    let mut strategy = strategy::build(
        kind,
        seed,
        limits.max_evals,
        rec.params.clone(),
        rec.space.len(),
    );
    let in_space: std::collections::HashSet<&str> = rec.space.iter().map(String::as_str).collect();
    let limit = limits
        .max_evals
        .unwrap_or(rec.space.len())
        .min(rec.space.len());
    let mut scored: BTreeMap<String, Option<f64>> = BTreeMap::new();
    let mut run = Run {
        seed,
        evaluations: 0,
        best: None,
        fraction: 0.0,
        at: 0,
        seconds_to_best: 0.0,
        seconds: 0.0,
    };
    // As the search's proposer: batches of at most `batch_size`, never past `max_evals`.
    while run.evaluations < limit {
        let want = limits.batch_size.max(1).min(limit - run.evaluations);
        let batch = strategy.next(&rec.space, &scored, want);
        if batch.is_empty() {
            break;
        }
        if batch.len() > want {
            bail!(
                "{} proposed {} points, {want} asked",
                kind_name(kind),
                batch.len()
            );
        }
        for label in batch {
            if !in_space.contains(label.as_str()) {
                bail!(
                    "{} proposed `{label}`, not a point of the space",
                    kind_name(kind)
                );
            }
            if scored.contains_key(&label) {
                bail!("{} proposed `{label}` again", kind_name(kind));
            }
            let score = rec.scores.get(&label).copied().flatten();
            run.evaluations += 1;
            run.seconds += rec.seconds.get(&label).copied().unwrap_or(0.0);
            if let Some(s) = score {
                if run.best.as_ref().map_or(true, |(b, _)| s > *b) {
                    run.best = Some((s, label.clone()));
                    run.at = run.evaluations;
                    run.seconds_to_best = run.seconds;
                }
            }
            scored.insert(label, score);
        }
    }
    run.fraction = run.best.as_ref().map_or(0.0, |(b, _)| b / rec.best.0);
    Ok(run)
}

fn kind_name(kind: StrategyKind) -> String {
    use clap::ValueEnum;
    kind.to_possible_value()
        .map_or_else(|| format!("{kind:?}"), |v| v.get_name().to_string())
}

/// The first quartile, median and third quartile of `v` (linear interpolation).
pub fn quartiles(v: &[f64]) -> [f64; 3] {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if v.is_empty() {
            return f64::NAN;
        }
        let x = q * (v.len() - 1) as f64;
        let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (x - lo as f64)
    };
    [at(0.25), at(0.5), at(0.75)]
}

/// The replays of one function.
#[derive(Debug, Clone)]
pub struct Replayed {
    /// What was replayed.
    pub record: Recorded,
    /// One run per seed.
    pub runs: Vec<Run>,
}

/// The replays as a table: per function, a line per seed, then quartiles over the seeds.
pub fn table(replayed: &[Replayed], kind: StrategyKind, limits: Limits) -> String {
    let mut s = String::new();
    for r in replayed {
        let rec = &r.record;
        s.push_str(&format!(
            "{}\n  {} strategy, {} point(s), {} recorded, best recorded {:.4} ({}); \
             batch {}, max-evals {}\n",
            rec.title,
            kind_name(kind),
            rec.space.len(),
            rec.recorded_points(),
            rec.best.0,
            rec.best.1,
            limits.batch_size,
            limits
                .max_evals
                .map_or_else(|| "none".to_string(), |m| m.to_string()),
        ));
        s.push_str(&format!(
            "  {:>8}  {:>5}  {:>8}  {:>8}  {:>5}  {:>10}  {:>10}  best\n",
            "seed", "evals", "score", "fraction", "at", "s to best", "s total"
        ));
        for run in &r.runs {
            s.push_str(&format!(
                "  {:>8}  {:>5}  {:>8}  {:>8.4}  {:>5}  {:>10.1}  {:>10.1}  {}\n",
                run.seed,
                run.evaluations,
                run.best
                    .as_ref()
                    .map_or_else(|| "-".to_string(), |(b, _)| format!("{b:.4}")),
                run.fraction,
                run.at,
                run.seconds_to_best,
                run.seconds,
                run.best.as_ref().map_or("-", |(_, l)| l.as_str()),
            ));
        }
        for (name, q) in [("q1", 0), ("median", 1), ("q3", 2)] {
            let of = |f: fn(&Run) -> f64| quartiles(&r.runs.iter().map(f).collect::<Vec<_>>())[q];
            s.push_str(&format!(
                "  {:>8}  {:>5.1}  {:>8}  {:>8.4}  {:>5.1}  {:>10.1}  {:>10.1}\n",
                name,
                of(|r| r.evaluations as f64),
                "",
                of(|r| r.fraction),
                of(|r| r.at as f64),
                of(|r| r.seconds_to_best),
                of(|r| r.seconds),
            ));
        }
        s.push('\n');
    }
    s.push_str(
        "fraction: best score found / best score recorded; at: the evaluation that found it; \
         s: recorded build + run seconds of the evaluated variants\n",
    );
    s
}

/// The replays as JSON.
pub fn to_json(replayed: &[Replayed], kind: StrategyKind, limits: Limits) -> Value {
    let summary = |runs: &[Run], f: fn(&Run) -> f64| {
        let [q1, median, q3] = quartiles(&runs.iter().map(f).collect::<Vec<_>>());
        json!({ "q1": q1, "median": median, "q3": q3 })
    };
    json!({
        "strategy": kind_name(kind),
        "batch_size": limits.batch_size,
        "max_evals": limits.max_evals,
        "functions": replayed.iter().map(|r| json!({
            "title": r.record.title,
            "space": r.record.space.len(),
            "recorded": r.record.recorded_points(),
            "best_recorded": r.record.best.0,
            "best_recorded_variant": r.record.best.1,
            "runs": r.runs.iter().map(|run| json!({
                "seed": run.seed,
                "evaluations": run.evaluations,
                "best": run.best.as_ref().map(|(b, _)| b),
                "best_variant": run.best.as_ref().map(|(_, l)| l),
                "fraction": run.fraction,
                "at": run.at,
                "seconds_to_best": run.seconds_to_best,
                "seconds": run.seconds,
            })).collect::<Vec<_>>(),
            "fraction": summary(&r.runs, |r| r.fraction),
            "at": summary(&r.runs, |r| r.at as f64),
            "seconds_to_best": summary(&r.runs, |r| r.seconds_to_best),
            "seconds": summary(&r.runs, |r| r.seconds),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Measurement, Store};

    const KINDS: [StrategyKind; 5] = [
        StrategyKind::Exhaustive,
        StrategyKind::Random,
        StrategyKind::Genetic,
        StrategyKind::Annealing,
        StrategyKind::Surrogate,
    ];

    fn m(variant: &str, status: Status, center: Option<f64>) -> Measurement {
        Measurement {
            revision: "r".into(),
            device: "d".into(),
            arch: "cpu".into(),
            package: "p".into(),
            bench: "b".into(),
            function: "f".into(),
            ct_workload: "*".into(),
            variant: variant.into(),
            rt_workload: "n".into(),
            rt_weight: 1.0,
            status,
            message: None,
            center,
            noise: None,
            bandwidth: None,
            samples: Vec::new(),
            build_seconds: Some(1.0),
            run_seconds: Some(0.5),
            stop: None,
            control: Vec::new(),
            kernels: Vec::new(),
        }
    }

    /// A space of 36 points, of which one failed, one is missing from the store, and the
    /// rest are faster the nearer they are to a=6, b=2 (speedup 3 there).
    fn synthetic() -> Recorded {
        let spec = gputune_grammar::parse_str(
            "a = 1..=8, b = 1..=5, require(a + b != 9), base(a = 1, b = 1)",
        )
        .expect("valid");
        let mut ms = vec![m("base", Status::Ok, Some(1.0))];
        for p in spec.space().iter().skip(1) {
            let v = |n: &str| p.get(n).and_then(|v| v.as_int()).unwrap_or(0) as f64;
            let d = (v("a") - 6.0).abs() + (v("b") - 2.0).abs();
            let label = p.label();
            ms.push(if label == "a_1.b_2" {
                m(&label, Status::Invalid, None)
            } else {
                m(&label, Status::Ok, Some((1.0 + d) / 3.0))
            });
        }
        let groups = results::groups(ms, true);
        assert_eq!(groups.len(), 1);
        Recorded::of(&groups[0], Some(&spec)).expect("scored")
    }

    #[test]
    fn unbounded_replays_find_the_optimum_and_count_the_recorded_time() {
        let rec = synthetic();
        assert_eq!(rec.best.1, "a_6.b_2");
        assert_eq!(rec.recorded_points(), rec.space.len() - 1);
        let limits = Limits {
            batch_size: 3,
            max_evals: None,
        };
        for kind in KINDS {
            let run = replay(&rec, kind, 3, limits).expect("replays");
            assert_eq!(run.evaluations, rec.space.len(), "{kind:?}");
            assert_eq!(run.fraction, 1.0, "{kind:?}");
            // 1.5 s per recorded point; the missing one costs nothing.
            assert!((run.seconds - 1.5 * (rec.space.len() - 1) as f64).abs() < 1e-9);
            assert!(run.at >= 1 && run.seconds_to_best <= run.seconds);
            assert_eq!(replay(&rec, kind, 3, limits).expect("replays"), run);
        }
    }

    #[test]
    fn guided_strategies_find_a_smooth_optimum_in_part_of_the_space() {
        let rec = synthetic();
        let limits = Limits {
            batch_size: 2,
            max_evals: Some(18),
        };
        let median = |kind| {
            let fractions: Vec<f64> = (0..9)
                .map(|seed| replay(&rec, kind, seed, limits).expect("replays").fraction)
                .collect();
            assert!(fractions.iter().all(|f| *f > 0.0 && *f <= 1.0));
            quartiles(&fractions)[1]
        };
        for kind in [
            StrategyKind::Genetic,
            StrategyKind::Annealing,
            StrategyKind::Surrogate,
        ] {
            assert_eq!(median(kind), 1.0, "{kind:?}");
        }
        // Which a random half of the space does not: the test tells guided from blind.
        assert!(median(StrategyKind::Random) < 1.0);
    }

    #[test]
    fn replays_of_the_recorded_h200_sgemm_search_reach_a_fraction_of_its_best() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../benchmarks/2026-11-23-h200-kernel-api/sgemm/search-1.db");
        let store = Store::open_read_only(&path).expect("the recorded store opens");
        let groups = results::groups(store.measurements().expect("reads"), true);
        let specs = crate::plot::specs(&groups, &store).expect("attributes parse");
        assert_eq!(groups.len(), 1);
        let g = &groups[0];
        let rec =
            Recorded::of(g, specs.get(&(g.package.clone(), g.function.clone()))).expect("scored");
        assert_eq!(rec.space.len(), 64);
        assert!(rec.params.0.len() == 5 && rec.space.iter().all(|l| rec.params.parse(l).is_some()));
        let limits = Limits {
            batch_size: 4,
            max_evals: Some(16),
        };
        for kind in KINDS {
            for seed in 0..3 {
                let run = replay(&rec, kind, seed, limits).expect("replays");
                assert_eq!(run.evaluations, 16);
                assert!(
                    run.fraction > 0.0 && run.fraction <= 1.0,
                    "{kind:?}: {run:?}"
                );
            }
        }
        let doc = to_json(
            &[Replayed {
                record: rec.clone(),
                runs: vec![replay(&rec, StrategyKind::Genetic, 0, limits).expect("replays")],
            }],
            StrategyKind::Genetic,
            limits,
        );
        assert_eq!(doc["functions"][0]["space"], 64);
        assert!(table(&[], StrategyKind::Genetic, limits).contains("fraction"));
    }

    #[test]
    fn quartiles_interpolate() {
        assert_eq!(quartiles(&[4.0, 1.0, 3.0, 2.0, 5.0]), [2.0, 3.0, 4.0]);
        assert_eq!(quartiles(&[1.0, 2.0]), [1.25, 1.5, 1.75]);
    }
}
