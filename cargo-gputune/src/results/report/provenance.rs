//! What `report` says of where and how a group was measured: each distinct provenance of its
//! rows (toolchain, host, driver, NVRTC, clocks, power limit, modes) and the SM clocks of its
//! samples, so that a down-clocked run is seen. In the table and markdown as lines under the
//! group's title; in the JSON as the group's `provenance` list, which each workload's
//! `provenance` indexes, and each workload's `sm_clock` (what `check` reads from a baseline).

use std::sync::Arc;

use gputune_protocol::Provenance;
use serde_json::{json, Value};

use crate::results::provenance::{mhz, summary, Clocks, DOWN_CLOCKED};
use crate::results::store::Measurement;
use crate::results::Group;

/// The distinct provenances of `g`'s rows, in the order first met, each with how many rows
/// it measured; and how many rows record none.
pub fn distinct(g: &Group) -> (Vec<(Arc<Provenance>, usize)>, usize) {
    let mut out: Vec<(Arc<Provenance>, usize)> = Vec::new();
    let mut unknown = 0;
    for m in g.variants.values().flatten() {
        match &m.provenance {
            Some(p) => match out.iter_mut().find(|(q, _)| q == p) {
                Some((_, n)) => *n += 1,
                None => out.push((p.clone(), 1)),
            },
            None => unknown += 1,
        }
    }
    (out, unknown)
}

/// The index into [`distinct`]'s list of `m`'s provenance.
fn index_of(list: &[(Arc<Provenance>, usize)], m: &Measurement) -> Option<usize> {
    let p = m.provenance.as_ref()?;
    list.iter().position(|(q, _)| q == p)
}

/// The application SM clock the group was measured at, where every provenance that says
/// agrees on one.
fn application_clock(list: &[(Arc<Provenance>, usize)]) -> Option<f64> {
    let mut clocks = list
        .iter()
        .filter_map(|(p, _)| p.cuda.as_ref()?.application_sm_clock);
    let first = clocks.next()?;
    clocks.all(|c| c == first).then_some(first)
}

/// The lines under a group's title: its provenance(s), then its samples' SM clocks. None for
/// a group whose rows record neither (a store from before provenance, an import).
pub fn lines(g: &Group) -> Vec<String> {
    let (list, unknown) = distinct(g);
    let mut out = Vec::new();
    match list.as_slice() {
        [] => {}
        [(p, _)] if unknown == 0 => out.push(format!("measured: {}", summary(p))),
        _ => {
            for (p, n) in &list {
                out.push(format!(
                    "measured ({}): {}",
                    crate::results::present::count(*n, "row"),
                    summary(p)
                ));
            }
            if unknown > 0 {
                out.push(format!(
                    "measured ({}): provenance not recorded",
                    crate::results::present::count(unknown, "row")
                ));
            }
        }
    }
    let clocks: Vec<f64> = g
        .variants
        .values()
        .flatten()
        .flat_map(|m| m.sm_clocks.iter().copied())
        .collect();
    if let Some(c) = Clocks::of(&clocks, application_clock(&list)) {
        out.push(format!(
            "SM clock of the samples: {}–{}, median {}; {} of {} under {:.0} % of {}{}",
            mhz(c.min),
            mhz(c.max),
            mhz(c.median),
            c.down_clocked,
            c.samples,
            DOWN_CLOCKED * 100.0,
            mhz(c.reference),
            if application_clock(&list).is_some() {
                " (the application clock)"
            } else {
                " (the fastest sample's)"
            }
        ));
    }
    out
}

/// The group's `provenance` in the report JSON: each distinct provenance, as the bench sent
/// it, in the order first met.
pub fn json(g: &Group) -> Value {
    Value::Array(
        distinct(g)
            .0
            .iter()
            .map(|(p, _)| serde_json::to_value(p.as_ref()).unwrap_or(Value::Null))
            .collect(),
    )
}

