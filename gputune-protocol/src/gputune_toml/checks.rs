//! What makes a `gputune.toml` entry usable by a function: its parameters are the function's,
//! its size ranges are of the axis the function dispatches on and do not overlap, and no two
//! entries for the same device disagree. A failed check is a build error naming the entry.

use gputune_grammar::{Point, TuneSpec, Value};

use super::{entry_name, sizes, Entry, GputuneToml, KeyKind, SizeRange, TomlError, MEASURED_ON};

/// An entry of one function, checked against its `#[tune]`: what the production dispatch
/// compiles in.
#[derive(Debug, Clone, PartialEq)]
pub struct AppliedPoint {
    /// The compile-time workload key (`T=f32`, `*`).
    pub workload: String,
    /// The device key: a model name or an architecture.
    pub device: String,
    /// What the device key names.
    pub kind: KeyKind,
    /// The sizes it holds for, one range per axis it constrains; empty: every size.
    pub sizes: Vec<SizeRange>,
    /// The point it names.
    pub point: Point,
    /// The model it was measured on, where the entry says (`measured-on`).
    pub measured_on: Option<String>,
}

/// The per-size entries of one key: no size (no shape, over several axes) in two of them.
pub(super) fn ranges(entries: &[Entry]) -> Result<(), String> {
    let sized: Vec<&[SizeRange]> = entries
        .iter()
        .map(|e| &e.sizes[..])
        .filter(|r| !r.is_empty())
        .collect();
    for (i, a) in sized.iter().enumerate() {
        if let Some(b) = sized[i + 1..].iter().find(|b| sizes::overlap(a, b)) {
            return Err(format!(
                "the size ranges {} and {} overlap: each size has one winner",
                sizes::describe(a),
                sizes::describe(b)
            ));
        }
    }
    Ok(())
}

impl GputuneToml {
    /// The entries of `function` as points of `spec`, checked: every parameter present and of
    /// its kind, per-size entries of the axis `spec`'s `size(…)` names, and no model entry
    /// contradicting an architecture entry measured on that model (see `same_device`).
    pub fn entries(&self, function: &str, spec: &TuneSpec) -> Result<Vec<AppliedPoint>, TomlError> {
        let mut out = Vec::new();
        let Some(workloads) = self.functions.get(function) else {
            return Ok(out);
        };
        for (workload, devices) in workloads {
            for (device, entries) in devices {
                let at = entry_name(function, workload, device);
                for e in entries {
                    let point = point_of(spec, &e.params)
                        .map_err(|m| TomlError(format!("{at}{}: {m}", range_note(e))))?;
                    for r in &e.sizes {
                        size_axis(function, spec, r)
                            .map_err(|m| TomlError(format!("{at}: {m}")))?;
                    }
                    out.push(AppliedPoint {
                        workload: workload.clone(),
                        device: device.clone(),
                        kind: self.kind(device),
                        sizes: e.sizes.clone(),
                        point,
                        measured_on: e.measured_on.clone(),
                    });
                }
            }
        }
        same_device(function, &out)?;
        Ok(out)
    }
}

/// ` (Elements 1024..4096)` for a per-size entry, nothing for a single one.
fn range_note(e: &Entry) -> String {
    note(&e.sizes)
}

fn note(ranges: &[SizeRange]) -> String {
    if ranges.is_empty() {
        String::new()
    } else {
        format!(" ({})", sizes::describe(ranges))
    }
}

/// A per-size entry's axes must be ones the function dispatches on (its `size(…)`).
fn size_axis(function: &str, spec: &TuneSpec, r: &SizeRange) -> Result<(), String> {
    if spec.sizes.is_empty() {
        return Err(format!(
            "a per-size entry ({}), but `{function}` declares no size to dispatch on: add \
             `size({} = …)` to its #[tune], naming the argument that holds the size",
            r.describe(),
            r.axis
        ));
    }
    if spec.sizes.iter().any(|s| s.axis == r.axis) {
        return Ok(());
    }
    let axes: Vec<&str> = spec.sizes.iter().map(|s| s.axis.as_str()).collect();
    Err(format!(
        "unknown size axis `{}`: `{function}` dispatches on `{}` (its size(…))",
        r.axis,
        axes.join("`, `")
    ))
}

/// "The same device": a model key and an architecture key whose `measured-on` names that
/// model, for the same function and compile-time workload. Both then claim to be what was
/// measured on that model, so they must agree where they are alike: two single winners name
/// the same point, and two per-size winners name the same point at every size both cover. (A
/// single winner beside a per-size one is a choice of granularity, not a contradiction.)
fn same_device(function: &str, points: &[AppliedPoint]) -> Result<(), TomlError> {
    let models = points.iter().filter(|p| p.kind == KeyKind::Model);
    for m in models {
        for a in points.iter().filter(|a| {
            a.kind == KeyKind::Arch
                && a.workload == m.workload
                && a.sizes.is_empty() == m.sizes.is_empty()
        }) {
            let Some(measured_on) = a.measured_on.as_deref() else {
                continue;
            };
            if measured_on != m.device {
                continue;
            }
            let clash = sizes::overlap(&m.sizes, &a.sizes) && m.point != a.point;
            if clash {
                return Err(TomlError(format!(
                    "{}{} and {}{} ({MEASURED_ON} = {:?}) name different points for the same \
                     device ({} and {}): both say what won on {measured_on:?}, so one is stale; \
                     apply again, or remove one",
                    entry_name(function, &m.workload, &m.device),
                    note(&m.sizes),
                    entry_name(function, &a.workload, &a.device),
                    note(&a.sizes),
                    measured_on,
                    m.point.label(),
                    a.point.label()
                )));
            }
        }
    }
    Ok(())
}

/// The point that `params` names, every parameter present and of the right kind.
fn point_of(spec: &TuneSpec, params: &toml::Table) -> Result<Point, String> {
    let names: Vec<&str> = spec.params.iter().map(|p| p.name.as_str()).collect();
    if let Some(unknown) = params.keys().find(|k| !names.contains(&k.as_str())) {
        return Err(format!(
            "`{unknown}` is not a parameter; parameters: {}",
            names.join(", ")
        ));
    }
    let mut values = Vec::new();
    for (p, base) in spec.params.iter().zip(&spec.base) {
        let v = params
            .get(&p.name)
            .ok_or_else(|| format!("missing `{}`", p.name))?;
        let value = match (base, v) {
            (Value::Int(_), toml::Value::Integer(i)) => Value::Int(*i),
            (Value::Bool(_), toml::Value::Boolean(b)) => Value::Bool(*b),
            (Value::Ident(_), toml::Value::String(s)) => Value::Ident(s.clone()),
            (Value::Str(_), toml::Value::String(s)) => Value::Str(s.clone()),
            (base, other) => {
                return Err(format!(
                    "`{name}` = {other}, but `{name}` takes {} values",
                    base.kind(),
                    name = p.name,
                ))
            }
        };
        values.push((p.name.clone(), value));
    }
    Ok(Point { values })
}
