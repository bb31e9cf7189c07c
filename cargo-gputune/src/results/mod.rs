//! Results: the SQLite store (`store`) and everything read from it. This file turns stored
//! measurements into scored groups, the plain data every other room here reads: one group per
//! (package, bench, device, revision, compile-time workload), each variant scored against base
//! (`score`, `resolution`). From the groups: how results read for people (`present`,
//! `provenance`), `report` in the terminal, as SVG plots (`plot`) and as an HTML page (`html`),
//! the per-size winners (`per_size`), `apply` (winners into `gputune.toml`), `check`'s verdicts
//! against a baseline and its JUnit, markdown and JSON; `merge` (stores into one), `import` and
//! `export` (the community's formats).
//!
//! May import: `host` and `strategy` (the parameter structure that `import` and `export`
//! share). Never `measure`, `replay` or `shell`: nothing here runs a bench or sees the command
//! line. `search`'s lines, `run-bundle` and `check --remeasure` import from here instead.

pub mod apply;
pub mod check;
pub mod export;
pub mod html;
pub mod import;
pub mod merge;
pub mod objective;
pub mod per_size;
pub mod plot;
pub mod present;
pub mod provenance;
pub mod report;
pub mod resolution;
pub mod score;
pub mod store;

use std::collections::BTreeMap;

use gputune_protocol::{KernelRecord, Status, StopReason};

use crate::results::store::Measurement;
use score::{Pair, Score};

/// One compile-time workload of one bench on one device at one revision.
#[derive(Debug, Clone)]
pub struct Group {
    /// Package.
    pub package: String,
    /// Bench.
    pub bench: String,
    /// Tuned function.
    pub function: String,
    /// Device identity.
    pub device: String,
    /// Architecture.
    pub arch: String,
    /// Revision.
    pub revision: String,
    /// Compile-time workload.
    pub ct_workload: String,
    /// Variant → its measurements (base included, under `base`).
    pub variants: BTreeMap<String, Vec<Measurement>>,
    /// (variant, runtime workload) → its energy, where measured (`objective::attach_energy`).
    pub energy: objective::GroupEnergy,
}

/// A variant's standing in its group.
#[derive(Debug, Clone)]
pub struct Ranked {
    /// Label.
    pub variant: String,
    /// Its score, when it and base were measured on a common workload.
    pub score: Option<Score>,
    /// `ok` when every workload measured ok, else the first other status.
    pub status: Status,
    /// The first message of a failure.
    pub message: Option<String>,
    /// Its times, over the workloads it measured ok.
    pub timing: Option<Timing>,
    /// What its kernels compiled to ([`kernels`]); empty when unknown.
    pub kernels: Vec<KernelRecord>,
}

/// A variant's times in one figure: the median over its runtime workloads of each one's
/// median (with one workload, that workload's median), and likewise of the relative noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Seconds.
    pub time: f64,
    /// Relative standard deviation of the samples, when the bench reported it.
    pub noise: Option<f64>,
    /// Runtime workloads it is taken over.
    pub workloads: usize,
}

/// The median of `v`; `None` when empty.
pub(crate) fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The [`Timing`] of the ok measurements among `ms` that `keep` accepts.
fn timing_where(ms: &[Measurement], keep: impl Fn(&Measurement) -> bool) -> Option<Timing> {
    let ok: Vec<&Measurement> = ms
        .iter()
        .filter(|m| m.status == Status::Ok && m.center.is_some_and(|c| c > 0.0) && keep(m))
        .collect();
    Some(Timing {
        time: median(ok.iter().filter_map(|m| m.center).collect())?,
        noise: median(ok.iter().filter_map(|m| m.noise).collect()),
        workloads: ok.len(),
    })
}

/// The [`Timing`] of a variant's measurements.
pub fn timing(ms: &[Measurement]) -> Option<Timing> {
    timing_where(ms, |_| true)
}

/// The timings of `variant` and of `base` on the workloads both measured ok, so that the
/// two compare like with like. Base's is that of the variant's controls where every
/// workload has one (what its score is judged against), else the base row's.
pub fn paired_timing(base: &[Measurement], variant: &[Measurement]) -> Option<(Timing, Timing)> {
    let ok: Vec<&Measurement> = variant
        .iter()
        .filter(|m| m.status == Status::Ok && m.center.is_some())
        .collect();
    if !ok.is_empty() && ok.iter().all(|m| m.control.len() >= 2) {
        let controls: Vec<(f64, f64)> = ok
            .iter()
            .filter_map(|m| {
                Some((
                    median(m.control.clone())?,
                    score::relative_stdev(&m.control)?,
                ))
            })
            .collect();
        return Some((
            timing(variant)?,
            Timing {
                time: median(controls.iter().map(|c| c.0).collect())?,
                noise: median(controls.iter().map(|c| c.1).collect()),
                workloads: controls.len(),
            },
        ));
    }
    let ok_in = |ms: &[Measurement], rt: &str| {
        ms.iter()
            .any(|m| m.rt_workload == rt && m.status == Status::Ok && m.center.is_some())
    };
    Some((
        timing_where(variant, |m| ok_in(base, &m.rt_workload))?,
        timing_where(base, |m| ok_in(variant, &m.rt_workload))?,
    ))
}

