//! `check`: the CI gate. Against a baseline (`report --format json` from an earlier run on the same
//! GPU model), each workload is SAME, FAST, SLOW or UNDECIDED ([`verdict`](mod@verdict): SAME
//! within the smaller of the two noises or `--threshold`; FAST or SLOW beyond it and beyond what
//! the samples can resolve; UNDECIDED beyond it but inside that), UNDECIDED ones measured again
//! with `--remeasure` (`measure::remeasure`, which this folder does not import: it hands it the
//! rows' [`workload`]s); it says where the two were measured under another provenance
//! ([`provenance`]); the applied variants must still score at least `--min-score`. What it found is
//! an [`Outcome`], written for people (the markdown summary, [`markdown`]) and for CI systems
//! (JUnit XML, [`junit`]; JSON, [`json`]); exit 0 pass, 1 regression, 3 undecided, 4 provenance
//! differs under `--strict-provenance` ([`Outcome::result`]).
//!
//! Two runs drift apart as a whole (clocks, temperature, another host of the same model:
//! 1–2 % on an H200, more than the noise within one run), so a variant's time is compared
//! after taking out base's drift on the same workload: its current time times base's
//! baseline time over base's current time, that is, its speedup over base in each run. Base
//! itself is compared as measured; the table shows its drift.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use gputune_protocol::gputune_toml::{params_of, GputuneToml, Params, FILE_NAME};
use gputune_protocol::Status;
use serde_json::Value;

use crate::host::cargo::Workspace;
use crate::results::store::Store;
use crate::results::Group;

pub mod json;
pub mod junit;
pub mod markdown;
mod outcome_notes;
#[cfg(test)]
mod per_model_tests;
pub mod provenance;
pub mod verdict;
pub mod workload;

/// One compared workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// `bench.function [ct] variant rt`.
    pub name: String,
    /// Baseline centre (s).
    pub baseline: f64,
    /// Current centre (s).
    pub current: f64,
    /// Base's current over its baseline centre on the same workload (its controls', where
    /// both runs have them), which `current` is divided by before comparing; `None` for base
    /// itself, or without base on both sides.
    pub base_drift: Option<f64>,
    /// [`verdict::SAME`], [`verdict::FAST`], [`verdict::SLOW`] or [`verdict::UNDECIDED`].
    pub verdict: &'static str,
    /// What the samples can resolve: the half-width of the change's 95 % interval; `None`
    /// where a side's samples bound no interval (fewer than 6).
    pub resolution: Option<f64>,
    /// The largest change called SAME: the smaller noise, at least `--threshold`.
    pub band: f64,
    /// Where the workload is in the store, for `--remeasure` (`None` in hand-made rows).
    pub at: Option<workload::Workload>,
    /// What `--remeasure` did to it, if it measured it again.
    pub remeasured: Option<workload::Remeasured>,
}

impl Comparison {
    /// The current centre with base's drift taken out.
    pub fn current_normalised(&self) -> f64 {
        self.current / self.base_drift.unwrap_or(1.0)
    }

    /// The relative change the verdict judges: the drift-free current centre against the
    /// baseline's (0.02 is 2 % slower).
    pub fn change(&self) -> f64 {
        self.current_normalised() / self.baseline - 1.0
    }
}

/// The verdict for one workload: relative difference against the allowed band.
pub fn verdict(
    baseline: f64,
    current: f64,
    noise_baseline: f64,
    noise_current: f64,
    threshold: f64,
) -> &'static str {
    let diff = (current - baseline) / baseline;
    let band = noise_baseline.min(noise_current).max(threshold);
    if diff.abs() <= band {
        "SAME"
    } else if diff < 0.0 {
        "FAST"
    } else {
        "SLOW"
    }
}

/// What comparing with a baseline found: the compared workloads, and what could not be
/// matched, so that a gate which compared nothing can say what it expected and found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BaselineComparison {
    /// Workloads measured in both, with their verdicts.
    pub rows: Vec<Comparison>,
    /// Groups of the baseline (`package/bench.function [ct] on device`) with no counterpart
    /// in the store.
    pub unmatched: Vec<String>,
    /// Groups the store holds, for the message when nothing matched.
    pub found: Vec<String>,
    /// Where the matched groups were measured under another provenance than the baseline.
    pub provenance: provenance::ProvenanceCheck,
}

fn group_name(package: &str, bench: &str, function: &str, ct: &str, device: &str) -> String {
    let device = crate::results::present::device(device, "");
    format!("{package}/{bench}.{function} [{ct}] on {device}")
}

