//! `report --per-size`: per function and compile-time workload, what one winner costs against
//! the best variant of each runtime workload, as a speedup, so that a user can decide whether
//! `apply --per-size` is worth its dispatch.

use serde_json::{json, Value};

use super::{analyse, workload_buckets, Analysis};
use crate::results::present;
use crate::results::report::Format;
use crate::results::Group;

/// Columns of a group's table.
const HEADER: [&str; 7] = [
    "workload",
    "single",
    "best here",
    "best",
    "speedup",
    "sig",
    "runs",
];

/// What the columns mean.
const LEGEND: [&str; 4] = [
    "single: the single winner's median time there (what `apply` writes); best here: the best \
     variant there and its median time",
    "speedup: the single winner's time over the best one's, each relative to base in its own \
     process (1.000x: the single winner is best there)",
    "sig: + the best beats the single winner beyond noise and the significance rule, ~ within \
     noise (then the single winner runs there)",
    "runs: what `apply --per-size` would run there; only distinct winners are compiled in",
];

/// The rows of one group's analysis.
fn rows(a: &Analysis) -> Vec<[String; 7]> {
    let time = |t: Option<f64>| t.map_or_else(|| "-".to_string(), present::time);
    a.choices
        .iter()
        .map(|c| {
            [
                c.bucket.label.clone(),
                time(c.single_time),
                c.best.clone(),
                time(c.best_time),
                c.speedup
                    .map_or_else(|| "-".to_string(), |s| format!("{s:.3}x")),
                if c.significant { "+" } else { "~" }.to_string(),
                c.chosen.clone(),
            ]
        })
        .collect()
}

/// The groups with more than one runtime workload, each with its analysis.
fn analysed(groups: &[Group]) -> Vec<(&Group, Analysis)> {
    groups
        .iter()
        .filter_map(|g| {
            let buckets = workload_buckets(g);
            (buckets.len() > 1).then(|| (g, analyse(g, buckets)))
        })
        .collect()
}

/// A summary line: how many distinct winners, and the largest gain.
fn summary(a: &Analysis) -> String {
    let distinct = a.distinct();
    if !a.differs() {
        return format!(
            "one winner, {}, is best at every workload within noise: per-size dispatch gains \
             nothing here",
            a.single
        );
    }
    let gain = a
        .choices
        .iter()
        .filter(|c| c.significant)
        .filter_map(|c| c.speedup)
        .fold(1.0, f64::max);
    format!(
        "single winner {}; per workload {} distinct winners ({}), up to {gain:.3}x faster than \
         the single winner: `cargo gputune apply --per-size` writes them",
        a.single,
        distinct.len(),
        distinct.join(", ")
    )
}

/// `report --per-size` of `groups` in `format`.
pub fn render(groups: &[Group], format: Format) -> String {
    let analysed = analysed(groups);
    match format {
        Format::Json => {
            let text = serde_json::to_string_pretty(&to_json(&analysed)).unwrap_or_default();
            format!("{text}\n")
        }
        Format::Csv => {
            let mut s = format!("group,{}\n", HEADER.join(","));
            for (g, a) in &analysed {
                for r in rows(a) {
                    let cells: Vec<String> = std::iter::once(present::title(g))
                        .chain(r)
                        .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
                        .collect();
                    s.push_str(&format!("{}\n", cells.join(",")));
                }
            }
            s
        }
        Format::Markdown => {
            let mut s = String::new();
            for (g, a) in &analysed {
                s.push_str(&format!("### {}\n\n{}\n\n", present::title(g), summary(a)));
                s.push_str(&format!("| {} |\n", HEADER.join(" | ")));
                s.push_str(&format!("|{}\n", "---|".repeat(HEADER.len())));
                for r in rows(a) {
                    s.push_str(&format!("| {} |\n", r.join(" | ").replace("~", "\\~")));
                }
                s.push('\n');
            }
            for l in LEGEND {
                s.push_str(&format!("- {l}\n"));
            }
            s
        }
        Format::Table => table(groups, &analysed),
    }
}

fn table(groups: &[Group], analysed: &[(&Group, Analysis)]) -> String {
    let mut s = String::new();
    for (g, a) in analysed {
        let rows = rows(a);
        s.push_str(&format!("{}\n  {}\n", present::title(g), summary(a)));
        for line in present::aligned(&HEADER, &rows, |i| matches!(i, 0 | 2 | 6)) {
            s.push_str(&format!("  {line}\n"));
        }
        s.push('\n');
    }
    let single = groups.len() - analysed.len();
    if single > 0 {
        s.push_str(&format!(
            "{} measured one runtime workload: nothing to choose per size\n",
            present::count(single, "group")
        ));
    }
    if !analysed.is_empty() {
        for l in LEGEND {
            s.push_str(l);
            s.push('\n');
        }
    }
    s
}

fn to_json(analysed: &[(&Group, Analysis)]) -> Value {
    let groups: Vec<Value> = analysed
        .iter()
        .map(|(g, a)| {
            json!({
                "package": g.package,
                "bench": g.bench,
                "function": g.function,
                "ct_workload": g.ct_workload,
                "device": g.device,
                "model": present::model(&g.device),
                "single": a.single,
                "distinct": a.distinct(),
                "workloads": a.choices.iter().map(|c| json!({
                    "rt_workload": c.bucket.label,
                    "single_time": c.single_time,
                    "best": c.best,
                    "best_time": c.best_time,
                    "speedup": c.speedup,
                    "significant": c.significant,
                    "runs": c.chosen,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "version": 1, "groups": groups })
}
