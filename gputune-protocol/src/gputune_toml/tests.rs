use super::*;
use gputune_grammar::TuneSpec;

fn spec() -> TuneSpec {
    gputune_grammar::parse_str("ipt = [1, 2, 4, 8], tpb = pow2(6..=8), base(ipt = 1, tpb = 64)")
        .expect("valid")
}

fn sized_spec() -> TuneSpec {
    gputune_grammar::parse_str(
        "ipt = [1, 2, 4, 8], tpb = pow2(6..=8), base(ipt = 1, tpb = 64), size(Elements = n)",
    )
    .expect("valid")
}

fn labels(file: &GputuneToml, spec: &TuneSpec) -> Vec<String> {
    file.entries("scale", spec)
        .expect("valid")
        .iter()
        .map(|p| {
            let size = (!p.sizes.is_empty()).then(|| format!(" {}", sizes::describe(&p.sizes)));
            format!(
                "{}/{}/{:?}/{}{}",
                p.workload,
                p.device,
                p.kind,
                p.point.label(),
                size.unwrap_or_default()
            )
        })
        .collect()
}

fn err(text: &str, spec: &TuneSpec) -> String {
    GputuneToml::parse(text)
        .and_then(|f| f.entries("scale", spec))
        .expect_err(text)
        .to_string()
}

#[test]
fn version_1_reads_unchanged_and_is_written_as_version_2() {
    let text = "version = 1\n[scale.\"T=f32\".sm_90]\nipt = 8\ntpb = 128\n[scale.\"*\".cpu]\nipt = 2\ntpb = 64\n";
    let file = GputuneToml::parse(text).expect("valid");
    assert_eq!(file.version, 1);
    assert_eq!(
        labels(&file, &spec()),
        ["*/cpu/Arch/ipt_2.tpb_64", "T=f32/sm_90/Arch/ipt_8.tpb_128"]
    );
    // In version 1 every key is an architecture, whatever it looks like.
    let odd = GputuneToml::parse("version = 1\n[scale.\"*\".gfx90a]\nipt = 2\ntpb = 64\n")
        .expect("valid");
    assert_eq!(odd.kind("gfx90a"), KeyKind::Arch);
    // Written back as it was read; setting an entry makes it version 2.
    let again = GputuneToml::parse(&file.to_text()).expect("own output parses");
    assert_eq!(again, file);
    let mut set = file.clone();
    let point = spec().space()[0].clone();
    set.set("scale", "*", "NVIDIA H200", &point, None);
    let again = GputuneToml::parse(&set.to_text()).expect("own output parses");
    assert_eq!(again.version, VERSION);
    assert_eq!(again, set);
    assert_eq!(again.kind("sm_90"), KeyKind::Arch);
    assert!(file.entries("other", &spec()).expect("none").is_empty());
    // Version 1 has no per-size entries and no entry keys.
    assert!(err(
        "version = 1\n[[scale.\"*\".cpu]]\nipt = 1\ntpb = 64\n",
        &spec()
    )
    .contains("must be a table"));
    assert!(err(
        "version = 1\n[scale.\"*\".sm_90]\nmeasured-on = \"X\"\nipt = 1\ntpb = 64\n",
        &spec()
    )
    .contains("`measured-on` is not a parameter"));
}

#[test]
fn keys_name_models_or_architectures() {
    for arch in ["sm_90", "sm_100", "sm_90a", "sm_120", "cpu"] {
        assert_eq!(KeyKind::of(arch), KeyKind::Arch, "{arch}");
    }
    for model in [
        "NVIDIA H200",
        "NVIDIA H100 80GB HBM3",
        "AMD EPYC 7B13",
        "sm_",
        "sm_9x0",
        "sm_90ab",
        "CPU",
    ] {
        assert_eq!(KeyKind::of(model), KeyKind::Model, "{model}");
    }
}

const TWO_MODELS: &str = r#"version = 2

[scale."*"."NVIDIA H200"]
ipt = 4
tpb = 128