/// Compares the current `groups` with `baseline` (report JSON). A baseline group matches a
/// current one of the same package, bench, tuned function, compile-time workload and device
/// identity, else device model: times of another GPU model mean nothing here.
pub fn compare(groups: &[Group], baseline: &Value, threshold: f64) -> Result<BaselineComparison> {
    let Some(base_groups) = baseline["groups"].as_array() else {
        bail!("the baseline is not a `cargo gputune report --format json` export (no `groups`)");
    };
    let mut out = BaselineComparison {
        found: groups
            .iter()
            .map(|g| group_name(&g.package, &g.bench, &g.function, &g.ct_workload, &g.device))
            .collect(),
        ..BaselineComparison::default()
    };
    for bg in base_groups {
        let field = |k: &str| bg[k].as_str().unwrap_or("?").to_string();
        // The same device identity, else another device of the same model (the identity
        // also holds the ECC state and the bus width, which a driver update or a BIOS setting
        // may change): times compare per model, never across models.
        let same = |g: &&Group| {
            bg["package"] == g.package.as_str()
                && bg["bench"] == g.bench.as_str()
                && bg["function"] == g.function.as_str()
                && bg["ct_workload"] == g.ct_workload.as_str()
        };
        let baseline_device = bg["device"].as_str().unwrap_or_default();
        let Some(g) = groups
            .iter()
            .filter(same)
            .find(|g| g.device == baseline_device)
            .or_else(|| {
                groups.iter().filter(same).find(|g| {
                    crate::results::present::model(&g.device)
                        == crate::results::present::model(baseline_device)
                })
            })
        else {
            out.unmatched.push(group_name(
                &field("package"),
                &field("bench"),
                &field("function"),
                &field("ct_workload"),
                &field("device"),
            ));
            continue;
        };
        let before = out.rows.len();
        provenance::compare_group(
            bg,
            g,
            &group_name(&g.package, &g.bench, &g.function, &g.ct_workload, &g.device),
            &mut out.provenance,
        );
        // Base's row per runtime workload, in the baseline and now.
        let base_now: BTreeMap<&str, &crate::results::store::Measurement> = g
            .variants
            .get("base")
            .into_iter()
            .flatten()
            .filter(|m| m.status == Status::Ok && m.center.is_some())
            .map(|m| (m.rt_workload.as_str(), m))
            .collect();
        let base_then: BTreeMap<&str, &Value> = bg["variants"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["variant"] == "base")
            .flat_map(|v| v["workloads"].as_array().into_iter().flatten())
            .filter(|w| w["center"].as_f64().is_some())
            .filter_map(|w| Some((w["rt_workload"].as_str()?, w)))
            .collect();
        for bv in bg["variants"].as_array().into_iter().flatten() {
            let label = bv["variant"].as_str().unwrap_or_default();
            let Some(current) = g.variants.get(label) else {
                continue;
            };
            for bw in bv["workloads"].as_array().into_iter().flatten() {
                let rt = bw["rt_workload"].as_str().unwrap_or_default();
                let Some(cm) = current
                    .iter()
                    .find(|m| m.rt_workload == rt && m.status == Status::Ok)
                else {
                    continue;
                };
                let base = match (base_then.get(rt), base_now.get(rt)) {
                    (Some(then), Some(now)) if label != "base" => Some((*then, *now)),
                    _ => None,
                };
                let Some(sides) = verdict::sides(bw, cm, base) else {
                    continue;
                };
                let judged = verdict::judge(&sides, threshold);
                out.rows.push(Comparison {
                    name: format!(
                        "{}.{} [{}] {label} {rt}",
                        g.bench, g.function, g.ct_workload
                    ),
                    baseline: sides.then.center,
                    current: sides.now.center,
                    base_drift: judged.base_drift,
                    verdict: judged.verdict,
                    resolution: judged.resolution.is_finite().then_some(judged.resolution),
                    band: judged.band,
                    at: Some(workload::Workload::of(
                        g,
                        cm,
                        bw,
                        base_then.get(rt).copied(),
                    )),
                    remeasured: None,
                });
            }
        }
        if out.rows.len() == before {
            // The group exists but shares no measured variant and workload with the baseline.
            out.unmatched.push(group_name(
                &g.package,
                &g.bench,
                &g.function,
                &g.ct_workload,
                &g.device,
            ));
        }
    }
    Ok(out)
}