/// A workload's `provenance` (its index into the group's list, `null` if unknown) and
/// `sm_clock` (`{"min", "median", "max", "down_clocked", "reference"}` in Hz, `null` without
/// clocks), as the report JSON writes them.
pub fn workload_json(g: &Group, m: &Measurement) -> (Value, Value) {
    let (list, _) = distinct(g);
    let application = m
        .provenance
        .as_ref()
        .and_then(|p| p.cuda.as_ref()?.application_sm_clock);
    let clocks = Clocks::of(&m.sm_clocks, application).map(|c| {
        json!({
            "min": c.min,
            "median": c.median,
            "max": c.max,
            "down_clocked": c.down_clocked,
            "reference": c.reference,
        })
    });
    (
        index_of(&list, m).map_or(Value::Null, Value::from),
        clocks.unwrap_or(Value::Null),
    )
}

#[cfg(test)]
mod tests {
    use gputune_protocol::CudaProvenance;

    use super::*;

    fn provenance(driver: &str) -> Arc<Provenance> {
        Arc::new(Provenance {
            host: Some("gpu-7".into()),
            gputune: "0.1.0".into(),
            rustc: None,
            profile: Some("release".into()),
            opt_level: None,
            debug_assertions: None,
            cuda: Some(CudaProvenance {
                device: 0,
                uuid: None,
                pci_bus_id: None,
                driver: Some(driver.into()),
                driver_api: Some(13000),
                nvrtc: Some("13.0".into()),
                application_sm_clock: Some(1.98e9),
                application_memory_clock: None,
                power_limit: Some(700.0),
                persistence_mode: None,
                ecc_mode: None,
                nvml_error: None,
            }),
        })
    }

    fn row(variant: &str, p: Option<Arc<Provenance>>, clocks: &[f64]) -> Measurement {
        let mut m = crate::results::tests::m(variant, "N=1", 1.0, 0.01);
        m.provenance = p;
        m.sm_clocks = clocks.to_vec();
        m
    }

    #[test]
    fn one_provenance_is_one_line_and_the_clocks_another() {
        let p = provenance("580.159.04");
        let g = crate::results::groups(
            vec![
                row("base", Some(p.clone()), &[1.98e9, 1.98e9]),
                row("x_1", Some(p.clone()), &[1.98e9, 1.5e9]),
            ],
            false,
        )
        .remove(0);
        let lines = lines(&g);
        assert_eq!(
            lines[0],
            "measured: host gpu-7, release; driver 580.159.04, CUDA 13.0, NVRTC 13.0; SM \
             clock 1980 MHz, power limit 700 W"
        );
        assert_eq!(
            lines[1],
            "SM clock of the samples: 1500 MHz–1980 MHz, median 1980 MHz; 1 of 4 under 95 % \
             of 1980 MHz (the application clock)"
        );
        let doc = json(&g);
        assert_eq!(doc[0]["cuda"]["driver"], "580.159.04");
        let (index, clocks) = workload_json(&g, &g.variants["x_1"][0]);
        assert_eq!(
            (index, clocks["down_clocked"].clone()),
            (json!(0), json!(1))
        );
    }

    #[test]
    fn several_provenances_are_listed_with_their_rows_and_none_says_nothing() {
        let g = crate::results::groups(
            vec![
                row("base", Some(provenance("580.159.04")), &[]),
                row("x_1", Some(provenance("575.57.08")), &[]),
                row("x_2", Some(provenance("575.57.08")), &[]),
                row("x_3", None, &[]),
            ],
            false,
        )
        .remove(0);
        let lines = lines(&g);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].starts_with("measured (1 row): host gpu-7"),
            "{lines:?}"
        );
        assert!(lines[1].starts_with("measured (2 rows): ") && lines[1].contains("575.57.08"));
        assert_eq!(lines[2], "measured (1 row): provenance not recorded");
        assert_eq!(json(&g).as_array().map(Vec::len), Some(2));
        let (index, clocks) = workload_json(&g, &g.variants["x_3"][0]);
        assert!(index.is_null() && clocks.is_null());

        let old = crate::results::groups(vec![row("base", None, &[])], false).remove(0);
        assert!(
            super::lines(&old).is_empty(),
            "an old store's report is as it was"
        );
    }
}
