//! Deciding, the search's default: every variant is screened with `--min-samples` cold
//! samples beside base (its control), and only those that can still win or tie are measured
//! in full, with base beside them; on the spin fixture (work_k takes k times work_1's time).

use gputune_tests::{cargo_gputune, gputune, temp_dir, text};

#[test]
fn decide_screens_the_clearly_slower_and_measures_the_rest_in_full() {
    let bin = cargo_gputune();
    let dir = temp_dir("decide");
    let db = dir.join("store.db");
    let search = [
        "search",
        "-v",
        "--json",
        "-a",
        "Steps{io}=40000",
        "--",
        "--stopping-criterion",
        "sample-count",
        "--target-samples",
        "100",
    ];
    let out = gputune(&bin, "gputune-fixture-spin", &db, &search);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The screening pass: base as the control, then every variant, 10 samples each (or 3, when
    // they already place it far behind the best so far: `--decide`'s early look).
    assert!(
        stderr.contains("--variant spin.base,spin.work_")
            && stderr.contains("--target-samples 10")
            && !stderr.contains("--race"),
        "{stderr}"
    );
    // The finals: the plan's own flags, deciding against the best so far, as a second pass
    // of the process that screened them (`--more-on-stdin`): one start-up in all.
    assert!(stderr.contains("sample-count --decide 3"), "{stderr}");
    assert!(
        stderr.contains("--more-on-stdin") && stderr.contains("(next pass) --variant spin.base,"),
        "{stderr}"
    );
    assert!(stderr.contains("Deciding spin.spin [*]"), "{stderr}");
    // Base has no process of its own: every screened variant is scored against its control.
    assert!(!text(&out).contains("unscored"), "{}", text(&out));

    let store = rusqlite::Connection::open(&db).expect("the store opens");
    type Row = (
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Row> = store
        .prepare("SELECT variant, samples, stop, control, message FROM results")
        .expect("query")
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(rows.len(), 5, "{rows:?}");
    let count = |json: &str| {
        serde_json::from_str::<Vec<f64>>(json)
            .expect("samples")
            .len()
    };
    let mut finalists = Vec::new();
    for (variant, samples, stop, control, message) in &rows {
        let n = count(samples);
        if variant == "base" {
            // Base is measured in full in the finals, and is nobody's variant: no control.
            assert_eq!((n, stop.as_deref()), (100, Some("criterion")), "base");
            assert_eq!(control, &None, "base");
            continue;
        }
        // Every variant is judged against base measured in its own process.
        let control = control.as_deref().map(count).unwrap_or_default();
        match stop.as_deref() {
            Some("screened") if n == 3 => {
                assert_eq!(control, 10, "{variant}");
                assert!(
                    message.as_deref().is_some_and(|m| m.starts_with("raced:")),
                    "{variant}: {message:?}"
                );
                assert_ne!(variant, "work_1", "the fastest is never dropped early");
            }
            Some("screened") => assert_eq!((n, control), (10, 10), "{variant}"),
            Some("criterion") => {
                assert_eq!((n, control), (100, 100), "{variant}");
                finalists.push(variant.as_str());
            }
            // A finalist that, measured further, fell clearly behind an earlier one of the
            // finals (the noise of the screening let it through).
            Some("raced") => {
                assert!(
                    n < 100 && control == 100,
                    "{variant}: {n} samples, {control}"
                );
                assert_ne!(variant, "work_1", "the fastest is never raced out");
            }
            other => panic!("{variant}: stop {other:?}"),
        }
    }
    // The fastest can win, and one eight times slower cannot: three samples told.
    assert!(finalists.contains(&"work_1"), "{rows:?}");
    assert!(!finalists.contains(&"work_8"), "{rows:?}");
    // The early look, exactly where it applies: a variant at least twice as slow as base
    // (work_8) or as a variant screened before it in the process stops after three samples.
    let order: Vec<&str> = stderr
        .split("--variant spin.base,")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the screening's variant list")
        .split(',')
        .filter_map(|l| l.strip_prefix("spin."))
        .collect();
    let work = |label: &str| -> u32 {
        label
            .strip_prefix("work_")
            .and_then(|k| k.parse().ok())
            .expect("work_K")
    };
    for (i, label) in order.iter().enumerate() {
        let behind = std::iter::once(8)
            .chain(order[..i].iter().map(|l| work(l)))
            .any(|earlier| 2 * earlier <= work(label));
        let row = rows.iter().find(|r| r.0 == *label).expect("a row");
        // The early look waits when the three samples disagree among themselves (a sample
        // preempted on a loaded machine): their spread widens the margin they must clear.
        // Three samples within half of each other, at least twice the best, always clear it.
        let first: Vec<f64> = serde_json::from_str::<Vec<f64>>(&row.1).expect("samples");
        let clean = first.len() >= 3 && {
            let three = &first[..3];
            let min = three.iter().copied().fold(f64::INFINITY, f64::min);
            let max = three.iter().copied().fold(0.0, f64::max);
            max < 1.5 * min
        };
        // A row of the finals replaced the variant's screening row: the screening's noise (a
        // preempted sample of the best widens its interval) let it through, and what its
        // early look saw is no longer in the store. Only screening rows say.
        let screening_row = row.2.as_deref() == Some("screened");
        if behind && clean && screening_row {
            assert_eq!(
                (count(&row.1), row.2.as_deref()),
                (3, Some("screened")),
                "{label} after {order:?}: {row:?}"
            );
        } else if !behind && row.2.as_deref() == Some("screened") {
            assert_eq!(count(&row.1), 10, "{label} after {order:?}: {row:?}");
        }
    }

    // The report says why each stopped; a rerun measures nothing.
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json");
    assert_eq!(doc["search"]["runs"], 1, "one bench process: {doc}");
    let stops: Vec<&str> = doc["groups"][0]["variants"]
        .as_array()
        .expect("variants")
        .iter()
        .filter_map(|v| v["workloads"][0]["stop"].as_str())
        .collect();
    // Cut short one way or the other (how many get through the screening depends on the
    // machine's noise; a noisy one lets more through, and the finals' race stops them).
    assert!(
        stops.iter().any(|s| *s == "screened" || *s == "raced"),
        "{doc}"
    );
    let out = gputune(&bin, "gputune-fixture-spin", &db, &search);
    assert!(out.status.success(), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json");
    assert_eq!(doc["search"]["runs"], 0, "{doc}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn each_workload_s_finals_run_in_its_own_waiting_screening_process() {
    // The consts fixture: one batch, two compile-time workloads (T=f32 and T=f64), each
    // screened in a process of its own. Both still wait when the finals start: each workload's
    // finals go into its own process, and none starts another.
    let bin = cargo_gputune();
    let dir = temp_dir("decide-waiting");
    let db = dir.join("store.db");
    let search = [
        "search",
        "-R",
        "^constants$",
        "-v",
        "--json",
        "--",
        "--stopping-criterion",
        "sample-count",
        "--target-samples",
        "12",
    ];
    let out = gputune(&bin, "gputune-fixture-consts", &db, &search);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let at = |s: &str| {
        stderr
            .find(s)
            .unwrap_or_else(|| panic!("no `{s}` in {stderr}"))
    };
    assert!(
        at("-a T{ct}=f32 --variant") < at("-a T{ct}=f64 --variant")
            && at("-a T{ct}=f64 --variant") < at("(next pass)"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("(next pass)").count(),
        2,
        "each workload's finals in its waiting process: {stderr}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json");
    assert_eq!(
        doc["search"]["runs"], 2,
        "two screening processes, which take the finals too: {doc}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_guided_search_runs_every_batch_and_the_finals_in_one_process_of_one_build() {
    // The consts fixture's 84-point `constants`, one compile-time workload, a guided strategy:
    // batches of 4, one after another. Built whole (the default for a space this size), every
    // batch is a pass of the same waiting process, and so are the finals; with `--batch-size 4`
    // (a build and a process per batch, as every search was before) they are not.
    let bin = cargo_gputune();
    let dir = temp_dir("decide-guided");
    let search = |db: &std::path::Path, extra: &[&str]| {
        let mut args = vec![
            "search",
            "-R",
            "^constants$",
            "-a",
            "T{ct}=f32",
            "--strategy",
            "annealing",
            "--max-evals",
            "16",
            "-v",
            "--json",
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&[
            "--",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "12",
        ]);
        let out = gputune(&bin, "gputune-fixture-consts", db, &args);
        assert!(out.status.success(), "{}", text(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json");
        let measured = doc["groups"][0]["variants"]
            .as_array()
            .expect("variants")
            .len();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        (doc, measured, stderr)
    };
    let (doc, measured, stderr) = search(&dir.join("whole.db"), &[]);
    assert_eq!(measured, 17, "16 variants and base: {doc}");
    assert_eq!(doc["search"]["runs"], 1, "one bench process: {doc}");
    // At most the production build (base, unless it is fresh already) and one of the whole
    // space, announced once.
    assert!(
        doc["search"]["builds"]
            .as_u64()
            .is_some_and(|b| (1..=2).contains(&b)),
        "{doc}"
    );
    assert_eq!(
        stderr.matches("with GPUTUNE_VARIANTS=").count(),
        1,
        "one build of the variants: {stderr}"
    );
    assert!(
        stderr.contains("GPUTUNE_VARIANTS=84 variant(s)"),
        "the whole space: {stderr}"
    );
    assert!(
        stderr.matches("(next pass) --variant").count() >= 4,
        "three more batches and the finals as passes: {stderr}"
    );
    let (doc, measured, _) = search(&dir.join("batched.db"), &["--batch-size", "4"]);
    assert_eq!(measured, 17, "{doc}");
    assert!(
        doc["search"]["runs"].as_u64().is_some_and(|r| r >= 4),
        "a process per batch: {doc}"
    );
    assert!(
        doc["search"]["builds"].as_u64().is_some_and(|b| b >= 4),
        "one per batch: {doc}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_random_search_builds_only_what_it_proposes_in_one_batch_and_one_process() {
    // Blind, no time limit: all it will measure is proposed at once, so only those variants are
    // built, into one binary measured by one process with its finals.
    let bin = cargo_gputune();
    let dir = temp_dir("decide-random");
    let db = dir.join("store.db");
    let search = [
        "search",
        "-R",
        "^constants$",
        "-a",
        "T{ct}=f32",
        "--strategy",
        "random",
        "--max-evals",
        "6",
        "-v",
        "--json",
        "--",
        "--stopping-criterion",
        "sample-count",
        "--target-samples",
        "12",
    ];
    let out = gputune(&bin, "gputune-fixture-consts", &db, &search);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("with GPUTUNE_VARIANTS=").count(),
        1,
        "one build: {stderr}"
    );
    assert!(stderr.contains("GPUTUNE_VARIANTS=6 variant(s)"), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json");
    assert_eq!(doc["search"]["runs"], 1, "{doc}");
    let _ = std::fs::remove_dir_all(&dir);
}
