//! `docs/bench-json.md` and `docs/store.md` checked against the protocol's types, so the human
//! contract cannot drift from the typed one; and every document type round-tripped through
//! JSON.

use std::collections::{BTreeMap, BTreeSet};

use clap::CommandFactory;
use gputune_protocol::documents::Backend;
use gputune_protocol::{
    AxisDoc, AxisKind, AxisValueDoc, AxisValueRecord, Batch, BenchArgs, BenchListing, BenchResults,
    Comparison, CriterionRecord, Device, DevicesDoc, ErrorKind, Event, ExitCode, KernelRecord,
    ListDoc, Meta, ResultsDoc, Samples, Scalar, StateRecord, StateStatus, Status, Stop, Summary,
    Tolerance, VerificationRecord, VerifiedAgainst, PROTOCOL_VERSION,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

// Fixtures of the later protocol versions, kept apart so that this file stays readable.
#[path = "docs/fixtures.rs"]
mod fixtures;
use fixtures::provenance;

// ---------------------------------------------------------------------------------------------
// Fully populated values: every `Option` is `Some`, every list has an entry.

fn axis() -> AxisDoc {
    AxisDoc {
        name: "Elements{io}".into(),
        plain_name: "Elements".into(),
        compile_time: false,
        importance_ordered: true,
        kind: AxisKind::Int64,
        flags: "pow2".into(),
        values: vec![AxisValueDoc {
            input_string: "2^16".into(),
            description: String::new(),
            value: Scalar::Int(65536),
        }],
    }
}

fn type_axis() -> AxisDoc {
    AxisDoc {
        name: "T{ct}".into(),
        plain_name: "T".into(),
        compile_time: true,
        importance_ordered: false,
        kind: AxisKind::Type,
        flags: String::new(),
        values: vec![AxisValueDoc {
            input_string: "f32".into(),
            description: String::new(),
            value: Scalar::Text("f32".into()),
        }],
    }
}

fn device() -> Device {
    Device {
        id: 0,
        backend: Backend::Cuda,
        name: "NVIDIA H100 80GB HBM3".into(),
        sm_version: Some(90),
        sm_default_clock_rate: Some(1_980_000_000.0),
        number_of_sms: Some(132),
        max_threads_per_block: Some(1024),
        global_memory_size: Some(85_000_000_000),
        global_memory_bus_peak_clock_rate: Some(2_619_000_000.0),
        global_memory_bus_width: Some(5120),
        global_memory_bus_bandwidth: Some(3_352_320_000_000.0),
        l2_cache_size: Some(52_428_800),
        shared_memory_per_block: Some(232_448),
        ecc_state: Some(true),
    }
}

fn state(stop: Stop) -> StateRecord {
    StateRecord {
        name: "Device=0 T{ct}=f32 Scale=0.5 Elements{io}=2^16".into(),
        device: Some(0),
        type_config_index: 1,
        axis_values: vec![
            AxisValueRecord {
                name: "T{ct}".into(),
                kind: AxisKind::Type,
                value: Scalar::Text("f32".into()),
                input_string: "f32".into(),
            },
            AxisValueRecord {
                name: "Scale".into(),
                kind: AxisKind::Float64,
                value: Scalar::Float(0.5),
                input_string: "0.5".into(),
            },
            AxisValueRecord {
                name: "Elements{io}".into(),
                kind: AxisKind::Int64,
                value: Scalar::Int(65536),
                input_string: "2^16".into(),
            },
        ],
        status: StateStatus::Failed,
        is_skipped: false,
        skip_reason: Some("not on this device".into()),
        error: Some("verification failed: 3 of 65536 elements differ".into()),
        error_kind: Some(ErrorKind::Verification),
        stop: Some(stop),
        verification: Some(VerificationRecord {
            against: VerifiedAgainst::Base,
            passed: false,
            tolerance: Some(Tolerance {
                atol: 0.0078125,
                rtol: 0.001953125,
                floor: 0.001953125,
            }),
            comparison: Some(Comparison {
                checked: 65536,
                mismatches: 3,
                max_abs_error: Some(0.25),
                max_rel_error: Some(0.125),
                worst_index: Some(17),
            }),
            message: Some("the check said no".into()),
        }),
        variant: Some("ipt_8.tpb_128".into()),
        criterion: Some(CriterionRecord {
            name: "stdrel".into(),
            params: BTreeMap::from([("max-noise".into(), 0.5), ("min-time".into(), 0.5)]),
        }),
        element_count: 65536,
        global_memory_read_bytes: 262_144,
        global_memory_write_bytes: 262_144,
        summaries: vec![
            Summary::new(
                "nv/cold/time/gpu/mean",
                "GPU Time",
                "duration",
                "Mean isolated kernel execution time",
                Scalar::Float(0.000_122_070_312_5),
            ),
            Summary::new(
                "nv/cold/sample_size",
                "Samples",
                "sample_size",
                "Number of cold samples kept",
                Scalar::Int(20),
            ),
            Summary::new(
                "my/note",
                "Note",
                "string",
                "Added by the bench",
                Scalar::Text("tiles: 4".into()),
            ),
        ],
        samples: Some(Samples {
            gpu: vec![0.000_122_070_312_5, 0.000_244_140_625],
            cpu: vec![0.000_244_140_625, 0.000_488_281_25],
            sm_clock: vec![1_980_000_000.0, 1_755_000_000.0],
        }),
        batch: Some(Batch {
            batch_size: 64,
            batch_means: vec![0.000_061_035_156_25],
        }),
        kernels: vec![KernelRecord {
            name: "scale".into(),
            registers: 40,
            local_bytes: 16,
            shared_bytes: 4096,
            options: vec!["-std=c++17".into(), "--maxrregcount=32".into()],
        }],
        energy: Some(fixtures::energy()),
    }
}

fn raced() -> Stop {
    Stop::Raced {
        best: 0.000_061_035_156_25,
        margin: 0.0625,
    }
}

/// Every stop reason; the match makes a new variant a compile error here until it is added.
fn stops() -> Vec<Stop> {
    let tied = Stop::Tied {
        best: 0.000_061_035_156_25,
        margin: 0.015_625,
    };
    let all = vec![Stop::Criterion, Stop::Timeout, raced(), tied];
    for s in &all {
        match s {
            Stop::Criterion | Stop::Timeout | Stop::Raced { .. } | Stop::Tied { .. } => {}
        }
    }
    all
}

/// Every event; the match makes a new variant a compile error here until it is added.
fn events() -> Vec<Event> {
    let all = vec![
        Event::Variant {
            bench: "scale".into(),
            variant: Some("ipt_8.tpb_128".into()),
        },
        Event::State {
            bench: "scale".into(),
            variant: Some("ipt_8.tpb_128".into()),
            state: Box::new(state(raced())),
        },
        Event::Process {
            timeline: gputune_protocol::Timeline {
                first_sample: Some(0.41),
                device_open: 0.3,
                setup: 0.05,
                reference: 0.01,
                compile_wait: 0.02,
                measure: 1.5,
                kernels: 0.9,
                total: 2.0,
            },
        },
        Event::PassDone,
        Event::Provenance {
            provenance: Box::new(provenance()),
            device: None,
        },
    ];
    for e in &all {
        match e {
            Event::Variant { .. }
            | Event::State { .. }
            | Event::Process { .. }
            | Event::PassDone
            | Event::Provenance { .. } => {}
        }
    }
    all
}

fn list_doc() -> ListDoc {
    ListDoc {
        protocol: PROTOCOL_VERSION,
        benchmarks: vec![BenchListing {
            name: "scale".into(),
            index: 0,
            tunes: Some("scale".into()),
            backend: Backend::Cuda,
            states: 1,
            axes: vec![type_axis(), axis()],
        }],
    }
}

fn devices_doc() -> DevicesDoc {
    DevicesDoc {
        protocol: PROTOCOL_VERSION,
        devices: vec![device()],
    }
}

fn results_doc() -> ResultsDoc {
    ResultsDoc {
        meta: Meta {
            argv: vec!["bench".into(), "-a".into(), "T{ct}=f32".into()],
            protocol: PROTOCOL_VERSION,
            gputune: "0.1.0".into(),
            provenance: Some(provenance()),
        },
        devices: vec![device()],
        benchmarks: vec![BenchResults {
            name: "scale".into(),
            index: 0,
            tunes: Some("scale".into()),
            backend: Backend::Cuda,
            axes: vec![type_axis(), axis()],
            states: stops().into_iter().map(state).collect(),
        }],
    }
}

// Every wire name of the small enums; the matches make a new variant a compile error here.

fn backends() -> Vec<Backend> {
    let all = vec![Backend::Cpu, Backend::Cuda];
    for b in &all {
        match b {
            Backend::Cpu | Backend::Cuda => {}
        }
    }
    all
}

fn axis_kinds() -> Vec<AxisKind> {
    let all = vec![
        AxisKind::Int64,
        AxisKind::Float64,
        AxisKind::String,
        AxisKind::Type,
    ];
    for k in &all {
        match k {
            AxisKind::Int64 | AxisKind::Float64 | AxisKind::String | AxisKind::Type => {}
        }
    }
    all
}

fn references() -> Vec<VerifiedAgainst> {
    let all = vec![
        VerifiedAgainst::Base,
        VerifiedAgainst::Expected,
        VerifiedAgainst::Check,
    ];
    for r in &all {
        match r {
            VerifiedAgainst::Base | VerifiedAgainst::Expected | VerifiedAgainst::Check => {}
        }
    }
    all
}

// ---------------------------------------------------------------------------------------------
// Reading the docs.

fn read_doc(name: &str) -> String {
    let path = format!("{}/../docs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

fn bench_json() -> String {
    read_doc("bench-json.md")
}

/// Whether `doc` names `name` in backticks, as the tables do.
fn names(doc: &str, name: &str) -> bool {
    doc.contains(&format!("`{name}`"))
}

/// The name of a unit enum variant on the wire.
fn wire<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v).expect("serialises") {
        Value::String(s) => s,
        other => panic!("not a unit variant on the wire: {other}"),
    }
}

/// The cells of each row of the table whose header row starts with `header` (header and
/// separator left out). An escaped `\|` stays within its cell.
fn table(doc: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = doc.lines().skip_while(|l| !l.starts_with(header));
    assert!(
        lines.next().is_some(),
        "no table with the header `{header}` in the doc"
    );
    lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let l = l.replace("\\|", "\u{0}");
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.replace('\u{0}', "|").trim().to_string())
                .collect()
        })
        .collect()
}

