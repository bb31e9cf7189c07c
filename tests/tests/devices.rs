//! `run-bundle --devices` and `search --devices`: one search over several GPUs into one store.
//! A CPU bench has one device and ignores the ordinal, so "two GPUs" here are two lanes of the
//! search measuring at once on the CPU: what is checked is how the work is spread, the store it
//! goes into, resuming, strategies and a GPU that fails (a wrapper of the bench binary that
//! takes device 1 down).

use std::path::Path;
use std::process::{Command, Output};

use gputune_tests::{cargo_gputune, gputune, temp_dir, text};
use serde_json::Value;

/// `BUNDLE/cargo-gputune ARGS`, with no cargo on the PATH, as on a GPU host.
fn bundled(bundle: &Path, args: &[&str]) -> Output {
    Command::new(bundle.join("cargo-gputune"))
        .args(args)
        .env("PATH", "/nonexistent:/usr/bin:/bin")
        .env_remove("CARGO")
        .current_dir(bundle)
        .output()
        .expect("the bundle's cargo-gputune runs")
}

/// `report --format json --top 1000` of a store, parsed.
fn report_json(bin: &Path, db: &Path) -> Value {
    let out = Command::new(bin)
        .args([
            "gputune", "report", "--format", "json", "--top", "1000", "--db",
        ])
        .arg(db)
        .current_dir(db.parent().expect("a directory"))
        .output()
        .expect("report runs");
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// `report --format json` of a store: (variant, score, stop of its first row) of every variant.
fn report(bin: &Path, db: &Path) -> Vec<(String, Option<f64>, String)> {
    let doc = report_json(bin, db);
    let groups = doc["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 1, "one bench, one device: {doc}");
    let mut variants: Vec<(String, Option<f64>, String)> = groups[0]["variants"]
        .as_array()
        .expect("variants")
        .iter()
        .map(|v| {
            (
                v["variant"].as_str().unwrap_or_default().to_string(),
                v["score"].as_f64(),
                v["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    variants.sort_by(|a, b| a.0.cmp(&b.0));
    variants
}

/// Per variant, the samples and control samples of its first workload, from `report`.
fn samples(bin: &Path, db: &Path) -> std::collections::BTreeMap<String, (u64, u64)> {
    let doc = report_json(bin, db);
    let variants = doc["groups"][0]["variants"].as_array().expect("variants");
    variants
        .iter()
        .map(|v| {
            let w = &v["workloads"][0];
            let n = w["samples"].as_u64().unwrap_or_default();
            let control = w["control"]["samples"].as_u64().unwrap_or_default();
            (
                v["variant"].as_str().unwrap_or_default().to_string(),
                (n, control),
            )
        })
        .collect()
}

fn names(r: &[(String, Option<f64>, String)]) -> Vec<&str> {
    r.iter().map(|v| v.0.as_str()).collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// How many variants `GPU d` screened, from its closing line.
fn screened_on(err: &str, d: u32) -> usize {
    let prefix = format!("GPU {d}: ");
    err.lines()
        .find_map(|l| l.trim().split_once(&prefix))
        .and_then(|(_, rest)| rest.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no line for GPU {d}: {err}"))
}

const ALL: [&str; 5] = ["base", "work_1", "work_2", "work_4", "work_8"];

#[test]
fn two_devices_run_one_search_into_one_store_and_a_new_store_measures_afresh() {
    let bin = cargo_gputune();
    let dir = temp_dir("devices-one-search");
    // Two binaries of two variants each.
    let bundle = gputune_tests::spin_bundle(&bin, &dir, 2, 10);
    let b = bundle.to_str().expect("utf-8");
    let run = bundled(&bundle, &["run-bundle", b, "--devices", "0,1"]);
    assert!(run.status.success(), "{}", text(&run));
    let err = stderr(&run);
    assert!(err.contains("on 2 GPU(s) at once: 0, 1"), "{err}");
    assert!(err.contains("screening spread over them"), "{err}");
    // Each variant screened once between the GPUs (GPU 1 measured base in full first, so how
    // many each took depends on their speed), and the finals decided once, from both GPUs'
    // screening together.
    assert_eq!(screened_on(&err, 0) + screened_on(&err, 1), 4, "{err}");
    assert_eq!(err.matches("Deciding spin.spin").count(), 1, "{err}");
    assert!(err.contains("Done: 2 GPU(s)"), "{err}");
    let merged = report(&bin, &bundle.join("gputune.db"));
    assert_eq!(names(&merged), ALL);
    for (variant, score, status) in &merged {
        assert!(score.is_some_and(|s| s > 0.0), "{variant}: {merged:?}");
        assert_eq!(status, "ok", "{variant}: {merged:?}");
    }
    // Finalists of a binary (two at most here, each binary holds two): too few to spread, so
    // both GPUs share their finals, each measuring base and them to its share of the criterion (here
    // --min-samples, 10 each), pooled into one row per finalist against both GPUs' base.
    let all = text(&run);
    assert!(
        all.contains("final: ") && all.contains("(GPUs 0, 1)"),
        "{all}"
    );
    let finals = samples(&bin, &bundle.join("gputune.db"));
    assert_eq!(finals["base"], (20, 0), "10 on each GPU: {finals:?}\n{all}");
    assert_eq!(finals["work_1"], (20, 20), "{finals:?}\n{all}");
    // Nothing beside the store or in the bundle but the store: no shards' stores.
    let strays: Vec<String> = std::fs::read_dir(&bundle)
        .expect("the bundle")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".db") && n != "gputune.db")
        .collect();
    assert!(strays.is_empty(), "{strays:?}");

    // A search into another store measures everything afresh; into the same store, it
    // resumes and says from where.
    let other = dir.join("other.db");
    let o = other.to_str().expect("utf-8");
    let afresh = bundled(&bundle, &["run-bundle", b, "--devices", "0,1", "--db", o]);
    assert!(afresh.status.success(), "{}", text(&afresh));
    assert!(!stderr(&afresh).contains("Resuming"), "{}", text(&afresh));
    assert_eq!(
        screened_on(&stderr(&afresh), 0) + screened_on(&stderr(&afresh), 1),
        4,
        "{}",
        text(&afresh)
    );
    assert_eq!(names(&report(&bin, &other)), ALL);
    let resumed = bundled(&bundle, &["run-bundle", b, "--devices", "0,1", "--db", o]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    let said = stderr(&resumed);
    assert!(
        said.contains(&format!(
            "Resuming the search into {o}: 4 result(s) of spin.spin kept"
        )),
        "{said}"
    );
    assert!(said.contains("0 run(s), 0 result(s) stored"), "{said}");

    let twice = bundled(&bundle, &["run-bundle", b, "--devices", "0,0"]);
    assert_eq!(twice.status.code(), Some(2), "{}", text(&twice));
    let sharded = bundled(
        &bundle,
        &["run-bundle", b, "--devices", "0,1", "--shard", "1/2"],
    );
    assert_eq!(sharded.status.code(), Some(2), "{}", text(&sharded));
    let all = bundled(&bundle, &["run-bundle", b, "--devices", "all", "--db", o]);
    assert!(all.status.success(), "{}", text(&all));
    assert!(
        stderr(&all).contains("on 1 GPU(s) at once: 0"),
        "{}",
        text(&all)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_strategy_on_several_devices_proposes_batches_for_all_of_them() {
    let bin = cargo_gputune();
    let dir = temp_dir("devices-strategy");
    let bundle = gputune_tests::spin_bundle(&bin, &dir, 256, 10);
    let b = bundle.to_str().expect("utf-8");
    // Batches of one asked for, two GPUs: batches of two, one variant each. The same seed
    // proposes the same variants.
    let search = |db: &Path, strategy: &str, evals: &str| {
        bundled(
            &bundle,
            &[
                "run-bundle",
                b,
                "--devices",
                "0,1",
                "--db",
                db.to_str().expect("utf-8"),
                "--strategy",
                strategy,
                "--seed",
                "7",
                "--max-evals",
                evals,
                "--batch-size",
                "1",
            ],
        )
    };
    let (a, c) = (dir.join("a.db"), dir.join("c.db"));
    for db in [&a, &c] {
        let run = search(db, "random", "2");
        assert!(run.status.success(), "{}", text(&run));
        let err = stderr(&run);
        assert!(
            err.contains("random strategy (at most 2 variants, batches of 2 over the GPUs)"),
            "{err}"
        );
        assert_eq!(screened_on(&err, 0) + screened_on(&err, 1), 2, "{err}");
    }
    let (ra, rc) = (report(&bin, &a), report(&bin, &c));
    assert_eq!(ra.len(), 3, "base and two variants: {ra:?}");
    assert_eq!(names(&ra), names(&rc), "the same seed, the same variants");
    // A guided strategy learns from both GPUs' scores.
    let guided = dir.join("guided.db");
    let run = search(&guided, "surrogate", "3");
    assert!(run.status.success(), "{}", text(&run));
    assert_eq!(report(&bin, &guided).len(), 4, "{}", text(&run));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Wraps every variant binary of the bundle so that device 1 fails: with `hidden`, it cannot
/// be opened at all; without, its first process dies once it has started measuring (base in
/// full, the control of the finals, or a variant: the GPU lost mid-search), and it cannot be
/// opened after that.
fn fail_device_1(bundle: &Path, hidden: bool) {
    let bins = bundle.join("bin");
    for entry in std::fs::read_dir(&bins).expect("bin") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        if name.ends_with("-base") || name.contains('.') {
            continue;
        }
        let real = bins.join(format!("{name}.real"));
        std::fs::rename(&path, &real).expect("move the binary aside");
        let lost = bins.join(format!("{name}.lost"));
        if hidden {
            std::fs::write(&lost, "").expect("flag");
        }
        let script = format!(
            r#"#!/bin/sh
# cargo gputune shows each process its one GPU: device 1's see CUDA_VISIBLE_DEVICES=1.
case "$CUDA_VISIBLE_DEVICES" in
  1) ;;
  *) exec "{real}" "$@" ;;
esac
if [ -e "{lost}" ]; then
  echo "error: cannot open CUDA device 1: the test took it away" >&2
  exit 3
fi
: > "{lost}"
jsonl=""; prev=""
for a in "$@"; do
  if [ "$prev" = "--jsonl" ]; then jsonl="$a"; fi
  prev="$a"
done
me=$$
(
  i=0
  while [ $i -lt 1000 ] && ! grep -q '"event":"variant"' "$jsonl" 2> /dev/null; do
    sleep 0.01; i=$((i + 1))
  done
  kill -9 $me
) < /dev/null > /dev/null 2>&1 &
exec "{real}" "$@"
"#,
            real = real.display(),
            lost = lost.display()
        );
        std::fs::write(&path, script).expect("the wrapper");
        let mut perms = std::fs::metadata(&path).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).expect("chmod");
    }
}

#[test]
fn a_device_that_fails_ends_its_own_work_only() {
    let bin = cargo_gputune();
    for hidden in [false, true] {
        let dir = temp_dir(if hidden {
            "devices-hidden"
        } else {
            "devices-lost"
        });
        let bundle = gputune_tests::spin_bundle(&bin, &dir, 256, 10);
        fail_device_1(&bundle, hidden);
        let b = bundle.to_str().expect("utf-8");
        let run = bundled(&bundle, &["run-bundle", b, "--devices", "0,1"]);
        // The search finishes on GPU 0: every variant measured once, none charged with the
        // failure of GPU 1.
        assert!(run.status.success(), "{}", text(&run));
        let err = stderr(&run);
        assert!(
            err.contains("warning: GPU 1 failed and takes no more work"),
            "{err}"
        );
        assert!(err.contains("the test took it away"), "{err}");
        assert!(err.contains("Done: 1 GPU(s)"), "{err}");
        // Lost mid-search, GPU 1 may have finished a variant before; hidden, none.
        assert_eq!(screened_on(&err, 0) + screened_on(&err, 1), 4, "{err}");
        if hidden {
            assert_eq!(screened_on(&err, 1), 0, "{err}");
        }
        let measured = report(&bin, &bundle.join("gputune.db"));
        assert_eq!(names(&measured), ALL, "{err}");
        for (variant, score, status) in &measured {
            assert_eq!(status, "ok", "{variant}: {measured:?}\n{err}");
            assert!(score.is_some(), "{variant}: {measured:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_search_on_several_devices_is_one_search_and_resumes() {
    let bin = cargo_gputune();
    let dir = temp_dir("search-devices");
    let db = dir.join("store.db");
    let search = |extra: &[&str]| {
        let mut args = vec!["search", "--devices", "0,1"];
        args.extend_from_slice(extra);
        args.extend([
            "--",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "10",
            "--no-batch",
        ]);
        gputune(&bin, "gputune-fixture-spin", &db, &args)
    };
    let first = search(&[]);
    assert!(first.status.success(), "{}", text(&first));
    assert!(
        stderr(&first).contains("on 2 GPU(s) at once"),
        "{}",
        text(&first)
    );
    assert_eq!(names(&report(&bin, &db)), ALL);
    // Run again: it resumes from the store and measures nothing.
    let again = search(&[]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        stderr(&again).contains("0 run(s), 0 result(s) stored"),
        "{}",
        text(&again)
    );
    assert!(stderr(&again).contains("Resuming"), "{}", text(&again));
    // A guided strategy: the whole space built, three variants of it searched.
    let guided_db = dir.join("guided.db");
    let guided = gputune(
        &bin,
        "gputune-fixture-spin",
        &guided_db,
        &[
            "search",
            "--devices",
            "0,1",
            "--strategy",
            "surrogate",
            "--max-evals",
            "3",
            "--",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "10",
            "--no-batch",
        ],
    );
    assert!(guided.status.success(), "{}", text(&guided));
    assert!(
        stderr(&guided).contains("Searching with the surrogate strategy (at most 3 variants"),
        "{}",
        text(&guided)
    );
    assert_eq!(report(&bin, &guided_db).len(), 4, "{}", text(&guided));
    let _ = std::fs::remove_dir_all(&dir);
}