/// An applied variant (the gputune.toml entry its group's device runs: its model's, else its
/// architecture's) and its current score.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// `bench.function [ct] on KEY`, and the size range of a per-size entry
    /// (`… on NVIDIA H200, Elements 4096..`).
    pub workload: String,
    /// The applied point's label, or `(applied point not measured)`.
    pub variant: String,
    /// Its current score against base; `None` when it was not measured or not scored.
    pub score: Option<f64>,
}

/// The applied variants of `groups` and their current scores: per group, the entry its device
/// runs (model key, else architecture key, as production builds choose), scored on the
/// group's workloads; a per-size entry's each range on the workloads whose size it holds.
pub fn applied_scores(ws: &Workspace, groups: &[Group], store: &Store) -> Result<Vec<Applied>> {
    let mut files: BTreeMap<String, Option<GputuneToml>> = BTreeMap::new();
    let mut out = Vec::new();
    for g in groups {
        let file = match files.get(&g.package) {
            Some(f) => f.clone(),
            None => {
                let pkg = ws
                    .metadata
                    .workspace_packages()
                    .into_iter()
                    .find(|p| p.name.as_str() == g.package);
                let path = pkg.and_then(|p| {
                    p.manifest_path
                        .parent()
                        .map(|d| d.as_std_path().join(FILE_NAME))
                });
                let f = match path.and_then(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t))) {
                    Some((p, text)) => {
                        Some(GputuneToml::parse(&text).with_context(|| p.display().to_string())?)
                    }
                    None => None,
                };
                files.insert(g.package.clone(), f.clone());
                f
            }
        };
        if let Some(file) = file {
            // The base point's parameters: a size range where base won applies base.
            let base = store
                .space(&g.package, &g.function)?
                .and_then(|(_, attribute)| gputune_grammar::parse_str(&attribute).ok())
                .map(|spec| params_of(&spec.base_point()));
            out.extend(applied_in(&file, g, base.as_ref()));
        }
    }
    Ok(out)
}

/// The applied entries of `file` that `g`'s device runs, scored on `g`; `base` is the base
/// point's parameters, where known.
pub fn applied_in(file: &GputuneToml, g: &Group, base: Option<&Params>) -> Vec<Applied> {
    let model = crate::results::present::model(&g.device);
    let Some(found) = file.lookup(&g.function, &g.ct_workload, model, &g.arch, None) else {
        return Vec::new();
    };
    let name = format!(
        "{}.{} [{}] on {}",
        g.bench, g.function, g.ct_workload, found.device
    );
    found
        .entries
        .iter()
        .map(|entry| {
            // A range's workloads: those whose size it holds.
            let holds = |rt: &str| {
                gputune_protocol::gputune_toml::sizes::holds(&entry.sizes, |axis| {
                    crate::results::per_size::size_of(rt, axis)
                })
            };
            let workload = if entry.sizes.is_empty() {
                name.clone()
            } else {
                let ranges = gputune_protocol::gputune_toml::sizes::describe(&entry.sizes);
                format!("{name}, {ranges}")
            };
            if base == Some(&entry.params) {
                return Applied {
                    workload,
                    variant: "base".into(),
                    score: Some(1.0),
                };
            }
            let Some(label) = label_of(g, &entry.params) else {
                return Applied {
                    workload,
                    variant: "(applied point not measured)".into(),
                    score: None,
                };
            };
            let within = |ms: &[crate::results::store::Measurement]| -> Vec<crate::results::store::Measurement> {
                ms.iter()
                    .filter(|m| holds(&m.rt_workload))
                    .cloned()
                    .collect()
            };
            let score = crate::results::score_of(&within(g.base()), &within(&g.variants[&label]))
                .map(|s| s.score);
            Applied {
                workload,
                variant: label,
                score,
            }
        })
        .collect()
}

/// The label of the point `params` names among `g`'s variants.
fn label_of(g: &Group, params: &Params) -> Option<String> {
    g.variants
        .keys()
        .find(|l| {
            l.split('.').all(|part| {
                part.split_once('_').is_some_and(|(n, v)| {
                    params
                        .get(n)
                        .is_some_and(|pv| pv.to_string().trim_matches('"') == v)
                })
            }) && l.split('.').count() == params.len()
        })
        .cloned()
}

