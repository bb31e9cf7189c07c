//! End-to-end tests of winners where they run (issue 26): production builds of the sized
//! fixture choose the device model's entry, then the architecture's, then base, per size
//! range; malformed or conflicting entries fail the build naming the entry; version 1 files
//! still build; and a real CPU search whose best variant changes with the size is applied
//! per size, from two device models, and dispatched per size.
//!
//! An application's calls captured (`GPUTUNE_CAPTURE`) are searched on exactly their sizes
//! (`search --captured`), one of them a size the bench does not declare, and on exactly their
//! shapes: 4096 × 1 and 1 × 4096, not the product's 4096 × 4096 and 1 × 1; a second search of
//! the same store measures nothing again, and a bundle carries the shapes to `run-bundle`.
//!
//! The tests write the fixture's `gputune.toml` (ignored by git), so they hold one lock.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use gputune_tests::{cargo_gputune, executable, gputune, root, temp_dir, text};
use serde_json::Value;

const PACKAGE: &str = "gputune-fixture-sized";

fn lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn toml_path() -> PathBuf {
    root().join("tests/fixtures/sized/gputune.toml")
}

/// Writes the fixture's `gputune.toml` and returns a stamp of it for the build's
/// `GPUTUNE_TOML_STAMP`, so that the build script reruns for every new text.
fn write_toml(text: &str) -> String {
    std::fs::write(toml_path(), text).expect("write gputune.toml");
    stamp(text)
}

fn stamp(text: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    format!("{:016x}", h.finish())
}

/// A production build of the probe: its path and the manifest, or the build's output.
fn build_probe(stamp: &str) -> Result<(PathBuf, Value), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--quiet", "--message-format=json", "-p", PACKAGE])
        .args(["--bin", "sized-probe"])
        .env_remove("GPUTUNE_VARIANTS")
        .env("GPUTUNE_TOML_STAMP", stamp)
        .current_dir(root())
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)));
    }
    let messages: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let probe = messages
        .iter()
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "sized-probe")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("the build names the probe");
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
    let manifest =
        std::fs::read_to_string(out_dir.join("gputune/manifest.json")).expect("manifest");
    Ok((probe, serde_json::from_str(&manifest).expect("JSON")))
}

/// What `pick` ran at each of `sizes` on the device `model` / `arch` names: `a_N` each.
fn probe(probe: &Path, model: &str, arch: &str, sizes: &[u64]) -> Vec<String> {
    let out = Command::new(probe)
        .args(sizes.iter().map(u64::to_string))
        .env("GPUTUNE_DEVICE", model)
        .env("GPUTUNE_ARCH", arch)
        .output()
        .expect("the probe runs");
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines();
    assert_eq!(
        lines.next(),
        Some(format!("device {model} / {arch}").as_str())
    );
    lines
        .map(|l| l.split_whitespace().nth(1).unwrap_or_default().to_string())
        .collect()
}

fn compiled(manifest: &Value, function: &str) -> Vec<String> {
    manifest["functions"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == function))
        .and_then(|f| f["compiled"].as_array())
        .expect("the function's compiled arms")
        .iter()
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect()
}

const POLICY: &str = r#"version = 2

[[pick."*"."Probe GPU"]]
size-axis = "Elements"
size-below = 1000
a = 2

[[pick."*"."Probe GPU"]]
size-axis = "Elements"
size-from = 1000
size-below = 100000
a = 4

[pick."*".sm_90]
measured-on = "Other GPU"
a = 8
"#;

#[test]
fn the_model_beats_the_architecture_beats_base_per_size() {
    let _lock = lock();
    let (bin, manifest) = build_probe(&write_toml(POLICY)).expect("builds");
    assert_eq!(compiled(&manifest, "pick"), ["base", "a_2", "a_4", "a_8"]);
    let sizes = [0, 999, 1000, 50_000, 99_999, 100_000, 1 << 40];
    // The model's ranges, and above them its architecture's entry.
    assert_eq!(
        probe(&bin, "Probe GPU", "sm_90", &sizes),
        ["a_2", "a_2", "a_4", "a_4", "a_4", "a_8", "a_8"]
    );
    // Another sm_90 model: the architecture's entry at every size.
    assert_eq!(probe(&bin, "Other GPU", "sm_90", &sizes), ["a_8"; 7]);
    // The model on another architecture: above its ranges nothing applies, so base.
    assert_eq!(
        probe(&bin, "Probe GPU", "sm_80", &sizes),
        ["a_2", "a_2", "a_4", "a_4", "a_4", "a_1", "a_1"]
    );
    // Neither: base.
    assert_eq!(probe(&bin, "Other GPU", "sm_80", &sizes), ["a_1"; 7]);
}

