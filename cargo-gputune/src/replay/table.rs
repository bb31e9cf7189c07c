//! What a replay prints: a table per function, a line per seed and quartiles over the seeds,
//! or the same as JSON.

use serde_json::{json, Value};

use super::{kind_name, Limits, Replayed, Run};
use crate::strategy::StrategyKind;

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

/// The replays as a table: per function, a line per seed, then quartiles over the seeds.
pub fn table(replayed: &[Replayed], kind: StrategyKind, limits: Limits) -> String {
    let mut s = String::new();
    for r in replayed {
        let rec = &r.record;
        s.push_str(&format!(
            "{}\n  {} strategy, {} point(s), {} recorded, best recorded {:.4} ({}); \
             batch {}, max-evals {}, time-limit {}\n",
            rec.title,
            kind_name(kind),
            rec.declared,
            rec.recorded_points(),
            rec.best.0,
            rec.best.1,
            limits.batch_size,
            limits
                .max_evals
                .map_or_else(|| "none".to_string(), |m| m.to_string()),
            limits
                .time_limit
                .map_or_else(|| "none".to_string(), |t| format!("{t} s")),
        ));
        if rec.partial() {
            s.push_str(&format!(
                "  replayed over the {} recorded point(s) only: a point never measured is no \
                 evaluation\n",
                rec.recorded_points()
            ));
        }
        s.push_str(&format!(
            "  {:>8}  {:>5}  {:>8}  {:>8}  {:>5}  {:>10}  {:>10}  {:>10}  best\n",
            "seed", "evals", "score", "fraction", "at", "s to best", "s total", "ended"
        ));
        for run in &r.runs {
            s.push_str(&format!(
                "  {:>8}  {:>5}  {:>8}  {:>8.4}  {:>5}  {:>10.1}  {:>10.1}  {:>10}  {}\n",
                run.seed,
                run.evaluations,
                run.best
                    .as_ref()
                    .map_or_else(|| "-".to_string(), |(b, _)| format!("{b:.4}")),
                run.fraction,
                run.at,
                run.seconds_to_best,
                run.seconds,
                run.ended.name(),
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
        "fraction: best score found / best score recorded (= optimum time / best time found); \
         evals: unique points, failures included; at: the evaluation that found it; s: recorded \
         build + run seconds of the evaluated variants\n",
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
        "time_limit": limits.time_limit,
        "functions": replayed.iter().map(|r| json!({
            "title": r.record.title,
            "space": r.record.declared,
            "recorded": r.record.recorded_points(),
            "replayed_over": r.record.space.len(),
            "best_recorded": r.record.best.0,
            "best_recorded_variant": r.record.best.1,
            "runs": r.runs.iter().map(|run| json!({
                "seed": run.seed,
                "evaluations": run.evaluations,
                "revisits": run.revisits,
                "ended": run.ended.name(),
                "best": run.best.as_ref().map(|(b, _)| b),
                "best_variant": run.best.as_ref().map(|(_, l)| l),
                "fraction": run.fraction,
                "at": run.at,
                "seconds_to_best": run.seconds_to_best,
                "seconds": run.seconds,
                "curve": run.curve,
            })).collect::<Vec<_>>(),
            "fraction": summary(&r.runs, |r| r.fraction),
            "at": summary(&r.runs, |r| r.at as f64),
            "seconds_to_best": summary(&r.runs, |r| r.seconds_to_best),
            "seconds": summary(&r.runs, |r| r.seconds),
        })).collect::<Vec<_>>(),
    })
}
