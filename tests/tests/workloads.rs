//! `search -- --workloads LIST`: the bench runs only the listed workloads of its axes' product
//! (what `search --captured` passes). A compile-time workload that no listed workload is on
//! runs no bench process: its variants are recorded skipped there, and a second search of the
//! same store measures nothing again.

use std::path::Path;

use gputune_tests::{cargo_gputune, gputune, temp_dir, text};
use serde_json::Value;

/// Each `(ct_workload, status)` of the store at `db`, with its number of rows.
fn statuses(db: &Path) -> Vec<(String, String, i64)> {
    let store = rusqlite::Connection::open(db).expect("the store opens");
    let mut query = store
        .prepare(
            "SELECT ct_workload, status, COUNT(*) FROM results GROUP BY ct_workload, status \
             ORDER BY ct_workload, status",
        )
        .expect("a query");
    let rows = query
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows");
    rows.map(|r| r.expect("a row")).collect()
}

#[test]
fn a_compile_time_workload_no_listed_workload_is_on_runs_no_process() {
    let bin = cargo_gputune();
    let dir = temp_dir("workloads");
    let db = dir.join("store.db");
    let search = [
        "search",
        "-R",
        "^constants$",
        "--json",
        "--",
        "--stopping-criterion",
        "sample-count",
        "--target-samples",
        "5",
        "--workloads",
        "T=f32",
    ];
    let out = gputune(&bin, "gputune-fixture-consts", &db, &search);
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--json");
    assert_eq!(
        doc["search"]["runs"], 1,
        "T=f32's process only, which takes its finals too: {doc}"
    );
    let stored = statuses(&db);
    let f64_rows: Vec<&(String, String, i64)> =
        stored.iter().filter(|(ct, ..)| ct == "T=f64").collect();
    assert_eq!(f64_rows.len(), 1, "{stored:?}");
    assert_eq!(f64_rows[0].1, "skipped", "{stored:?}");
    assert!(
        stored
            .iter()
            .any(|(ct, status, _)| ct == "T=f32" && status == "ok"),
        "{stored:?}"
    );
    let report = gputune(
        &bin,
        "gputune-fixture-consts",
        &db,
        &["report", "--format", "json"],
    );
    assert!(report.status.success(), "{}", text(&report));
    let said = String::from_utf8_lossy(&report.stdout);
    assert!(said.contains("not a listed workload"), "{said}");

    let again = gputune(&bin, "gputune-fixture-consts", &db, &search);
    assert!(again.status.success(), "{}", text(&again));
    let doc: Value = serde_json::from_slice(&again.stdout).expect("--json");
    assert_eq!(doc["search"]["runs"], 0, "{doc}");
    assert_eq!(doc["search"]["stored"], 0, "{doc}");
    assert_eq!(statuses(&db), stored);
    let _ = std::fs::remove_dir_all(&dir);
}
