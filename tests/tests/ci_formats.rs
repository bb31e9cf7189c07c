//! `check` for CI systems, on the spin fixture: JUnit XML that the Apache Ant JUnit schema
//! (the strictest CI systems read) accepts, checked with an XML parser; the markdown summary
//! as a table, appended to `$GITHUB_STEP_SUMMARY` unless `--no-step-summary`; `--format
//! json`; and the exit codes, unchanged: 0 pass, 1 regression, 2 usage.

use std::path::Path;
use std::process::Output;

use gputune_tests::{cargo_gputune, gputune_command, temp_dir, text};
use serde_json::Value;

const SPIN: &str = "gputune-fixture-spin";

/// `cargo gputune … ARGS` on the spin fixture, with `GITHUB_STEP_SUMMARY` set to `summary`
/// (or unset).
fn run(bin: &Path, db: &Path, summary: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = gputune_command(bin, SPIN, db);
    cmd.args(args);
    match summary {
        Some(path) => cmd.env("GITHUB_STEP_SUMMARY", path),
        None => cmd.env_remove("GITHUB_STEP_SUMMARY"),
    };
    cmd.output().expect("cargo-gputune runs")
}

/// A test case of the JUnit document: classname, name, and the failure's type and message.
#[derive(Debug)]
struct Case {
    classname: String,
    name: String,
    failure: Option<(String, String)>,
}

/// Reads `xml` as the Ant JUnit schema has it, failing on anything the schema refuses:
/// `<testsuites>` without attributes; each `<testsuite>` with `package`, `id` (from 0), a
/// non-empty `name` and `hostname`, a `timestamp` of `YYYY-MM-DDTHH:MM:SS`, integer counts
/// that agree with its cases, a decimal `time`; its children in the order properties, test
/// cases, system-out, system-err; each test case with `classname`, `name` and a decimal
/// `time`, and at most one `failure` (with a `type`) or `error` or `skipped`.
fn junit_cases(xml: &str) -> Vec<Case> {
    let doc = roxmltree::Document::parse(xml).expect("JUnit XML parses");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(
        root.attributes().count(),
        0,
        "<testsuites> takes no attributes"
    );
    let decimal = |v: &str| v.parse::<f64>().is_ok() && !v.contains(['e', 'E']);
    let mut cases = Vec::new();
    for (id, suite) in root.children().filter(|n| n.is_element()).enumerate() {
        assert_eq!(suite.tag_name().name(), "testsuite");
        let attr = |k: &str| {
            suite
                .attribute(k)
                .unwrap_or_else(|| panic!("<testsuite> has no {k}"))
        };
        assert!(!attr("package").is_empty());
        assert_eq!(attr("id"), id.to_string());
        assert!(!attr("name").trim().is_empty() && !attr("hostname").trim().is_empty());
        let stamp = attr("timestamp");
        assert!(
            stamp.len() == 19
                && stamp.char_indices().all(|(i, c)| match i {
                    4 | 7 => c == '-',
                    10 => c == 'T',
                    13 | 16 => c == ':',
                    _ => c.is_ascii_digit(),
                }),
            "timestamp {stamp}"
        );
        assert!(decimal(attr("time")), "time {}", attr("time"));
        let elements: Vec<roxmltree::Node> = suite.children().filter(|n| n.is_element()).collect();
        let names: Vec<&str> = elements.iter().map(|n| n.tag_name().name()).collect();
        assert_eq!(names.first(), Some(&"properties"), "{names:?}");
        assert_eq!(&names[names.len() - 2..], ["system-out", "system-err"]);
        assert!(names[1..names.len() - 2].iter().all(|n| *n == "testcase"));
        for p in elements[0].children().filter(|n| n.is_element()) {
            assert_eq!(p.tag_name().name(), "property");
            assert!(p.attribute("name").is_some_and(|n| !n.is_empty()));
            assert!(p.attribute("value").is_some());
        }
        let mut failures = 0;
        let mut tests = 0;
        for case in &elements[1..elements.len() - 2] {
            tests += 1;
            let classname = case.attribute("classname").expect("classname");
            let name = case.attribute("name").expect("name");
            for token in [classname, name] {
                assert!(
                    !token.is_empty()
                        && token.trim() == token
                        && !token.contains("  ")
                        && !token.contains(['\n', '\t']),
                    "not an xs:token: {token:?}"
                );
            }
            assert!(case.attribute("time").is_some_and(decimal));
            let inner: Vec<roxmltree::Node> = case.children().filter(|n| n.is_element()).collect();
            assert!(inner.len() <= 1, "one of failure, error, skipped at most");
            let failure = inner.first().map(|f| {
                assert_eq!(f.tag_name().name(), "failure");
                failures += 1;
                (
                    f.attribute("type").expect("a failure's type").to_string(),
                    f.attribute("message").unwrap_or_default().to_string(),
                )
            });
            cases.push(Case {
                classname: classname.into(),
                name: name.into(),
                failure,
            });
        }
        let count = |k: &str| attr(k).parse::<usize>().expect("an integer");
        assert_eq!(count("tests"), tests);
        assert_eq!(count("failures"), failures);
        assert_eq!(count("errors"), 0);
    }
    cases
}

