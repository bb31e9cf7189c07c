//! End-to-end tests of code generation: build the fixture crate for production, as a batch of
//! 64 variants and as one isolated variant, and check which constants each run used.
//!
//! One test function, because every build of the fixture rewrites the same binary.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

const PACKAGE: &str = "gputune-fixture-consts";

struct Build {
    bench: PathBuf,
    manifest: Value,
}

/// Builds the fixture's bench with `GPUTUNE_VARIANTS` set to `selection` (unset if `None`).
fn build(selection: Option<&str>) -> Result<Build, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--quiet",
        "--message-format=json",
        "-p",
        PACKAGE,
        "--bench",
        "consts",
    ])
    .current_dir(env!("CARGO_MANIFEST_DIR"));
    match selection {
        Some(s) => cmd.env("GPUTUNE_VARIANTS", s),
        None => cmd.env_remove("GPUTUNE_VARIANTS"),
    };
    let out = cmd.output().expect("cargo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // cargo puts the build script's error in the JSON messages as well as on stderr.
        return Err(format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)));
    }
    let messages: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let bench = messages
        .iter()
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "consts")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("the build names the bench executable");
    let out_dir = messages
        .iter()
        .filter(|m| {
            m["reason"] == "build-script-executed"
                && m["package_id"]
                    .as_str()
                    .is_some_and(|p| p.contains(PACKAGE))
        })
        .find_map(|m| m["out_dir"].as_str().map(PathBuf::from))
        .expect("the build names the fixture's OUT_DIR");
    let text = std::fs::read_to_string(out_dir.join("gputune/manifest.json")).expect("manifest");
    Ok(Build {
        bench,
        manifest: serde_json::from_str(&text).expect("manifest is JSON"),
    })
}

/// Runs the bench and returns, per state, (status, variant, constants, per_type, error).
fn run(
    bench: &PathBuf,
    args: &[&str],
    arch: Option<&str>,
) -> Vec<(String, String, String, String, String)> {
    let mut cmd = Command::new(bench);
    cmd.args(args).args([
        "--stopping-criterion",
        "sample-count",
        "--target-samples",
        "1",
        "--min-samples",
        "1",
        "--no-batch",
        "--json",
        "-",
    ]);
    match arch {
        Some(a) => cmd.env("GPUTUNE_ARCH", a),
        None => cmd.env_remove("GPUTUNE_ARCH"),
    };
    let out = cmd.output().expect("the bench runs");
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    let text = |v: &Value| v.as_str().map(str::to_string).unwrap_or_default();
    let note = |st: &Value, tag: &str| {
        st["summaries"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s["tag"] == tag))
            .map(|s| text(&s["data"][0]["value"]))
            .unwrap_or_default()
    };
    doc["benchmarks"][0]["states"]
        .as_array()
        .expect("states")
        .iter()
        .map(|st| {
            (
                text(&st["status"]),
                text(&st["variant"]),
                note(st, "fixture/constants"),
                note(st, "fixture/per_type"),
                text(&st["error"]),
            )
        })
        .collect()
}

fn labels(manifest: &Value, function: &str) -> Vec<String> {
    manifest["functions"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == function))
        .and_then(|f| f["labels"].as_array())
        .expect("the function's labels")
        .iter()
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect()
}

