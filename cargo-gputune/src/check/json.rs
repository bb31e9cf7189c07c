//! The gate's verdict as JSON (`check --format json`), for scripts: the same rows and result
//! as the markdown, with the numbers unrounded.

use serde::Serialize;

use super::{Comparison, Outcome};

/// Version of the check JSON.
pub const CHECK_VERSION: u32 = 1;

/// The document.
#[derive(Debug, Serialize)]
pub struct Document<'a> {
    /// [`CHECK_VERSION`].
    pub version: u32,
    /// `pass` or `regression`, as the exit code says (0 or 1).
    pub result: &'static str,
    /// `--threshold`.
    pub threshold: f64,
    /// `--min-score`.
    pub min_score: Option<f64>,
    /// The comparison with `--baseline`; absent without one.
    pub baseline: Option<Baseline<'a>>,
    /// The applied variants, judged only with `--min-score`.
    pub applied: Vec<Applied<'a>>,
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
    /// `SAME`, `FAST` or `SLOW`.
    pub verdict: &'a str,
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
        }
    }
}

/// The document of `outcome`.
pub fn document(outcome: &Outcome) -> Document<'_> {
    Document {
        version: CHECK_VERSION,
        result: if outcome.pass() { "pass" } else { "regression" },
        threshold: outcome.threshold,
        min_score: outcome.min_score,
        baseline: outcome.baseline.as_ref().map(|b| Baseline {
            compared: b.rows.iter().map(Compared::from).collect(),
            same: outcome.count("SAME"),
            fast: outcome.count("FAST"),
            slow: outcome.count("SLOW"),
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
    }
}
