//! The markdown summary's notes under the verdict table: what `--remeasure` measured again
//! (or could not), what to do with an UNDECIDED, and where the baseline and the current run
//! were measured under different provenance. The terminal, the step summary and JUnit's
//! `system-out` all show them ([`super::markdown`]).

use super::{verdict, Outcome};

/// The workloads measured again, what could not be, and what to do with an UNDECIDED left.
pub fn remeasured(outcome: &Outcome, md: &mut String) {
    let again: Vec<_> = outcome
        .comparisons()
        .iter()
        .filter_map(|c| Some((c, c.remeasured.as_ref()?)))
        .collect();
    if let Some((_, first)) = again.first() {
        md.push_str(&format!(
            "\nMeasured again (`--remeasure`: base and the variant interleaved in one process, \
             at most {} samples each):\n\n",
            first.budget
        ));
        for (c, r) in &again {
            let what = if c.verdict == verdict::UNDECIDED {
                format!(
                    "still UNDECIDED after {} samples beside {} of base ({} passes): the budget \
                     is spent",
                    r.samples, r.base_samples, r.rounds
                )
            } else {
                format!(
                    "{} → {} after {} samples beside {} of base ({} passes)",
                    r.before, c.verdict, r.samples, r.base_samples, r.rounds
                )
            };
            md.push_str(&format!("- {}: {what}\n", c.name));
        }
    }
    if !outcome.remeasure_notes.is_empty() {
        md.push_str("\nNot measured again:\n\n");
        for note in &outcome.remeasure_notes {
            md.push_str(&format!("- {note}\n"));
        }
    }
    let undecided = outcome.count(verdict::UNDECIDED);
    if undecided > 0 {
        let (what, them, each) = if undecided == 1 {
            ("1 workload is".to_string(), "it", "it settles")
        } else {
            (format!("{undecided} workloads are"), "them", "each settles")
        };
        md.push_str(&format!(
            "\n{what} UNDECIDED: outside the SAME band, but inside what the samples can \
             resolve. `check --remeasure` measures {them} again until {each} (in the \
             workspace, or with `--bundle DIR` where the bench binaries are); \
             `--allow-undecided` lets {them} pass.\n"
        ));
    }
}

/// Where the matched groups were measured under another provenance than the baseline, and
/// what could not be compared.
pub fn provenance(outcome: &Outcome, md: &mut String) {
    let Some(check) = outcome.baseline.as_ref().map(|b| &b.provenance) else {
        return;
    };
    if !check.differences.is_empty() {
        md.push_str(&format!(
            "Measured under another provenance than the baseline ({}):\n\n",
            if outcome.strict_provenance {
                "--strict-provenance: this fails the gate"
            } else {
                "not a failure without --strict-provenance"
            }
        ));
        for d in &check.differences {
            md.push_str(&format!("- {}: {}\n", d.group, d.describe()));
        }
        md.push('\n');
    }
    if !check.unknown.is_empty() {
        md.push_str("Provenance not compared:\n\n");
        for note in &check.unknown {
            md.push_str(&format!("- {note}\n"));
        }
        md.push('\n');
    }
}