#[test]
fn production_batched_and_isolated_builds_run_the_right_constants() {
    // Production: base, or the gputune.toml entry for the architecture.
    let prod = build(None).expect("production build");
    let f = &prod.manifest["functions"][0];
    assert_eq!(f["name"], "constants");
    assert_eq!(f["space_size"], 84);
    assert_eq!(
        f["base"],
        serde_json::json!({"a": 3, "b": 2, "mode": "mid"})
    );
    assert_eq!(f["params"][2]["type"], "&str");
    assert_eq!(
        f["compiled"],
        serde_json::json!(["base", "a_2.b_8.mode_lo", "a_8.b_4.mode_hi"])
    );
    let space = labels(&prod.manifest, "constants");
    assert_eq!(space.len(), 84);
    assert_eq!(space[0], "a_1.b_1.mode_lo");
    assert!(
        !space.contains(&"a_5.b_8.mode_lo".to_string()),
        "require(a * b <= 32)"
    );

    for (arch, constants, per_type) in [
        (Some("sm_90"), "a_8.b_4.mode_hi", ["2", "3"]),
        (Some("sm_80"), "a_2.b_8.mode_lo", ["1", "1"]),
        (Some("sm_70"), "a_3.b_2.mode_mid", ["1", "1"]),
        (None, "a_3.b_2.mode_mid", ["1", "1"]),
    ] {
        let states = run(&prod.bench, &[], arch);
        assert_eq!(states.len(), 2, "{arch:?}");
        for (st, expect_k) in states.iter().zip(per_type) {
            assert_eq!(st.0, "ok", "{arch:?}: {}", st.4);
            assert_eq!(st.2, constants, "{arch:?}");
            assert_eq!(st.3, expect_k, "{arch:?}");
            let label = if constants == "a_3.b_2.mode_mid" {
                "base"
            } else {
                constants
            };
            assert_eq!(st.1, label, "{arch:?}");
        }
    }

    // Setup is once per workload and process: 64 variants over the two type instances (one
    // process) set up twice, not 128 times.
    {
        let labels: Vec<String> = space
            .iter()
            .take(64)
            .map(|l| format!("constants.{l}"))
            .collect();
        let selection: Vec<String> = labels.iter().map(|l| format!("{PACKAGE}::{l}")).collect();
        let batched = build(Some(&selection.join(","))).expect("batched build");
        let out = Command::new(&batched.bench)
            .args([
                "--variant",
                &labels.join(","),
                "--stopping-criterion",
                "sample-count",
            ])
            .args([
                "--target-samples",
                "1",
                "--min-samples",
                "1",
                "--no-batch",
                "--json",
                "-",
            ])
            .output()
            .expect("the bench runs");
        let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let states = doc["benchmarks"][0]["states"].as_array().expect("states");
        assert_eq!(states.len(), 128, "64 variants × 2 workloads");
        let setups: Vec<f64> = states
            .iter()
            .filter_map(|st| {
                st["summaries"]
                    .as_array()?
                    .iter()
                    .find(|s| s["tag"] == "fixture/setups")?["data"][0]["value"]
                    .as_str()?
                    .parse()
                    .ok()
            })
            .collect();
        assert_eq!(setups.len(), 128);
        assert_eq!(
            setups.iter().copied().fold(0.0, f64::max),
            2.0,
            "{setups:?}"
        );
    }

    // A batch of 64: every one of them runs its own constants, selected by --variant.
    let batch: Vec<String> = space.iter().take(64).cloned().collect();
    let selection: Vec<String> = batch
        .iter()
        .map(|l| format!("{PACKAGE}::constants.{l}"))
        .collect();
    let batched = build(Some(&selection.join(","))).expect("batched build");
    let compiled = batched.manifest["functions"][0]["compiled"]
        .as_array()
        .expect("compiled")
        .len();
    let applied_outside = ["a_2.b_8.mode_lo", "a_8.b_4.mode_hi"]
        .iter()
        .filter(|a| !batch.iter().any(|b| b == *a))
        .count();
    assert_eq!(
        compiled,
        1 + 64 + applied_outside,
        "base, the batch, applied entries not in it"
    );
    for label in &batch {
        let states = run(
            &batched.bench,
            &[
                "--variant",
                &format!("constants.{label}"),
                "-a",
                "T{ct}=f32",
            ],
            None,
        );
        assert_eq!(states[0].0, "ok", "{label}: {}", states[0].4);
        assert_eq!(&states[0].1, label);
        assert_eq!(&states[0].2, label, "the variant's constants ran");
    }
    let states = run(&batched.bench, &["--variant", "base"], Some("sm_90"));
    assert_eq!(
        states[0].2, "a_3.b_2.mode_mid",
        "--variant base wins over the policy"
    );
    let outside = &space[70];
    let states = run(&batched.bench, &["--variant", outside], None);
    assert_eq!(states[0].0, "failed");
    assert!(
        states[0].4.contains("it is not compiled into this binary"),
        "{}",
        states[0].4
    );

    // One isolated variant, outside the batch.
    let isolated = build(Some(&format!("constants.{outside}"))).expect("isolated build");
    assert_eq!(
        isolated.manifest["functions"][0]["compiled"]
            .as_array()
            .map(Vec::len),
        Some(4)
    );
    let states = run(&isolated.bench, &["--variant", outside], None);
    assert_eq!(&states[0].2, outside);
    assert_eq!(states[0].0, "ok");
    let states = run(&isolated.bench, &["--variant", &batch[0]], None);
    assert_eq!(states[0].0, "failed");

    // A mistyped variant fails the build and says why.
    let err = build(Some("constants.a_5.b_8.mode_lo"))
        .err()
        .expect("not a point");
    assert!(err.contains("is not a variant of `constants`"), "{err}");
    let err = build(Some(&format!("{PACKAGE}::constant.a_1.b_1.mode_lo")))
        .err()
        .expect("no such function");
    assert!(err.contains("has no #[tune] function `constant`"), "{err}");
}
