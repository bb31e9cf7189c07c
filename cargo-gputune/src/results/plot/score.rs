//! The score of a tuned function's variants over one or two of its parameters: variant labels
//! split into parameter values, the best score per cell, and the chart that shows them (a heat
//! map for two parameters, a line for one).

use std::collections::BTreeMap;

use anyhow::Result;
use gputune_grammar::TuneSpec;

use super::cell::Cell;
use super::{heat_map, line};
use crate::results::{Group, Ranked};

/// The values of `label`'s parameters, split at `.name_` of the next parameter in declaration
/// order (a value may itself hold `_` or `.`).
pub(crate) fn split_label(label: &str, names: &[&str]) -> Option<Vec<String>> {
    let mut rest = label;
    let mut values = Vec::new();
    for (i, name) in names.iter().enumerate() {
        rest = rest.strip_prefix(name)?.strip_prefix('_')?;
        let end = match names.get(i + 1) {
            Some(next) => rest.find(&format!(".{next}_"))?,
            None => rest.len(),
        };
        values.push(rest[..end].to_string());
        rest = &rest[end..];
        if i + 1 < names.len() {
            rest = rest.strip_prefix('.')?;
        }
    }
    Some(values)
}

/// The score of `g` over the parameters `chosen` (indices into `spec.params`); `None` when no
/// variant's label fits the attribute.
pub(super) fn svg(
    g: &Group,
    ranked: &[Ranked],
    spec: &TuneSpec,
    chosen: &[usize],
) -> Result<Option<String>> {
    if chosen.is_empty() {
        return Ok(None);
    }
    let names: Vec<&str> = spec.params.iter().map(|p| p.name.as_str()).collect();
    // Axis values in declared order; a stored value the attribute no longer declares goes last.
    let mut axes: Vec<Vec<String>> = chosen
        .iter()
        .map(|&i| {
            spec.params[i]
                .values
                .iter()
                .map(|v| v.to_string())
                .collect()
        })
        .collect();
    let mut cells: BTreeMap<Vec<usize>, Cell> = BTreeMap::new();
    for r in ranked.iter().filter(|r| r.variant != "base") {
        let Some(values) = split_label(&r.variant, &names) else {
            continue;
        };
        let key: Vec<usize> = chosen
            .iter()
            .zip(axes.iter_mut())
            .map(|(&i, axis)| {
                let v = &values[i];
                axis.iter().position(|a| a == v).unwrap_or_else(|| {
                    axis.push(v.clone());
                    axis.len() - 1
                })
            })
            .collect();
        let cell = cells.entry(key).or_default();
        match &r.score {
            Some(s) => {
                if !matches!(&cell.best, Some((b, _, _)) if *b >= s.score) {
                    cell.best = Some((s.score, s.significant, r.variant.clone()));
                }
            }
            None => cell.failed += 1,
        }
    }
    if cells.is_empty() {
        return Ok(None);
    }
    let others: Vec<&str> = (0..names.len())
        .filter(|i| !chosen.contains(i))
        .map(|i| names[i])
        .collect();
    let over: Vec<&str> = chosen.iter().map(|&i| names[i]).collect();
    let title = format!(
        "{}.{} [{}] · score over {}",
        g.bench,
        g.function,
        g.ct_workload,
        over.join(" × ")
    );
    let best = cells
        .values()
        .filter_map(|c| c.best.as_ref())
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|b| format!(", {}", fastest_text(b)))
        .unwrap_or_default();
    let subtitle = format!(
        "{} on {}: score against base (1 = base){best}{}",
        g.package,
        crate::results::present::device_name(g),
        if others.is_empty() {
            String::new()
        } else {
            format!(
                "; each {} is the best over {}",
                if chosen.len() == 2 { "cell" } else { "point" },
                others.join(", ")
            )
        }
    );
    let svg = if chosen.len() == 2 {
        heat_map::svg(&title, &subtitle, &over, &axes, &cells)?
    } else {
        line::svg(&title, &subtitle, over[0], &axes[0], &cells)?
    };
    Ok(Some(svg))
}

/// The fastest variant found, framed honestly: one within noise of base, or slower than
/// base, is not called a win (`fastest found x (0.74× base: slower than base)`).
fn fastest_text(best: &(f64, bool, String)) -> String {
    let (score, significant, label) = best;
    let how = if !significant {
        ": within noise of base"
    } else if *score < 1.0 {
        ": slower than base"
    } else {
        ""
    };
    format!("fastest found {label} ({score:.2}× base{how})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_split_at_the_declared_parameter_names() {
        let split = |label: &str, names: &[&str]| split_label(label, names);
        assert_eq!(
            split("items_per_thread_4.tpb_128", &["items_per_thread", "tpb"]),
            Some(vec!["4".to_string(), "128".to_string()])
        );
        assert_eq!(
            split("load_ld_ca.v_1.x_-2", &["load", "v", "x"]),
            Some(vec!["ld_ca".into(), "1".into(), "-2".into()])
        );
        assert_eq!(
            split("s_a.b.t_true", &["s", "t"]),
            Some(vec!["a.b".into(), "true".into()])
        );
        assert_eq!(split("tpb_1", &["ipt"]), None);
        assert_eq!(split("ipt_1", &["ipt", "tpb"]), None);
    }

    #[test]
    fn a_variant_slower_than_base_is_not_called_best() {
        let text = |score: f64, significant: bool| fastest_text(&(score, significant, "v".into()));
        assert_eq!(text(1.5, true), "fastest found v (1.50× base)");
        assert_eq!(
            text(0.74, true),
            "fastest found v (0.74× base: slower than base)"
        );
        assert_eq!(
            text(1.01, false),
            "fastest found v (1.01× base: within noise of base)"
        );
    }
}