#[test]
fn version_1_files_still_build_and_choose_by_architecture() {
    let _lock = lock();
    let v1 = "version = 1\n[pick.\"*\".sm_90]\na = 4\n[pick.\"*\".cpu]\na = 2\n";
    let (bin, manifest) = build_probe(&write_toml(v1)).expect("builds");
    // Arms in key order: `cpu` before `sm_90`.
    assert_eq!(compiled(&manifest, "pick"), ["base", "a_2", "a_4"]);
    assert_eq!(probe(&bin, "Any", "sm_90", &[1, 1 << 30]), ["a_4", "a_4"]);
    assert_eq!(probe(&bin, "Any", "cpu", &[1]), ["a_2"]);
    assert_eq!(
        probe(&bin, "sm_90", "sm_80", &[1]),
        ["a_1"],
        "a model is no arch"
    );
}

#[test]
fn malformed_or_conflicting_entries_fail_the_build_naming_the_entry() {
    let _lock = lock();
    let cases = [
        (
            "version = 2\n[[pick.\"*\".\"Probe GPU\"]]\nsize-axis = \"Elements\"\nsize-below = 100\na = 2\n\
             [[pick.\"*\".\"Probe GPU\"]]\nsize-axis = \"Elements\"\nsize-from = 50\na = 4\n",
            "[pick.\"*\".\"Probe GPU\"]: the size ranges Elements ..100 and Elements 50.. overlap",
        ),
        (
            "version = 2\n[[pick.\"*\".sm_90]]\nsize-axis = \"Rows\"\na = 2\n",
            "[pick.\"*\".sm_90]: unknown size axis `Rows`: `pick` dispatches on `Elements`",
        ),
        (
            "version = 2\n[pick.\"*\".\"Probe GPU\"]\na = 2\n\
             [pick.\"*\".sm_90]\nmeasured-on = \"Probe GPU\"\na = 4\n",
            "[pick.\"*\".\"Probe GPU\"] and [pick.\"*\".sm_90] (measured-on = \"Probe GPU\") \
             name different points for the same device (a_2 and a_4)",
        ),
        (
            "version = 2\n[pick.\"*\".cpu]\na = 3\nsize-from = 9\n",
            "[pick.\"*\".cpu]: `size-from`/`size-below` without `size-axis`",
        ),
    ];
    for (toml, needle) in cases {
        let err = build_probe(&write_toml(toml)).expect_err(toml);
        assert!(err.contains(needle), "{needle}\n---\n{err}");
    }
}