/// The rows of the markdown table whose header row starts with `header`, as cells.
fn markdown_table(md: &str, header: &str) -> Vec<Vec<String>> {
    let rows: Vec<Vec<String>> = md
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect();
    // A table: a header, an alignment row of dashes, and rows as wide as the header.
    assert!(rows.len() >= 2, "no table under {header}: {md}");
    assert!(rows[1]
        .iter()
        .all(|c| c.trim_matches(':').chars().all(|c| c == '-') && c.contains('-')));
    assert!(rows.iter().all(|r| r.len() == rows[0].len()), "{md}");
    rows
}

#[test]
fn junit_markdown_and_json_say_what_the_exit_code_says() {
    let bin = cargo_gputune();
    let dir = temp_dir("ci-formats");
    let db = dir.join("store.db");
    let out = gputune_tests::gputune(
        &bin,
        SPIN,
        &db,
        &[
            "search",
            "--",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "20",
            "--no-batch",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = run(&bin, &db, None, &["report", "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let baseline = dir.join("baseline.json");
    std::fs::write(&baseline, &out.stdout).expect("write the baseline");
    let baseline_arg = baseline.to_str().expect("utf-8");

    // Against its own report: pass, in every format.
    let junit = dir.join("out/check.xml");
    let markdown = dir.join("out/check.md");
    let step_summary = dir.join("step-summary.md");
    std::fs::write(&step_summary, "earlier step\n").expect("write");
    let out = run(
        &bin,
        &db,
        Some(&step_summary),
        &[
            "check",
            "--baseline",
            baseline_arg,
            "--junit",
            junit.to_str().expect("utf-8"),
            "--markdown",
            markdown.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let cases = junit_cases(&std::fs::read_to_string(&junit).expect("JUnit written"));
    // Base and four variants on two runtime workloads each, none failed.
    assert_eq!(cases.len(), 10, "{cases:?}");
    assert!(cases.iter().all(|c| c.failure.is_none()), "{cases:?}");
    assert!(cases
        .iter()
        .all(|c| c.classname == "gputune.check.baseline"));
    assert!(cases
        .iter()
        .any(|c| c.name.starts_with("spin.spin [*] work_1 ")));
    let md = std::fs::read_to_string(&markdown).expect("markdown written");
    let rows = markdown_table(&md, "| workload |");
    assert_eq!(
        rows[0],
        [
            "workload",
            "baseline",
            "current",
            "base drift",
            "change",
            "resolution",
            "verdict"
        ]
    );
    assert_eq!(rows.len(), 2 + 10, "{md}");
    assert!(md.ends_with("**Result: pass**\n"), "{md}");
    // Appended to the step summary, after what was there, and printed on the terminal.
    let summary = std::fs::read_to_string(&step_summary).expect("step summary");
    assert!(
        summary.starts_with("earlier step\n## gputune check\n"),
        "{summary}"
    );
    assert!(summary.contains(&md), "{summary}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), md);

    // JSON on stdout instead of the table; --no-step-summary leaves the summary alone.
    let before = std::fs::read_to_string(&step_summary).expect("step summary");
    let out = run(
        &bin,
        &db,
        Some(&step_summary),
        &[
            "check",
            "--baseline",
            baseline_arg,
            "--format",
            "json",
            "--no-step-summary",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--format json prints JSON");
    assert_eq!(doc["result"], "pass");
    assert_eq!(
        doc["baseline"]["compared"].as_array().map(Vec::len),
        Some(10)
    );
    assert_eq!(
        std::fs::read_to_string(&step_summary).expect("read"),
        before
    );

    // Against a baseline twice as fast: exit 1, and the JUnit failures carry the numbers.
    // Everything was twice as fast there: the base measured beside each variant too.
    let mut doctored: Value =
        serde_json::from_slice(&std::fs::read(&baseline).expect("read")).expect("JSON");
    for g in doctored["groups"].as_array_mut().expect("groups") {
        for v in g["variants"].as_array_mut().expect("variants") {
            for w in v["workloads"].as_array_mut().expect("workloads") {
                if let Some(c) = w["center"].as_f64() {
                    w["center"] = Value::from(c / 2.0);
                }
                if let Some(c) = w["control"]["center"].as_f64() {
                    w["control"]["center"] = Value::from(c / 2.0);
                }
            }
        }
    }
    std::fs::write(&baseline, doctored.to_string()).expect("write");
    let out = run(
        &bin,
        &db,
        None,
        &[
            "check",
            "--baseline",
            baseline_arg,
            "--junit",
            junit.to_str().expect("utf-8"),
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["result"], "regression");
    let cases = junit_cases(&std::fs::read_to_string(&junit).expect("JUnit written"));
    let slow: Vec<&Case> = cases
        .iter()
        .filter(|c| c.failure.as_ref().is_some_and(|f| f.0 == "SLOW"))
        .collect();
    // Base is twice as slow as its baseline; the variants, with base's drift taken out, are not.
    assert_eq!(slow.len(), 2, "{cases:?}");
    assert!(slow
        .iter()
        .all(|c| c.name.starts_with("spin.spin [*] base ")));
    let (_, message) = slow[0].failure.clone().expect("a failure");
    assert!(
        message.starts_with("SLOW: +100.00 % against the baseline (baseline "),
        "{message}"
    );

    // Usage errors stay exit 2, and write nothing.
    let stray = dir.join("stray.xml");
    let out = run(
        &bin,
        &db,
        None,
        &["check", "--junit", stray.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!stray.exists());
    let out = run(
        &bin,
        &db,
        None,
        &["check", "--min-score", "1", "--format", "xml"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}
