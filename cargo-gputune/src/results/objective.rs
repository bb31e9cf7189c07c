//! What a search optimises (`--objective`): time, energy, or their product (the energy-delay
//! product, EDP), each scored against base as time is (`score`): per runtime workload base's
//! median over the variant's (against base measured in the same process where there is such
//! a control), `{io}` weights, and the same significance rule on the objective's samples.
//!
//! - **time**: the cold GPU times, as always (`Group::ranked`, unchanged).
//! - **energy**: the joules per launch of the energy batches (`store::energy`).
//! - **edp**: joules per launch × the median cold time of the same row, per energy batch:
//!   energy per launch times time per launch, in J·s. The time is one number per row (the
//!   batches' spread is the energy's), so its significance is the energy's, shifted by the
//!   ratio of the times.
//!
//! The Pareto front of time × energy: the variants no other variant beats on both, measured
//! ok with energy (`pareto_front`).

use std::collections::{BTreeMap, BTreeSet};

use gputune_protocol::Status;

use super::score::{self, Pair, Score};
use super::store::energy::{Energy, RowKey};
use super::store::Measurement;
use super::{median, Group, Ranked};

/// What a search optimises and `report` and `apply` rank by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Objective {
    /// Time per launch (cold GPU times): the default.
    #[default]
    Time,
    /// Energy per launch (joules, NVML's counter): needs `--energy` measurements.
    Energy,
    /// Energy-delay product: energy per launch × time per launch.
    Edp,
}

impl Objective {
    /// `time`, `energy` or `edp`.
    pub fn as_str(self) -> &'static str {
        match self {
            Objective::Time => "time",
            Objective::Energy => "energy",
            Objective::Edp => "edp",
        }
    }

    /// Whether it needs energy measured.
    pub fn needs_energy(self) -> bool {
        self != Objective::Time
    }
}

/// A group's energy rows by (variant, runtime workload).
pub type GroupEnergy = BTreeMap<(String, String), Energy>;

/// Gives each group the energy rows of its rows (from `Store::energies`).
pub fn attach_energy(groups: &mut [Group], energies: Vec<(RowKey, Energy)>) {
    let mut by_key: BTreeMap<RowKey, Energy> = energies.into_iter().collect();
    for g in groups {
        for (variant, ms) in &g.variants {
            for m in ms {
                if let Some(e) = by_key.remove(&RowKey::of(m)) {
                    g.energy.insert((variant.clone(), m.rt_workload.clone()), e);
                }
            }
        }
    }
}

/// The samples of a row by `objective`, its own and its control's, where it has them.
fn samples(
    objective: Objective,
    m: &Measurement,
    energy: Option<&Energy>,
) -> Option<(Vec<f64>, Vec<f64>)> {
    match objective {
        Objective::Time => Some((m.samples.clone(), m.control.clone())),
        Objective::Energy => {
            let e = energy?;
            Some((e.joules.clone(), e.control.clone()))
        }
        Objective::Edp => {
            let e = energy?;
            let time = m.center?;
            let control_time = median(m.control.clone());
            Some((
                e.joules.iter().map(|j| j * time).collect(),
                match control_time {
                    Some(t) => e.control.iter().map(|j| j * t).collect(),
                    None => Vec::new(),
                },
            ))
        }
    }
}

/// The score of `variant` against `base` by `objective` (for time, exactly
/// [`super::score_of`]): per common ok workload, base's median over the variant's, judged
/// against the control measured in the same process where the row has one of at least two
/// samples, else against base's row.
pub fn score_by(
    objective: Objective,
    energy: &GroupEnergy,
    base: &[Measurement],
    variant: &[Measurement],
) -> Option<Score> {
    if objective == Objective::Time {
        return super::score_of(base, variant);
    }
    let of = |m: &Measurement| {
        samples(
            objective,
            m,
            energy.get(&(m.variant.clone(), m.rt_workload.clone())),
        )
    };
    let rows: Vec<(f64, Vec<f64>, Vec<f64>)> = variant
        .iter()
        .filter(|v| v.status == Status::Ok)
        .filter_map(|v| {
            let (mine, control) = of(v)?;
            let base_samples = if control.len() >= 2 {
                control
            } else {
                let b = base
                    .iter()
                    .find(|b| b.rt_workload == v.rt_workload && b.status == Status::Ok)?;
                of(b)?.0
            };
            (!mine.is_empty() && !base_samples.is_empty()).then_some((
                v.rt_weight,
                mine,
                base_samples,
            ))
        })
        .collect();
    let pairs: Vec<Pair<'_>> = rows
        .iter()
        .filter_map(|(weight, mine, base)| {
            Some(Pair {
                weight: *weight,
                base_center: median(base.clone())?,
                center: median(mine.clone())?,
                base_samples: base,
                samples: mine,
            })
        })
        .collect();
    score::score(&pairs)
}

