//! The community's data through the real binary: a Kernel Tuner cache (point-in-polygon on an
//! RTX 3090, from the FAIR benchmark hub, `tests/fixtures/kt/`) imported, reported, replayed,
//! plotted and exported again, in both formats, keeping every configuration, time and status;
//! Kernel Tuner replaying the export where it is installed; malformed input refused with
//! nothing written.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gputune_tests::{cargo_gputune, root};
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/kt").join(name)
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gputune-kt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

fn gputune(bin: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .arg("gputune")
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("runs")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn refused(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit 2 (bad input): {err}");
    for n in needles {
        assert!(err.contains(n), "says {n:?}: {err}");
    }
}

fn json_of(path: &Path) -> Value {
    let bytes = std::fs::read(path).expect("reads");
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_string(&mut s)
            .expect("gzip");
        s
    } else {
        String::from_utf8(bytes).expect("utf-8")
    };
    serde_json::from_str(&text).expect("JSON")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

/// Every configuration of the original cache is in `exported` with its time (or failure),
/// samples and compile time.
fn same_configurations(original: &Value, exported: &Value) {
    let (a, b) = (
        original["cache"].as_object().expect("cache"),
        exported["cache"].as_object().expect("cache"),
    );
    assert_eq!(a.len(), b.len(), "every configuration, once");
    for (key, want) in a {
        let got = &b[key];
        match (&want["time"], &got["time"]) {
            (Value::Number(x), Value::Number(y)) => {
                let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(1.0));
                assert!(close(x, y), "{key}: time {x} → {y}");
            }
            (x, y) => assert_eq!(x, y, "{key}: the failure is kept"),
        }
        let samples = |v: &Value| -> Vec<f64> {
            v["times"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default()
        };
        let (sa, sb) = (samples(want), samples(got));
        assert_eq!(sa.len(), sb.len(), "{key}: times");
        assert!(
            sa.iter().zip(&sb).all(|(x, y)| close(*x, *y)),
            "{key}: times"
        );
        let ct = |v: &Value| v["compile_time"].as_f64().unwrap_or(0.0);
        assert!(close(ct(want), ct(got)), "{key}: compile_time");
        for k in original["tune_params_keys"].as_array().expect("keys") {
            let k = k.as_str().expect("a name");
            assert_eq!(want[k], got[k], "{key}: {k}");
        }
    }
    assert_eq!(original["tune_params"], exported["tune_params"]);
    assert_eq!(original["device_name"], exported["device_name"]);
    assert_eq!(original["kernel_name"], exported["kernel_name"]);
}

#[test]
fn a_kernel_tuner_cache_imports_reports_replays_plots_and_exports_back() {
    let bin = cargo_gputune();
    let dir = temp("round-trip");
    let db = dir.join("kt.db");
    let cache = fixture("pnpoly_RTX_3090.json.gz");
    let out = gputune(
        &bin,
        &[
            "import",
            cache.to_str().expect("utf-8"),
            fixture("pnpoly.T1.json").to_str().expect("utf-8"),
            "--db",
            db.to_str().expect("utf-8"),
        ],
    );
    ok(&out);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("4092 configurations (318 launch_failed, 3774 ok)")
            && said.contains("base: between_method_1.block_size_x_32.tile_size_1.use_method_1")
            && said.contains("the default of"),
        "{said}"
    );
    let db_arg = db.to_str().expect("utf-8");
    let report = ok(&gputune(&bin, &["report", "--db", db_arg, "--top", "3"]));
    assert!(
        report.contains("pnpoly_RTX_3090 / cn_pnpoly.cn_pnpoly"),
        "{report}"
    );
    assert!(report.contains("NVIDIA GeForce RTX 3090"), "{report}");
    let coverage = ok(&gputune(&bin, &["report", "--db", db_arg, "--coverage"]));
    assert!(coverage.contains("4092"), "{coverage}");
    let replay = ok(&gputune(
        &bin,
        &[
            "replay",
            "--db",
            db_arg,
            "--strategy",
            "genetic",
            "--seeds",
            "2",
            "--max-evals",
            "30",
        ],
    ));
    assert!(replay.contains("4092 recorded"), "{replay}");
    let plots = dir.join("plots");
    ok(&gputune(
        &bin,
        &[
            "report",
            "--db",
            db_arg,
            "--plot",
            plots.to_str().expect("utf-8"),
        ],
    ));
    let svgs = std::fs::read_dir(&plots).expect("plots").count();
    assert!(svgs >= 2, "sample and score plots: {svgs}");

    // Export as a cache: every configuration, time and status kept.
    let original = json_of(&cache);
    let exported = dir.join("out.json.gz");
    ok(&gputune(
        &bin,
        &[
            "export",
            "--format",
            "kt-cache",
            "--db",
            db_arg,
            "-o",
            exported.to_str().expect("utf-8"),
        ],
    ));
    same_configurations(&original, &json_of(&exported));

    // As T4, imported again, and exported as a cache: the same.
    let t4 = dir.join("out.T4.json");
    ok(&gputune(
        &bin,
        &[
            "export",
            "--format",
            "t4",
            "--db",
            db_arg,
            "-o",
            t4.to_str().expect("utf-8"),
        ],
    ));
    let doc = json_of(&t4);
    assert_eq!(doc["schema_version"], "1.0.0");
    assert_eq!(doc["results"].as_array().map(Vec::len), Some(4092));
    let db2 = dir.join("t4.db");
    let db2_arg = db2.to_str().expect("utf-8");
    ok(&gputune(
        &bin,
        &["import", t4.to_str().expect("utf-8"), "--db", db2_arg],
    ));
    let again = ok(&gputune(
        &bin,
        &["export", "--format", "kt-cache", "--db", db2_arg],
    ));
    same_configurations(&original, &serde_json::from_str(&again).expect("JSON"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn malformed_files_are_refused_naming_the_field_and_nothing_is_written() {
    let bin = cargo_gputune();
    let dir = temp("malformed");
    let db = dir.join("new.db");
    let db_arg = db.to_str().expect("utf-8");
    let write = |name: &str, text: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("writes");
        p.to_str().expect("utf-8").to_string()
    };
    let noise = write("noise.json", &[0x13, 0x99, 0x00, 0xfe, 0x41]);
    refused(
        &gputune(&bin, &["import", &noise, "--db", db_arg]),
        &["noise.json", "not JSON"],
    );
    let bad_times = write(
        "bad-times.json",
        br#"{"device_name": "d", "kernel_name": "k", "tune_params_keys": ["x"],
            "tune_params": {"x": [1, 2]},
            "cache": {"1": {"x": 1, "time": 1.0, "times": ["fast"], "compile_time": 0}}}"#,
    );
    refused(
        &gputune(&bin, &["import", &bad_times, "--db", db_arg]),
        &["bad-times.json", "cache[\"1\"].times"],
    );
    let unknown = write("other.json", br#"{"hello": 1}"#);
    refused(
        &gputune(&bin, &["import", &unknown, "--db", db_arg]),
        &["other.json", "`hello`"],
    );
    // A good file beside a bad one: nothing of either is written.
    let good = fixture("pnpoly_RTX_3090.json.gz");
    refused(
        &gputune(
            &bin,
            &[
                "import",
                good.to_str().expect("utf-8"),
                &bad_times,
                "--db",
                db_arg,
            ],
        ),
        &["cache[\"1\"].times"],
    );
    refused(
        &gputune(
            &bin,
            &[
                "import",
                good.to_str().expect("utf-8"),
                "--base",
                "between_method=9",
                "--db",
                db_arg,
            ],
        ),
        &["--base"],
    );
    let left: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("new."))
        .collect();
    assert!(left.is_empty(), "no store left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_refused_merge_into_a_new_store_leaves_nothing() {
    let bin = cargo_gputune();
    let dir = temp("merge");
    let good = dir.join("good.db");
    ok(&gputune(
        &bin,
        &[
            "import",
            fixture("pnpoly_RTX_3090.json.gz").to_str().expect("utf-8"),
            "--db",
            good.to_str().expect("utf-8"),
        ],
    ));
    let noise = dir.join("random-bytes.db");
    std::fs::write(
        &noise,
        (0..4096u32)
            .map(|i| (i * 7919 % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .expect("writes");
    let target = dir.join("NEW.db");
    refused(
        &gputune(
            &bin,
            &[
                "merge",
                "--db",
                target.to_str().expect("utf-8"),
                good.to_str().expect("utf-8"),
                noise.to_str().expect("utf-8"),
            ],
        ),
        &["random-bytes.db"],
    );
    for f in ["NEW.db", "NEW.lock", "NEW.db-wal", "NEW.db-shm"] {
        assert!(!dir.join(f).exists(), "{f} left behind");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Python that has Kernel Tuner: `GPUTUNE_KT_PYTHON`, else `python3`, if it imports it.
fn kernel_tuner_python() -> Option<String> {
    let python = std::env::var("GPUTUNE_KT_PYTHON").unwrap_or_else(|_| "python3".into());
    let found = Command::new(&python)
        .args(["-c", "import kernel_tuner"])
        .output()
        .is_ok_and(|o| o.status.success());
    found.then_some(python)
}

/// Replays a cache in Kernel Tuner's simulation mode: 20 random evaluations.
const SIMULATE: &str = r#"
import json, sys
import kernel_tuner
path = sys.argv[1]
with open(path) as f:
    c = json.load(f)
tune_params = {k: c["tune_params"][k] for k in c["tune_params_keys"]}
results, env = kernel_tuner.tune_kernel(
    c["kernel_name"], "__global__ void k() {}", c["problem_size"], [], tune_params,
    cache=path, simulation_mode=True, strategy="random_sample",
    strategy_options={"max_fevals": 20}, verbose=False, quiet=True)
valid = [r for r in results if "__error__" not in r]
for r in valid:
    key = ",".join(str(r[k]) for k in c["tune_params_keys"])
    assert abs(r["time"] - c["cache"][key]["time"]) < 1e-9, key
print(json.dumps({"evaluated": len(results), "valid": len(valid)}))
"#;

#[test]
fn kernel_tuner_replays_the_export_in_simulation_mode() {
    let Some(python) = kernel_tuner_python() else {
        eprintln!(
            "skipped: Kernel Tuner is not installed (`pip install kernel_tuner`, or set \
             GPUTUNE_KT_PYTHON to a Python that has it)"
        );
        return;
    };
    let bin = cargo_gputune();
    let dir = temp("simulation");
    let db = dir.join("kt.db");
    let db_arg = db.to_str().expect("utf-8");
    ok(&gputune(
        &bin,
        &[
            "import",
            fixture("pnpoly_RTX_3090.json.gz").to_str().expect("utf-8"),
            "--db",
            db_arg,
        ],
    ));
    let cache = dir.join("export.json");
    ok(&gputune(
        &bin,
        &[
            "export",
            "--format",
            "kt-cache",
            "--db",
            db_arg,
            "-o",
            cache.to_str().expect("utf-8"),
        ],
    ));
    let out = Command::new(&python)
        .args(["-c", SIMULATE])
        .arg(&cache)
        .current_dir(&dir)
        .output()
        .expect("python runs");
    let text = ok(&out);
    let doc: Value = serde_json::from_str(text.trim().lines().last().unwrap_or("")).expect("JSON");
    assert_eq!(doc["evaluated"], 20, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
