//! From stored measurements to scored groups: one group per (package, bench, device,
//! revision, compile-time workload), each variant scored against base. Plain data for
//! `search`'s lines, `report`, `apply` and `check`.

use std::collections::BTreeMap;

use gputune_protocol::Status;

use crate::score::{self, Pair, Score};
use crate::store::Measurement;

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
        });
        g.variants.entry(m.variant.clone()).or_default().push(m);
    }
    out.into_values().collect()
}

/// The score of `variant` against `base` over their common ok workloads.
pub fn score_of(base: &[Measurement], variant: &[Measurement]) -> Option<Score> {
    let pairs: Vec<Pair<'_>> = variant
        .iter()
        .filter(|v| v.status == Status::Ok)
        .filter_map(|v| {
            let b = base
                .iter()
                .find(|b| b.rt_workload == v.rt_workload && b.status == Status::Ok)?;
            Some(Pair {
                weight: v.rt_weight,
                base_center: b.center?,
                center: v.center?,
                base_samples: &b.samples,
                samples: &v.samples,
            })
        })
        .collect();
    score::score(&pairs)
}

impl Group {
    /// Base's measurements.
    pub fn base(&self) -> &[Measurement] {
        self.variants
            .get("base")
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Every variant, best score first; unscored ones (failed, or base failed) last.
    pub fn ranked(&self) -> Vec<Ranked> {
        let base = self.base();
        let mut out: Vec<Ranked> = self
            .variants
            .iter()
            .map(|(label, ms)| {
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
                }
            })
            .collect();
        out.sort_by(|a, b| {
            let key = |r: &Ranked| r.score.as_ref().map_or(f64::NEG_INFINITY, |s| s.score);
            key(b)
                .total_cmp(&key(a))
                .then_with(|| a.variant.cmp(&b.variant))
        });
        out
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