/// What a variant's kernels compiled to: the list of the first of its rows that has one. A
/// variant's kernels are compiled once per process, whatever the runtime workload, so any
/// measured row says; rows without one (a CPU bench, a failed build, a store older than
/// schema 4) are passed over. Empty when none has one.
pub fn kernels(ms: &[Measurement]) -> &[KernelRecord] {
    ms.iter()
        .map(|m| m.kernels.as_slice())
        .find(|k| !k.is_empty())
        .unwrap_or_default()
}

/// The groups of `ms`; with `latest_only`, only the most recent revision per package and
/// bench.
pub fn groups(ms: Vec<Measurement>, latest_only: bool) -> Vec<Group> {
    let mut latest: BTreeMap<(String, String), String> = BTreeMap::new();
    if latest_only {
        // `ms` is oldest first, so the last revision seen per bench is the latest.
        for m in &ms {
            latest.insert((m.package.clone(), m.bench.clone()), m.revision.clone());
        }
    }
    let mut out: BTreeMap<(String, String, String, String, String), Group> = BTreeMap::new();
    for m in ms {
        if latest_only && latest.get(&(m.package.clone(), m.bench.clone())) != Some(&m.revision) {
            continue;
        }
        let key = (
            m.package.clone(),
            m.bench.clone(),
            m.device.clone(),
            m.revision.clone(),
            m.ct_workload.clone(),
        );
        let g = out.entry(key).or_insert_with(|| Group {
            package: m.package.clone(),
            bench: m.bench.clone(),
            function: m.function.clone(),
            device: m.device.clone(),
            arch: m.arch.clone(),
            revision: m.revision.clone(),
            ct_workload: m.ct_workload.clone(),
            variants: BTreeMap::new(),
            energy: BTreeMap::new(),
        });
        g.variants.entry(m.variant.clone()).or_default().push(m);
    }
    out.into_values().collect()
}

/// The score of `variant` against `base` over their common ok workloads. Where a variant's
/// row carries a control (base measured in the same bench process), it is judged against
/// that instead of the base row: drift between processes is larger than the noise within
/// one, and would otherwise make an identical point look faster or slower than base.
pub fn score_of(base: &[Measurement], variant: &[Measurement]) -> Option<Score> {
    let pairs: Vec<Pair<'_>> = variant
        .iter()
        .filter(|v| v.status == Status::Ok)
        .filter_map(|v| {
            let (base_center, base_samples) = match median(v.control.clone()) {
                Some(c) if v.control.len() >= 2 && c > 0.0 => (c, v.control.as_slice()),
                _ => {
                    let b = base
                        .iter()
                        .find(|b| b.rt_workload == v.rt_workload && b.status == Status::Ok)?;
                    (b.center?, b.samples.as_slice())
                }
            };
            Some(Pair {
                weight: v.rt_weight,
                base_center,
                center: v.center?,
                base_samples,
                samples: &v.samples,
            })
        })
        .collect();
    score::score(&pairs)
}

/// A variant's rows without the workloads its bench skipped (`State::skip`: a workload the
/// bench does not cover, such as a shape that a product of axes makes and no model has),
/// unless it skipped them all: a skipped workload is not part of the problem, so it neither
/// fails the variant nor takes part in its score.
pub fn counted(ms: &[Measurement]) -> std::borrow::Cow<'_, [Measurement]> {
    let skipped = |m: &Measurement| m.status == Status::Skipped;
    if ms.iter().any(skipped) && !ms.iter().all(skipped) {
        std::borrow::Cow::Owned(ms.iter().filter(|m| !skipped(m)).cloned().collect())
    } else {
        std::borrow::Cow::Borrowed(ms)
    }
}