/// Every object key in `v`, with the path it was found at; the keys of `params` (a criterion's
/// parameter names, data rather than fields) are left out.
fn keys(path: &str, v: &Value, out: &mut BTreeSet<(String, String)>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                out.insert((k.clone(), format!("{path}.{k}")));
                if k != "params" {
                    keys(&format!("{path}.{k}"), v, out);
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                keys(&format!("{path}[]"), v, out);
            }
        }
        _ => {}
    }
}

fn fields_of<T: Serialize>(root: &str, v: &T) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    keys(
        root,
        &serde_json::to_value(v).expect("serialises"),
        &mut out,
    );
    out
}

// ---------------------------------------------------------------------------------------------
// The doc against the types.

#[test]
fn every_field_is_documented() {
    let doc = bench_json();
    let mut fields = BTreeSet::new();
    // The types named one by one, so that a message says which type a field belongs to …
    fields.extend(fields_of("StateRecord", &state(raced())));
    fields.extend(fields_of("AxisDoc", &axis()));
    fields.extend(fields_of("BenchListing", &list_doc().benchmarks[0]));
    fields.extend(fields_of("Device", &device()));
    fields.extend(fields_of("Meta", &results_doc().meta));
    fields.extend(fields_of("Provenance", &provenance()));
    // … and whole documents and events, for everything around and inside them.
    fields.extend(fields_of("ListDoc", &list_doc()));
    fields.extend(fields_of("DevicesDoc", &devices_doc()));
    fields.extend(fields_of("ResultsDoc", &results_doc()));
    for e in events() {
        fields.extend(fields_of("Event", &e));
    }
    for s in stops() {
        fields.extend(fields_of("Stop", &s));
    }
    for must in [
        "input_string",
        "stop",
        "reason",
        "best",
        "margin",
        "gputune",
        "event",
        "provenance",
        "nvml_error",
        "sm_clock",
        "energy",
        "joules",
        "counter_interval",
    ] {
        assert!(
            fields.iter().any(|(k, _)| k == must),
            "the fixtures lost `{must}`"
        );
    }
    // One entry per missing name, at the shortest path it was found at.
    let mut missing: BTreeMap<&str, &str> = BTreeMap::new();
    for (k, path) in fields.iter().filter(|(k, _)| !names(&doc, k)) {
        let at = missing.entry(k).or_insert(path);
        if path.len() < at.len() {
            *at = path;
        }
    }
    let missing: Vec<String> = missing
        .iter()
        .map(|(k, path)| format!("`{k}` (at {path})"))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/bench-json.md does not name these fields: {}",
        missing.join(", ")
    );
}