/// The search of `work` over three sizes, where base (`a = 1`), `a = 4` and `a = 8` win in
/// turn; the store in `dir`.
fn search(bin: &Path, db: &Path) {
    let out = gputune(
        bin,
        PACKAGE,
        db,
        &[
            "search",
            "-R",
            "^work$",
            "--",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "25",
            "--no-batch",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
}

/// The same rows in `to`, measured (as far as the store says) on the CPU model `model`.
fn as_another_model(from: &Path, to: &Path, model: &str) {
    let store = rusqlite::Connection::open(from).expect("the store opens");
    store
        .execute("VACUUM INTO ?1", [to.to_str().expect("utf-8")])
        .expect("copy");
    let copy = rusqlite::Connection::open(to).expect("the copy opens");
    copy.execute(
        "UPDATE results SET device = ?1 || substr(device, instr(device, '|cpu|'))",
        [model],
    )
    .expect("rename the device");
}

#[test]
fn a_search_over_sizes_is_applied_per_size_from_two_models_and_dispatched_per_size() {
    let _lock = lock();
    let bin = cargo_gputune();
    let dir = temp_dir("per-size");
    let db = dir.join("store.db");
    write_toml("version = 2\n");
    search(&bin, &db);

    // The report says what one winner costs at each size.
    let out = gputune(&bin, PACKAGE, &db, &["report", "--per-size"]);
    assert!(out.status.success(), "{}", text(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    // `a_1` is base's own point, the same code: which of the two is best at the smallest size
    // is a tie that the timing decides either way.
    assert!(
        ["base", "a_1"].iter().any(|b| report.contains(&format!(
            "single winner a_8; per workload 3 distinct winners ({b}, a_4, a_8)"
        ))),
        "{report}"
    );

    // Applied per size, keyed by this CPU's model.
    let out = gputune(&bin, PACKAGE, &db, &["apply", "--per-size"]);
    assert!(out.status.success(), "{}", text(&out));
    let written = std::fs::read_to_string(toml_path()).expect("written");
    let model = written
        .lines()
        .find_map(|l| l.strip_prefix("[[work.\"*\".\"")?.strip_suffix("\"]]"))
        .expect("a per-size model entry")
        .to_string();
    let ranges: Vec<&str> = written
        .lines()
        .filter(|l| l.starts_with("size-") || l.starts_with("a = "))
        .collect();
    // Boundaries at the geometric midpoints of 10^4, 3.2·10^5 and 4·10^6.
    assert_eq!(
        ranges,
        [
            "size-axis = \"Elements\"",
            "size-below = 56569",
            "a = 1",
            "size-axis = \"Elements\"",
            "size-from = 56569",
            "size-below = 1131371",
            "a = 4",
            "size-axis = \"Elements\"",
            "size-from = 1131371",
            "a = 8",
        ],
        "{written}"
    );

    // A second model's search (a copy of the store, renamed) keeps the first's entries.
    let other = dir.join("other.db");
    as_another_model(&db, &other, "Other CPU");
    let out = gputune(&bin, PACKAGE, &other, &["apply"]);
    assert!(out.status.success(), "{}", text(&out));
    let written = std::fs::read_to_string(toml_path()).expect("written");
    assert_eq!(
        written
            .matches(&format!("[[work.\"*\".\"{model}\"]]"))
            .count(),
        3,
        "{written}"
    );
    assert!(
        written.contains("[work.\"*\".\"Other CPU\"]\na = 8\n"),
        "{written}"
    );

    // The production bench runs each size's winner on this CPU, the single one on the other.
    let stamp = stamp(&written);
    let bench = {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .args(["build", "--quiet", "-p", PACKAGE, "--bench", "sized"])
            .env("GPUTUNE_TOML_STAMP", &stamp)
            .env_remove("GPUTUNE_VARIANTS")
            .current_dir(root())
            .output()
            .expect("cargo runs");
        assert!(out.status.success(), "{}", text(&out));
        executable(&["-p", PACKAGE, "--bench", "sized"], "sized")
    };
    let ran = |device: &str| -> Vec<String> {
        let out = Command::new(&bench)
            .args([
                "--stopping-criterion",
                "sample-count",
                "--target-samples",
                "3",
            ])
            .args(["--no-batch", "--json", "-"])
            .env("GPUTUNE_DEVICE", device)
            .env_remove("GPUTUNE_ARCH")
            .output()
            .expect("the bench runs");
        let doc: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        doc["benchmarks"][0]["states"]
            .as_array()
            .expect("states")
            .iter()
            .map(|s| s["variant"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(ran(&model), ["base", "a_4", "a_8"]);
    assert_eq!(ran("Other CPU"), ["a_8", "a_8", "a_8"]);

    // The per-size winners dispatch at sizes between and beyond the measured ones: the same
    // entries, given to `pick`.
    let picked = written
        .replace("[[work.", "[[pick.")
        .replace("[work.", "[pick.");
    let (probe_bin, manifest) = build_probe(&write_toml(&picked)).expect("builds");
    assert_eq!(
        compiled(&manifest, "pick"),
        ["base", "a_4", "a_8"],
        "only the distinct winners are compiled in"
    );
    assert_eq!(
        probe(
            &probe_bin,
            &model,
            "cpu",
            &[
                0,
                10_000,
                56_568,
                56_569,
                320_000,
                1_131_370,
                1_131_371,
                4_000_000,
                1 << 40
            ]
        ),
        ["a_1", "a_1", "a_1", "a_4", "a_4", "a_4", "a_8", "a_8", "a_8"]
    );

    // --arch-only keys the same search by the architecture, noting the model.
    let out = gputune(&bin, PACKAGE, &db, &["apply", "--arch-only", "--dry-run"]);
    assert!(out.status.success(), "{}", text(&out));
    let dry = String::from_utf8_lossy(&out.stdout);
    assert!(
        dry.contains(&format!(
            "[work.\"*\".cpu]\nmeasured-on = \"{model}\"\na = 8\n"
        )),
        "{dry}"
    );
    write_toml("version = 2\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn captured_calls_are_searched_on_exactly_their_sizes() {
    let _guard = lock();
    let (probe_bin, _) = build_probe(&write_toml("version = 2\n")).expect("production build");
    let dir = temp_dir("captured");
    let captures = dir.join("captures");
    // The application: `work` at two sizes (one of them twice; 50 000 is not a size the bench
    // declares), `pick` once.
    let out = Command::new(&probe_bin)
        .args([
            "work:50000",
            "work:320000",
            "work:50000",
            "7",
            "shape:4096x1",
            "shape:1x4096",
        ])
        .env("GPUTUNE_CAPTURE", &captures)
        .output()
        .expect("the probe runs");
    assert!(out.status.success(), "{}", text(&out));
    let read = gputune_protocol::capture::read_dir(&captures).expect("captures written");
    let work = read
        .iter()
        .find(|c| c.function == "work")
        .expect("work captured");
    let sizes: Vec<(u64, u64)> = work
        .workloads
        .iter()
        .map(|w| (w.sizes[0].1, w.count))
        .collect();
    assert_eq!(sizes, [(50_000, 2), (320_000, 1)]);
    assert!(read.iter().any(|c| c.function == "pick"));
    // A shape is captured as one, each axis with its value: 4096 × 1 is not 1 × 4096.
    let shaped = read
        .iter()
        .find(|c| c.function == "shaped")
        .expect("shaped captured");
    let shapes: Vec<Vec<(String, u64)>> =
        shaped.workloads.iter().map(|w| w.sizes.clone()).collect();
    let shape = |r: u64, c: u64| vec![("Rows".to_string(), r), ("Cols".to_string(), c)];
    assert_eq!(shapes, [shape(1, 4096), shape(4096, 1)]);

    let db = dir.join("gputune.db");
    let bin = cargo_gputune();
    let captured = captures.to_str().expect("utf-8");
    let measure = [
        "--",
        "--stopping-criterion",
        "sample-count",
        "--target-samples",
        "5",
        "--no-batch",
    ];
    let search = |db: &Path, more: &[&str]| {
        let mut args = vec!["search", "--captured", captured];
        args.extend(more);
        args.extend(measure);
        gputune(&bin, PACKAGE, db, &args)
    };
    let out = search(&db, &[]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("Elements=[50000,320000]"), "{said}");
    assert!(said.contains("no bench tunes `pick`"), "{said}");
    // The shapes' axes take both values, and the bench runs only the captured two of the
    // four shapes they make.
    assert!(
        said.contains(
            "searching with -a 'Rows[pow2]=[0,12]' -a 'Cols[pow2]=[0,12]', only the 2 captured \
             of their 4 combinations"
        ),
        "{said}"
    );
    let captured_shapes = ["Rows=2^0 Cols=2^12", "Rows=2^12 Cols=2^0"];
    let measured = shaped_rows(&db);
    assert_eq!(
        measured.keys().cloned().collect::<Vec<_>>(),
        ["a_1", "a_2", "base"],
        "{measured:?}"
    );
    for (variant, rows) in &measured {
        let shapes: Vec<&str> = rows.iter().map(|(rt, _)| rt.as_str()).collect();
        assert_eq!(
            shapes, captured_shapes,
            "{variant}: not 4096 × 4096, not 1 × 1"
        );
        assert!(rows.iter().all(|(_, status)| status == "ok"), "{rows:?}");
    }
    // Per size, the report and apply see exactly the captured shapes.
    let per_size = gputune(
        &bin,
        PACKAGE,
        &db,
        &["report", "--per-size", "-R", "^shaped$"],
    );
    let shown = text(&per_size);
    assert!(per_size.status.success(), "{shown}");
    for shape in captured_shapes {
        assert!(shown.contains(shape), "{shape}: {shown}");
    }
    assert!(
        !shown.contains("Rows=2^0 Cols=2^0") && !shown.contains("Rows=2^12 Cols=2^12"),
        "{shown}"
    );

    // A second search of the same store resumes the first: nothing is measured again.
    let before = store_state(&db);
    let again = search(&db, &[]);
    let said = text(&again);
    assert!(again.status.success(), "{said}");
    assert_eq!(store_state(&db), before, "{said}");
    let done: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("result(s) stored"))
        .collect();
    assert!(
        !done.is_empty()
            && done
                .iter()
                .all(|l| l.contains(" 0 run(s), 0 result(s) stored")),
        "{said}"
    );
    assert_eq!(shaped_rows(&db), measured);

    // A bundle carries the list (in its bench arguments) to `run-bundle`.
    let bundle = dir.join("bundle");
    let built = search(
        &dir.join("unused.db"),
        &["--build-only", "--bundle", bundle.to_str().expect("utf-8")],
    );
    assert!(built.status.success(), "{}", text(&built));
    let plan = std::fs::read_to_string(bundle.join("bundle.json")).expect("bundle.json");
    assert!(
        plan.contains("Rows=1 Cols=4096;Rows=4096 Cols=1"),
        "the bundle's bench arguments list the shapes: {plan}"
    );
    let ran = Command::new(bundle.join("cargo-gputune"))
        .arg("run-bundle")
        .arg(&bundle)
        .output()
        .expect("run-bundle runs");
    assert!(ran.status.success(), "{}", text(&ran));
    let from_bundle = shaped_rows(&bundle.join("gputune.db"));
    assert!(!from_bundle.is_empty(), "{}", text(&ran));
    for (variant, rows) in &from_bundle {
        let shapes: Vec<&str> = rows.iter().map(|(rt, _)| rt.as_str()).collect();
        assert_eq!(shapes, captured_shapes, "{variant} from the bundle");
    }
    // A bundle of the declared space, built before anything was captured, runs exactly the
    // captured workloads with `run-bundle --captured` (a GPU host without a toolchain).
    let plain = dir.join("plain");
    let mut args = vec!["search", "--build-only", "--bundle"];
    args.push(plain.to_str().expect("utf-8"));
    args.extend(measure);
    let built = gputune(&bin, PACKAGE, &dir.join("unused-plain.db"), &args);
    assert!(built.status.success(), "{}", text(&built));
    let ran = Command::new(plain.join("cargo-gputune"))
        .arg("run-bundle")
        .arg(&plain)
        .args(["--captured", captured])
        .output()
        .expect("run-bundle runs");
    let said = text(&ran);
    assert!(ran.status.success(), "{said}");
    assert!(said.contains("the 2 captured workload(s)"), "{said}");
    let from_plain = shaped_rows(&plain.join("gputune.db"));
    assert_eq!(
        from_plain.keys().cloned().collect::<Vec<_>>(),
        ["a_1", "a_2", "base"]
    );
    for (variant, rows) in &from_plain {
        let shapes: Vec<&str> = rows.iter().map(|(rt, _)| rt.as_str()).collect();
        assert_eq!(shapes, captured_shapes, "{variant} from the plain bundle");
    }
    let none = Command::new(plain.join("cargo-gputune"))
        .arg("run-bundle")
        .arg(&plain)
        .args(["--captured", dir.join("none").to_str().expect("utf-8")])
        .output()
        .expect("run-bundle runs");
    assert_eq!(none.status.code(), Some(2), "{}", text(&none));

    let report = gputune(
        &bin,
        PACKAGE,
        &db,
        &["report", "--format", "json", "--top", "10"],
    );
    assert!(report.status.success(), "{}", text(&report));
    let doc = String::from_utf8_lossy(&report.stdout).to_string();
    let mut seen: Vec<&str> = doc
        .match_indices("Elements=")
        .map(|(i, _)| {
            let rest = &doc[i + "Elements=".len()..];
            &rest[..rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len())]
        })
        .collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(
        seen,
        ["320000", "50000"],
        "exactly the captured sizes were measured"
    );

    // `report --function` shows one function's results, and names the store's where none match.
    let one = gputune(&bin, PACKAGE, &db, &["report", "--function", "^work$"]);
    assert!(
        one.status.success() && text(&one).contains("work.work"),
        "{}",
        text(&one)
    );
    let none = gputune(&bin, PACKAGE, &db, &["report", "--function", "pick"]);
    assert_eq!(none.status.code(), Some(2), "{}", text(&none));
    assert!(
        text(&none).contains("the store has shaped, work"),
        "{}",
        text(&none)
    );

    let out = gputune(
        &bin,
        PACKAGE,
        &db,
        &[
            "search",
            "--captured",
            dir.join("none").to_str().expect("utf-8"),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "a missing directory is a usage error: {}",
        text(&out)
    );
    // The captured workloads are the list: another one is refused, not searched beside them.
    let out = gputune(
        &bin,
        PACKAGE,
        &db,
        &[
            "search",
            "--captured",
            captured,
            "--",
            "--workloads",
            "Rows=1",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("leave --workloads out"),
        "{}",
        text(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each variant of `shaped` in the store at `db`: its runtime workloads and their statuses.
fn shaped_rows(db: &Path) -> std::collections::BTreeMap<String, Vec<(String, String)>> {
    let store = rusqlite::Connection::open(db).expect("the store opens");
    let mut query = store
        .prepare(
            "SELECT variant, rt_workload, status FROM results WHERE function = 'shaped' \
             ORDER BY variant, rt_workload",
        )
        .expect("a query");
    let mut out = std::collections::BTreeMap::<String, Vec<(String, String)>>::new();
    let rows = query
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows");
    for row in rows {
        let (variant, rt, status): (String, String, String) = row.expect("a row");
        out.entry(variant).or_default().push((rt, status));
    }
    out
}

/// How many rows the store at `db` holds, and when the last was written.
fn store_state(db: &Path) -> (i64, String) {
    let store = rusqlite::Connection::open(db).expect("the store opens");
    store
        .query_row("SELECT COUNT(*), MAX(created) FROM results", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("counted")
}

#[test]
fn a_shape_s_winner_is_dispatched_on_every_axis() {
    let _lock = lock();
    let policy = "version = 2\n\
        [[shaped.\"*\".\"Probe GPU\"]]\nsize-ranges = { Rows = 4096, Cols = 1 }\na = 2\n\
        [[shaped.\"*\".\"Probe GPU\"]]\nsize-ranges = { Rows = 1, Cols = \"4096..\" }\na = 1\n";
    let (bin, manifest) = build_probe(&write_toml(policy)).expect("builds");
    assert_eq!(compiled(&manifest, "shaped"), ["base", "a_2"]);
    let out = Command::new(&bin)
        .args([
            "shape:4096x1",
            "shape:1x4096",
            "shape:1x8192",
            "shape:4096x2",
        ])
        .env("GPUTUNE_DEVICE", "Probe GPU")
        .env("GPUTUNE_ARCH", "sm_90")
        .output()
        .expect("the probe runs");
    assert!(out.status.success(), "{}", text(&out));
    let ran: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .map(str::to_string)
        .collect();
    // 4096 × 1 is not 1 × 4096: each shape its own entry, and one not listed runs base.
    assert_eq!(
        ran,
        [
            "shape 4096x1 a_2",
            "shape 1x4096 a_1",
            "shape 1x8192 a_1",
            "shape 4096x2 a_1"
        ]
    );
    // Two entries sharing a shape fail the build naming both.
    let overlap = "version = 2\n\
        [[shaped.\"*\".sm_90]]\nsize-ranges = { Rows = 4096 }\na = 2\n\
        [[shaped.\"*\".sm_90]]\nsize-ranges = { Cols = 1 }\na = 1\n";
    let err = build_probe(&write_toml(overlap)).expect_err("overlapping shapes");
    assert!(
        err.contains("the size ranges Rows 4096..4097 and Cols 1..2 overlap"),
        "{err}"
    );
    std::fs::remove_file(toml_path()).ok();
}