[scale."*"."NVIDIA H100 80GB HBM3"]
ipt = 2
tpb = 256

[scale."*".sm_90]
measured-on = "NVIDIA H100 80GB HBM3"
ipt = 2
tpb = 256

[scale."T=f32".sm_90]
ipt = 8
tpb = 64
"#;

#[test]
fn the_model_beats_the_architecture_and_round_trips() {
    let file = GputuneToml::parse(TWO_MODELS).expect("valid");
    let label = |ct: &str, model: &str, arch: &str| {
        file.lookup("scale", ct, model, arch, None)
            .map(|f| format!("{}: {}", f.device, f.entry.params))
    };
    // The model's own entry, even over an architecture entry of the specific workload.
    assert_eq!(
        label("T=f32", "NVIDIA H200", "sm_90").as_deref(),
        Some("NVIDIA H200: ipt = 4\ntpb = 128\n")
    );
    // Another sm_90 model falls back to the architecture, the specific workload first.
    assert_eq!(
        label("T=f32", "NVIDIA GH200", "sm_90").as_deref(),
        Some("sm_90: ipt = 8\ntpb = 64\n")
    );
    assert_eq!(
        label("T=f64", "NVIDIA GH200", "sm_90").as_deref(),
        Some("sm_90: ipt = 2\ntpb = 256\n")
    );
    // Nothing for another architecture: base.
    assert_eq!(label("T=f32", "NVIDIA A100", "sm_80"), None);
    assert_eq!(
        file.get("scale", "*", "sm_90")
            .map(|e| e[0].measured_on.clone()),
        Some(Some("NVIDIA H100 80GB HBM3".into()))
    );
    let again = GputuneToml::parse(&file.to_text()).expect("own output parses");
    assert_eq!(again, file);
    assert!(file.to_text().contains("[scale.\"*\".\"NVIDIA H200\"]\n"));
}

const PER_SIZE: &str = r#"version = 2

[[scale."*"."NVIDIA H200"]]
size-axis = "Elements"
size-below = 4096
ipt = 1
tpb = 64

[[scale."*"."NVIDIA H200"]]
size-axis = "Elements"
size-from = 4096
size-below = 1048576
ipt = 2
tpb = 128

[[scale."*"."NVIDIA H200"]]
size-axis = "Elements"
size-from = 1048576
ipt = 8
tpb = 256
"#;

#[test]
fn per_size_entries_hold_for_their_ranges() {
    let file = GputuneToml::parse(PER_SIZE).expect("valid");
    assert_eq!(
        labels(&file, &sized_spec()),
        [
            "*/NVIDIA H200/Model/ipt_1.tpb_64 Elements ..4096",
            "*/NVIDIA H200/Model/ipt_2.tpb_128 Elements 4096..1048576",
            "*/NVIDIA H200/Model/ipt_8.tpb_256 Elements 1048576..",
        ]
    );
    let at = |size: u64| {
        let value = move |axis: &str| (axis == "Elements").then_some(size);
        file.lookup("scale", "*", "NVIDIA H200", "sm_90", Some(&value))
            .and_then(|f| f.entry.params.get("ipt").and_then(toml::Value::as_integer))
    };
    assert_eq!(at(0), Some(1));
    assert_eq!(at(4095), Some(1));
    assert_eq!(at(4096), Some(2));
    assert_eq!(at(1_048_575), Some(2));
    assert_eq!(at(1_048_576), Some(8));
    assert_eq!(at(u64::MAX), Some(8));
    let again = GputuneToml::parse(&file.to_text()).expect("own output parses");
    assert_eq!(again, file);
}