#[test]
fn every_wire_name_is_documented() {
    let doc = bench_json();
    let mut wanted: Vec<(&str, String)> = Vec::new();
    for k in ErrorKind::ALL {
        assert_eq!(wire(&k), k.as_str(), "ErrorKind::as_str and serde disagree");
        wanted.push(("ErrorKind", wire(&k)));
    }
    for s in StateStatus::ALL {
        wanted.push(("StateStatus", wire(&s)));
    }
    for s in Status::ALL {
        assert_eq!(wire(&s), s.as_str(), "Status::as_str and serde disagree");
        wanted.push(("Status", wire(&s)));
    }
    for s in stops() {
        let v = serde_json::to_value(s).expect("serialises");
        let reason = v["reason"]
            .as_str()
            .expect("a stop has a reason")
            .to_string();
        wanted.push(("Stop reason", reason));
    }
    for e in events() {
        let v = serde_json::to_value(e).expect("serialises");
        let tag = v["event"].as_str().expect("an event has a tag").to_string();
        wanted.push(("Event", tag));
    }
    for b in backends() {
        wanted.push(("Backend", wire(&b)));
    }
    for k in axis_kinds() {
        wanted.push(("AxisKind", wire(&k)));
    }
    for r in references() {
        wanted.push(("VerifiedAgainst", wire(&r)));
    }
    let missing: Vec<String> = wanted
        .iter()
        .filter(|(_, name)| !names(&doc, name))
        .map(|(ty, name)| format!("{ty} `{name}`"))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/bench-json.md does not name these: {}",
        missing.join(", ")
    );
}

