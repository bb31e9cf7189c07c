//! The gate's verdict as JSON (`check --format json`), for scripts: the same rows and result
//! as the markdown, with the numbers unrounded.

use serde::Serialize;

use super::{verdict, Comparison, Outcome};

/// Version of the check JSON. 2 added UNDECIDED (`undecided`, each workload's `resolution`,
/// `band` and `remeasured`), the results `undecided` and `provenance`, `exit_code` and
/// `provenance`.
pub const CHECK_VERSION: u32 = 2;

/// The document.
#[derive(Debug, Serialize)]
pub struct Document<'a> {
    /// [`CHECK_VERSION`].
    pub version: u32,
    /// `pass`, `regression`, `undecided` or `provenance`, as the exit code says.
    pub result: &'static str,
    /// The exit code: 0 pass, 1 regression, 3 undecided, 4 provenance (under
    /// `--strict-provenance`).
    pub exit_code: i32,
    /// `--threshold`.
    pub threshold: f64,
    /// `--allow-undecided`.
    pub allow_undecided: bool,
    /// `--strict-provenance`.
    pub strict_provenance: bool,
    /// `--min-score`.
    pub min_score: Option<f64>,
    /// The comparison with `--baseline`; absent without one.
    pub baseline: Option<Baseline<'a>>,
    /// The applied variants, judged only with `--min-score`.
    pub applied: Vec<Applied<'a>>,
    /// What `--remeasure` could not measure again, and why.
    pub remeasure_notes: &'a [String],
}

/// The comparison with the baseline.
#[derive(Debug, Serialize)]
pub struct Baseline<'a> {
    /// The compared workloads.
    pub compared: Vec<Compared<'a>>,
    /// How many were SAME, FAST and SLOW.
    pub same: usize,
    /// FAST.
    pub fast: usize,
    /// SLOW.
    pub slow: usize,
    /// UNDECIDED.
    pub undecided: usize,
    /// Where the groups were measured under another provenance than the baseline.
    pub provenance: Provenance<'a>,
    /// Groups of the baseline with no counterpart in the store.
    pub unmatched: &'a [String],
    /// The groups the store holds.
    pub found: &'a [String],
}

/// One compared workload.
#[derive(Debug, Serialize)]
pub struct Compared<'a> {
    /// `bench.function [ct] variant rt`.
    pub name: &'a str,
    /// Baseline centre (s).
    pub baseline: f64,
    /// Current centre (s).
    pub current: f64,
    /// Base's current over its baseline centre; `null` for base itself.
    pub base_drift: Option<f64>,
    /// The relative change judged, base's drift taken out (0.02: 2 % slower).
    pub change: f64,
    /// `SAME`, `FAST`, `SLOW` or `UNDECIDED`.
    pub verdict: &'a str,
    /// The half-width of the change's 95 % interval; `null` where the samples bound none.
    pub resolution: Option<f64>,
    /// The largest change called SAME.
    pub band: f64,
    /// What `--remeasure` measured, if it measured this workload again.
    pub remeasured: Option<Remeasured>,
}

/// A workload measured again.
#[derive(Debug, Serialize)]
pub struct Remeasured {
    /// Its verdict before.
    pub before: &'static str,
    /// Its new samples.
    pub samples: usize,
    /// Base's beside them.
    pub base_samples: usize,
    /// Passes of the process.
    pub rounds: usize,
    /// `--remeasure-budget`.
    pub budget: usize,
}

/// The provenance comparison.
#[derive(Debug, Serialize)]
pub struct Provenance<'a> {
    /// Groups measured under another provenance.
    pub differences: Vec<Difference<'a>>,
    /// Groups not compared, and why.
    pub unknown: &'a [String],
}

/// One group measured under another provenance.
#[derive(Debug, Serialize)]
pub struct Difference<'a> {
    /// `package/bench.function [ct] on device`.
    pub group: &'a str,
    /// What differs.
    pub changed: Vec<Changed<'a>>,
}

/// One field that differs.
#[derive(Debug, Serialize)]
pub struct Changed<'a> {
    /// Its key (`driver`, `power_limit`).
    pub field: &'a str,
    /// Its values in the baseline, as shown.
    pub baseline: &'a [String],
    /// Its values now.
    pub current: &'a [String],
}