/// What `check` found: the comparison with the baseline, the applied variants' scores, and
/// the settings they were judged by. Every output format is written from this one value, so
/// that the terminal, the markdown, the JUnit XML and the JSON agree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The comparison with `--baseline`, when one was given.
    pub baseline: Option<BaselineComparison>,
    /// The applied variants and their scores (judged only with `--min-score`).
    pub applied: Vec<Applied>,
    /// `--min-score`.
    pub min_score: Option<f64>,
    /// `--threshold`.
    pub threshold: f64,
    /// `--allow-undecided`: an UNDECIDED workload does not fail the gate.
    pub allow_undecided: bool,
    /// `--strict-provenance`: a provenance that differs from the baseline's fails the gate.
    pub strict_provenance: bool,
    /// What `--remeasure` could not measure again, and why (empty without it).
    pub remeasure_notes: Vec<String>,
}

/// What the gate concludes, and its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateResult {
    /// Nothing failed: exit 0.
    Pass,
    /// A workload is SLOW, an applied variant scores under `--min-score`, or nothing of the
    /// baseline was found: exit 1.
    Regression,
    /// No regression, but a workload stayed UNDECIDED (without `--allow-undecided`): the
    /// samples cannot say whether it regressed. Exit 3.
    Undecided,
    /// No regression and nothing undecided, but the current run was measured under another
    /// provenance than the baseline (driver, clocks, power limit, NVRTC) and
    /// `--strict-provenance` was given. Exit 4.
    Provenance,
}

impl GateResult {
    /// The process's exit code.
    pub fn exit_code(self) -> i32 {
        match self {
            GateResult::Pass => 0,
            GateResult::Regression => 1,
            GateResult::Undecided => 3,
            GateResult::Provenance => 4,
        }
    }

    /// As the JSON and the JUnit properties say it: `pass`, `regression`, `undecided`,
    /// `provenance`.
    pub fn as_str(self) -> &'static str {
        match self {
            GateResult::Pass => "pass",
            GateResult::Regression => "regression",
            GateResult::Undecided => "undecided",
            GateResult::Provenance => "provenance",
        }
    }
}

impl Outcome {
    /// The compared workloads (none without a baseline).
    pub fn comparisons(&self) -> &[Comparison] {
        self.baseline.as_ref().map_or(&[][..], |b| &b.rows[..])
    }

    /// A baseline was given and nothing of it was found: the gate checked nothing.
    pub fn nothing_compared(&self) -> bool {
        self.baseline.as_ref().is_some_and(|b| b.rows.is_empty())
    }

    /// How many compared workloads got `verdict`.
    pub fn count(&self, verdict: &str) -> usize {
        self.comparisons()
            .iter()
            .filter(|c| c.verdict == verdict)
            .count()
    }

    /// Whether `applied` passes the score gate: at least `--min-score` (`None` without one).
    pub fn applied_passes(&self, applied: &Applied) -> Option<bool> {
        self.min_score
            .map(|min| applied.score.is_some_and(|s| s >= min))
    }

    /// Where the compared groups were measured under another provenance than the baseline.
    pub fn provenance_differences(&self) -> &[provenance::Difference] {
        self.baseline
            .as_ref()
            .map_or(&[][..], |b| &b.provenance.differences[..])
    }

    /// What the gate concludes. A regression (a SLOW workload, an applied variant under
    /// `--min-score`, or a baseline of which nothing was found: a gate that compared nothing
    /// has checked nothing) comes first; then an UNDECIDED workload, unless
    /// `--allow-undecided`; then a provenance that differs, under `--strict-provenance`.
    pub fn result(&self) -> GateResult {
        let regression = self.nothing_compared()
            || self.count(verdict::SLOW) > 0
            || self
                .applied
                .iter()
                .any(|a| self.applied_passes(a) == Some(false));
        if regression {
            GateResult::Regression
        } else if !self.allow_undecided && self.count(verdict::UNDECIDED) > 0 {
            GateResult::Undecided
        } else if self.strict_provenance && !self.provenance_differences().is_empty() {
            GateResult::Provenance
        } else {
            GateResult::Pass
        }
    }