#[test]
fn the_error_kind_table_gives_each_kind_its_store_status() {
    let doc = bench_json();
    let rows = table(&doc, "| kind | meaning | status |");
    let documented: BTreeMap<String, String> = rows
        .iter()
        .map(|r| (r[0].clone(), r.last().expect("a cell").clone()))
        .collect();
    for kind in ErrorKind::ALL {
        let name = format!("`{}`", kind.as_str());
        let status = format!("`{}`", Status::of_failure(kind).as_str());
        match documented.get(&name) {
            None => panic!("the error_kind table has no row for {name}"),
            Some(s) => assert_eq!(
                s, &status,
                "the error_kind table gives {name} the status {s}, the code {status}"
            ),
        }
    }
    for name in documented.keys() {
        assert!(
            ErrorKind::ALL
                .iter()
                .any(|k| format!("`{}`", k.as_str()) == *name),
            "the error_kind table has a row for {name}, which is no ErrorKind"
        );
    }
}

#[test]
fn the_exit_code_table_is_exactly_the_exit_codes() {
    let doc = bench_json();
    let documented: BTreeSet<i32> = table(&doc, "| code | meaning |")
        .iter()
        .map(|r| {
            r[0].parse()
                .unwrap_or_else(|_| panic!("exit-code row `{}` is not a number", r[0]))
        })
        .collect();
    for code in ExitCode::ALL {
        assert!(
            documented.contains(&code.code()),
            "the exit-code table has no row for {code:?} ({})",
            code.code()
        );
    }
    for code in &documented {
        assert!(
            ExitCode::from_code(*code).is_some(),
            "the exit-code table has a row for {code}, which is no ExitCode"
        );
    }
}