impl Group {
    /// Base's measurements.
    pub fn base(&self) -> &[Measurement] {
        self.variants
            .get("base")
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Every variant, best score first (a deciding search's screened-out variants never above
    /// one measured further); unscored ones (failed, or base failed) last.
    pub fn ranked(&self) -> Vec<Ranked> {
        let base = counted(self.base());
        let base = &base[..];
        let out: Vec<Ranked> = self
            .variants
            .iter()
            .map(|(label, all)| {
                let counted = counted(all);
                let ms = &counted[..];
                let bad = ms.iter().find(|m| m.status != Status::Ok);
                Ranked {
                    variant: label.clone(),
                    score: if bad.is_some() {
                        None
                    } else {
                        score_of(base, ms)
                    },
                    status: bad.map_or(Status::Ok, |m| m.status),
                    message: bad.and_then(|m| m.message.clone()),
                    timing: timing(ms),
                    kernels: kernels(ms).to_vec(),
                }
            })
            .collect();
        // A deciding search's screened variants were judged unable to win or tie the best on
        // their screening samples: none ranks above a variant measured further, whatever its
        // score against the control of its own process says (a slow control inflates it).
        let screened: std::collections::BTreeSet<&str> = self
            .variants
            .iter()
            .filter(|(_, ms)| {
                let ms = counted(ms);
                !ms.is_empty() && ms.iter().all(|m| m.stop == Some(StopReason::Screened))
            })
            .map(|(label, _)| label.as_str())
            .collect();
        let score = |r: &Ranked| r.score.as_ref().map_or(f64::NEG_INFINITY, |s| s.score);
        let floor = out
            .iter()
            .filter(|r| r.variant != "base" && !screened.contains(r.variant.as_str()))
            .filter(|r| r.score.is_some())
            .map(score)
            .fold(f64::INFINITY, f64::min);
        let mut keyed: Vec<(f64, bool, Ranked)> = out
            .into_iter()
            .map(|r| {
                let out = screened.contains(r.variant.as_str());
                let key = if out { score(&r).min(floor) } else { score(&r) };
                (key, out, r)
            })
            .collect();
        keyed.sort_by(|(ka, sa, a), (kb, sb, b)| {
            kb.total_cmp(ka)
                .then_with(|| sa.cmp(sb))
                .then_with(|| a.variant.cmp(&b.variant))
        });
        keyed.into_iter().map(|(_, _, r)| r).collect()
    }

    /// The best variant that is verified (ok), significant and faster than base.
    pub fn winner(&self) -> Option<Ranked> {
        self.ranked().into_iter().find(|r| {
            r.variant != "base"
                && r.status == Status::Ok
                && r.score
                    .as_ref()
                    .is_some_and(|s| s.significant && s.score > 1.0)
        })
    }
}

/// The groups of the `selected` packages (all with `None`). Naming a package of which the
/// store holds nothing is a usage error that says what it does hold: an empty report would
/// look like a package that measured nothing.
pub(crate) fn select_packages(
    groups: Vec<Group>,
    selected: Option<&[String]>,
    store: &std::path::Path,
) -> anyhow::Result<Vec<Group>> {
    let Some(selected) = selected else {
        return Ok(groups);
    };
    let held: std::collections::BTreeSet<&str> =
        groups.iter().map(|g| g.package.as_str()).collect();
    if let Some(missing) = selected.iter().find(|p| !held.contains(p.as_str())) {
        return Err(anyhow::Error::new(crate::host::usage::Usage(format!(
            "the store {} holds no results of package `{missing}`; it holds: {}",
            store.display(),
            if held.is_empty() {
                "nothing".to_string()
            } else {
                held.into_iter().collect::<Vec<_>>().join(", ")
            }
        ))));
    }
    Ok(groups
        .into_iter()
        .filter(|g| selected.contains(&g.package))
        .collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An ok row of package `p`, bench `b`, function `f`, workload `*` on device `d`.
    pub(crate) fn m(variant: &str, rt: &str, center: f64, noise: f64) -> Measurement {
        Measurement {
            revision: "r".into(),
            device: "d".into(),
            arch: "cpu".into(),
            package: "p".into(),
            bench: "b".into(),
            function: "f".into(),
            ct_workload: "*".into(),
            variant: variant.into(),
            rt_workload: rt.into(),
            rt_weight: 1.0,
            status: Status::Ok,
            message: None,
            center: Some(center),
            noise: Some(noise),
            bandwidth: None,
            samples: Vec::new(),
            build_seconds: None,
            run_seconds: None,
            stop: None,
            control: Vec::new(),
            kernels: Vec::new(),
            provenance: None,
            sm_clocks: Vec::new(),
        }
    }

    #[test]
    fn a_variant_with_a_control_scores_against_it_even_without_a_base_row() {
        let mut v = m("x_1", "*", 1.0, 0.01);
        v.samples = vec![1.0, 1.01, 0.99, 1.0];
        v.control = vec![2.0, 2.02, 1.98, 2.0];
        let s = score_of(&[], std::slice::from_ref(&v)).expect("scored against its control");
        assert!((s.score - 2.0).abs() < 1e-9, "{s:?}");
        let (mine, base) = paired_timing(&[], std::slice::from_ref(&v)).expect("timed");
        assert_eq!((mine.time, base.time), (1.0, 2.0));
        // Without a control and without base, nothing to score against.
        v.control.clear();
        assert!(score_of(&[], std::slice::from_ref(&v)).is_none());
    }

    #[test]
    fn screened_out_variants_rank_after_the_finalists() {
        let mut g = groups(vec![m("base", "*", 2.0, 0.01)], false).remove(0);
        let mut finalist = m("a_1", "*", 1.0, 0.01);
        finalist.stop = Some(StopReason::Criterion);
        // Screened against a slow control: a higher score than the finalist's, but out.
        let mut screened = m("a_2", "*", 1.2, 0.01);
        screened.stop = Some(StopReason::Screened);
        screened.control = vec![3.0, 3.0, 3.0];
        g.variants.insert("a_1".into(), vec![finalist]);
        g.variants.insert("a_2".into(), vec![screened]);
        let order: Vec<String> = g.ranked().into_iter().map(|r| r.variant).collect();
        assert_eq!(order, ["a_1", "a_2", "base"]);
    }

    #[test]
    fn a_variant_s_kernels_are_those_of_any_row_that_has_them() {
        let kernel = |registers| KernelRecord {
            name: "scale".into(),
            registers,
            local_bytes: 0,
            shared_bytes: 0,
            options: Vec::new(),
        };
        let mut skipped = m("a_1", "N=1", 1.0, 0.01);
        skipped.status = Status::Skipped;
        let mut measured = m("a_1", "N=2", 1.0, 0.01);
        measured.kernels = vec![kernel(40), kernel(32)];
        let rows = [skipped, measured];
        assert_eq!(kernels(&rows), &rows[1].kernels[..]);
        assert!(kernels(&rows[..1]).is_empty());
        let g = groups(rows.to_vec(), false).remove(0);
        let ranked = g.ranked();
        assert_eq!(ranked[0].kernels, rows[1].kernels);
    }

    #[test]
    fn a_workload_the_bench_skips_neither_fails_nor_scores_a_variant() {
        let skip = |mut m: Measurement| {
            m.status = Status::Skipped;
            m
        };
        let rows =
            |label: &str, t: f64| vec![m(label, "N=1", t, 0.01), skip(m(label, "N=2", t, 0.01))];
        let mut g = groups(rows("base", 2.0), false).remove(0);
        g.variants.insert("a_1".into(), rows("a_1", 1.0));
        g.variants
            .insert("a_2".into(), vec![skip(m("a_2", "N=1", 1.0, 0.01))]);
        let ranked = g.ranked();
        let a1 = ranked.iter().find(|r| r.variant == "a_1").expect("a_1");
        assert_eq!(a1.status, Status::Ok);
        assert!((a1.score.as_ref().expect("scored").score - 2.0).abs() < 1e-9);
        let a2 = ranked.iter().find(|r| r.variant == "a_2").expect("a_2");
        assert_eq!(
            (a2.status, a2.score.is_none()),
            (Status::Skipped, true),
            "skipped it all"
        );
        assert_eq!(counted(&g.variants["a_1"]).len(), 1);
        assert_eq!(counted(&g.variants["a_2"]).len(), 1);
    }

    #[test]
    fn timings_are_medians_over_workloads_and_pair_on_common_ones() {
        let base = [
            m("base", "a", 1.0, 0.01),
            m("base", "b", 3.0, 0.03),
            m("base", "c", 8.0, 0.02),
        ];
        let t = timing(&base).expect("timed");
        assert_eq!((t.time, t.noise, t.workloads), (3.0, Some(0.02), 3));
        let mut failed = m("v", "c", 9.0, 0.0);
        failed.status = Status::Timeout;
        let variant = [m("v", "a", 0.5, 0.01), m("v", "b", 1.5, 0.05), failed];
        let (v, b) = paired_timing(&base, &variant).expect("paired");
        // Over a and b only: the medians of two are their means.
        assert_eq!((v.time, v.workloads), (1.0, 2));
        assert_eq!((b.time, b.workloads), (2.0, 2));
        assert_eq!(b.noise, Some(0.02));
        assert!(paired_timing(&[], &variant).is_none());
    }
}
