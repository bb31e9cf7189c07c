//! The gate's verdict as markdown: what `check` prints on a terminal, writes with
//! `--markdown FILE` and appends to `$GITHUB_STEP_SUMMARY`. A markdown table reads as a table
//! both in a terminal and where it is rendered (a step summary, a PR comment).

use gputune_protocol::units::format_duration;

use super::{verdict, GateResult, Outcome};

/// What the columns and verdicts mean, under the table.
pub const CHANGE: &str =
    "change: the current time against the baseline's, a variant's after taking out base's \
     drift on the same workload (base drift: base's current time against its baseline \
     time, or its control's, base measured in the same process), so that two runs that \
     drift apart as a whole compare as the same. resolution: the half-width of the change's \
     95 % interval, what the samples of both runs can tell from no change (unbounded: under \
     6 samples on a side). SAME: the change is within the smaller noise of the two runs (at \
     least --threshold); FAST, SLOW: beyond that and beyond the resolution; UNDECIDED: \
     beyond that but within the resolution, as likely noise as a change (`check \
     --remeasure` measures it again).";

/// A resolution as the table shows it: `±0.39 %`, or `unbounded`.
pub fn resolution(r: Option<f64>) -> String {
    r.map_or("unbounded".into(), |r| format!("±{:.2} %", r * 100.0))
}

/// The result line's words.
fn result_words(result: GateResult) -> &'static str {
    match result {
        GateResult::Pass => "pass",
        GateResult::Regression => "regression",
        GateResult::Undecided => "undecided",
        GateResult::Provenance => "provenance differs",
    }
}

/// The markdown summary of `outcome`, ending in its result line.
pub fn render(outcome: &Outcome) -> String {
    let mut md = String::from("## gputune check\n\n");
    if let Some(b) = outcome.baseline.as_ref().filter(|b| b.rows.is_empty()) {
        // A gate that compared nothing has checked nothing: it fails, and says why.
        md.push_str("No workload of the baseline was found in the store, so nothing was compared.\n\nThe baseline holds:\n\n");
        for name in &b.unmatched {
            md.push_str(&format!("- {name}\n"));
        }
        md.push_str("\nThe store holds:\n\n");
        for name in &b.found {
            md.push_str(&format!("- {name}\n"));
        }
        if b.found.is_empty() {
            md.push_str("- (nothing)\n");
        }
        md.push('\n');
    }
    let comparisons = outcome.comparisons();
    if !comparisons.is_empty() {
        md.push_str(&format!(
            "{} workloads: {} SAME, {} FAST, {} SLOW, {} UNDECIDED\n\n| workload | baseline | current | base drift | change | resolution | verdict |\n|---|---:|---:|---:|---:|---:|---|\n",
            comparisons.len(),
            outcome.count(verdict::SAME),
            outcome.count(verdict::FAST),
            outcome.count(verdict::SLOW),
            outcome.count(verdict::UNDECIDED)
        ));
        for c in comparisons {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {:+.2} % | {} | {} |\n",
                cell(&c.name),
                format_duration(c.baseline),
                format_duration(c.current),
                c.base_drift
                    .map_or(String::new(), |d| format!("{:+.2} %", (d - 1.0) * 100.0)),
                c.change() * 100.0,
                resolution(c.resolution),
                c.verdict
            ));
        }
        md.push('\n');
        md.push_str(CHANGE);
        md.push('\n');
        super::outcome_notes::remeasured(outcome, &mut md);
        if let Some(b) = outcome
            .baseline
            .as_ref()
            .filter(|b| !b.unmatched.is_empty())
        {
            md.push_str("Not in the store (not compared):\n\n");
            for name in &b.unmatched {
                md.push_str(&format!("- {name}\n"));
            }
        }
        md.push('\n');
    }
    if let Some(min) = outcome.min_score {
        md.push_str(&format!("Applied variants, minimum score {min}:\n\n| workload | variant | score | |\n|---|---|---:|---|\n"));
        for a in &outcome.applied {
            md.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                cell(&a.workload),
                cell(&a.variant),
                a.score.map_or("n/a".into(), |s| format!("{s:.4}")),
                if outcome.applied_passes(a) == Some(true) {
                    "pass"
                } else {
                    "FAIL"
                }
            ));
        }
        if outcome.applied.is_empty() {
            md.push_str("| (no applied entries for the measured workloads) | | | |\n");
        }
        md.push('\n');
    }
    super::outcome_notes::provenance(outcome, &mut md);
    md.push_str(&format!("**Result: {}**\n", result_words(outcome.result())));
    md
}

