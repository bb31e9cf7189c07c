//! A search over the fault-injection example (`examples/faults`): variants that do not
//! compile, fail, crash, hang or compute a wrong answer are each recorded with the right
//! status, the search finishes, and only a correct variant can win.

use gputune_tests::{cargo_gputune, gputune, temp_dir, text};
use serde_json::Value;

const PACKAGE: &str = "gputune-example-faults";

#[test]
fn every_fault_is_recorded_and_a_correct_variant_wins() {
    let bin = cargo_gputune();
    let dir = temp_dir("faults");
    let db = dir.join("store.db");
    // A run limit of 1× (of at least two seconds) keeps the hanging variants short.
    let out = gputune(
        &bin,
        PACKAGE,
        &db,
        &[
            "search",
            "--run-limit",
            "1",
            "--",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "10",
            "--no-batch",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));

    let out = gputune(
        &bin,
        PACKAGE,
        &db,
        &["report", "--top", "50", "--format", "json"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("report JSON");
    let variants = doc["groups"][0]["variants"].as_array().expect("variants");
    // All 18 variants and base are there.
    assert_eq!(variants.len(), 19, "{doc}");
    for v in variants {
        let label = v["variant"].as_str().expect("label");
        let fault = label
            .strip_prefix("fault_")
            .and_then(|l| l.split('.').next())
            .unwrap_or("none");
        let expected = match fault {
            "none" => "ok",
            "compile" => "build_failed",
            "launch" => "launch_failed",
            "crash" => "crashed",
            "hang" => "timeout",
            "wrong" => "verify_failed",
            other => panic!("unexpected fault {other}"),
        };
        assert_eq!(v["status"], expected, "{label}: {v}");
    }
    let wrong = variants
        .iter()
        .find(|v| v["variant"] == "fault_wrong.work_1")
        .expect("the wrong variant");
    assert!(
        wrong["message"]
            .as_str()
            .is_some_and(|m| m.contains("largest error")),
        "{wrong}"
    );
    let crash = variants
        .iter()
        .find(|v| v["variant"] == "fault_crash.work_2")
        .expect("a crashing variant");
    assert!(
        crash["message"]
            .as_str()
            .is_some_and(|m| m.contains("SIGABRT")),
        "{crash}"
    );
    // The winner (ranked first) is correct, and the wrong variant, the fastest of all, is
    // never what apply would write.
    assert!(
        variants[0]["variant"]
            .as_str()
            .is_some_and(|l| l.starts_with("fault_none.")),
        "{doc}"
    );
    let out = gputune(&bin, PACKAGE, &db, &["apply", "--dry-run"]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("fault = \"none\""), "{}", text(&out));

    // A rerun with the same settings finds everything stored, failures included: nothing is
    // built or run again. (Other bench settings would be other results: see selection.rs.)
    let out = gputune(
        &bin,
        PACKAGE,
        &db,
        &[
            "search",
            "--json",
            "--run-limit",
            "1",
            "--",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "10",
            "--no-batch",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--json");
    assert_eq!(doc["search"]["builds"], 0, "{doc}");
    assert_eq!(doc["search"]["runs"], 0, "{doc}");
    let _ = std::fs::remove_dir_all(&dir);
}
