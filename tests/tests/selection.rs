//! What `report`, `apply` and `check` select and compare: `-p` and the current package as
//! cargo selects them, a baseline that matches nothing, and stores they cannot read.

use std::path::Path;
use std::process::{Command, Output};

use gputune_tests::{cargo_gputune, gputune, root, temp_dir, text};
use serde_json::Value;

fn run(bin: &Path, dir: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .arg("gputune")
        .args(args)
        .env_remove("GPUTUNE_VARIANTS")
        .current_dir(dir)
        .output()
        .expect("cargo-gputune runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn packages_are_selected_as_cargo_selects_them_and_empty_gates_fail() {
    let bin = cargo_gputune();
    let dir = temp_dir("selection");
    let db = dir.join("store.db");
    let db_arg = db.to_str().expect("utf-8");
    let out = gputune(
        &bin,
        "gputune-fixture-spin",
        &db,
        &[
            "search",
            "--",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "10",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let root = root();

    // -p names what to show; a package the store has nothing of is an error, not another
    // package's results.
    let out = run(
        &bin,
        &root,
        &["report", "--db", db_arg, "-p", "gputune-fixture-spin"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("work_1"));
    let out = run(
        &bin,
        &root,
        &["report", "--db", db_arg, "-p", "no-such-package"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        stderr(&out).contains("not in the workspace"),
        "{}",
        text(&out)
    );
    for cmd in [
        &["report"][..],
        &["apply", "--dry-run"][..],
        &["check", "--min-score", "1"][..],
    ] {
        let mut args = cmd.to_vec();
        args.extend(["--db", db_arg, "-p", "gputune-example-faults"]);
        let out = run(&bin, &root, &args);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {}", text(&out));
        assert!(
            stderr(&out).contains("holds no results of package `gputune-example-faults`")
                && stderr(&out).contains("gputune-fixture-spin"),
            "{cmd:?}: {}",
            text(&out)
        );
    }
    // Inside a member, or with --manifest-path to one, that member is selected (as cargo
    // does); --workspace selects them all.
    let member = root.join("examples/faults");
    let out = run(&bin, &member, &["report", "--db", db_arg]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        stderr(&out).contains("gputune-example-faults"),
        "{}",
        text(&out)
    );
    let manifest = member.join("Cargo.toml");
    let out = run(
        &bin,
        &root,
        &[
            "report",
            "--db",
            db_arg,
            "--manifest-path",
            manifest.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = run(&bin, &member, &["report", "--db", db_arg, "--workspace"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("work_1"));

    // A baseline of another device matches nothing: the gate fails and says what it expected
    // and what it found.
    let out = run(&bin, &root, &["report", "--db", db_arg, "--format", "json"]);
    let mut doc: Value = serde_json::from_slice(&out.stdout).expect("report JSON");
    for g in doc["groups"].as_array_mut().expect("groups") {
        g["device"] = Value::from("Some Other GPU|sm_90|sms=132|bus=5120|ecc=true");
    }
    let baseline = dir.join("baseline.json");
    std::fs::write(&baseline, doc.to_string()).expect("write");
    let out = run(
        &bin,
        &root,
        &[
            "check",
            "--db",
            db_arg,
            "-p",
            "gputune-fixture-spin",
            "--baseline",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "--baseline needs a value");
    let out = run(
        &bin,
        &root,
        &[
            "check",
            "--db",
            db_arg,
            "-p",
            "gputune-fixture-spin",
            "--baseline",
            baseline.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("No workload of the baseline was found")
            && md.contains("Some Other GPU")
            && md.contains("**Result: regression**"),
        "{md}"
    );

    // Other measurement settings are other results: a rerun with another criterion measures
    // anew instead of reporting the old numbers as its own; the same settings measure nothing.
    let rerun = |target: &str| {
        let out = gputune(
            &bin,
            "gputune-fixture-spin",
            &db,
            &[
                "search",
                "--json",
                "--",
                "--stopping-criterion",
                "sample-count",
                "--target-samples",
                target,
            ],
        );
        assert!(out.status.success(), "{}", text(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).expect("--json");
        doc["search"]["runs"].as_u64().expect("runs")
    };
    assert_eq!(rerun("10"), 0, "the same settings: everything is stored");
    assert!(rerun("12") > 0, "another --target-samples measures anew");
    // Bench arguments are checked before anything is built, and flags the search sets itself
    // are refused.
    for (bad, needle) in [
        (
            &["--max-noise", "0"][..],
            "--max-noise must be a positive number",
        ),
        (&["--frobnicate"][..], "--frobnicate"),
        (
            &["--variant", "base"][..],
            "--variant is set by the search itself",
        ),
        (
            &["--more-on-stdin"][..],
            "--more-on-stdin is set by the search itself",
        ),
    ] {
        let mut args = vec!["search", "--"];
        args.extend(bad);
        let out = gputune(&bin, "gputune-fixture-spin", &db, &args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", text(&out));
        assert!(stderr(&out).contains(needle), "{bad:?}: {}", text(&out));
    }

    // A malformed -a is refused before anything is built: the fresh target directory stays
    // empty.
    let fresh = dir.join("fresh-target");
    let out = gputune(
        &bin,
        "gputune-fixture-spin",
        &db,
        &[
            "search",
            "--target-dir",
            fresh.to_str().expect("utf-8"),
            "-a",
            "Steps{io}=[1,2",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(stderr(&out).contains("bad axis override"), "{}", text(&out));
    assert!(
        !fresh.join("debug").exists() && !fresh.join("release").exists(),
        "nothing was built"
    );

    // A directory is not a store, and the message says so.
    let out = run(
        &bin,
        &root,
        &["report", "--db", dir.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(stderr(&out).contains("is a directory"), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}