#[test]
fn malformed_entries_name_the_entry() {
    let sized = sized_spec();
    let v2 = |body: &str| format!("version = 2\n{body}");
    let overlap = v2("[[scale.\"*\".cpu]]\nsize-axis = \"Elements\"\nsize-below = 100\nipt = 1\ntpb = 64\n\
                      [[scale.\"*\".cpu]]\nsize-axis = \"Elements\"\nsize-from = 50\nipt = 2\ntpb = 64\n");
    let e = err(&overlap, &sized);
    assert!(
        e.contains("[scale.\"*\".cpu]: the size ranges Elements ..100 and Elements 50.. overlap"),
        "{e}"
    );
    let unknown_axis = v2("[[scale.\"*\".cpu]]\nsize-axis = \"Rows\"\nipt = 1\ntpb = 64\n");
    let e = err(&unknown_axis, &sized);
    assert!(
        e.contains("[scale.\"*\".cpu]: unknown size axis `Rows`: `scale` dispatches on `Elements`"),
        "{e}"
    );
    let e = err(&unknown_axis, &spec());
    assert!(e.contains("`scale` declares no size to dispatch on"), "{e}");
    let two_axes = v2("[[scale.\"*\".cpu]]\nsize-axis = \"Elements\"\nsize-below = 9\nipt = 1\ntpb = 64\n\
                       [[scale.\"*\".cpu]]\nsize-axis = \"Rows\"\nsize-from = 9\nipt = 1\ntpb = 64\n");
    // Ranges of two different axes share every shape whose sizes both hold.
    let e = err(&two_axes, &sized);
    assert!(
        e.contains("the size ranges Elements ..9 and Rows 9.. overlap"),
        "{e}"
    );
    let both = v2("[[scale.\"*\".cpu]]\nsize-axis = \"Elements\"\nsize-ranges = { Elements = 1 }\nipt = 1\ntpb = 64\n");
    assert!(err(&both, &sized).contains("both `size-axis` and `size-ranges`"));
    let no_axis = v2("[[scale.\"*\".cpu]]\nipt = 1\ntpb = 64\n");
    assert!(err(&no_axis, &sized).contains("item 1 has no `size-axis`"));
    let empty = v2("[scale.\"*\".cpu]\nsize-axis = \"Elements\"\nsize-from = 9\nsize-below = 9\nipt = 1\ntpb = 64\n");
    assert!(err(&empty, &sized).contains("the range is empty"));
    let negative =
        v2("[scale.\"*\".cpu]\nsize-axis = \"Elements\"\nsize-from = -1\nipt = 1\ntpb = 64\n");
    assert!(err(&negative, &sized).contains("a size is a non-negative integer"));
    let stray = v2("[scale.\"*\".cpu]\nsize-from = 9\nipt = 1\ntpb = 64\n");
    assert!(err(&stray, &sized).contains("without `size-axis`"));
    let typo = v2("[scale.\"*\".cpu]\nmeasured_on = \"x\"\nipt = 1\ntpb = 64\n");
    assert!(err(&typo, &sized).contains("`measured_on` is not a parameter"));
    let typo = v2("[scale.\"*\".cpu]\nmeasured-by = \"x\"\nipt = 1\ntpb = 64\n");
    assert!(err(&typo, &sized).contains("[scale.\"*\".cpu]: unknown key `measured-by`"));
    let missing = v2("[[scale.\"*\".cpu]]\nsize-axis = \"Elements\"\nipt = 1\n");
    let e = err(&missing, &sized);
    assert!(
        e.contains("[scale.\"*\".cpu] (Elements ..): missing `tpb`"),
        "{e}"
    );
}

