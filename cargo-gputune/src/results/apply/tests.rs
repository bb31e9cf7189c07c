use gputune_protocol::gputune_toml::{GputuneToml, KeyKind};

use super::*;
use crate::results::groups;
use crate::results::store::Measurement;

const H200: &str = "NVIDIA H200|sm_90|sms=132|bus=6144|ecc=true";
const H100: &str = "NVIDIA H100 80GB HBM3|sm_90|sms=132|bus=5120|ecc=true";

fn spec() -> gputune_grammar::TuneSpec {
    gputune_grammar::parse_str("a = [1, 2, 3], base(a = 1), size(Elements = n)").expect("valid")
}

/// `variant` at `Elements=2^exp` on `device`, ten samples around `center`, base at 1.0 in its
/// process.
fn row(device: &str, variant: &str, exp: u32, center: f64) -> Measurement {
    let mut m =
        crate::results::tests::m(variant, &format!("Elements{{io}}=2^{exp}"), center, 0.001);
    m.device = device.into();
    m.arch = "sm_90".into();
    m.function = "scale".into();
    let spread = |c: f64| {
        (0..10)
            .map(|i| c * (1.0 + (i as f64 - 4.5) * 0.0002))
            .collect()
    };
    m.samples = spread(center);
    if variant != "base" {
        m.control = spread(1.0);
    }
    m
}

/// On `device`: `a_2` wins below 2^24, `a_3` from there; `a_2` is the single winner.
fn group(device: &str) -> Group {
    let mut rows = Vec::new();
    for exp in [16, 20, 24, 28] {
        let large = exp >= 24;
        rows.push(row(device, "base", exp, 1.0));
        rows.push(row(device, "a_2", exp, if large { 0.9 } else { 0.4 }));
        rows.push(row(device, "a_3", exp, if large { 0.6 } else { 0.9 }));
    }
    groups(rows, false).remove(0)
}

fn options(arch_only: bool, per_size: bool) -> Options {
    Options {
        arch_only,
        per_size,
        ..Options::default()
    }
}

#[test]
fn a_winner_is_keyed_by_its_model_or_with_arch_only_by_its_architecture() {
    let g = group(H200);
    let p = plan(&g, &spec(), &options(false, false)).expect("plans");
    assert_eq!(p.key, "NVIDIA H200");
    let e = p.entries.expect("a winner");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].params.get("a").and_then(|v| v.as_integer()), Some(2));
    assert_eq!(e[0].measured_on, None, "a model key says it itself");
    assert!(
        p.line.starts_with("b.scale [*] on NVIDIA H200: a_2 (score"),
        "{}",
        p.line
    );
    let p = plan(&g, &spec(), &options(true, false)).expect("plans");
    assert_eq!(p.key, "sm_90");
    assert_eq!(
        p.entries.expect("a winner")[0].measured_on.as_deref(),
        Some("NVIDIA H200")
    );
}

#[test]
fn per_size_winners_become_ranges() {
    let g = group(H200);
    let p = plan(&g, &spec(), &options(false, true)).expect("plans");
    let e = p.entries.expect("per size");
    let ranges: Vec<String> = e
        .iter()
        .map(|e| {
            format!(
                "{} a={}",
                gputune_protocol::gputune_toml::sizes::describe(&e.sizes),
                e.params["a"]
            )
        })
        .collect();
    assert_eq!(
        ranges,
        [
            format!("Elements ..{} a=2", 1u64 << 22),
            format!("Elements {}.. a=3", 1u64 << 22)
        ]
    );
    assert!(
        p.line
            .contains("per size: Elements ..4194304 a_2, Elements 4194304.. a_3"),
        "{}",
        p.line
    );
    assert!(
        p.line
            .contains("against the single winner a_2: Elements=16777216 1.500x"),
        "{}",
        p.line
    );
    // Another axis than the function's is a usage error; a function without size(…) gets one
    // winner and a note.
    let wrong = Options {
        size_axis: Some("Rows".into()),
        ..options(false, true)
    };
    let e = plan(&g, &spec(), &wrong).expect_err("usage");
    assert!(e.to_string().contains("dispatches on `Elements`"), "{e}");
    let unsized_spec = gputune_grammar::parse_str("a = [1, 2, 3], base(a = 1)").expect("valid");
    let p = plan(&g, &unsized_spec, &options(false, true)).expect("plans");
    assert_eq!(p.entries.map(|e| e.len()), Some(1));
    assert!(p.notes[0].contains("declares no size"), "{:?}", p.notes);
}