/// `text` made safe inside a table cell: a `|` would end the cell (a choice parameter's value
/// or a workload may hold one).
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::super::tests::{compared, comparison};
    use super::super::{Applied, BaselineComparison, Outcome};
    use super::*;

    /// The rows of the markdown table that starts with `header`, split into trimmed cells.
    fn table(md: &str, header: &str) -> Vec<Vec<String>> {
        md.lines()
            .skip_while(|l| !l.starts_with(header))
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                // Cells split at each `|` that is not escaped, as markdown renderers do.
                let cells = l.trim().trim_start_matches('|').replace("\\|", "\u{0}");
                let cells = cells.strip_suffix('|').unwrap_or(&cells);
                cells
                    .split('|')
                    .map(|c| c.replace('\u{0}', "|").trim().to_string())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn the_summary_is_a_table_of_the_verdicts_and_ends_in_the_result() {
        let outcome = compared(vec![
            comparison("b.f [*] x_1 N=1", 1.0, "SAME"),
            comparison("b.f [*] x_2 N=1", 1.5, "SLOW"),
        ]);
        let md = render(&outcome);
        let rows = table(&md, "| workload |");
        assert_eq!(rows.len(), 4, "{md}");
        assert_eq!(rows[0].len(), rows[1].len(), "header and alignment: {md}");
        assert!(rows[1].iter().all(|c| c.contains("---")), "{md}");
        assert_eq!(rows[3][0], "b.f [*] x_2 N=1");
        assert_eq!(rows[3][4], "+50.00 %");
        assert_eq!(rows[3][5], "±0.10 %");
        assert_eq!(rows[3][6], "SLOW");
        assert!(
            md.contains("2 workloads: 1 SAME, 0 FAST, 1 SLOW, 0 UNDECIDED"),
            "{md}"
        );
        assert!(md.ends_with("**Result: regression**\n"), "{md}");
    }

    #[test]
    fn applied_scores_are_judged_against_the_minimum() {
        let outcome = Outcome {
            applied: vec![Applied {
                workload: "b.f [*] on sm_90".into(),
                variant: "x_1".into(),
                score: Some(1.2),
            }],
            min_score: Some(1.0),
            ..Outcome::default()
        };
        let md = render(&outcome);
        let rows = table(&md, "| workload | variant |");
        assert_eq!(
            rows[2],
            ["b.f [*] on sm_90", "x_1", "1.2000", "pass"],
            "{md}"
        );
        assert!(md.ends_with("**Result: pass**\n"), "{md}");
        let md = render(&Outcome {
            min_score: Some(1.5),
            ..outcome
        });
        assert_eq!(table(&md, "| workload | variant |")[2][3], "FAIL", "{md}");
    }

    #[test]
    fn a_baseline_that_matches_nothing_fails_and_says_what_it_expected() {
        let nothing = Outcome {
            baseline: Some(BaselineComparison {
                rows: Vec::new(),
                unmatched: vec!["p/b.f [*] on GPU A".into()],
                found: vec!["p/b.f [*] on GPU B".into()],
                ..BaselineComparison::default()
            }),
            ..Outcome::default()
        };
        let md = render(&nothing);
        assert!(md.contains("on GPU A") && md.contains("on GPU B"), "{md}");
        assert!(md.contains("**Result: regression**"), "{md}");
    }

    #[test]
    fn a_bar_in_a_name_does_not_split_its_cell() {
        let md = render(&compared(vec![comparison(
            "b.f [op=a|b] x N=1",
            1.0,
            "SAME",
        )]));
        assert!(md.contains("| b.f [op=a\\|b] x N=1 |"), "{md}");
        assert_eq!(
            table(&md, "| workload |")[2][0],
            "b.f [op=a|b] x N=1",
            "{md}"
        );
    }
}

#[cfg(test)]
mod verdict_tests {
    use super::super::tests::{compared, comparison};
    use super::*;

    #[test]
    fn an_undecided_workload_ends_undecided_unless_allowed_and_says_what_to_do() {
        let mut undecided = comparison("b.f [*] x_1 N=1", 1.02, "UNDECIDED");
        undecided.resolution = None;
        let mut outcome = compared(vec![comparison("b.f [*] base N=1", 1.0, "SAME"), undecided]);
        let md = render(&outcome);
        assert!(md.contains("| +2.00 % | unbounded | UNDECIDED |"), "{md}");
        assert!(md.contains("`check --remeasure`"), "{md}");
        assert!(md.ends_with("**Result: undecided**\n"), "{md}");
        outcome.allow_undecided = true;
        assert!(render(&outcome).ends_with("**Result: pass**\n"));
    }
}