#[test]
fn a_model_and_an_architecture_entry_of_the_same_device_must_agree() {
    let clash = r#"version = 2
[scale."*"."NVIDIA H200"]
ipt = 4
tpb = 128
[scale."*".sm_90]
measured-on = "NVIDIA H200"
ipt = 8
tpb = 128
"#;
    let e = err(clash, &spec());
    assert!(
        e.contains(
            "[scale.\"*\".\"NVIDIA H200\"] and [scale.\"*\".sm_90] (measured-on = \"NVIDIA H200\") \
             name different points for the same device (ipt_4.tpb_128 and ipt_8.tpb_128)"
        ),
        "{e}"
    );
    // Measured on another model, or agreeing, or of another workload: no conflict.
    for fine in [
        clash.replace(
            "measured-on = \"NVIDIA H200\"",
            "measured-on = \"NVIDIA H100\"",
        ),
        clash.replace("ipt = 8", "ipt = 4"),
        clash.replace("[scale.\"*\".sm_90]", "[scale.\"T=f32\".sm_90]"),
    ] {
        let file = GputuneToml::parse(&fine).expect("parses");
        file.entries("scale", &spec()).expect(&fine);
    }
    // A per-size model entry beside a single architecture winner is a choice, not a clash;
    // two per-size ones must agree where their ranges meet.
    let sized = sized_spec();
    let per_size_vs_single = format!(
        "{}[scale.\"*\".sm_90]\nmeasured-on = \"NVIDIA H200\"\nipt = 4\ntpb = 64\n",
        PER_SIZE
    );
    let file = GputuneToml::parse(&per_size_vs_single).expect("parses");
    file.entries("scale", &sized).expect("no clash");
    let both_per_size = format!(
        "{}[[scale.\"*\".sm_90]]\nmeasured-on = \"NVIDIA H200\"\nsize-axis = \"Elements\"\nsize-from = 2000\nsize-below = 3000\nipt = 4\ntpb = 64\n",
        PER_SIZE
    );
    let e = err(&both_per_size, &sized);
    assert!(
        e.contains("name different points for the same device"),
        "{e}"
    );
}

#[test]
fn bad_files_say_what_is_wrong() {
    let err = |t: &str| err(t, &spec());
    assert!(err("version = 3").contains("version 3 is not supported"));
    assert!(err("[scale]").contains("missing `version = 2`"));
    assert!(err("version = 2\n[scale.\"*\".cpu]\nipt = 8\n").contains("missing `tpb`"));
    assert!(
        err("version = 2\n[scale.\"*\".cpu]\nipt = true\ntpb = 64\n")
            .contains("`ipt` = true, but `ipt` takes integer values")
    );
    assert!(
        err("version = 2\n[scale.\"*\".cpu]\nipt = 1\ntpb = 64\nx = 1\n")
            .contains("`x` is not a parameter")
    );
    assert!(err("version = 2\nscale = 3\n").contains("must be a table"));
    assert!(err("version = 2\n[scale").starts_with("gputune.toml: "));
    // Values no parameter takes are refused whatever the function, and so is an empty list.
    for bad in ["1.5", "nan", "[1]", "{ a = 1 }", "1979-05-27"] {
        for version in [1, 2] {
            let e = err(&format!(
                "version = {version}\n[other.\"*\".cpu]\nx = {bad}\n"
            ));
            assert!(
                e.contains("a parameter's value is an integer, a boolean or a string"),
                "{e}"
            );
        }
    }
    assert!(err("version = 2\n[other.\"*\"]\ncpu = []\n").contains("an empty list"));
}

#[test]
fn setting_keeps_other_devices() {
    let mut file =
        GputuneToml::parse("version = 2\n[scale.\"*\".\"NVIDIA H100\"]\nipt = 2\ntpb = 64\n")
            .expect("valid");
    let point = spec().space()[5].clone();
    file.set("scale", "*", "NVIDIA H200", &point, Some("NVIDIA H200"));
    file.set("scale", "*", "sm_90", &point, Some("NVIDIA H200"));
    let points = file.entries("scale", &spec()).expect("valid");
    assert_eq!(points.len(), 3);
    // A model key needs no measured-on: it says so itself.
    assert_eq!(
        file.get("scale", "*", "NVIDIA H200")
            .map(|e| e[0].measured_on.clone()),
        Some(None)
    );
    assert!(file
        .to_text()
        .contains("[scale.\"*\".sm_90]\nmeasured-on = \"NVIDIA H200\"\n"));
}

