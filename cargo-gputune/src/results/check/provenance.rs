//! Whether the baseline and the current run were measured under the same provenance: per compared
//! group, each field that changes what a time means (driver, CUDA, NVRTC, the application clocks,
//! the power limit: [`crate::results::provenance::Field::compared`]) held against the baseline's.
//! `check` says so in every output; with `--strict-provenance` a difference fails the gate. A field
//! one side does not know (a baseline exported before provenance, a host without NVML) is not a
//! difference, and `check` says what it could not compare.

use std::collections::BTreeSet;

use gputune_protocol::Provenance;
use serde_json::Value;

use crate::results::provenance::fields;
use crate::results::Group;

/// One field whose values differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// Its key (`driver`).
    pub key: &'static str,
    /// Its name in words (`driver`).
    pub label: &'static str,
    /// Its values in the baseline, as shown (several where its rows were measured under
    /// several).
    pub then: Vec<String>,
    /// Its values now.
    pub now: Vec<String>,
}

/// A compared group measured under another provenance than its baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// `package/bench.function [ct] on device`.
    pub group: String,
    /// What differs.
    pub changed: Vec<Changed>,
}

impl Difference {
    /// `driver 580.159.04 → 575.57.08, power limit 700 W → 600 W`.
    pub fn describe(&self) -> String {
        self.changed
            .iter()
            .map(|c| format!("{} {} → {}", c.label, c.then.join("/"), c.now.join("/")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What comparing the provenance of the matched groups found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProvenanceCheck {
    /// The groups measured under another provenance.
    pub differences: Vec<Difference>,
    /// Groups whose provenance could not be compared, and why (`… : the baseline records
    /// none`).
    pub unknown: Vec<String>,
}

/// The value of each compared field over `provenances` (the distinct ones of a group).
fn values(provenances: &[Provenance]) -> Vec<(&'static str, &'static str, BTreeSet<String>)> {
    let mut out: Vec<(&'static str, &'static str, BTreeSet<String>)> = Vec::new();
    for p in provenances {
        for f in fields(p).into_iter().filter(|f| f.compared) {
            let entry = match out.iter_mut().find(|(k, _, _)| *k == f.key) {
                Some(e) => e,
                None => {
                    out.push((f.key, f.label, BTreeSet::new()));
                    out.last_mut().expect("just pushed")
                }
            };
            entry.2.extend(f.value);
        }
    }
    out
}

/// Compares the baseline group `bg` (report JSON, its `provenance` list) with the current
/// group `g`, named `name`, adding what it finds to `check`.
pub fn compare_group(bg: &Value, g: &Group, name: &str, check: &mut ProvenanceCheck) {
    let then: Vec<Provenance> = bg["provenance"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| serde_json::from_value(p.clone()).ok())
        .collect();
    let now: Vec<Provenance> = crate::results::report::provenance::distinct(g)
        .0
        .into_iter()
        .map(|(p, _)| p.as_ref().clone())
        .collect();
    match (then.is_empty(), now.is_empty()) {
        (true, true) => {
            check
                .unknown
                .push(format!("{name}: neither run records its provenance"));
            return;
        }
        (true, false) => {
            check.unknown.push(format!(
                "{name}: the baseline records no provenance (exported before gputune recorded it)"
            ));
            return;
        }
        (false, true) => {
            check
                .unknown
                .push(format!("{name}: the current run records no provenance"));
            return;
        }
        (false, false) => {}
    }
    let now_values = values(&now);
    let changed: Vec<Changed> = values(&then)
        .into_iter()
        .filter_map(|(key, label, was)| {
            let is = &now_values.iter().find(|(k, _, _)| *k == key)?.2;
            // Unknown on either side is not a difference.
            (!was.is_empty() && !is.is_empty() && &was != is).then(|| Changed {
                key,
                label,
                then: was.into_iter().collect(),
                now: is.iter().cloned().collect(),
            })
        })
        .collect();
    if !changed.is_empty() {
        check.differences.push(Difference {
            group: name.to_string(),
            changed,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use gputune_protocol::CudaProvenance;

    use super::*;

    fn provenance(driver: Option<&str>, power: f64, host: &str) -> Provenance {
        Provenance {
            host: Some(host.into()),
            gputune: "0.1.0".into(),
            rustc: None,
            profile: None,
            opt_level: None,
            debug_assertions: None,
            cuda: Some(CudaProvenance {
                device: 0,
                uuid: None,
                pci_bus_id: None,
                driver: driver.map(str::to_string),
                driver_api: Some(13000),
                nvrtc: Some("13.0".into()),
                application_sm_clock: Some(1.98e9),
                application_memory_clock: None,
                power_limit: Some(power),
                persistence_mode: Some(true),
                ecc_mode: None,
                nvml_error: None,
            }),
        }
    }

    fn group(p: Option<Provenance>) -> Group {
        let mut m = crate::results::tests::m("base", "N=1", 1.0, 0.01);
        m.provenance = p.map(Arc::new);
        crate::results::groups(vec![m], false).remove(0)
    }

    fn baseline(p: &[Provenance]) -> Value {
        serde_json::json!({ "provenance": p })
    }

    #[test]
    fn a_changed_driver_and_power_limit_are_differences_and_the_host_is_not() {
        let mut check = ProvenanceCheck::default();
        let then = baseline(&[provenance(Some("580.159.04"), 700.0, "a")]);
        let now = group(Some(provenance(Some("575.57.08"), 600.0, "b")));
        compare_group(&then, &now, "p/b.f [*] on GPU", &mut check);
        assert_eq!(check.differences.len(), 1);
        let d = &check.differences[0];
        assert_eq!(
            d.describe(),
            "driver 580.159.04 → 575.57.08, power limit 700 W → 600 W"
        );
        let same = group(Some(provenance(Some("580.159.04"), 700.0, "other-host")));
        let mut check = ProvenanceCheck::default();
        compare_group(&then, &same, "g", &mut check);
        assert_eq!(
            check,
            ProvenanceCheck::default(),
            "another host is no difference"
        );
    }

    #[test]
    fn unknown_is_not_different_and_is_said() {
        // NVML missing now: the driver is unknown, and not a difference.
        let then = baseline(&[provenance(Some("580.159.04"), 700.0, "a")]);
        let mut check = ProvenanceCheck::default();
        compare_group(
            &then,
            &group(Some(provenance(None, 700.0, "a"))),
            "g",
            &mut check,
        );
        assert!(check.differences.is_empty(), "{check:?}");
        // An old baseline, an old store.
        let mut check = ProvenanceCheck::default();
        compare_group(
            &serde_json::json!({}),
            &group(Some(provenance(None, 1.0, "a"))),
            "g",
            &mut check,
        );
        compare_group(&then, &group(None), "h", &mut check);
        assert_eq!(
            check.unknown,
            [
                "g: the baseline records no provenance (exported before gputune recorded it)",
                "h: the current run records no provenance"
            ]
        );
    }
}
