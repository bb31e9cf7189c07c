//! The gate's verdict as markdown: what `check` prints on a terminal, writes with
//! `--markdown FILE` and appends to `$GITHUB_STEP_SUMMARY`. A markdown table reads as a table
//! both in a terminal and where it is rendered (a step summary, a PR comment).

use gputune_protocol::units::format_duration;

use super::Outcome;

/// What the `change` column means, under the table.
pub const CHANGE: &str =
    "change: the current time against the baseline's, a variant's after taking out base's \
     drift on the same workload (base drift: base's current time against its baseline \
     time), so that two runs that drift apart as a whole compare as the same.";

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
            "{} workloads: {} SAME, {} FAST, {} SLOW\n\n| workload | baseline | current | base drift | change | verdict |\n|---|---:|---:|---:|---:|---|\n",
            comparisons.len(),
            outcome.count("SAME"),
            outcome.count("FAST"),
            outcome.count("SLOW")
        ));
        for c in comparisons {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {:+.2} % | {} |\n",
                cell(&c.name),
                format_duration(c.baseline),
                format_duration(c.current),
                c.base_drift
                    .map_or(String::new(), |d| format!("{:+.2} %", (d - 1.0) * 100.0)),
                c.change() * 100.0,
                c.verdict
            ));
        }
        md.push('\n');
        md.push_str(CHANGE);
        md.push('\n');
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
    md.push_str(if outcome.pass() {
        "**Result: pass**\n"
    } else {
        "**Result: regression**\n"
    });
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
        assert_eq!(rows[3][5], "SLOW");
        assert!(md.contains("2 workloads: 1 SAME, 0 FAST, 1 SLOW"), "{md}");
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