#[test]
fn tables_without_entries_are_dropped_so_the_file_reads_back_as_written() {
    // Found by the generated inputs (tests/fuzz/regressions/gputune-toml): `[scaleu]` parsed
    // as a function with no workloads, which `to_text` does not write.
    let text =
        "version = 1\n[scale.\"T=f32\".sm_90]\nipt = 8\ntpb = 128\n[scaleu]\n[other.\"*\"]\n";
    let file = GputuneToml::parse(text).expect("valid");
    assert_eq!(file.functions.keys().collect::<Vec<_>>(), ["scale"]);
    assert_eq!(
        GputuneToml::parse(&file.to_text()).expect("reads back"),
        file
    );
}

#[test]
fn a_key_with_a_line_break_or_a_control_character_reads_back() {
    // Found by the generated inputs (tests/fuzz/regressions/gputune-toml): the toml crate
    // wrote such a key as a multi-line string, which a table header cannot hold.
    let text =
        "version = 2\n[scale.\"*\".\"NVIDIA\\n\\u0001 \\\"H200\\\" \\\\\"]\nipt = 4\ntpb = 64\n";
    let file = GputuneToml::parse(text).expect("valid");
    assert_eq!(
        GputuneToml::parse(&file.to_text()).expect("reads back"),
        file
    );
}

fn shape_spec() -> TuneSpec {
    gputune_grammar::parse_str(
        "ipt = [1, 2, 4, 8], tpb = pow2(6..=8), base(ipt = 1, tpb = 64), size(Rows = r, Cols = c)",
    )
    .expect("valid")
}

#[test]
fn a_shape_of_several_axes_has_its_own_winner() {
    let text = "version = 2\n\
        [[scale.\"*\".\"NVIDIA H200\"]]\nsize-ranges = { Rows = 4096, Cols = 1 }\nipt = 2\ntpb = 64\n\
        [[scale.\"*\".\"NVIDIA H200\"]]\nsize-ranges = { Rows = 1, Cols = 4096 }\nipt = 4\ntpb = 64\n\
        [[scale.\"*\".\"NVIDIA H200\"]]\nsize-ranges = { Rows = \"2..\", Cols = \"2..\" }\nipt = 8\ntpb = 128\n";
    let file = GputuneToml::parse(text).expect("parses");
    assert_eq!(
        labels(&file, &shape_spec()),
        [
            "*/NVIDIA H200/Model/ipt_2.tpb_64 Cols 1..2 × Rows 4096..4097",
            "*/NVIDIA H200/Model/ipt_4.tpb_64 Cols 4096..4097 × Rows 1..2",
            "*/NVIDIA H200/Model/ipt_8.tpb_128 Cols 2.. × Rows 2..",
        ]
    );
    let at = |rows: u64, cols: u64| {
        let value = move |axis: &str| match axis {
            "Rows" => Some(rows),
            "Cols" => Some(cols),
            _ => None,
        };
        file.lookup("scale", "*", "NVIDIA H200", "sm_90", Some(&value))
            .and_then(|f| f.entry.params.get("ipt").and_then(toml::Value::as_integer))
    };
    assert_eq!(
        (at(4096, 1), at(1, 4096), at(512, 512)),
        (Some(2), Some(4), Some(8))
    );
    assert_eq!(at(1, 1), None, "no entry holds 1 × 1");
    let again = GputuneToml::parse(&file.to_text()).expect("own output parses");
    assert_eq!(again, file);
    assert!(
        file.to_text()
            .contains("size-ranges = { Cols = 1, Rows = 4096 }"),
        "{}",
        file.to_text()
    );
    // Two boxes that share a shape; an axis the function does not have.
    let overlap = text.replace("Cols = \"2..\"", "Cols = \"1..\"");
    let e = err(&overlap, &shape_spec());
    assert!(
        e.contains("Cols 1..2 × Rows 4096..4097 and Cols 1.. × Rows 2.. overlap"),
        "{e}"
    );
    let other_axis =
        "version = 2\n[[scale.\"*\".cpu]]\nsize-ranges = { K = 1 }\nipt = 1\ntpb = 64\n";
    let e = err(other_axis, &shape_spec());
    assert!(
        e.contains("unknown size axis `K`: `scale` dispatches on `Rows`, `Cols`"),
        "{e}"
    );
}
