//! `search --build-only --bundle DIR` builds here; `DIR/cargo-gputune run-bundle DIR` runs
//! with no cargo on the PATH and no workspace around; `report --db` reads the result.

use std::process::Command;

use gputune_tests::{cargo_gputune, gputune, temp_dir, text};
use serde_json::Value;

#[test]
fn a_bundle_runs_without_cargo_and_reports_anywhere() {
    let bin = cargo_gputune();
    let dir = temp_dir("bundle");
    let bundle = dir.join("gpu-bundle");
    let unused_db = dir.join("unused.db");
    let out = gputune(
        &bin,
        "gputune-fixture-spin",
        &unused_db,
        &[
            "search",
            "--build-only",
            "--bundle",
            bundle.to_str().expect("utf-8"),
            "--",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "10",
            "--no-batch",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(!unused_db.exists(), "a build-only search measures nothing");
    let plan: Value = serde_json::from_str(
        &std::fs::read_to_string(bundle.join("bundle.json")).expect("bundle.json"),
    )
    .expect("JSON");
    assert_eq!(plan["version"], 1);
    assert_eq!(plan["benches"][0]["function"]["name"], "spin");

    // Moved elsewhere, run from an empty directory with a PATH that has no cargo.
    let moved = dir.join("elsewhere");
    std::fs::rename(&bundle, &moved).expect("move the bundle");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let run = Command::new(moved.join("cargo-gputune"))
        .arg("run-bundle")
        .arg(&moved)
        .current_dir(&empty)
        .env("PATH", "/nonexistent")
        .env_remove("CARGO")
        .output()
        .expect("run-bundle runs");
    assert!(run.status.success(), "{}", text(&run));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("spin.work_1"), "{}", text(&run));

    let report = Command::new(&bin)
        .args(["gputune", "report", "--format", "json", "--db"])
        .arg(moved.join("gputune.db"))
        .current_dir(&empty)
        .output()
        .expect("report runs");
    assert!(report.status.success(), "{}", text(&report));
    let doc: Value = serde_json::from_slice(&report.stdout).expect("JSON");
    let variants = doc["groups"][0]["variants"].as_array().expect("variants");
    assert_eq!(variants[0]["variant"], "work_1", "{doc}");
    assert!(variants.iter().any(|v| v["variant"] == "base"), "{doc}");

    // Running it again measures nothing twice.
    let again = Command::new(moved.join("cargo-gputune"))
        .arg("run-bundle")
        .arg(&moved)
        .env("PATH", "/nonexistent")
        .output()
        .expect("runs");
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("Done: 0 run(s), 0 result(s)"),
        "{}",
        text(&again)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
