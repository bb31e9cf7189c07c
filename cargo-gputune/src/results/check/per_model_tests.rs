//! `check` per device model: baselines match groups of the same model, and each group's
//! device is judged by the entry it runs (its model's, else its architecture's, per size).

use gputune_protocol::gputune_toml::GputuneToml;

use super::*;
use crate::results::store::Measurement;

const H200: &str = "NVIDIA H200|sm_90|sms=132|bus=6144|ecc=true";
const H100: &str = "NVIDIA H100 80GB HBM3|sm_90|sms=132|bus=5120|ecc=true";

fn row(device: &str, variant: &str, rt: &str, center: f64) -> Measurement {
    let mut m = crate::results::tests::m(variant, rt, center, 0.001);
    m.device = device.into();
    m.arch = "sm_90".into();
    m.samples = (0..10)
        .map(|i| center * (1.0 + (i as f64 - 4.5) * 0.0002))
        .collect();
    m
}

#[test]
fn a_baseline_matches_the_same_model_and_never_another() {
    let baseline = serde_json::json!({ "groups": [{
        "package": "p", "bench": "b", "function": "f", "ct_workload": "*", "device": H200,
        "variants": [{ "variant": "base", "workloads": [
            { "rt_workload": "N=1", "center": 1.0, "noise": 0.001 }
        ]}]
    }]});
    // The same model with ECC off: compared.
    let ecc_off = H200.replace("ecc=true", "ecc=false");
    let groups = crate::results::groups(vec![row(&ecc_off, "base", "N=1", 1.0)], false);
    let found = compare(&groups, &baseline, 0.005).expect("compares");
    assert_eq!(found.rows.len(), 1);
    assert_eq!(found.rows[0].verdict, "SAME");
    // Another model of the same architecture: nothing compared, and said.
    let groups = crate::results::groups(vec![row(H100, "base", "N=1", 1.0)], false);
    let found = compare(&groups, &baseline, 0.005).expect("compares");
    assert!(found.rows.is_empty());
    assert!(
        found.unmatched[0].contains("on NVIDIA H200"),
        "{:?}",
        found.unmatched
    );
}

#[test]
fn each_device_is_judged_by_the_entry_it_runs() {
    let file = GputuneToml::parse(
        r#"version = 2
[[f."*"."NVIDIA H200"]]
size-axis = "Elements"
size-below = 1000
a = 2
[[f."*"."NVIDIA H200"]]
size-axis = "Elements"
size-from = 1000
a = 1
[f."*".sm_90]
measured-on = "NVIDIA H100 80GB HBM3"
a = 3
"#,
    )
    .expect("valid");
    let rows = |device: &str| {
        let mut rows = Vec::new();
        for (rt, a_2, a_3) in [("Elements=10", 0.5, 0.8), ("Elements=10000", 0.9, 0.8)] {
            rows.push(row(device, "base", rt, 1.0));
            rows.push(row(device, "a_2", rt, a_2));
            rows.push(row(device, "a_3", rt, a_3));
        }
        crate::results::groups(rows, false).remove(0)
    };
    let base = params_of(&gputune_grammar::Point {
        values: vec![("a".to_string(), gputune_grammar::Value::Int(1))],
    });
    let h200 = applied_in(&file, &rows(H200), Some(&base));
    let seen: Vec<(String, String, Option<f64>)> = h200
        .iter()
        .map(|a| (a.workload.clone(), a.variant.clone(), a.score))
        .collect();
    assert_eq!(
        seen,
        [
            (
                "b.f [*] on NVIDIA H200, Elements ..1000".to_string(),
                "a_2".to_string(),
                Some(2.0)
            ),
            (
                "b.f [*] on NVIDIA H200, Elements 1000..".to_string(),
                "base".to_string(),
                Some(1.0)
            ),
        ]
    );
    // The H100 has no model entry: the architecture's, scored on every workload.
    let h100 = applied_in(&file, &rows(H100), Some(&base));
    assert_eq!(h100.len(), 1);
    assert_eq!(h100[0].workload, "b.f [*] on sm_90");
    assert_eq!(h100[0].variant, "a_3");
    assert!((h100[0].score.expect("scored") - 1.25).abs() < 1e-3);
}
