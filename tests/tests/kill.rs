//! `kill -9` of `cargo gputune search` at random moments loses nothing that finished: after
//! each kill the set of stored results is a superset of the one before, SQLite's
//! `integrity_check` is ok, and a last search completes the space.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gputune_tests::{cargo_gputune, gputune, gputune_command, temp_dir, text};

const PACKAGE: &str = "gputune-example-faults";
const KILLS: usize = 20;

/// Every stored key with its status.
fn finished(db: &Path) -> BTreeSet<(String, String, String, String)> {
    let conn = rusqlite::Connection::open(db).expect("open the store");
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(ok, "ok");
    let mut stmt = conn
        .prepare("SELECT ct_workload, variant, rt_workload, status FROM results")
        .expect("query");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("rows")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
}

/// xorshift64*: random moments, reproducible from the seed the test prints.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

#[test]
fn sigkill_at_random_moments_loses_nothing_finished() {
    let bin = cargo_gputune();
    let dir = temp_dir("kill");
    let db = dir.join("store.db");
    let search = [
        "search",
        "--batch-size",
        "3",
        "--run-limit",
        "1",
        "--",
        "--stopping-criterion",
        "sample-count",
        "--target-samples",
        "10",
        "--no-batch",
    ];
    let mut seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    eprintln!("seed {seed}");
    let mut before = BTreeSet::new();
    let mut sizes = Vec::new();
    for kill in 0..KILLS {
        let mut child = gputune_command(&bin, PACKAGE, &db)
            .args(search)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("search starts");
        // Anywhere from start-up to a few batches in (the first rows come with the first
        // batch: a deciding search measures base beside the variants, not before them).
        let wait = Duration::from_millis(100 + next(&mut seed) % 5000);
        std::thread::sleep(wait);
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        if !db.exists() {
            continue;
        }
        let after = finished(&db);
        let lost: Vec<_> = before.difference(&after).collect();
        assert!(lost.is_empty(), "kill {kill} after {wait:?} lost {lost:?}");
        before = after;
        sizes.push(before.len());
    }
    // A last search finishes the space from where the kills left it.
    let out = gputune(&bin, PACKAGE, &db, &search);
    assert!(out.status.success(), "{}", text(&out));
    let all = finished(&db);
    assert!(before.is_subset(&all));
    let variants: BTreeSet<&str> = all.iter().map(|(_, v, _, _)| v.as_str()).collect();
    assert_eq!(variants.len(), 19, "base and 18 variants: {variants:?}");
    // The kills did land mid-search: some left a store that was neither empty nor complete.
    assert!(
        sizes.iter().any(|&n| n > 0 && n < all.len()),
        "{sizes:?} of {}",
        all.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
