//! What `apply` writes for one group, and how the file keeps one device's entries in step.

use anyhow::Result;
use gputune_grammar::{Point, TuneSpec};
use gputune_protocol::gputune_toml::{params_of, Entries, Entry, GputuneToml, KeyKind, SizeRange};

use super::Options;
use crate::host::usage::Usage;
use crate::results::per_size::{self, Analysis};
use crate::results::present;
use crate::results::Group;

/// What `apply` writes for one group.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The device key: the model, or with `--arch-only` the architecture.
    pub key: String,
    /// The entries to write under it; `None`: nothing to apply.
    pub entries: Option<Entries>,
    /// Why something was not applied as asked, for the status output.
    pub notes: Vec<String>,
    /// What was applied, for stdout.
    pub line: String,
}

/// The entries of `g`'s winners under `options`.
pub fn plan(g: &Group, spec: &TuneSpec, options: &Options) -> Result<Planned> {
    let model = present::model(&g.device).to_string();
    let key = if options.arch_only {
        g.arch.clone()
    } else {
        model.clone()
    };
    let what = format!("{}.{} [{}] on {key}", g.bench, g.function, g.ct_workload);
    let measured_on = (KeyKind::of(&key) == KeyKind::Arch).then(|| model.clone());
    let mut planned = Planned {
        key: key.clone(),
        entries: None,
        notes: Vec::new(),
        line: String::new(),
    };
    if options.per_size {
        if let Some(analysis) = per_size_analysis(g, spec, options, &mut planned.notes)? {
            if analysis.differs() {
                return Ok(per_size_plan(planned, &analysis, spec, measured_on, &what));
            }
            planned.notes.push(format!(
                "{what}: one winner ({}) is best at every measured size, within noise and the \
                 significance rule; applied as one entry",
                analysis.single
            ));
        }
    }
    let Some(winner) = g.winner_by(options.objective) else {
        planned.notes.push(format!(
            "No significant, verified winner for {what}; nothing applied"
        ));
        return Ok(planned);
    };
    let Some(point) = point_of(spec, &winner.variant) else {
        return Ok(planned);
    };
    let score = winner.score.as_ref().map_or(0.0, |s| s.score);
    planned.line = match options.objective {
        crate::results::objective::Objective::Time => {
            format!("{what}: {} (score {score:.4})", winner.variant)
        }
        o => format!(
            "{what}: {} ({} score {score:.4})",
            winner.variant,
            o.as_str()
        ),
    };
    planned.entries = Some(vec![Entry {
        params: params_of(&point),
        sizes: Vec::new(),
        measured_on,
    }]);
    Ok(planned)
}

/// The per-size analysis of `g` on the size axis, or `None` (with a note) where the group
/// cannot have one.
fn per_size_analysis(
    g: &Group,
    spec: &TuneSpec,
    options: &Options,
    notes: &mut Vec<String>,
) -> Result<Option<Analysis>> {
    let what = format!("{}.{} [{}]", g.bench, g.function, g.ct_workload);
    if spec.sizes.len() > 1 {
        let axes: Vec<&str> = spec.sizes.iter().map(|s| s.axis.as_str()).collect();
        if let Some(axis) = &options.size_axis {
            return Err(anyhow::Error::new(Usage(format!(
                "--size-axis {axis}, but `{}` dispatches on the shape {} (its size(…)): its \
                 winners are applied per shape; leave --size-axis out",
                g.function,
                axes.join(" × ")
            ))));
        }
        let Some(buckets) = per_size::shape_buckets(g, &axes) else {
            notes.push(format!(
                "{what}: some runtime workloads have no value on an axis of {}; one winner \
                 applied",
                axes.join(" × ")
            ));
            return Ok(None);
        };
        if buckets.len() < 2 {
            notes.push(format!(
                "{what}: one shape was measured; one winner applied"
            ));
            return Ok(None);
        }
        return Ok(Some(per_size::analyse(g, buckets)));
    }
    let Some(declared) = spec.size() else {
        notes.push(format!(
            "{what}: `{}` declares no size to dispatch on (add size(Axis = expr) to its \
             #[tune]); one winner applied",
            g.function
        ));
        return Ok(None);
    };
    if let Some(axis) = &options.size_axis {
        if *axis != declared.axis {
            return Err(anyhow::Error::new(Usage(format!(
                "--size-axis {axis}, but `{}` dispatches on `{}` (its size(…)): production \
                 builds could not tell {axis} apart",
                g.function, declared.axis
            ))));
        }
    }
    let Some(buckets) = per_size::size_buckets(g, &declared.axis) else {
        notes.push(format!(
            "{what}: some runtime workloads have no `{}` value; one winner applied",
            declared.axis
        ));
        return Ok(None);
    };
    if buckets.len() < 2 {
        notes.push(format!(
            "{what}: one size of `{}` was measured; one winner applied",
            declared.axis
        ));
        return Ok(None);
    }
    Ok(Some(per_size::analyse(g, buckets)))
}

