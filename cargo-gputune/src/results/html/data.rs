//! What the HTML page shows, computed here and embedded as JSON: the table's cells exactly as the
//! terminal report writes them ([`crate::results::report::full_table`]), each variant's parameter
//! values, samples, status and times, and each group's timeline. The page's script only filters,
//! sorts and draws.
//!
//! Kept small for large spaces (16 020 variants make a page of a few MB): variants are stored
//! column by column rather than as objects with keys; a label is left out where the
//! parameter values spell it; samples are in the group's time unit with four significant
//! digits; the controls that many variants share (base measured once per bench process) are
//! stored once.

use std::collections::BTreeMap;

use gputune_grammar::TuneSpec;
use gputune_protocol::Status;
use serde::Serialize;

use super::timeline::{self, Timeline};
use crate::results::plot::{split_label, Specs};
use crate::results::report::energy::Energies;
use crate::results::report::FullTable;
use crate::results::store::{Dated, Measurement};

/// Version of the page's data.
pub const PAGE_VERSION: u32 = 1;

/// The page's data.
#[derive(Debug, Serialize)]
pub struct Page {
    /// [`PAGE_VERSION`].
    pub version: u32,
    /// The store it was made from, as given.
    pub store: String,
    /// The table's column names, the variant's first, as the terminal report names them.
    pub header: Vec<&'static str>,
    /// What the columns and marks mean, as the terminal report says it.
    pub legend: Vec<&'static str>,
    /// One per compile-time workload of a bench on a device.
    pub groups: Vec<GroupData>,
}

/// One group.
#[derive(Debug, Serialize)]
pub struct GroupData {
    /// `pkg / bench.function [ct] on DEVICE`, as the terminal report heads it.
    pub title: String,
    /// The tuned function, for the page's function filter.
    pub function: String,
    /// The tuned function's parameters (empty when the store keeps no `#[tune]` attribute).
    pub params: Vec<ParamData>,
    /// The runtime workloads, base's first.
    pub workloads: Vec<String>,
    /// The unit of every sample of the group (`us`), and how many of it make a second.
    pub unit: &'static str,
    /// Samples are seconds times this.
    pub scale: f64,
    /// Distinct control sample lists, in `unit`.
    pub controls: Vec<Vec<f64>>,
    /// Where the time went.
    pub timeline: Timeline,
    /// The variants, best first.
    pub variants: Variants,
}

/// One parameter: its name and values, declared order first.
#[derive(Debug, Serialize)]
pub struct ParamData {
    /// Name.
    pub name: String,
    /// Values as labels spell them.
    pub values: Vec<String>,
}

/// The variants of a group, one entry per variant in every list, best first.
#[derive(Debug, Default, Serialize)]
pub struct Variants {
    /// The label; `null` where the parameter values spell it (`name_value` joined by `.`).
    pub label: Vec<Option<String>>,
    /// The table's cells after the variant's, as the terminal report writes them.
    pub cells: Vec<Vec<String>>,
    /// Its status: `ok` when every workload measured ok, else the first other.
    pub status: Vec<Status>,
    /// The first failure message.
    pub message: Vec<Option<String>>,
    /// Its parameter values as indices into [`ParamData::values`]; empty when the label does
    /// not split into them.
    pub params: Vec<Vec<u32>>,
    /// Its build's seconds.
    pub build: Vec<Option<f64>>,
    /// Its bench process's seconds (the longest of its workloads').
    pub run: Vec<Option<f64>>,
    /// When it was stored, seconds after the page's first stored row.
    pub at: Vec<Option<f64>>,
    /// What was measured on each runtime workload.
    pub measured: Vec<Vec<Workload>>,
    /// Its energy as the terminal's energy table writes it (energy per launch, power, EDP,
    /// Pareto front), where the store has energy; left out of a page without any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub energy: Vec<Option<[String; 4]>>,
}

/// One runtime workload of a variant, written as an array (`[rt, stop, samples, control]`):
/// with 16 000 variants, keys would cost half a megabyte.
#[derive(Debug, Serialize)]
pub struct Workload(
    /// Index into [`GroupData::workloads`].
    pub usize,
    /// Why measuring stopped (`criterion`, `screened`, `raced`, `timeout`).
    pub Option<&'static str>,
    /// Its kept cold samples, in the group's unit.
    pub Vec<f64>,
    /// Index into [`GroupData::controls`] of the base samples it was judged against.
    pub Option<usize>,
);

/// `x` with four significant digits: what a sample needs on a plot, in few characters.
fn significant(x: f64) -> f64 {
    format!("{x:.3e}").parse().unwrap_or(x)
}

/// A unit that puts `seconds` at 1 or more (up to 1000), as the terminal report's times.
fn unit(seconds: f64) -> (&'static str, f64) {
    if seconds < 1e-6 {
        ("ns", 1e9)
    } else if seconds < 1e-3 {
        ("us", 1e6)
    } else if seconds < 1.0 {
        ("ms", 1e3)
    } else {
        ("s", 1.0)
    }
}

/// The parameters of `spec` as the page lists them.
fn params(spec: Option<&TuneSpec>) -> Vec<ParamData> {
    spec.map(|s| {
        s.params
            .iter()
            .map(|p| ParamData {
                name: p.name.clone(),
                values: p.values.iter().map(|v| v.to_string()).collect(),
            })
            .collect()
    })
    .unwrap_or_default()
}

/// The indices of `values` in `params`, adding a value the attribute no longer declares.
fn indices(params: &mut [ParamData], values: &[String]) -> Vec<u32> {
    params
        .iter_mut()
        .zip(values)
        .map(|(p, v)| {
            let i = p.values.iter().position(|a| a == v).unwrap_or_else(|| {
                p.values.push(v.clone());
                p.values.len() - 1
            });
            u32::try_from(i).unwrap_or(u32::MAX)
        })
        .collect()
}

