//! Issue 33 on the spin fixture (CPU): every run's provenance stored, reported and compared
//! (`check` says when the baseline was measured under another one; `--strict-provenance`
//! fails on it), and the four verdicts: UNDECIDED workloads fail the gate (exit 3) unless
//! `--allow-undecided`, and `check --remeasure` measures them again, base and variant
//! interleaved in one process, until they settle or their budget is spent, from the
//! workspace or from a bundle on a host without one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gputune_tests::{cargo_gputune, gputune, gputune_command, temp_dir, text};
use serde_json::Value;

const SPIN: &str = "gputune-fixture-spin";
const FIRST: &str = "Steps{io}=20000";

/// `cargo gputune -p SPIN --db DB ARGS` in the workspace.
fn run(bin: &Path, db: &Path, args: &[&str]) -> Output {
    gputune_command(bin, SPIN, db)
        .args(args)
        .output()
        .expect("cargo-gputune runs")
}

/// Searches the spin fixture into `db`: every variant in full (no race: a variant raced
/// after 3 samples has a median its samples cannot resolve, in any later comparison), 20 cold
/// samples a state.
fn search(bin: &Path, db: &Path) {
    let out = gputune(
        bin,
        SPIN,
        db,
        &[
            "search",
            "--no-race",
            "--",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "20",
            "--no-batch",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
}

/// `report --format json` of every variant, written to `path`.
fn export(bin: &Path, db: &Path, path: &Path) -> Value {
    let out = run(bin, db, &["report", "--top", "100", "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::write(path, &out.stdout).expect("write the baseline");
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The baseline workload of `variant` on `rt` in `doc`.
fn workload<'a>(doc: &'a mut Value, variant: &str, rt: &str) -> &'a mut Value {
    doc["groups"][0]["variants"]
        .as_array_mut()
        .expect("variants")
        .iter_mut()
        .find(|v| v["variant"] == variant)
        .and_then(|v| {
            v["workloads"]
                .as_array_mut()?
                .iter_mut()
                .find(|w| w["rt_workload"] == rt)
        })
        .unwrap_or_else(|| panic!("no {variant} {rt} in the baseline"))
}

/// The compared row named `… variant rt` of a `check --format json` document.
fn compared<'a>(doc: &'a Value, variant: &str, rt: &str) -> &'a Value {
    doc["baseline"]["compared"]
        .as_array()
        .expect("compared")
        .iter()
        .find(|c| {
            c["name"]
                .as_str()
                .is_some_and(|n| n.ends_with(&format!(" {variant} {rt}")))
        })
        .unwrap_or_else(|| panic!("{variant} {rt} not compared: {doc}"))
}

fn store(db: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(db).expect("the store opens")
}

#[test]
fn provenance_is_recorded_reported_and_compared() {
    let _spin = gputune_tests::spin_lock();
    let bin = cargo_gputune();
    let dir = temp_dir("verdicts-provenance");
    let db = dir.join("store.db");
    search(&bin, &db);

    // Every measured row names its pass's provenance; a CPU pass has no CUDA side and its
    // samples no SM clocks.
    let conn = store(&db);
    let (rows, unnamed): (i64, i64) = conn
        .query_row(
            "SELECT COUNT(*), SUM(provenance IS NULL) FROM results WHERE status = 'ok'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("count");
    assert!(
        rows > 0 && unnamed == 0,
        "{rows} rows, {unnamed} without provenance"
    );
    let document: String = conn
        .query_row("SELECT document FROM provenance", [], |r| r.get(0))
        .expect("one provenance");
    let p: Value = serde_json::from_str(&document).expect("JSON");
    assert!(
        p["rustc"].as_str().is_some_and(|r| r.starts_with("rustc ")),
        "{p}"
    );
    assert_eq!(
        p["profile"], "debug",
        "the tests build with --profile dev: {p}"
    );
    assert!(p["cuda"].is_null(), "{p}");
    drop(conn);

    // The report shows it under the group's title, and its JSON carries it.
    let out = run(&bin, &db, &["report"]);
    assert!(out.status.success(), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    let second = table.lines().nth(1).unwrap_or_default();
    assert!(
        second.starts_with("  measured: ") && second.contains("rustc ") && second.contains("debug"),
        "{table}"
    );
    let baseline = dir.join("baseline.json");
    let mut doc = export(&bin, &db, &baseline);
    let group = &doc["groups"][0];
    assert_eq!(group["provenance"][0]["rustc"], p["rustc"]);
    let w = &group["variants"][0]["workloads"][0];
    assert_eq!(w["provenance"], 0, "{w}");
    assert!(w["median_se"].is_number(), "{w}");

    // A GPU's provenance, as if measured under driver 580 and now under 575: the baseline
    // says 580, a copy of the store 575.
    let cuda = |driver: &str| {
        serde_json::json!({
            "device": 0, "uuid": null, "pci_bus_id": "0000:65:00.0", "driver": driver,
            "driver_api": 13000, "nvrtc": "13.0", "application_sm_clock": 1.98e9,
            "application_memory_clock": 2.619e9, "power_limit": 700.0,
            "persistence_mode": true, "ecc_mode": true, "nvml_error": null
        })
    };
    doc["groups"][0]["provenance"][0]["cuda"] = cuda("580.159.04");
    std::fs::write(&baseline, doc.to_string()).expect("write");
    let baseline_arg = baseline.to_str().expect("utf-8");
    // The current run's CPU provenance knows none of the GPU's fields: nothing differs.
    let same = run(&bin, &db, &["check", "--baseline", baseline_arg]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same));
    let md = String::from_utf8_lossy(&same.stdout).to_string();
    assert!(!md.contains("another provenance"), "{md}");

    let copy = dir.join("copy.db");
    std::fs::copy(&db, &copy).expect("copy the store");
    store(&copy)
        .execute(
            "UPDATE provenance SET document = json_set(document, '$.cuda', json(?1))",
            [cuda("575.57.08").to_string()],
        )
        .expect("edit the copy's provenance");
    let out = run(&bin, &copy, &["check", "--baseline", baseline_arg]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "said, not failed: {}",
        text(&out)
    );
    let md = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        md.contains("Measured under another provenance than the baseline (not a failure")
            && md.contains("driver 580.159.04 → 575.57.08"),
        "{md}"
    );
    let junit = dir.join("check.xml");
    let out = run(
        &bin,
        &copy,
        &[
            "check",
            "--baseline",
            baseline_arg,
            "--strict-provenance",
            "--format",
            "json",
            "--junit",
            junit.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["result"], "provenance");
    let changed = &doc["baseline"]["provenance"]["differences"][0]["changed"];
    assert_eq!(changed[0]["field"], "driver", "{doc}");
    assert_eq!(changed[0]["baseline"][0], "580.159.04");
    assert_eq!(changed[0]["current"][0], "575.57.08");
    assert_eq!(
        changed.as_array().map(Vec::len),
        Some(1),
        "only the driver: {doc}"
    );
    let xml = std::fs::read_to_string(&junit).expect("JUnit written");
    assert!(
        xml.contains("classname=\"gputune.check.provenance\"")
            && xml.contains("type=\"PROVENANCE\""),
        "{xml}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Cuts `variant`'s samples on `rt` in the store to their first `n` (its centre and noise
/// with them): a workload its samples no longer resolve.
fn keep_samples(db: &Path, variant: &str, rt: &str, n: usize) {
    let conn = store(db);
    let samples: String = conn
        .query_row(
            "SELECT samples FROM results WHERE variant = ?1 AND rt_workload = ?2",
            [variant, rt],
            |r| r.get(0),
        )
        .expect("the row");
    let mut kept: Vec<f64> = serde_json::from_str(&samples).expect("samples");
    kept.truncate(n);
    let mut sorted = kept.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    conn.execute(
        "UPDATE results SET samples = ?1, center = ?2 WHERE variant = ?3 AND rt_workload = ?4",
        rusqlite::params![
            serde_json::to_string(&kept).expect("JSON"),
            median,
            variant,
            rt
        ],
    )
    .expect("cut");
}

/// Makes `variant` on the first workload ten times slower in the baseline `doc` (the current
/// run looks 90 % faster: far beyond what a loaded CPU's samples blur), with no noise there, so
/// that the band is `--threshold` whatever the machine's noise.
fn ten_times_slower(doc: &mut Value, variant: &str) {
    let w = workload(doc, variant, FIRST);
    w["center"] = Value::from(w["center"].as_f64().expect("a centre") * 10.0);
    w["noise"] = Value::from(0.0);
}

/// The baseline of `db`, doctored: base, `work_2` and `work_4` ten times slower on the first
/// workload (the variants are judged against the base measured beside them in each run, so
/// base's own change leaves theirs alone), and `work_4`'s median recorded as unbounded (as 5
/// samples would leave it): no remeasuring here can resolve it.
fn doctored_baseline(bin: &Path, db: &Path, path: &Path) {
    let mut doc = export(bin, db, path);
    for variant in ["base", "work_2", "work_4"] {
        ten_times_slower(&mut doc, variant);
    }
    workload(&mut doc, "work_4", FIRST)["median_se"] = Value::Null;
    std::fs::write(path, doc.to_string()).expect("write");
}

/// What a `check --format json` says of the two doctored workloads, and its exit code.
fn verdicts(out: &Output) -> (Option<i32>, Value, Value) {
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("JSON: {}", text(out)));
    (
        out.status.code(),
        compared(&doc, "work_2", FIRST).clone(),
        compared(&doc, "work_4", FIRST).clone(),
    )
}

#[test]
fn undecided_workloads_fail_unless_allowed_and_remeasuring_settles_what_it_can() {
    let _spin = gputune_tests::spin_lock();
    let bin = cargo_gputune();
    let dir = temp_dir("verdicts-remeasure");
    let db = dir.join("store.db");
    search(&bin, &db);
    let baseline = dir.join("baseline.json");
    doctored_baseline(&bin, &db, &baseline);
    keep_samples(&db, "work_2", FIRST, 4);
    keep_samples(&db, "base", FIRST, 4);
    let baseline_arg = baseline.to_str().expect("utf-8");

    // Outside the band, and 4 samples (or an unbounded baseline) resolve nothing: UNDECIDED,
    // exit 3, in every format.
    let junit = dir.join("check.xml");
    let out = run(
        &bin,
        &db,
        &[
            "check",
            "--baseline",
            baseline_arg,
            "--format",
            "json",
            "--junit",
            junit.to_str().expect("utf-8"),
        ],
    );
    let (code, work_2, work_4) = verdicts(&out);
    assert_eq!(code, Some(3), "{}", text(&out));
    assert_eq!(
        (&work_2["verdict"], &work_4["verdict"]),
        (&Value::from("UNDECIDED"), &Value::from("UNDECIDED"))
    );
    assert!(work_2["resolution"].is_null(), "unbounded: {work_2}");
    let xml = std::fs::read_to_string(&junit).expect("JUnit");
    assert!(xml.contains("type=\"UNDECIDED\""), "{xml}");
    let md =
        String::from_utf8_lossy(&run(&bin, &db, &["check", "--baseline", baseline_arg]).stdout)
            .to_string();
    assert!(
        md.contains("| unbounded | UNDECIDED |") && md.ends_with("**Result: undecided**\n"),
        "{md}"
    );
    let out = run(
        &bin,
        &db,
        &["check", "--baseline", baseline_arg, "--allow-undecided"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // Measured again, interleaved with base: work_2 settles as FAST; work_4 cannot (its
    // baseline resolves nothing) and stays UNDECIDED once its budget is spent.
    let out = run(
        &bin,
        &db,
        &[
            "check",
            "--baseline",
            baseline_arg,
            "--remeasure",
            "--remeasure-budget",
            "30",
            "--format",
            "json",
        ],
    );
    let (code, work_2, work_4) = verdicts(&out);
    assert_eq!(code, Some(3), "work_4 is still undecided: {}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    // Base itself, measured in the same process as the variants (as their control too).
    let base = compared(&doc, "base", FIRST);
    assert_eq!(
        (&base["verdict"], &base["remeasured"]["before"]),
        (&Value::from("FAST"), &Value::from("UNDECIDED")),
        "{base}"
    );
    assert_eq!(work_2["verdict"], "FAST", "{work_2}");
    assert_eq!(work_2["remeasured"]["before"], "UNDECIDED");
    let n = work_2["remeasured"]["samples"].as_u64().expect("samples");
    assert!((10..=30).contains(&n), "{work_2}");
    assert_eq!(work_4["verdict"], "UNDECIDED");
    assert_eq!(
        work_4["remeasured"]["samples"], 30,
        "the whole budget: {work_4}"
    );
    assert_eq!(work_4["remeasured"]["rounds"], 3, "{work_4}");

    // The new samples are stored, with base's beside them as their control.
    let (stop, samples, control): (String, String, String) = store(&db)
        .query_row(
            "SELECT stop, samples, control FROM results WHERE variant = 'work_2' AND rt_workload = ?1",
            [FIRST],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("the row");
    let len = |s: &str| serde_json::from_str::<Vec<f64>>(s).expect("JSON").len() as u64;
    assert_eq!((stop.as_str(), len(&samples)), ("remeasured", n));
    assert!(len(&control) >= n, "{control}");
    let report =
        String::from_utf8_lossy(&run(&bin, &db, &["report", "--top", "10"]).stdout).to_string();
    assert!(report.contains("/remeasured"), "{report}");

    // The markdown says what was measured again, and what the budget could not settle.
    let md = String::from_utf8_lossy(
        &run(
            &bin,
            &db,
            &["check", "--baseline", baseline_arg, "--allow-undecided"],
        )
        .stdout,
    )
    .to_string();
    assert!(md.ends_with("**Result: pass**\n"), "{md}");
    let out = run(
        &bin,
        &db,
        &[
            "check",
            "--baseline",
            baseline_arg,
            "--remeasure",
            "--remeasure-budget",
            "12",
        ],
    );
    let md = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        md.contains("still UNDECIDED after 12 samples") && md.contains("the budget is spent"),
        "{}",
        text(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bundle_remeasures_on_a_host_without_a_workspace() {
    let bin = cargo_gputune();
    let dir = temp_dir("verdicts-bundle");
    let bundle: PathBuf = gputune_tests::spin_bundle(&bin, &dir, 8, 20);
    let db = dir.join("bundle.db");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let gputune_there = |args: &[&str]| {
        Command::new(bundle.join("cargo-gputune"))
            .args(args)
            .current_dir(&empty)
            .env("PATH", "/nonexistent")
            .env_remove("CARGO")
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .expect("runs")
    };
    let db_arg = db.to_str().expect("utf-8");
    let out = gputune_there(&[
        "run-bundle",
        bundle.to_str().expect("utf-8"),
        "--no-race",
        "--db",
        db_arg,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let baseline = dir.join("baseline.json");
    let out = gputune_there(&["report", "--db", db_arg, "--top", "100", "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let mut doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    ten_times_slower(&mut doc, "work_2");
    std::fs::write(&baseline, doc.to_string()).expect("write");
    keep_samples(&db, "work_2", FIRST, 4);
    let check = |extra: &[&str]| {
        let mut args = vec!["check", "--db", db_arg, "--baseline"];
        args.push(baseline.to_str().expect("utf-8"));
        args.extend(["--format", "json"]);
        args.extend(extra);
        gputune_there(&args)
    };
    let (code, work_2, _) = {
        let out = check(&[]);
        let doc: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
        (
            out.status.code(),
            compared(&doc, "work_2", FIRST).clone(),
            (),
        )
    };
    assert_eq!(
        (code, work_2["verdict"].as_str()),
        (Some(3), Some("UNDECIDED"))
    );
    // Without a workspace, the binaries must come from the bundle.
    let out = check(&["--remeasure"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--bundle DIR"), "{}", text(&out));
    let out = check(&["--remeasure", "--bundle", bundle.to_str().expect("utf-8")]);
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
    let work_2 = compared(&doc, "work_2", FIRST);
    assert_eq!(work_2["verdict"], "FAST", "{}", text(&out));
    assert_eq!(work_2["remeasured"]["before"], "UNDECIDED");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}