#[test]
fn applying_from_two_models_keeps_both() {
    let mut file = GputuneToml::default();
    for device in [H200, H100] {
        let g = group(device);
        let p = plan(&g, &spec(), &options(false, false)).expect("plans");
        let notes = plan::write(&mut file, &g, &p.key, p.entries.expect("winner"), false);
        assert!(notes.is_empty(), "{notes:?}");
    }
    let keys: Vec<&String> = file.functions["scale"]["*"].keys().collect();
    assert_eq!(keys, ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]);
    // Per size from the H200 replaces only the H200's entry.
    let g = group(H200);
    let p = plan(&g, &spec(), &options(false, true)).expect("plans");
    plan::write(&mut file, &g, &p.key, p.entries.expect("per size"), false);
    assert_eq!(file.functions["scale"]["*"]["NVIDIA H200"].len(), 2);
    assert_eq!(
        file.functions["scale"]["*"]["NVIDIA H100 80GB HBM3"].len(),
        1
    );
    file.entries("scale", &spec()).expect("builds");
    let again = GputuneToml::parse(&file.to_text()).expect("parses");
    assert_eq!(again.functions, file.functions);
}

#[test]
fn one_device_s_model_and_architecture_entries_are_kept_in_step() {
    let mut file = GputuneToml::default();
    // --arch-only on the H100, then on the H200: the architecture entry changes hands, said.
    for device in [H100, H200] {
        let g = group(device);
        let p = plan(&g, &spec(), &options(true, false)).expect("plans");
        let notes = plan::write(&mut file, &g, &p.key, p.entries.expect("winner"), true);
        if device == H200 {
            assert!(
                notes[0].contains("was measured on NVIDIA H100 80GB HBM3"),
                "{notes:?}"
            );
        }
    }
    // Now the H200's model entry with another winner (its search changed): the sm_90 entry
    // measured on the H200 is brought in step, so the build's same-device check holds.
    let mut rows: Vec<Measurement> = Vec::new();
    for exp in [16, 28] {
        rows.push(row(H200, "base", exp, 1.0));
        rows.push(row(H200, "a_3", exp, 0.5));
    }
    let g = groups(rows, false).remove(0);
    let p = plan(&g, &spec(), &options(false, false)).expect("plans");
    let notes = plan::write(&mut file, &g, &p.key, p.entries.expect("winner"), false);
    assert!(
        notes[0].contains("[scale.\"*\".sm_90] was also measured on NVIDIA H200; updated"),
        "{notes:?}"
    );
    file.entries("scale", &spec())
        .expect("no same-device conflict");
    assert_eq!(file.kind("sm_90"), KeyKind::Arch);
    assert_eq!(
        file.functions["scale"]["*"]["sm_90"][0]
            .measured_on
            .as_deref(),
        Some("NVIDIA H200")
    );
}

#[test]
fn per_shape_winners_hold_for_their_shape_on_every_axis() {
    let spec = gputune_grammar::parse_str("a = [1, 2, 3], base(a = 1), size(Rows = r, Cols = c)")
        .expect("valid");
    let shaped = |variant: &str, (rows, cols): (u64, u64), center: f64| {
        let mut m = row(H200, variant, 0, center);
        m.rt_workload = format!("Rows{{io}}={rows} Cols{{io}}={cols}");
        m
    };
    // a_2 wins 4096 × 1, a_3 wins 1 × 4096; 14336 × 14336 is skipped by the bench.
    let mut rows = Vec::new();
    for (shape, a2, a3) in [
        ((4096, 1), 0.4, 0.9),
        ((1, 4096), 0.9, 0.4),
        ((2, 2), 0.5, 0.5),
    ] {
        rows.push(shaped("base", shape, 1.0));
        rows.push(shaped("a_2", shape, a2));
        rows.push(shaped("a_3", shape, a3));
    }
    for variant in ["base", "a_2", "a_3"] {
        let mut m = shaped(variant, (14336, 14336), 1.0);
        m.status = gputune_protocol::Status::Skipped;
        rows.push(m);
    }
    let g = groups(rows, false).remove(0);
    let p = plan(&g, &spec, &options(false, true)).expect("plans");
    let entries = p.entries.clone().expect("per shape");
    let shapes: Vec<String> = entries
        .iter()
        .map(|e| {
            let ranges = gputune_protocol::gputune_toml::sizes::describe(&e.sizes);
            format!("{ranges} a={}", e.params["a"])
        })
        .collect();
    assert_eq!(
        shapes,
        [
            "Rows 4096..4097 × Cols 1..2 a=2",
            "Rows 1..2 × Cols 4096..4097 a=3",
            "Rows 2..3 × Cols 2..3 a=2",
        ]
    );
    assert!(
        p.line.contains("per shape: Rows=4096 Cols=1 a_2"),
        "{}",
        p.line
    );
    // Written, read back and checked against the function as a build would.
    let mut file = GputuneToml::default();
    plan::write(&mut file, &g, &p.key, entries, false);
    let text = file.to_text();
    assert!(
        text.contains("size-ranges = { Rows = 4096, Cols = 1 }"),
        "{text}"
    );
    let again = GputuneToml::parse(&text).expect("reads back");
    let points = again
        .entries("scale", &spec)
        .expect("valid for the function");
    assert_eq!(points.len(), 3);
    // --size-axis has no meaning for a shape.
    let one_axis = Options {
        size_axis: Some("Rows".into()),
        ..options(false, true)
    };
    let e = plan(&g, &spec, &one_axis).expect_err("usage");
    assert!(e.to_string().contains("applied per shape"), "{e}");
}
