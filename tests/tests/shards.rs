//! `run-bundle --shard I/N` measures part of a bundle into its own store, `merge` combines the
//! shards' stores, and `report` reads the result as it reads an unsharded run's store.

use std::path::Path;
use std::process::{Command, Output};

use gputune_tests::{cargo_gputune, gputune, temp_dir, text};
use serde_json::Value;

/// `BUNDLE/cargo-gputune ARGS`, with no cargo on the PATH, as on a GPU host.
fn bundled(bundle: &Path, args: &[&str]) -> Output {
    Command::new(bundle.join("cargo-gputune"))
        .args(args)
        .env("PATH", "/nonexistent")
        .env_remove("CARGO")
        .current_dir(bundle)
        .output()
        .expect("the bundle's cargo-gputune runs")
}

/// `report --format json` of a store: (variant, score) of every listed variant.
fn report(bin: &Path, db: &Path) -> Vec<(String, Option<f64>)> {
    let out = Command::new(bin)
        .args([
            "gputune", "report", "--format", "json", "--top", "1000", "--db",
        ])
        .arg(db)
        // Outside any workspace, as on the machine a store is copied to.
        .current_dir(db.parent().expect("a directory"))
        .output()
        .expect("report runs");
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let groups = doc["groups"].as_array().expect("groups");
    assert_eq!(
        groups.len(),
        1,
        "one bench, one device, one revision: {doc}"
    );
    let mut variants: Vec<(String, Option<f64>)> = groups[0]["variants"]
        .as_array()
        .expect("variants")
        .iter()
        .map(|v| {
            (
                v["variant"].as_str().unwrap_or_default().to_string(),
                v["score"].as_f64(),
            )
        })
        .collect();
    variants.sort_by(|a, b| a.0.cmp(&b.0));
    variants
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn shards_of_a_bundle_merge_into_what_one_run_measures() {
    let bin = cargo_gputune();
    let dir = temp_dir("shards");
    // Batches of 3 of the 4 variants: shard 1 runs part of the first binary, shard 2 the
    // rest of it and the second one.
    let bundle = gputune_tests::spin_bundle(&bin, &dir, 3, 10);
    let bundle_arg = bundle.to_str().expect("utf-8");

    let whole = bundled(&bundle, &["run-bundle", bundle_arg]);
    assert!(whole.status.success(), "{}", text(&whole));
    for i in 1..=2 {
        let shard = format!("{i}/2");
        let run = bundled(&bundle, &["run-bundle", bundle_arg, "--shard", &shard]);
        assert!(run.status.success(), "{}", text(&run));
        assert!(
            stderr(&run).contains(&format!("shard {shard} of 4 variants")),
            "{}",
            text(&run)
        );
        assert!(bundle.join(format!("gputune-shard-{i}-of-2.db")).exists());
        // Resumable as any run: what its store holds is not measured again.
        let again = bundled(&bundle, &["run-bundle", bundle_arg, "--shard", &shard]);
        assert!(
            stderr(&again).contains("Done: 0 run(s), 0 result(s)"),
            "{}",
            text(&again)
        );
    }
    let (s1, s2) = (
        bundle.join("gputune-shard-1-of-2.db"),
        bundle.join("gputune-shard-2-of-2.db"),
    );
    let (r1, r2) = (report(&bin, &s1), report(&bin, &s2));
    let names = |r: &[(String, Option<f64>)]| r.iter().map(|v| v.0.clone()).collect::<Vec<_>>();
    // Each shard: base and its block of two variants.
    assert_eq!(names(&r1).len(), 3, "{r1:?}");
    assert_eq!(names(&r2).len(), 3, "{r2:?}");
    assert!(names(&r1).contains(&"base".into()) && names(&r2).contains(&"base".into()));

    let merged = dir.join("merged.db");
    let db = merged.to_str().expect("utf-8");
    let (a, b) = (s1.to_str().expect("utf-8"), s2.to_str().expect("utf-8"));
    let m = bundled(&bundle, &["merge", "--db", db, a, b]);
    assert!(m.status.success(), "{}", text(&m));
    assert!(
        stderr(&m).contains("note: base of gputune-fixture-spin/spin"),
        "{}",
        text(&m)
    );

    let unsharded = report(&bin, &bundle.join("gputune.db"));
    let combined = report(&bin, &merged);
    assert_eq!(names(&combined), names(&unsharded), "every variant once");
    assert_eq!(
        combined.len(),
        5,
        "base and the four variants: {combined:?}"
    );
    for (variant, score) in &combined {
        assert!(
            score.is_some_and(|s| s > 0.0),
            "{variant} has a score: {combined:?}"
        );
    }
    // The shards' variants, each scored against the base that was kept.
    let best = combined.iter().find(|v| v.0 == "work_1").and_then(|v| v.1);
    assert!(
        best.is_some_and(|s| s > 2.0),
        "work_1 is the known winner: {combined:?}"
    );

    // `apply` reads it as any store (dry run: the fixture's gputune.toml is another test's).
    let apply = gputune(
        &bin,
        "gputune-fixture-spin",
        &merged,
        &["apply", "--dry-run"],
    );
    assert!(apply.status.success(), "{}", text(&apply));
    assert!(
        String::from_utf8_lossy(&apply.stdout).contains("work_1"),
        "{}",
        text(&apply)
    );

    // Merging again changes nothing.
    let again = bundled(&bundle, &["merge", "--db", db, a, b]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        stderr(&again).contains("0 replaced, 0 row(s) written"),
        "{}",
        text(&again)
    );
    assert_eq!(report(&bin, &merged), combined);

    // A store of another revision (here, shard 1 with its revision doctored) is refused.
    let foreign = dir.join("foreign.db");
    std::fs::copy(&s1, &foreign).expect("copy");
    let conn = rusqlite::Connection::open(&foreign).expect("sqlite");
    conn.execute("UPDATE results SET revision = revision || 'x'", [])
        .expect("doctor the revision");
    drop(conn);
    let refused = bundled(
        &bundle,
        &["merge", "--db", db, foreign.to_str().expect("utf-8")],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        stderr(&refused).contains("foreign.db") && stderr(&refused).contains("revision"),
        "{}",
        text(&refused)
    );
    let not_a_store = dir.join("notes.txt");
    std::fs::write(&not_a_store, "not a store").expect("write");
    let refused = bundled(
        &bundle,
        &["merge", "--db", db, not_a_store.to_str().expect("utf-8")],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(stderr(&refused).contains("notes.txt"), "{}", text(&refused));
    assert_eq!(report(&bin, &merged), combined, "refusals write nothing");

    for bad in ["0/2", "3/2", "two"] {
        let out = bundled(&bundle, &["run-bundle", bundle_arg, "--shard", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_strategy_searches_a_bundle_of_the_whole_space() {
    let bin = cargo_gputune();
    let dir = temp_dir("bundle-strategy");
    let bundle = gputune_tests::spin_bundle(&bin, &dir, 256, 10);
    let bundle_arg = bundle.to_str().expect("utf-8");
    // Two variants of four, proposed by a seeded random strategy in batches of one: the same
    // seed picks the same two, each run from the bundle's one binary.
    let search = |db: &str| {
        bundled(
            &bundle,
            &[
                "run-bundle",
                bundle_arg,
                "--db",
                db,
                "--strategy",
                "random",
                "--seed",
                "7",
                "--max-evals",
                "2",
                "--batch-size",
                "1",
            ],
        )
    };
    let (a, b) = (dir.join("a.db"), dir.join("b.db"));
    for db in [&a, &b] {
        let run = search(db.to_str().expect("utf-8"));
        assert!(run.status.success(), "{}", text(&run));
        assert!(
            stderr(&run).contains("Searching with the random strategy (at most 2 variants)"),
            "{}",
            text(&run)
        );
    }
    let (ra, rb) = (report(&bin, &a), report(&bin, &b));
    assert_eq!(ra.len(), 3, "base and two variants: {ra:?}");
    let names = |r: &[(String, Option<f64>)]| r.iter().map(|v| v.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ra), names(&rb), "the same seed, the same variants");

    let refused = bundled(
        &bundle,
        &[
            "run-bundle",
            bundle_arg,
            "--strategy",
            "random",
            "--shard",
            "1/2",
        ],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    let _ = std::fs::remove_dir_all(&dir);
}
