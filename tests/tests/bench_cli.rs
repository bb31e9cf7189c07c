//! End-to-end tests of the bench-binary protocol: build the real example bench binaries and
//! drive them as `cargo gputune` will, through their command line and JSON.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

/// Builds the bench target `bench` of `package` (dev profile) and returns its executable.
fn bench_binary(package: &str, bench: &str) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "--message-format=json",
            "-p",
            package,
            "--bench",
            bench,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "building {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == bench)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("the build names the bench executable")
}

fn reduce() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| bench_binary("gputune-example-reduce-cpu", "reduce"))
}

fn run(bin: &PathBuf, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .output()
        .expect("the bench binary starts")
}

fn summary(state: &Value, tag: &str) -> Option<f64> {
    state["summaries"]
        .as_array()?
        .iter()
        .find(|s| s["tag"] == tag)?["data"][0]["value"]
        .as_f64()
}

#[test]
fn list_describes_benches_and_axes() {
    let out = run(reduce(), &["--list"]);
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--list prints JSON");
    assert_eq!(doc["protocol"], gputune_protocol::PROTOCOL_VERSION);
    let b = &doc["benchmarks"][0];
    assert_eq!(b["name"], "reduce");
    assert_eq!(b["backend"], "cpu");
    let axes = b["axes"].as_array().expect("axes");
    let names: Vec<&str> = axes.iter().filter_map(|a| a["name"].as_str()).collect();
    assert_eq!(names, ["T{ct}", "Elements{io}"]);
    assert_eq!(b["tunes"], "sum");
    assert_eq!(axes[0]["type"], "type");
    assert_eq!(axes[0]["compile_time"], true);
    assert_eq!(axes[1]["flags"], "pow2");
    assert_eq!(axes[1]["importance_ordered"], true);
    assert_eq!(axes[1]["values"][0]["value"], 1 << 16);
    assert_eq!(axes[1]["values"][0]["input_string"], "2^16");
    assert_eq!(b["states"], 2 * 3);
}