/// The page of `table`: `specs` split the labels, `dated` says when each row was stored.
pub fn page(store: &str, table: &FullTable<'_>, specs: &Specs, dated: &[Dated]) -> Page {
    // When each variant was stored: its last row's stamp.
    let mut stored: BTreeMap<(&str, &str, &str, &str, &str, &str), f64> = BTreeMap::new();
    for d in dated {
        let m = &d.measurement;
        if let Some(at) = timeline::seconds(&d.created) {
            let key = (
                m.package.as_str(),
                m.bench.as_str(),
                m.device.as_str(),
                m.revision.as_str(),
                m.ct_workload.as_str(),
                m.variant.as_str(),
            );
            let e = stored.entry(key).or_insert(at);
            *e = e.max(at);
        }
    }
    let first = stored.values().copied().fold(f64::INFINITY, f64::min);
    let groups = table
        .groups
        .iter()
        .map(|full| {
            let (g, ranked, rows) = (full.group, &full.ranked, &full.rows);
            let spec = specs.get(&(g.package.clone(), g.function.clone()));
            let mut params = params(spec);
            let names: Vec<String> = params.iter().map(|p| p.name.clone()).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let base_values: Vec<String> = spec
                .map(|s| s.base.iter().map(|v| v.to_string()).collect())
                .unwrap_or_default();
            let base_rows = g.base();
            let workloads = rt_workloads(base_rows, g.variants.values().flatten());
            let typical = crate::results::timing(base_rows)
                .or_else(|| ranked.iter().find_map(|r| r.timing))
                .map_or(1e-3, |t| t.time);
            let (unit, scale) = unit(typical);
            let mut controls: Vec<Vec<f64>> = Vec::new();
            let mut control_index: BTreeMap<Vec<u64>, usize> = BTreeMap::new();
            let mut timeline = Timeline::default();
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            let mut v = Variants::default();
            let energies = Energies::of(g);
            for (r, cells) in ranked.iter().zip(rows) {
                if energies.any() {
                    v.energy.push(energies.words(&r.variant));
                }
                let ms: &[Measurement] = g.variants.get(&r.variant).map_or(&[], Vec::as_slice);
                timeline.add(ms);
                let values = if r.variant == "base" {
                    Some(base_values.clone()).filter(|b| b.len() == names.len())
                } else {
                    split_label(&r.variant, &names)
                };
                let ix = values.map(|vals| indices(&mut params, &vals));
                let spelled = ix.as_ref().is_some_and(|_| r.variant != "base");
                v.label.push((!spelled).then(|| r.variant.clone()));
                v.params.push(ix.unwrap_or_default());
                v.cells.push(cells[1..].to_vec());
                v.status.push(r.status);
                v.message.push(r.message.clone());
                v.build
                    .push(ms.iter().find_map(|m| m.build_seconds).map(significant));
                v.run.push(
                    ms.iter()
                        .filter_map(|m| m.run_seconds)
                        .reduce(f64::max)
                        .map(significant),
                );
                let key = (
                    g.package.as_str(),
                    g.bench.as_str(),
                    g.device.as_str(),
                    g.revision.as_str(),
                    g.ct_workload.as_str(),
                    r.variant.as_str(),
                );
                let at = stored.get(&key).copied();
                if let Some(at) = at {
                    lo = lo.min(at);
                    hi = hi.max(at);
                }
                v.at.push(
                    at.map(|a| (a - first) * 1000.0)
                        .map(|ms| ms.round() / 1000.0),
                );
                let scaled = |s: &[f64]| -> Vec<f64> {
                    s.iter()
                        .filter(|x| x.is_finite())
                        .map(|x| significant(x * scale))
                        .collect()
                };
                v.measured.push(
                    ms.iter()
                        .filter(|m| m.rt_workload != "*")
                        .filter_map(|m| {
                            let rt = workloads.iter().position(|w| *w == m.rt_workload)?;
                            let control = (!m.control.is_empty()).then(|| {
                                let c = scaled(&m.control);
                                let key: Vec<u64> = c.iter().map(|x| x.to_bits()).collect();
                                *control_index.entry(key).or_insert_with(|| {
                                    controls.push(c);
                                    controls.len() - 1
                                })
                            });
                            Some(Workload(
                                rt,
                                m.stop.map(|s| s.as_str()),
                                scaled(&m.samples),
                                control,
                            ))
                        })
                        .collect(),
                );
            }
            if hi >= lo {
                timeline.span = hi - lo;
            }
            GroupData {
                title: crate::results::present::title(g),
                function: g.function.clone(),
                params,
                workloads,
                unit,
                scale,
                controls,
                timeline,
                variants: v,
            }
        })
        .collect();
    Page {
        version: PAGE_VERSION,
        store: store.to_string(),
        header: table.header.clone(),
        legend: table.legend.clone(),
        groups,
    }
}

/// The runtime workloads of a group: base's in its order, then any only variants have
/// (`*`, a variant that failed before measuring, is none).
fn rt_workloads<'a>(
    base: &'a [Measurement],
    all: impl Iterator<Item = &'a Measurement>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in base.iter().chain(all) {
        if m.rt_workload != "*" && !out.contains(&m.rt_workload) {
            out.push(m.rt_workload.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_keep_four_digits_in_a_unit_that_reads() {
        assert_eq!(significant(110.207_996_5), 110.2);
        assert_eq!(significant(0.000_123_456), 0.000_123_5);
        assert_eq!(unit(145e-6), ("us", 1e6));
        assert_eq!(unit(2e-3), ("ms", 1e3));
        assert_eq!(unit(5e-8), ("ns", 1e9));
    }
}