/// A variant's time and energy in one figure each: the medians over its ok runtime workloads
/// of each one's median, and its mean power; `None` without energy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Seconds per launch.
    pub time: f64,
    /// Joules per launch.
    pub energy: f64,
    /// Watts.
    pub power: f64,
    /// Relative noise of the energy (the batches' spread), median over workloads.
    pub energy_noise: Option<f64>,
}

impl Point {
    /// Energy × time, J·s.
    pub fn edp(&self) -> f64 {
        self.energy * self.time
    }
}

/// The [`Point`] of `variant`'s rows.
pub fn point(energy: &GroupEnergy, variant: &[Measurement]) -> Option<Point> {
    let ok: Vec<(&Measurement, &Energy)> = variant
        .iter()
        .filter(|m| m.status == Status::Ok && m.center.is_some())
        .filter_map(|m| {
            let e = energy.get(&(m.variant.clone(), m.rt_workload.clone()))?;
            (!e.joules.is_empty()).then_some((m, e))
        })
        .collect();
    Some(Point {
        time: median(ok.iter().filter_map(|(m, _)| m.center).collect())?,
        energy: median(
            ok.iter()
                .filter_map(|(_, e)| median(e.joules.clone()))
                .collect(),
        )?,
        power: median(
            ok.iter()
                .filter_map(|(_, e)| median(e.watts.clone()))
                .collect(),
        )?,
        energy_noise: median(
            ok.iter()
                .filter_map(|(_, e)| score::relative_stdev(&e.joules))
                .collect(),
        ),
    })
}

/// The labels of the Pareto front of `points` (time, energy; less is better in both): those
/// no other point is at least as good as in both and better in one.
pub fn pareto_front(points: &[(String, Point)]) -> BTreeSet<String> {
    // One sweep by time, not every pair: a space of 16,000 variants is 256 million pairs. A
    // point is dominated by a faster one with no more energy, or by one as fast with less.
    let mut by_time: Vec<&(String, Point)> = points.iter().collect();
    by_time.sort_by(|a, b| {
        a.1.time
            .total_cmp(&b.1.time)
            .then(a.1.energy.total_cmp(&b.1.energy))
    });
    let mut front = BTreeSet::new();
    // The least energy of the points strictly faster than the current run of equal times.
    let mut faster_least = f64::INFINITY;
    let mut i = 0;
    while i < by_time.len() {
        let time = by_time[i].1.time;
        let run_end = by_time[i..]
            .iter()
            .position(|p| p.1.time != time)
            .map_or(by_time.len(), |n| i + n);
        // Sorted by energy within the run: its least comes first.
        let least = by_time[i].1.energy;
        for (label, p) in &by_time[i..run_end] {
            if p.energy == least && p.energy < faster_least {
                front.insert(label.clone());
            }
        }
        faster_least = faster_least.min(least);
        i = run_end;
    }
    front
}

impl Group {
    /// Every variant ranked by `objective`, best first (for time, exactly [`Group::ranked`]).
    pub fn ranked_by(&self, objective: Objective) -> Vec<Ranked> {
        if objective == Objective::Time {
            return self.ranked();
        }
        let base = self.base();
        let mut out: Vec<Ranked> = self
            .ranked()
            .into_iter()
            .map(|mut r| {
                if r.status == Status::Ok {
                    let ms = self.variants.get(&r.variant).map(Vec::as_slice);
                    r.score = ms.and_then(|ms| score_by(objective, &self.energy, base, ms));
                }
                r
            })
            .collect();
        let key = |r: &Ranked| r.score.as_ref().map_or(f64::NEG_INFINITY, |s| s.score);
        out.sort_by(|a, b| {
            key(b)
                .total_cmp(&key(a))
                .then_with(|| a.variant.cmp(&b.variant))
        });
        out
    }

    /// The best variant by `objective` that is verified (ok), significant and better than
    /// base (for time, exactly [`Group::winner`]).
    pub fn winner_by(&self, objective: Objective) -> Option<Ranked> {
        self.ranked_by(objective).into_iter().find(|r| {
            r.variant != "base"
                && r.status == Status::Ok
                && r.score
                    .as_ref()
                    .is_some_and(|s| s.significant && s.score > 1.0)
        })
    }

    /// Whether any of its rows has energy.
    pub fn has_energy(&self) -> bool {
        !self.energy.is_empty()
    }

    /// Each variant's [`Point`], where it has one.
    pub fn points(&self) -> Vec<(String, Point)> {
        self.variants
            .iter()
            .map(|(label, ms)| (label, crate::results::counted(ms)))
            .filter(|(_, ms)| ms.iter().all(|m| m.status == Status::Ok))
            .filter_map(|(label, ms)| Some((label.clone(), point(&self.energy, &ms)?)))
            .collect()
    }
}

#[cfg(test)]
mod tests;
