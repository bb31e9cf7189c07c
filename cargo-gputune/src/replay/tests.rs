//! The replay rules, each on a space built for it.

use std::collections::BTreeMap;

use gputune_protocol::Status;

use super::*;
use crate::results;
use crate::results::store::{Measurement, Store};

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
        provenance: None,
        sm_clocks: Vec::new(),
    }
}

/// A space of 35 points, of which one failed, one (base's point) is not recorded as a
/// variant, and the rest are faster the nearer they are to a=6, b=2 (speedup 3 there).
fn synthetic() -> Recorded {
    recorded_of(|_| true)
}

/// [`synthetic`], with only the points for which `keep` holds recorded.
fn recorded_of(keep: impl Fn(&str) -> bool) -> Recorded {
    let spec =
        gputune_grammar::parse_str("a = 1..=8, b = 1..=5, require(a + b != 9), base(a = 1, b = 1)")
            .expect("valid");
    let mut ms = vec![m("base", Status::Ok, Some(1.0))];
    for p in spec.space().iter().skip(1) {
        let v = |n: &str| p.get(n).and_then(|v| v.as_int()).unwrap_or(0) as f64;
        let d = (v("a") - 6.0).abs() + (v("b") - 2.0).abs();
        let label = p.label();
        if !keep(&label) {
            continue;
        }
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

fn limits(max_evals: Option<usize>, time_limit: Option<f64>) -> Limits {
    Limits {
        batch_size: 3,
        max_evals,
        time_limit,
    }
}

#[test]
fn unbounded_replays_find_the_optimum_and_count_the_recorded_time() {
    let rec = synthetic();
    assert_eq!(rec.best.1, "a_6.b_2");
    assert_eq!((rec.declared, rec.recorded_points()), (35, 34));
    assert!(!rec.space.contains(&"a_1.b_1".to_string()), "base's point");
    for kind in KINDS {
        let run = replay(&rec, kind, 3, limits(None, None)).expect("replays");
        assert_eq!(run.evaluations, 34, "{kind:?}");
        assert_eq!(run.ended, Ended::Space, "{kind:?}");
        assert_eq!(run.fraction, 1.0, "{kind:?}");
        // 1.5 s per recorded point.
        assert!((run.seconds - 1.5 * 34.0).abs() < 1e-9);
        assert!(run.at >= 1 && run.seconds_to_best <= run.seconds);
        // The best-so-far curve rises, and ends where the run's best was found.
        assert_eq!(run.curve.last(), Some(&(run.at, run.fraction)), "{kind:?}");
        assert!(run
            .curve
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert_eq!(
            replay(&rec, kind, 3, limits(None, None)).expect("replays"),
            run
        );
    }
}

#[test]
fn a_budget_in_evaluations_stops_at_that_many_unique_points() {
    let rec = synthetic();
    for kind in KINDS {
        let run = replay(&rec, kind, 1, limits(Some(7), None)).expect("replays");
        assert_eq!((run.evaluations, run.ended), (7, Ended::Evaluations));
        assert!((run.seconds - 7.0 * 1.5).abs() < 1e-9, "{kind:?}");
    }
}

#[test]
fn a_budget_in_recorded_time_counts_the_evaluation_that_crosses_it() {
    let rec = synthetic();
    for kind in KINDS {
        // 1.5 s each: after 3.0 s a third starts (not past 4 s yet) and takes it to 4.5.
        let run = replay(&rec, kind, 1, limits(None, Some(4.0))).expect("replays");
        assert_eq!((run.evaluations, run.ended), (3, Ended::Time), "{kind:?}");
        assert!((run.seconds - 4.5).abs() < 1e-9);
        // Exactly at the limit is not past it.
        let run = replay(&rec, kind, 1, limits(None, Some(4.5))).expect("replays");
        assert_eq!(run.evaluations, 4, "{kind:?}");
        // Both budgets: the first reached ends it.
        let run = replay(&rec, kind, 1, limits(Some(2), Some(4.0))).expect("replays");
        assert_eq!((run.evaluations, run.ended), (2, Ended::Evaluations));
    }
}

/// Proposes a fixed list in order, `per` at a time, whatever was scored.
struct Scripted {
    list: Vec<&'static str>,
    at: usize,
    per: usize,
}

impl Strategy for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }

    fn next(
        &mut self,
        _space: &[String],
        _scored: &BTreeMap<String, Option<f64>>,
        count: usize,
    ) -> Vec<String> {
        let n = self.per.min(count);
        let out: Vec<String> = self
            .list
            .iter()
            .skip(self.at)
            .take(n)
            .map(|s| s.to_string())
            .collect();
        self.at += n;
        out
    }
}

#[test]
fn a_configuration_proposed_again_is_counted_and_charged_once() {
    let rec = synthetic();
    let mut s = Scripted {
        list: vec![
            "a_6.b_2", "a_2.b_2", "a_6.b_2", "a_2.b_2", "a_6.b_2", "a_3.b_3",
        ],
        at: 0,
        per: 2,
    };
    let run = replay_with(&rec, &mut s, 0, limits(Some(3), None)).expect("replays");
    assert_eq!((run.evaluations, run.revisits), (3, 3));
    assert!((run.seconds - 3.0 * 1.5).abs() < 1e-9);
    assert_eq!((run.fraction, run.at), (1.0, 1));
    // A strategy that only revisits ends the replay instead of looping.
    let mut s = Scripted {
        list: vec!["a_6.b_2"; 200],
        at: 0,
        per: 1,
    };
    let run = replay_with(&rec, &mut s, 0, limits(Some(10), None)).expect("ends");
    assert_eq!((run.evaluations, run.ended), (1, Ended::Strategy));
}

#[test]
fn a_failed_configuration_is_an_evaluation_and_costs_its_recorded_time() {
    let rec = synthetic();
    assert_eq!(rec.scores["a_1.b_2"], None);
    let mut s = Scripted {
        list: vec!["a_1.b_2", "a_2.b_2"],
        at: 0,
        per: 1,
    };
    let run = replay_with(&rec, &mut s, 0, limits(Some(2), None)).expect("replays");
    assert_eq!(run.evaluations, 2);
    assert_eq!(run.at, 2, "the failure found nothing");
    assert!((run.seconds - 3.0).abs() < 1e-9);
}

#[test]
fn a_point_outside_the_replayed_space_is_refused() {
    let rec = recorded_of(|l| l != "a_5.b_2");
    let mut s = Scripted {
        list: vec!["a_5.b_2"],
        at: 0,
        per: 1,
    };
    let err = replay_with(&rec, &mut s, 0, limits(None, None)).expect_err("refused");
    assert!(
        err.to_string().contains("the points the store recorded"),
        "{err}"
    );
}

#[test]
fn a_partly_recorded_space_is_replayed_over_its_recorded_points() {
    // 8 of the 35 points recorded, the optimum among them, as a quick start's random
    // search of 16 points would leave: every evaluation is a recorded point with its score.
    let kept = [
        "a_1.b_2", "a_2.b_5", "a_3.b_1", "a_4.b_4", "a_5.b_3", "a_6.b_2", "a_8.b_5", "a_7.b_4",
    ];
    let rec = recorded_of(|l| kept.contains(&l));
    assert!(rec.partial());
    assert_eq!((rec.declared, rec.recorded_points()), (35, 8));
    for kind in KINDS {
        for seed in 0..6 {
            let run = replay(&rec, kind, seed, limits(Some(4), None)).expect("replays");
            assert_eq!(run.evaluations, 4, "{kind:?}");
            assert!(
                (run.seconds - 4.0 * 1.5).abs() < 1e-9,
                "{kind:?}: all recorded"
            );
            assert!(run.fraction > 0.0, "{kind:?} seed {seed}: {run:?}");
        }
        let run = replay(&rec, kind, 0, limits(None, None)).expect("replays");
        assert_eq!((run.evaluations, run.fraction), (8, 1.0), "{kind:?}");
    }
    let replayed = [Replayed {
        record: rec.clone(),
        runs: vec![
            replay(&rec, StrategyKind::Surrogate, 0, limits(Some(4), None)).expect("replays"),
        ],
    }];
    let text = table(&replayed, StrategyKind::Surrogate, limits(Some(4), None));
    assert!(text.contains("35 point(s), 8 recorded"), "{text}");
    assert!(
        text.contains("replayed over the 8 recorded point(s) only"),
        "{text}"
    );
    let doc = to_json(&replayed, StrategyKind::Surrogate, limits(Some(4), None));
    assert_eq!(
        (
            doc["functions"][0]["space"].as_u64(),
            doc["functions"][0]["replayed_over"].as_u64()
        ),
        (Some(35), Some(8))
    );
}

#[test]
fn guided_strategies_find_a_smooth_optimum_in_part_of_the_space() {
    let rec = synthetic();
    let limits = Limits {
        batch_size: 2,
        max_evals: Some(18),
        time_limit: None,
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
    let specs = crate::results::plot::specs(&groups, &store).expect("attributes parse");
    assert_eq!(groups.len(), 1);
    let g = &groups[0];
    let rec = Recorded::of(g, specs.get(&(g.package.clone(), g.function.clone()))).expect("scored");
    assert_eq!(rec.space.len(), 64);
    assert!(rec.params.0.len() == 5 && rec.space.iter().all(|l| rec.params.parse(l).is_some()));
    let limits = Limits {
        batch_size: 4,
        max_evals: Some(16),
        time_limit: None,
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