/// The per-size entries of `analysis`.
fn per_size_plan(
    mut planned: Planned,
    analysis: &Analysis,
    spec: &TuneSpec,
    measured_on: Option<String>,
    what: &str,
) -> Planned {
    if spec.sizes.len() > 1 {
        return per_shape_plan(planned, analysis, spec, measured_on, what);
    }
    let axis = spec.size().map_or_else(String::new, |s| s.axis.clone());
    let ranges: Vec<(SizeRange, String)> = analysis
        .ranges()
        .into_iter()
        .map(|(from, below, label)| {
            let axis = axis.clone();
            (SizeRange { axis, from, below }, label)
        })
        .collect();
    let mut entries = Vec::new();
    for (range, label) in &ranges {
        let Some(point) = point_of(spec, label) else {
            return planned;
        };
        entries.push(Entry {
            params: params_of(&point),
            sizes: vec![range.clone()],
            measured_on: measured_on.clone(),
        });
    }
    let described: Vec<String> = ranges
        .iter()
        .map(|(range, label)| format!("{} {label}", range.describe()))
        .collect();
    let gains: Vec<String> = analysis
        .choices
        .iter()
        .filter(|c| c.chosen != analysis.single)
        .filter_map(|c| Some(format!("{} {:.3}x", c.bucket.label, c.speedup?)))
        .collect();
    planned.line = format!(
        "{what}: per size: {} (against the single winner {}: {})",
        described.join(", "),
        analysis.single,
        gains.join(", ")
    );
    planned.entries = Some(entries);
    planned
}

/// A function dispatching on a shape of several axes: one entry per measured shape, holding
/// for that shape alone (shapes between measured ones have no order to split them by); a
/// shape not measured runs what the device's other entries say, else base.
fn per_shape_plan(
    mut planned: Planned,
    analysis: &Analysis,
    spec: &TuneSpec,
    measured_on: Option<String>,
    what: &str,
) -> Planned {
    let mut entries = Vec::new();
    for c in &analysis.choices {
        let Some(point) = point_of(spec, &c.chosen) else {
            return planned;
        };
        entries.push(Entry {
            params: params_of(&point),
            sizes: c
                .bucket
                .shape
                .iter()
                .map(|(axis, v)| SizeRange {
                    axis: axis.clone(),
                    from: Some(*v),
                    below: v.checked_add(1),
                })
                .collect(),
            measured_on: measured_on.clone(),
        });
    }
    let described: Vec<String> = analysis
        .choices
        .iter()
        .map(|c| {
            let gain = c
                .speedup
                .filter(|_| c.chosen != analysis.single)
                .map(|s| format!(" {s:.3}x"))
                .unwrap_or_default();
            format!("{} {}{gain}", c.bucket.label, c.chosen)
        })
        .collect();
    planned.line = format!(
        "{what}: per shape: {} (against the single winner {}); other shapes run base",
        described.join(", "),
        analysis.single,
    );
    planned.entries = Some(entries);
    planned
}

/// The point of `label` (`base` included: where nothing beats base, base is a size's winner).
fn point_of(spec: &TuneSpec, label: &str) -> Option<Point> {
    if label == "base" {
        return Some(spec.base_point());
    }
    spec.space().into_iter().find(|p| p.label() == label)
}

/// Writes `entries` under `key` for `g`, and brings the other entry of the same device in
/// step (see `gputune_toml`'s same-device check): a model entry and an architecture entry
/// `measured-on` that model, of the same granularity, must agree, and both are that model's
/// own. Returns notes on what else changed. Entries of other models are never touched.
pub fn write(
    file: &mut GputuneToml,
    g: &Group,
    key: &str,
    entries: Entries,
    arch_only: bool,
) -> Vec<String> {
    let model = present::model(&g.device).to_string();
    let mut notes = Vec::new();
    let (function, ct) = (g.function.as_str(), g.ct_workload.as_str());
    if arch_only {
        if let Some(previous) = file
            .get(function, ct, key)
            .and_then(|e| e.first())
            .and_then(|e| e.measured_on.clone())
            .filter(|m| *m != model)
        {
            notes.push(format!(
                "note: {} was measured on {previous}; replaced with the winner of {model} \
                 (--arch-only)",
                gputune_protocol::gputune_toml::entry_name(function, ct, key)
            ));
        }
    }
    let per_size = entries.iter().any(|e| !e.sizes.is_empty());
    // What an entry says, whoever it says it for.
    let strip = |es: &Entries| -> Entries {
        es.iter()
            .map(|e| Entry {
                measured_on: None,
                ..e.clone()
            })
            .collect()
    };
    let ours = strip(&entries);
    let others: Vec<String> = file
        .functions
        .get(function)
        .and_then(|w| w.get(ct))
        .map(|devices| {
            devices
                .iter()
                .filter(|(device, es)| {
                    let same_device = if arch_only {
                        file.kind(device) == KeyKind::Model && **device == model
                    } else {
                        file.kind(device) == KeyKind::Arch
                            && es.iter().any(|e| e.measured_on.as_deref() == Some(&model))
                    };
                    same_device
                        && es.iter().any(|e| !e.sizes.is_empty()) == per_size
                        && strip(es) != ours
                })
                .map(|(device, _)| device.clone())
                .collect()
        })
        .unwrap_or_default();
    for device in others {
        let mut step = entries.clone();
        for e in &mut step {
            e.measured_on = (file.kind(&device) == KeyKind::Arch).then(|| model.clone());
        }
        notes.push(format!(
            "note: {} was also measured on {model}; updated to agree with {}",
            gputune_protocol::gputune_toml::entry_name(function, ct, &device),
            gputune_protocol::gputune_toml::entry_name(function, ct, key)
        ));
        file.set_entries(function, ct, &device, step);
    }
    file.set_entries(function, ct, key, entries);
    notes
}