#[test]
fn a_run_writes_nvbench_layout_json_with_raw_samples() {
    let dir = std::env::temp_dir().join(format!("gputune-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let json = dir.join("out.json");
    let out = run(
        reduce(),
        &[
            "-a",
            "Elements{io}[pow2]=12",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "20",
            "--batch-target-time",
            "0.01",
            "--json",
            json.to_str().expect("utf-8 path"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("| T{ct} | Elements{io} |"), "{table}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written"))
        .expect("valid JSON");
    assert_eq!(doc["meta"]["protocol"], gputune_protocol::PROTOCOL_VERSION);
    assert!(doc["meta"]["argv"].as_array().is_some_and(|a| a.len() > 5));
    assert_eq!(doc["devices"][0]["backend"], "cpu");
    let states = doc["benchmarks"][0]["states"].as_array().expect("states");
    assert_eq!(states.len(), 2);
    for (st, size) in states.iter().zip([4, 8]) {
        assert_eq!(st["status"], "ok");
        // A production build without applied entries compiles no dispatch to report from.
        assert!(st["variant"].is_null());
        assert_eq!(st["is_skipped"], false);
        assert_eq!(st["criterion"]["name"], "sample-count");
        assert_eq!(st["criterion"]["params"]["target-samples"], 20.0);
        let values: Vec<&str> = st["axis_values"]
            .as_array()
            .expect("axis values")
            .iter()
            .filter_map(|v| v["name"].as_str())
            .collect();
        assert_eq!(values, ["T{ct}", "Elements{io}"]);
        assert_eq!(summary(st, "nv/cold/sample_size"), Some(20.0));
        assert_eq!(st["samples"]["gpu"].as_array().map(Vec::len), Some(20));
        assert_eq!(st["samples"]["cpu"].as_array().map(Vec::len), Some(20));
        let mean = summary(st, "nv/cold/time/gpu/mean").expect("mean");
        let min = summary(st, "nv/cold/time/gpu/min").expect("min");
        let max = summary(st, "nv/cold/time/gpu/max").expect("max");
        let median = summary(st, "nv/cold/time/gpu/median").expect("median");
        assert!(min > 0.0 && min <= median && median <= max && min <= mean && mean <= max);
        assert!(summary(st, "nv/cold/time/gpu/stdev/relative").is_some());
        assert!(summary(st, "nv/cold/time/gpu/iqr").is_some());
        // 2^12 elements read, one written, per execution.
        assert_eq!(st["global_memory_read_bytes"], 4096 * size);
        assert_eq!(st["global_memory_write_bytes"], size);
        let bytes = f64::from(4096 * size + size);
        let bw = summary(st, "nv/cold/bw/global/bytes_per_second").expect("bandwidth");
        assert!((bw * mean - bytes).abs() < 1e-6 * bw * mean);
        assert!(summary(st, "nv/cold/bw/item_rate").is_some());
        assert!(summary(st, "nv/batch/time/gpu/mean").is_some());
        assert_eq!(summary(st, "gputune/cold/timed_out"), Some(0.0));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a real bench writes is what `cargo gputune` reads: the documents and the event stream
/// of a run parse into the protocol's types, and say the same as the JSON does.
#[test]
fn a_real_run_reads_back_through_the_protocol_types() {
    use gputune_protocol::{Event, ListDoc, ResultsDoc, StateStatus, Stop, PROTOCOL_VERSION};
    let dir = std::env::temp_dir().join(format!("gputune-typed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (json, jsonl) = (dir.join("out.json"), dir.join("run.jsonl"));
    let out = run(reduce(), &["--list"]);
    let list: ListDoc = serde_json::from_slice(&out.stdout).expect("--list is a ListDoc");
    assert_eq!(list.protocol, PROTOCOL_VERSION);
    let out = run(
        reduce(),
        &[
            "-a",
            "Elements{io}[pow2]=12",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "15",
            "--no-batch",
            "--json",
            json.to_str().expect("utf-8 path"),
            "--jsonl",
            jsonl.to_str().expect("utf-8 path"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&json).expect("JSON written");
    let doc: ResultsDoc = serde_json::from_str(&text).expect("--json is a ResultsDoc");
    assert_eq!(doc.meta.protocol, PROTOCOL_VERSION);
    let states = &doc.benchmarks[0].states;
    assert_eq!(states.len(), 2);
    for st in states {
        assert_eq!(st.status, StateStatus::Ok);
        assert_eq!(st.stop, Some(Stop::Criterion));
        assert_eq!(st.samples.as_ref().map(|s| s.gpu.len()), Some(15));
        assert_eq!(st.summary("nv/cold/sample_size"), Some(15.0));
        assert!(st
            .summary("nv/cold/time/gpu/median")
            .is_some_and(|m| m > 0.0));
    }
    // Typed and untyped readings agree, and the typed one writes back the same document.
    let raw: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(serde_json::to_value(&doc).expect("serialises"), raw);
    let events: Vec<Event> = std::fs::read_to_string(&jsonl)
        .expect("stream written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is an Event"))
        .collect();
    // The pass says where and how it measures, then its variant starts.
    match &events[0] {
        Event::Provenance { provenance, device } => {
            assert_eq!(Some(provenance.as_ref()), doc.meta.provenance.as_ref());
            assert!(provenance.rustc.is_some(), "{provenance:?}");
            // The device it measures on, as the results document (and `--devices`) name it,
            // so that cargo gputune needs no probe of its own.
            assert_eq!(
                device.as_deref(),
                doc.devices.first(),
                "the pass names its device"
            );
        }
        other => panic!("the stream starts with {other:?}"),
    }
    assert!(matches!(events[1], Event::Variant { .. }));
    // The last event says where the process's time went: it measured, and took a sample.
    match events.last() {
        Some(Event::Process { timeline }) => {
            assert!(
                timeline.measure > 0.0 && timeline.total >= timeline.measure,
                "{timeline:?}"
            );
            assert!(
                timeline.first_sample.is_some_and(|f| f <= timeline.total),
                "{timeline:?}"
            );
        }
        other => panic!("the stream ends with {other:?}"),
    }
    let streamed: Vec<_> = events
        .into_iter()
        .filter_map(|e| match e {
            Event::State { state, .. } => Some(*state),
            Event::Variant { .. }
            | Event::Process { .. }
            | Event::PassDone
            | Event::Provenance { .. } => None,
        })
        .collect();
    assert_eq!(
        &streamed, states,
        "the stream carries the document's states"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--profile` measures each state once, as a profiler should see it: one sample, no hot loop
/// (and on a GPU no warm-up and no blocking kernel).
#[test]
fn profile_takes_one_sample_per_state() {
    let out = run(
        reduce(),
        &[
            "-a",
            "T{ct}=f32",
            "-a",
            "Elements{io}[pow2]=12",
            "--profile",
            "--json",
            "-",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let st = &doc["benchmarks"][0]["states"][0];
    assert_eq!(
        st["samples"]["gpu"].as_array().map(Vec::len),
        Some(1),
        "{st}"
    );
    assert!(st["batch"].is_null(), "no hot loop");
    assert_eq!(st["criterion"]["name"], "sample-count");
    assert_eq!(st["stop"]["reason"], "criterion");
}

#[test]
fn energy_on_a_cpu_is_unavailable_said_once_and_never_faked() {
    let out = run(
        reduce(),
        &[
            "-a",
            "T{ct}=f32",
            "-a",
            "Elements{io}[pow2]=[10,12]",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "10",
            "--no-batch",
            "--energy",
            "--json",
            "-",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("note: energy is not measured").count(),
        1,
        "said once for two states: {stderr}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let states = doc["benchmarks"][0]["states"].as_array().expect("states");
    assert_eq!(states.len(), 2);
    for st in states {
        let why = st["energy"]["unavailable"].as_str().expect("says why");
        assert!(why.contains("no energy counter"), "{why}");
        assert_eq!(st["energy"]["batches"].as_array().map(Vec::len), Some(0));
        assert!(summary(st, "gputune/energy/joules_per_launch/mean").is_none());
        // The times are measured as ever.
        assert_eq!(st["samples"]["gpu"].as_array().map(Vec::len), Some(10));
    }
    // Without --energy, no energy record at all.
    let out = run(
        reduce(),
        &[
            "-a",
            "T{ct}=f32",
            "-a",
            "Elements{io}[pow2]=10",
            "--profile",
            "--json",
            "-",
        ],
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert!(doc["benchmarks"][0]["states"][0]["energy"].is_null());
}

#[test]
fn the_wall_clock_timeout_marks_the_state() {
    let out = run(
        reduce(),
        &[
            "-a",
            "T{ct}=f32",
            "-a",
            "Elements{io}[pow2]=10",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "100000000",
            "--timeout",
            "0.3",
            "--no-batch",
            "--json",
            "-",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let st = &doc["benchmarks"][0]["states"][0];
    assert_eq!(st["status"], "timeout");
    assert_eq!(summary(st, "gputune/cold/timed_out"), Some(1.0));
    assert!(summary(st, "nv/cold/sample_size").is_some_and(|n| (10.0..1e8).contains(&n)));
    assert!(st["batch"].is_null(), "--no-batch skips the hot loop");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("| T{ct} |"),
        "the table goes to stderr"
    );
}

#[test]
fn usage_errors_exit_2_with_one_line_naming_what_is_allowed() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--stopping-criterion", "fastest"],
            "known: stdrel, entropy, sample-count",
        ),
        (&["-a", "Size=3"], "axes: T{ct}, Elements{io}"),
        (
            &["-a", "Elements{io}[pow2]=two"],
            "`two` is not an exponent",
        ),
        (&["-a", "Elements{io}=1024"], "write `Elements{io}[pow2]=…`"),
        (&["-a", "T{ct}=i8"], "declared: f32, f64"),
        (&["-a", "Elements{io}"], "write Name=v"),
        (&["-b", "sort"], "benches: reduce"),
        (
            &["--max-noise", "-1"],
            "--max-noise must be a positive number",
        ),
        (&["--frobnicate"], "--frobnicate"),
    ];
    for (args, expected) in cases {
        let out = run(reduce(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(expected),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn a_cuda_bench_without_a_driver_fails_plainly() {
    if std::env::var_os("GPUTUNE_TEST_HAS_GPU").is_some() {
        return gputune_tests::skipped(
            "checks the path without a driver, and GPUTUNE_TEST_HAS_GPU says there is a GPU",
        );
    }
    let bin = bench_binary("gputune-example-scale-cuda", "scale");
    let out = run(&bin, &["-a", "Elements{io}[pow2]=16"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: no usable device: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // --cpu runs nothing that needs CUDA and says so.
    let out = run(
        &bin,
        &["--cpu", "-a", "Elements{io}[pow2]=16", "-b", "copy"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("skipped: this bench needs CUDA"));
    // A list of variants (how a search runs a batch) fails the same way, before any state.
    let out = run(
        &bin,
        &[
            "-b",
            "scale",
            "-a",
            "T{ct}=f32",
            "--variant",
            "scale.base,scale.ipt_8.tpb_128",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: no usable device: "), "{err}");
}

#[test]
fn the_scale_bench_tunes_scale_and_measures_the_copy_roof() {
    // --list needs no device.
    let bin = bench_binary("gputune-example-scale-cuda", "scale");
    let out = run(&bin, &["--list"]);
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--list prints JSON");
    let benches = doc["benchmarks"].as_array().expect("benchmarks");
    let names: Vec<&str> = benches.iter().filter_map(|b| b["name"].as_str()).collect();
    assert_eq!(names, ["scale", "copy"]);
    for b in benches {
        assert_eq!(b["backend"], "cuda");
        let axes = b["axes"].as_array().expect("axes");
        let axis_names: Vec<&str> = axes.iter().filter_map(|a| a["name"].as_str()).collect();
        assert_eq!(axis_names, ["T{ct}", "Elements{io}"]);
        let types: Vec<&str> = axes[0]["values"]
            .as_array()
            .expect("values")
            .iter()
            .filter_map(|v| v["value"].as_str())
            .collect();
        assert_eq!(types, ["f32", "f64"]);
        let sizes: Vec<i64> = axes[1]["values"]
            .as_array()
            .expect("values")
            .iter()
            .filter_map(|v| v["value"].as_i64())
            .collect();
        assert_eq!(sizes, [1 << 16, 1 << 20, 1 << 24, 1 << 26, 1 << 28]);
        assert_eq!(b["states"], 2 * 5);
    }
    assert_eq!(benches[0]["tunes"], "scale");
    assert!(
        benches[1]["tunes"].is_null(),
        "the copy is the roof, not tuned"
    );
}

#[test]
fn a_reader_that_stops_reading_ends_the_output_quietly() {
    // `--list | head -1`: the read end is closed before the bench writes its JSON.
    let mut child = Command::new(reduce())
        .arg("--list")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the bench starts");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("the bench ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// `--more-on-stdin`: after its first pass a bench waits for more on stdin, runs each line's
/// pass with that line's settings in the same process, says `pass_done` after each, and ends
/// with its `process` event when stdin closes; a line that changes what the process keeps is
/// a usage error.
#[test]
fn further_passes_come_on_stdin_and_run_in_the_same_process() {
    use gputune_protocol::Event;
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("gputune-passes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let jsonl = dir.join("run.jsonl");
    let spawn = |jsonl: &std::path::Path| {
        Command::new(reduce())
            .args([
                "-a",
                "T{ct}=f32",
                "-a",
                "Elements{io}[pow2]=12",
                "--variant",
                "sum.base",
                "--stopping-criterion",
                "sample-count",
                "--target-samples",
                "3",
                "--min-samples",
                "3",
                "--no-batch",
                "--more-on-stdin",
                "--jsonl",
                jsonl.to_str().expect("utf-8 path"),
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the bench starts")
    };
    let mut child = spawn(&jsonl);
    let pass = r#"["--variant", "sum.base", "--stopping-criterion", "sample-count", "--target-samples", "5", "--min-samples", "5"]"#;
    let mut stdin = child.stdin.take().expect("piped");
    writeln!(stdin, "{pass}").expect("writes the pass");
    drop(stdin);
    let out = child.wait_with_output().expect("ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Event> = std::fs::read_to_string(&jsonl)
        .expect("events")
        .lines()
        .map(|l| serde_json::from_str(l).expect("an event"))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            Event::Variant { .. } => "variant",
            Event::State { .. } => "state",
            Event::PassDone => "pass_done",
            Event::Process { .. } => "process",
            Event::Provenance { .. } => "provenance",
        })
        .collect();
    // Each pass says first where and how it measures.
    assert_eq!(
        kinds,
        [
            "provenance",
            "variant",
            "state",
            "pass_done",
            "provenance",
            "variant",
            "state",
            "pass_done",
            "process"
        ],
        "{events:?}"
    );
    let samples: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            Event::State { state, .. } => state.samples.as_ref().map(|s| s.gpu.len()),
            _ => None,
        })
        .collect();
    assert_eq!(samples, [3, 5], "each pass with its own settings");

    // A pass may not change what the process keeps: a usage error, exit 2.
    let mut child = spawn(&dir.join("bad.jsonl"));
    let mut stdin = child.stdin.take().expect("piped");
    writeln!(stdin, r#"["-b", "copy"]"#).expect("writes");
    drop(stdin);
    let out = child.wait_with_output().expect("ends");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("-b belongs to the process"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