#[test]
fn the_flags_table_is_exactly_the_bench_flags() {
    let doc = bench_json();
    let rows = table(&doc, "| flag | default | meaning |");
    // The flags of each row's first cell: `--name` and `-x` tokens.
    let cells: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    let token = |cell: &str, flag: &str| cell.split(['`', ' ', ',']).any(|t| t == flag);
    let mut cmd = BenchArgs::command();
    cmd.build();
    let mut known = BTreeSet::new();
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        let long = format!("--{long}");
        known.insert(long.clone());
        if arg.is_hide_set() {
            continue;
        }
        let Some(cell) = cells.iter().find(|c| token(c, &long)) else {
            panic!("the flags table of docs/bench-json.md has no row for `{long}`");
        };
        if let Some(short) = arg.get_short() {
            let short = format!("-{short}");
            assert!(
                token(cell, &short),
                "the flags table's row for `{long}` does not name its short form `{short}`"
            );
        }
    }
    for cell in &cells {
        for t in cell.split(['`', ' ', ',']).filter(|t| t.starts_with("--")) {
            assert!(
                known.contains(t),
                "the flags table documents `{t}`, which BenchArgs does not have"
            );
        }
    }
}

#[test]
fn the_doc_names_the_current_version() {
    let doc = bench_json();
    let v = PROTOCOL_VERSION;
    let title = doc.lines().next().unwrap_or_default();
    assert!(
        title.contains(&format!("protocol {v}")) || title.contains(&format!("version {v}")),
        "the title of docs/bench-json.md does not name protocol {v}: `{title}`"
    );
    // Every version in an example document is the current one.
    let mut examples = 0;
    for (i, _) in doc.match_indices("\"protocol\": ") {
        let rest = &doc[i + "\"protocol\": ".len()..];
        let number: String = rest.chars().take_while(char::is_ascii_digit).collect();
        assert_eq!(
            number,
            v.to_string(),
            "an example in docs/bench-json.md says `\"protocol\": {number}`"
        );
        examples += 1;
    }
    assert!(examples > 0, "no example names `\"protocol\": {v}`");
    assert!(
        !doc.contains("meta.version.json\"") && !doc.contains("\"json\": {"),
        "docs/bench-json.md still shows the JSON version of protocol 3"
    );
}

#[test]
fn the_store_doc_lists_exactly_the_statuses() {
    let doc = read_doc("store.md");
    let documented: BTreeSet<String> = table(&doc, "| status | meaning |")
        .iter()
        .map(|r| r[0].clone())
        .collect();
    for s in Status::ALL {
        let name = format!("`{}`", s.as_str());
        assert!(
            documented.contains(&name),
            "the status table of docs/store.md has no row for {name}"
        );
    }
    for name in &documented {
        assert!(
            Status::ALL
                .iter()
                .any(|s| format!("`{}`", s.as_str()) == *name),
            "the status table of docs/store.md has a row for {name}, which is no Status"
        );
    }
    assert!(
        doc.contains("CODE_REVISION.mXXXXXXXX"),
        "docs/store.md does not say that the revision includes the measurement settings"
    );
}

// ---------------------------------------------------------------------------------------------
// Round trips.

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(what: &str, v: &T) {
    let text = serde_json::to_string(v).expect("serialises");
    let back: T = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{what} does not read back: {e}\n{text}"));
    assert_eq!(&back, v, "{what} changed on a round trip through {text}");
}