    /// Whether the gate passes ([`GateResult::Pass`]).
    pub fn pass(&self) -> bool {
        self.result() == GateResult::Pass
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A compared workload of `verdict`, `current` against a baseline of 1 s.
    pub(crate) fn comparison(name: &str, current: f64, verdict: &'static str) -> Comparison {
        Comparison {
            name: name.into(),
            baseline: 1.0,
            current,
            base_drift: None,
            verdict,
            resolution: Some(0.001),
            band: crate::results::score::NOISE_THRESHOLD,
            at: None,
            remeasured: None,
        }
    }

    /// An outcome of `rows` against a baseline, without a score gate.
    pub(crate) fn compared(rows: Vec<Comparison>) -> Outcome {
        Outcome {
            baseline: Some(BaselineComparison {
                rows,
                ..BaselineComparison::default()
            }),
            threshold: crate::results::score::NOISE_THRESHOLD,
            ..Outcome::default()
        }
    }

    #[test]
    fn verdicts_use_the_smaller_noise_or_the_threshold() {
        assert_eq!(verdict(1.0, 1.01, 0.02, 0.05, 0.0), "SAME");
        assert_eq!(verdict(1.0, 1.03, 0.02, 0.05, 0.0), "SLOW");
        assert_eq!(verdict(1.0, 0.97, 0.02, 0.05, 0.0), "FAST");
        assert_eq!(verdict(1.0, 1.03, 0.02, 0.05, 0.05), "SAME");
        assert_eq!(verdict(1.0, 2.0, 0.01, 0.01, 0.0), "SLOW");
        // At the default threshold, a 0.3 % drift between two steady runs is no regression.
        let default = crate::results::score::NOISE_THRESHOLD;
        assert_eq!(verdict(1.0, 1.003, 0.0002, 0.0002, default), "SAME");
        assert_eq!(verdict(1.0, 1.003, 0.0002, 0.0002, 0.0), "SLOW");
        assert_eq!(verdict(1.0, 1.01, 0.0002, 0.0002, default), "SLOW");
    }

    #[test]
    fn the_gate_fails_on_slow_low_scores_or_nothing_compared() {
        let c = |v| comparison("x", 1.0, v);
        assert!(compared(vec![c("SAME"), c("FAST")]).pass());
        assert!(!compared(vec![c("SAME"), c("SLOW")]).pass());
        assert!(!compared(Vec::new()).pass(), "nothing compared");
        let applied = |min| Outcome {
            applied: vec![Applied {
                workload: "w".into(),
                variant: "x_1".into(),
                score: Some(1.2),
            }],
            min_score: Some(min),
            ..Outcome::default()
        };
        assert!(applied(1.0).pass());
        assert!(!applied(1.5).pass());
        // Without --min-score the applied variants are listed, not judged.
        let listed = Outcome {
            min_score: None,
            ..applied(1.5)
        };
        assert!(listed.pass());
    }

    fn m(variant: &str, center: f64) -> crate::results::store::Measurement {
        crate::results::tests::m(variant, "N=1", center, 0.005)
    }

    #[test]
    fn variants_are_compared_with_base_drift_taken_out() {
        // The baseline run: base 1.0, both variants twice as fast.
        let workload = |center: f64| serde_json::json!([{ "rt_workload": "N=1", "center": center, "noise": 0.005 }]);
        let baseline = serde_json::json!({ "groups": [{
            "package": "p", "bench": "b", "function": "f", "ct_workload": "*", "device": "d",
            "variants": [
                { "variant": "base", "workloads": workload(1.0) },
                { "variant": "x_1", "workloads": workload(0.5) },
                { "variant": "x_2", "workloads": workload(0.5) },
            ]
        }]});
        // Now everything runs 2 % slower (the run drifted), and x_2 lost 10 % against base.
        let groups = crate::results::groups(
            vec![m("base", 1.02), m("x_1", 0.51), m("x_2", 0.561)],
            false,
        );
        let found = compare(&groups, &baseline, 0.0).expect("compares");
        let verdict = |label: &str| {
            let row = found
                .rows
                .iter()
                .find(|c| c.name.contains(&format!(" {label} ")))
                .expect("compared");
            (
                row.verdict,
                row.base_drift.map(|d| (d * 1000.0).round() / 1000.0),
            )
        };
        assert_eq!(
            verdict("x_1"),
            ("SAME", Some(1.02)),
            "drift is not a regression"
        );
        assert_eq!(verdict("x_2"), ("SLOW", Some(1.02)));
        // Base has no base to be normalised by: its own 2 % show, as its drift.
        assert_eq!(verdict("base"), ("SLOW", None));
        let outcome = Outcome {
            baseline: Some(found),
            ..Outcome::default()
        };
        assert!(!outcome.pass());
        let x_2 = outcome
            .comparisons()
            .iter()
            .find(|c| c.name.contains(" x_2 "))
            .expect("x_2");
        assert!((x_2.change() - 0.1).abs() < 1e-9, "{x_2:?}");
    }
}
