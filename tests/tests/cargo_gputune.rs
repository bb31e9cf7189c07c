//! End-to-end tests of `cargo gputune` on the spin fixture (CPU backend, four variants whose
//! ranking is known): search, resume, report, apply, a production build, and check.

use std::path::Path;
use std::process::{Command, Output};

use gputune_tests::{executable, root, text};
use serde_json::Value;

fn gputune(bin: &Path, db: &Path, args: &[&str]) -> Output {
    gputune_tests::gputune(bin, "gputune-fixture-spin", db, args)
}

const BENCH_ARGS: [&str; 6] = [
    "--",
    "--stopping-criterion",
    "sample-count",
    "--target-samples",
    "25",
    "--no-batch",
];

#[test]
fn search_resume_report_apply_and_check() {
    let _spin = gputune_tests::spin_lock();
    let bin = executable(
        &["-p", "cargo-gputune", "--bin", "cargo-gputune"],
        "cargo-gputune",
    );
    let dir = std::env::temp_dir().join(format!("gputune-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = dir.join("store.db");
    let toml = root().join("tests/fixtures/spin/gputune.toml");
    let _ = std::fs::remove_file(&toml);

    // Search: base and the four variants, two runtime workloads each.
    let mut args = vec!["search", "--json"];
    args.extend(BENCH_ARGS);
    let out = gputune(&bin, &db, &args);
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    // One bench process: the one batch's binary runs base (the control) and its four
    // variants, screened, then, as a second pass (`--more-on-stdin`), the finals: base and
    // the variants that can still win, measured in full.
    assert_eq!(doc["search"]["runs"], 1, "{doc}");
    assert!(doc["search"]["builds"].as_u64().is_some_and(|b| b >= 1));
    let variants = doc["groups"][0]["variants"].as_array().expect("variants");
    let mut labels: Vec<&str> = variants
        .iter()
        .filter_map(|v| v["variant"].as_str())
        .collect();
    labels.sort_unstable();
    assert_eq!(labels, ["base", "work_1", "work_2", "work_4", "work_8"]);
    for v in variants {
        let w = v["workloads"].as_array().expect("workloads");
        assert_eq!(w.len(), 2, "{v}");
        assert!(w.iter().all(|w| w["status"] == "ok"), "{v}");
    }
    assert_eq!(variants[0]["variant"], "work_1", "the fastest ranks first");

    // A rerun builds nothing and runs nothing.
    let out = gputune(&bin, &db, &args);
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["search"]["builds"], 0);
    assert_eq!(doc["search"]["runs"], 0);

    // Report and coverage.
    let out = gputune(&bin, &db, &["report", "--top", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = report
        .lines()
        .filter(|l| l.trim_start().starts_with("work_"))
        .collect();
    assert_eq!(rows.len(), 2, "{report}");
    assert!(
        // `+`: significantly faster than base (`-` would be significantly slower).
        rows[0].trim_start().starts_with("work_1") && rows[0].trim_end().ends_with('+'),
        "{report}"
    );
    assert!(rows[1].trim_start().starts_with("work_2"), "{report}");
    let out = gputune(&bin, &db, &["report", "--coverage"]);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("spin.spin [*] on cpu: 4 / 4 measured (100.0 %), 4 ok"),
        "{}",
        text(&out)
    );
    let plots = dir.join("plots");
    let out = gputune(
        &bin,
        &db,
        &["report", "--plot", plots.to_str().expect("utf-8")],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Wrote 3 SVG plot(s)"),
        "{}",
        text(&out)
    );
    let mut svgs: Vec<(String, String)> = std::fs::read_dir(&plots)
        .expect("the plot directory")
        .map(|e| {
            let path = e.expect("an entry").path();
            let svg = std::fs::read_to_string(&path).expect("an SVG");
            (path.display().to_string(), svg)
        })
        .collect();
    svgs.sort();
    assert_eq!(svgs.len(), 3, "two workloads' samples and one score plot");
    for (path, svg) in &svgs {
        assert!(svg.starts_with("<svg"), "{path}");
        assert!(svg.contains("work_1"), "{path}");
        if path.ends_with(".samples.svg") {
            assert!(svg.contains("Steps{io}=") && svg.contains("base"), "{path}");
        } else {
            assert!(
                path.ends_with(".score.svg") && svg.contains("score over work"),
                "{path}"
            );
        }
    }
    let out = gputune(
        &bin,
        &db,
        &[
            "report",
            "--plot",
            plots.to_str().expect("utf-8"),
            "--plot-params",
            "tpb",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = gputune(&bin, &db, &["report", "--format", "csv"]);
    assert!(String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .is_some_and(|l| l.contains(",work_1,")));

    // Apply, then a production build runs the winner without --variant.
    let out = gputune(&bin, &db, &["apply", "--dry-run"]);
    assert!(out.status.success() && !toml.exists(), "{}", text(&out));
    // --arch-only keys the winner by the architecture, noting the model it was measured on.
    let out = gputune(&bin, &db, &["apply", "--dry-run", "--arch-only"]);
    assert!(out.status.success() && !toml.exists(), "{}", text(&out));
    let dry = String::from_utf8_lossy(&out.stdout);
    assert!(
        dry.contains("[spin.\"*\".cpu]\nmeasured-on = ") && dry.contains("\nwork = 1\n"),
        "{dry}"
    );
    // By default, by the device model the store recorded: this CPU's name.
    let out = gputune(&bin, &db, &["apply"]);
    assert!(out.status.success(), "{}", text(&out));
    let written = std::fs::read_to_string(&toml).expect("gputune.toml written");
    assert!(
        written.contains("version = 2\n") && written.contains("\nwork = 1\n"),
        "{written}"
    );
    assert!(
        written.contains("[spin.\"*\".") && !written.contains("[spin.\"*\".cpu]"),
        "{written}"
    );
    let bench = executable(&["-p", "gputune-fixture-spin", "--bench", "spin"], "spin");
    let run = Command::new(&bench)
        .args([
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "5",
            "--no-batch",
            "--json",
            "-",
        ])
        .env_remove("GPUTUNE_ARCH")
        .env_remove("GPUTUNE_DEVICE")
        .output()
        .expect("bench runs");
    let doc: Value = serde_json::from_slice(&run.stdout).expect("bench JSON");
    assert_eq!(doc["benchmarks"][0]["states"][0]["variant"], "work_1");
    // The production build found this CPU's model entry; another model runs base.
    let run = Command::new(&bench)
        .args([
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "5",
        ])
        .args(["--no-batch", "--json", "-"])
        .env("GPUTUNE_DEVICE", "Another CPU")
        .output()
        .expect("bench runs");
    let doc: Value = serde_json::from_slice(&run.stdout).expect("bench JSON");
    assert_eq!(doc["benchmarks"][0]["states"][0]["variant"], "base");

    // Check: against its own report it passes; against one twice as fast it fails.
    let out = gputune(&bin, &db, &["report", "--format", "json"]);
    let baseline = dir.join("baseline.json");
    std::fs::write(&baseline, &out.stdout).expect("write baseline");
    let summary = dir.join("summary.md");
    let out = gputune(
        &bin,
        &db,
        &[
            "check",
            "--baseline",
            baseline.to_str().expect("utf-8"),
            "--min-score",
            "1.5",
            "--summary",
            summary.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let md = std::fs::read_to_string(&summary).expect("summary");
    assert!(
        md.contains("SAME") && md.contains("**Result: pass**"),
        "{md}"
    );
    let mut doctored: Value = serde_json::from_slice(&out_json(&bin, &db)).expect("JSON");
    for g in doctored["groups"].as_array_mut().expect("groups") {
        for v in g["variants"].as_array_mut().expect("variants") {
            for w in v["workloads"].as_array_mut().expect("workloads") {
                if let Some(c) = w["center"].as_f64() {
                    w["center"] = Value::from(c / 2.0);
                }
            }
        }
    }
    std::fs::write(&baseline, doctored.to_string()).expect("write");
    let out = gputune(
        &bin,
        &db,
        &["check", "--baseline", baseline.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("SLOW"));
    // The score gate alone: work_1 is about eight times faster than base, not a hundred.
    let out = gputune(&bin, &db, &["check", "--min-score", "100"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let out = gputune(&bin, &db, &["check"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));

    let _ = std::fs::remove_file(&toml);
    let _ = std::fs::remove_dir_all(&dir);
}

fn out_json(bin: &Path, db: &Path) -> Vec<u8> {
    gputune(bin, db, &["report", "--format", "json"]).stdout
}

#[test]
fn usage_errors_exit_2() {
    let bin = executable(
        &["-p", "cargo-gputune", "--bin", "cargo-gputune"],
        "cargo-gputune",
    );
    let dir = std::env::temp_dir().join(format!("gputune-cli-usage-{}", std::process::id()));
    let db = dir.join("none.db");
    let out = gputune(&bin, &db, &["report"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no store at"));
    let out = Command::new(&bin)
        .args(["gputune", "frobnicate"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn pipelined_search_stores_every_variant_and_shows_commands() {
    let _spin = gputune_tests::spin_lock();
    let bin = executable(
        &["-p", "cargo-gputune", "--bin", "cargo-gputune"],
        "cargo-gputune",
    );
    let dir = std::env::temp_dir().join(format!("gputune-cli-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = dir.join("store.db");
    // One variant per batch, so that every build but the first overlaps a run.
    let mut args = vec![
        "search",
        "--json",
        "-v",
        "--pipeline",
        "always",
        "--batch-size",
        "1",
    ];
    args.extend(BENCH_ARGS);
    let out = gputune(&bin, &db, &args);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("builds pipelined with runs"), "{stderr}");
    assert!(
        stderr.contains("--variant spin.base,spin.work_4"),
        "{stderr}"
    );
    assert!(
        stderr.contains("GPUTUNE_VARIANTS=1 variant(s) of spin"),
        "{stderr}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    // Four batches, and the finals: one process per binary that holds a finalist (each batch
    // is its own binary here, and which variants can still win depends on the noise).
    assert!(
        doc["search"]["runs"].as_u64().is_some_and(|r| r >= 5),
        "{doc}"
    );
    assert!(
        doc["search"]["builds"].as_u64().is_some_and(|b| b >= 4),
        "{doc}"
    );
    let variants = doc["groups"][0]["variants"].as_array().expect("variants");
    assert_eq!(variants.len(), 5, "{doc}");
    for v in variants {
        let w = v["workloads"].as_array().expect("workloads");
        assert!(w.len() == 2 && w.iter().all(|w| w["status"] == "ok"), "{v}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn slow_variants_lose_the_race_and_the_fastest_is_measured_in_full() {
    let _spin = gputune_tests::spin_lock();
    let bin = gputune_tests::cargo_gputune();
    let dir = gputune_tests::temp_dir("race");
    let db = dir.join("store.db");
    // Racing at a margin instead of deciding; 100 samples leave room for the checks at 20,
    // 40 and 80.
    let out = gputune(
        &bin,
        &db,
        &[
            "search",
            "--race",
            "0.05",
            "-v",
            "-a",
            "Steps{io}=40000",
            "--",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "100",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--race 0.05"), "{stderr}");
    assert!(stderr.contains("--no-batch"), "{stderr}");
    // The batch's order, from the command `-v` shows: `--variant spin.work_4,spin.work_1,…`.
    let order: Vec<&str> = stderr
        .split("--variant ")
        .filter_map(|rest| rest.split_whitespace().next())
        .find(|list| list.contains("work_"))
        .expect("the batch command")
        .split(',')
        .map(|l| l.trim_start_matches("spin."))
        // Base runs first in every batch process, as the control.
        .filter(|l| *l != "base")
        .collect();
    let work = |label: &str| -> u32 {
        label
            .strip_prefix("work_")
            .and_then(|w| w.parse().ok())
            .expect("a work label")
    };

    let store = rusqlite::Connection::open(&db).expect("the store opens");
    let mut query = store
        .prepare("SELECT variant, status, samples, message FROM results")
        .expect("query");
    let rows: Vec<(String, String, String, Option<String>)> = query
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(rows.len(), 5, "{rows:?}");
    let mut lost = 0;
    for (variant, status, samples, message) in &rows {
        assert_eq!(status, "ok", "{variant}");
        let n = serde_json::from_str::<Vec<f64>>(samples)
            .expect("samples")
            .len();
        let position = order.iter().position(|l| l == variant);
        // work_k takes k times work_1's time: a variant is clearly out once any variant with
        // less work has run before it in the same process. Base runs alone, in full.
        let raced = position.is_some_and(|p| order[..p].iter().any(|&e| work(e) < work(variant)));
        if raced {
            lost += 1;
            assert_eq!(n, 20, "{variant} stops at the first check");
            let message = message.as_deref().unwrap_or_default();
            assert!(
                message.starts_with("raced: stopped after 20 samples"),
                "{message}"
            );
        } else {
            assert_eq!(
                n, 100,
                "{variant} ({position:?} in {order:?}) runs to its criterion"
            );
            assert_eq!(message, &None, "{variant}");
        }
    }
    // The seeded order is not slowest-first, so the race had losers.
    assert!(lost > 0, "{order:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_energy_search_without_a_counter_says_so_and_runs_on_time() {
    let _spin = gputune_tests::spin_lock();
    let bin = gputune_tests::cargo_gputune();
    let dir = gputune_tests::temp_dir("energy");
    let db = dir.join("store.db");
    let mut args = vec!["search", "--objective", "energy"];
    args.extend(BENCH_ARGS);
    let out = gputune(&bin, &db, &args);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("Note: energy is not measured").count(),
        1,
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Every variant measured and scored by time; no energy, no winner by energy, no front.
    assert!(stdout.contains("energy winner: none"), "{stdout}");
    assert!(
        stdout.contains("Pareto front of time × energy: none (no energy measured)"),
        "{stdout}"
    );
    let doc: Value = serde_json::from_slice(&out_json(&bin, &db)).expect("report JSON");
    let variants = doc["groups"][0]["variants"].as_array().expect("variants");
    assert_eq!(variants.len(), 5, "{doc}");
    // The report has no energy table; apply by energy is refused, by time it works.
    let out = gputune(&bin, &db, &["report"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Energy:"));
    let out = gputune(&bin, &db, &["apply", "--objective", "energy", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no energy measurements"));
    let _ = std::fs::remove_dir_all(&dir);
}