fn has_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(items) => items.iter().any(has_null),
        Value::Object(map) => map.values().any(has_null),
        _ => false,
    }
}

#[test]
fn the_fixtures_are_fully_populated() {
    for (what, v) in [
        ("StateRecord", serde_json::to_value(state(raced()))),
        ("ListDoc", serde_json::to_value(list_doc())),
        ("DevicesDoc", serde_json::to_value(devices_doc())),
        ("ResultsDoc", serde_json::to_value(results_doc())),
    ] {
        let v = v.expect("serialises");
        assert!(!has_null(&v), "the {what} fixture leaves a field null: {v}");
    }
}

#[test]
fn every_document_round_trips() {
    round_trip("ListDoc", &list_doc());
    round_trip("DevicesDoc", &devices_doc());
    round_trip("ResultsDoc", &results_doc());
    for e in events() {
        round_trip("Event", &e);
    }
    for s in stops() {
        round_trip("Stop", &s);
        round_trip("StateRecord", &state(s));
    }
    for s in StateStatus::ALL {
        round_trip(
            "StateRecord::unmeasured",
            &StateRecord::unmeasured("Device=0", s),
        );
        round_trip("StateStatus", &s);
    }
    for k in ErrorKind::ALL {
        round_trip("ErrorKind", &k);
    }
    for s in Status::ALL {
        round_trip("Status", &s);
        let parsed: Status = s.as_str().parse().expect("parses");
        assert_eq!(parsed, s, "Status `{s}` does not parse back");
        assert_eq!(s.to_string(), s.as_str());
    }
    assert!("failed".parse::<Status>().is_err(), "`failed` is no Status");
    for c in ExitCode::ALL {
        assert_eq!(ExitCode::from_code(c.code()), Some(c));
    }
}

#[test]
fn numbers_stay_numbers_on_the_wire() {
    let v = serde_json::to_value(state(raced())).expect("serialises");
    assert!(
        v["axis_values"][1]["value"].is_f64(),
        "{}",
        v["axis_values"][1]
    );
    assert!(
        v["axis_values"][2]["value"].is_i64(),
        "{}",
        v["axis_values"][2]
    );
    assert!(v["axis_values"][0]["value"].is_string());
    assert!(v["summaries"][0]["data"][0]["value"].is_f64());
    assert!(v["summaries"][1]["data"][0]["value"].is_i64());
    assert_eq!(v["summaries"][1]["data"][0]["type"], "int64");
    assert_eq!(v["stop"]["reason"], "raced");
    let unmeasured = serde_json::to_value(StateRecord::unmeasured("x", StateStatus::Skipped))
        .expect("serialises");
    assert!(
        unmeasured["stop"].is_null() && unmeasured["error_kind"].is_null(),
        "absent fields are written as null: {unmeasured}"
    );
}

#[test]
fn a_state_without_kernels_reads_with_none() {
    let mut v = serde_json::to_value(state(raced())).expect("serialises");
    assert_eq!(v["kernels"][0]["registers"], 40, "{v}");
    v.as_object_mut().expect("an object").remove("kernels");
    let back: StateRecord = serde_json::from_value(v).expect("reads without `kernels`");
    assert!(back.kernels.is_empty());
}

#[test]
fn a_document_without_provenance_or_clocks_reads_with_none() {
    let mut v = serde_json::to_value(results_doc()).expect("serialises");
    v["meta"]
        .as_object_mut()
        .expect("meta")
        .remove("provenance");
    for b in v["benchmarks"].as_array_mut().expect("benchmarks") {
        for s in b["states"].as_array_mut().expect("states") {
            s["samples"]
                .as_object_mut()
                .expect("samples")
                .remove("sm_clock");
        }
    }
    let back: ResultsDoc = serde_json::from_value(v).expect("reads without them");
    assert!(back.meta.provenance.is_none());
    let samples = back.benchmarks[0].states[0]
        .samples
        .as_ref()
        .expect("samples");
    assert!(samples.sm_clock.is_empty() && samples.gpu.len() == 2);
}