/// An applied variant and its score.
#[derive(Debug, Serialize)]
pub struct Applied<'a> {
    /// `bench.function [ct] on ARCH`.
    pub workload: &'a str,
    /// The applied point's label.
    pub variant: &'a str,
    /// Its current score; `null` when not measured.
    pub score: Option<f64>,
    /// Whether it reaches `--min-score`; `null` without one.
    pub pass: Option<bool>,
}

impl<'a> From<&'a Comparison> for Compared<'a> {
    fn from(c: &'a Comparison) -> Compared<'a> {
        Compared {
            name: &c.name,
            baseline: c.baseline,
            current: c.current,
            base_drift: c.base_drift,
            change: c.change(),
            verdict: c.verdict,
            resolution: c.resolution,
            band: c.band,
            remeasured: c.remeasured.as_ref().map(|r| Remeasured {
                before: r.before,
                samples: r.samples,
                base_samples: r.base_samples,
                rounds: r.rounds,
                budget: r.budget,
            }),
        }
    }
}

/// The document of `outcome`.
pub fn document(outcome: &Outcome) -> Document<'_> {
    Document {
        version: CHECK_VERSION,
        result: outcome.result().as_str(),
        exit_code: outcome.result().exit_code(),
        threshold: outcome.threshold,
        allow_undecided: outcome.allow_undecided,
        strict_provenance: outcome.strict_provenance,
        min_score: outcome.min_score,
        baseline: outcome.baseline.as_ref().map(|b| Baseline {
            compared: b.rows.iter().map(Compared::from).collect(),
            same: outcome.count(verdict::SAME),
            fast: outcome.count(verdict::FAST),
            slow: outcome.count(verdict::SLOW),
            undecided: outcome.count(verdict::UNDECIDED),
            provenance: Provenance {
                differences: b
                    .provenance
                    .differences
                    .iter()
                    .map(|d| Difference {
                        group: &d.group,
                        changed: d
                            .changed
                            .iter()
                            .map(|c| Changed {
                                field: c.key,
                                baseline: &c.then,
                                current: &c.now,
                            })
                            .collect(),
                    })
                    .collect(),
                unknown: &b.provenance.unknown,
            },
            unmatched: &b.unmatched,
            found: &b.found,
        }),
        applied: outcome
            .applied
            .iter()
            .map(|a| Applied {
                workload: &a.workload,
                variant: &a.variant,
                score: a.score,
                pass: outcome.applied_passes(a),
            })
            .collect(),
        remeasure_notes: &outcome.remeasure_notes,
    }
}

/// The JSON text of `outcome`, pretty-printed, with a final line break.
pub fn render(outcome: &Outcome) -> serde_json::Result<String> {
    Ok(serde_json::to_string_pretty(&document(outcome))? + "\n")
}

#[cfg(test)]
mod tests {
    use super::super::tests::{compared, comparison};
    use super::*;

    #[test]
    fn the_json_carries_the_result_and_the_unrounded_numbers() {
        let outcome = compared(vec![
            comparison("b.f [*] x_1 N=1", 1.0, "SAME"),
            comparison("b.f [*] x_2 N=1", 1.25, "SLOW"),
        ]);
        let text = render(&outcome).expect("serialises");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(doc["version"], CHECK_VERSION);
        assert_eq!(doc["result"], "regression");
        assert_eq!(doc["baseline"]["slow"], 1);
        assert_eq!(doc["baseline"]["same"], 1);
        let slow = &doc["baseline"]["compared"][1];
        assert_eq!(slow["verdict"], "SLOW");
        assert_eq!(slow["change"], 0.25);
        assert!(slow["base_drift"].is_null());
        assert!(doc["min_score"].is_null());
        assert_eq!(doc["exit_code"], 1);
        assert_eq!(doc["baseline"]["undecided"], 0);
        assert_eq!(slow["resolution"], 0.001);
        assert!(slow["remeasured"].is_null());
        assert_eq!(
            doc["baseline"]["provenance"]["differences"],
            serde_json::json!([])
        );
    }

    #[test]
    fn an_undecided_workload_is_its_own_result_and_exit_code() {
        let mut undecided = comparison("b.f [*] x_1 N=1", 1.02, "UNDECIDED");
        undecided.resolution = None;
        let doc: serde_json::Value =
            serde_json::from_str(&render(&compared(vec![undecided])).expect("serialises"))
                .expect("JSON");
        assert_eq!(doc["result"], "undecided");
        assert_eq!(doc["exit_code"], 3);
        assert_eq!(doc["baseline"]["undecided"], 1);
        assert!(doc["baseline"]["compared"][0]["resolution"].is_null());
    }
}
