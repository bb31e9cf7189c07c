use std::io::Write;
use std::path::PathBuf;

use gputune_protocol::Status;

use super::*;

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gputune-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("writes");
    p
}

fn gz(text: &str) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(text.as_bytes()).expect("compresses");
    e.finish().expect("compresses")
}

/// A Kernel Tuner 1.5 cache, as its `process_cache` and `store_cache` write it: every kind
/// of failure, a configuration without `times`, and `GFLOP/s`.
const CACHE: &str = r#"{
"device_name": "NVIDIA A100", "kernel_name": "vector_add", "problem_size": [1024, 1],
"tune_params_keys": ["block_size_x", "vec"], "tune_params": {"block_size_x": [64, 32, 128], "vec": [1, 2]},
"objective": "time",
"cache": {
"64,1": {"block_size_x": 64, "vec": 1, "time": 2.0, "times": [2.1, 1.9, 2.0], "compile_time": 500.0, "verification_time": 0, "benchmark_time": 6.0, "GFLOP/s": 3.5, "strategy_time": 0, "framework_time": 1.0, "timestamp": "2024-01-01 00:00:00+00:00"},
"32,1": {"block_size_x": 32, "vec": 1, "time": "InvalidConfig", "compile_time": 0, "verification_time": 0, "benchmark_time": 0, "strategy_time": 0, "framework_time": 0},
"32,2": {"block_size_x": 32, "vec": 2, "time": "CompilationFailedConfig", "compile_time": 300.0, "verification_time": 0, "benchmark_time": 0, "strategy_time": 0, "framework_time": 0},
"128,1": {"block_size_x": 128, "vec": 1, "time": "RuntimeFailedConfig", "compile_time": 400.0, "verification_time": 0, "benchmark_time": 0, "strategy_time": 0, "framework_time": 0},
"128,2": {"block_size_x": 128, "vec": 2, "time": 1e20, "compile_time": 0, "verification_time": 0, "benchmark_time": 0, "strategy_time": 0, "framework_time": 0},
"64,2": {"block_size_x": 64, "vec": 2, "time": 1.0, "compile_time": 450.0, "verification_time": 1.0, "benchmark_time": 3.0, "strategy_time": 0, "framework_time": 0}
}
}"#;

fn results(path: &std::path::Path) -> Tuning {
    match read(path).expect("reads") {
        File::Results(t) => t,
        other => panic!("not results: {other:?}"),
    }
}

fn check_cache(t: &Tuning) {
    assert_eq!(
        (t.kernel.as_str(), t.device.as_str()),
        ("vector_add", "NVIDIA A100")
    );
    assert_eq!(t.problem_size.as_deref(), Some("[1024,1]"));
    assert_eq!(t.params[0].0, "block_size_x");
    assert_eq!(
        t.params[0].1,
        [KtValue::Int(64), KtValue::Int(32), KtValue::Int(128)]
    );
    let outcomes: Vec<&Outcome> = t.configs.iter().map(|c| &c.outcome).collect();
    assert_eq!(outcomes[0], &Outcome::Ok(2.0));
    assert_eq!(
        outcomes[1],
        &Outcome::Failed(Status::Invalid, "InvalidConfig".into())
    );
    assert_eq!(
        outcomes[2],
        &Outcome::Failed(Status::BuildFailed, "CompilationFailedConfig".into())
    );
    assert_eq!(
        outcomes[3],
        &Outcome::Failed(Status::LaunchFailed, "RuntimeFailedConfig".into())
    );
    assert!(matches!(outcomes[4], Outcome::Failed(Status::Invalid, m) if m.contains("1e20")));
    assert_eq!(t.configs[0].times_ms, [2.1, 1.9, 2.0]);
    assert_eq!(
        (t.configs[0].compile_ms, t.configs[0].run_ms),
        (Some(500.0), Some(6.0))
    );
    assert_eq!(t.configs[5].run_ms, Some(4.0), "benchmark + verification");
    assert!(t.configs[5].times_ms.is_empty());
}

#[test]
fn kernel_tuner_caches_read_plain_gzip_versioned_and_left_open() {
    check_cache(&results(&temp("plain.json", CACHE.as_bytes())));
    check_cache(&results(&temp("packed.json.gz", &gz(CACHE))));
    // The cache tools' schema 1.1.0 adds `schema_version`; it reads the same.
    let versioned = CACHE.replacen('{', "{\"schema_version\": \"1.1.0\",", 1);
    check_cache(&results(&temp("versioned.json", versioned.as_bytes())));
    // An interrupted run leaves the file open, with a trailing comma.
    let open = CACHE
        .trim_end()
        .strip_suffix("}\n}")
        .expect("closed")
        .to_string()
        + ",\n";
    check_cache(&results(&temp("open.json", open.as_bytes())));
}

#[test]
fn a_plan_holds_the_space_exactly_with_seconds_and_the_base_it_says() {
    let t = results(&temp("plan.json", CACHE.as_bytes()));
    let plan = plan(vec![File::Results(t.clone())], None).expect("plans");
    let imp = &plan.imported[0];
    assert_eq!(imp.package, "plan");
    assert_eq!(imp.base, "block_size_x_64.vec_1");
    assert_eq!(imp.why, BaseChoice::First(None));
    assert_eq!(plan.spaces[0].size, 6);
    let spec = gputune_grammar::parse_str(&plan.spaces[0].attribute).expect("parses");
    assert_eq!(spec.space().len(), 6);
    let row = plan
        .rows
        .iter()
        .find(|r| r.variant == "block_size_x_64.vec_1")
        .expect("row");
    assert_eq!(row.center, Some(2.0e-3));
    let want = [2.1e-3, 1.9e-3, 2.0e-3];
    assert!(
        row.samples
            .iter()
            .zip(want)
            .all(|(a, b)| (a - b).abs() < 1e-15),
        "{:?}",
        row.samples
    );
    assert_eq!(
        (row.build_seconds, row.run_seconds),
        (Some(0.5), Some(6.0e-3))
    );
    assert_eq!(row.rt_workload, "problem_size=[1024,1]");
    let base = plan
        .rows
        .iter()
        .find(|r| r.variant == "base")
        .expect("base row");
    assert_eq!(base.center, row.center);

    // --base in either spelling; a failed one is refused.
    for spec in ["block_size_x=64,vec=2", "block_size_x_64.vec_2"] {
        let p = super::plan(vec![File::Results(t.clone())], Some(spec)).expect("plans");
        assert_eq!(p.imported[0].base, "block_size_x_64.vec_2");
    }
    let e = super::plan(
        vec![File::Results(t.clone())],
        Some("block_size_x=32,vec=1"),
    )
    .expect_err("failed");
    assert!(e.to_string().contains("did not run"), "{e}");
    let e =
        super::plan(vec![File::Results(t.clone())], Some("block_size_x=7")).expect_err("no such");
    assert!(e.to_string().contains("--base"), "{e}");

    // A T1 default is the base when it ran, and said why not when it did not.
    let t1 = |x: i64| {
        let text = format!(
            r#"{{"ConfigurationSpace": {{"TuningParameters": [
                {{"Name": "block_size_x", "Type": "int", "Values": "[32, 64, 128]", "Default": {x}}},
                {{"Name": "vec", "Type": "int", "Values": "[1, 2]", "Default": 2}}], "Conditions": []}}}}"#
        );
        read(&temp("p.T1.json", text.as_bytes())).expect("reads a T1")
    };
    let p = super::plan(vec![File::Results(t.clone()), t1(64)], None).expect("plans");
    assert!(matches!(p.imported[0].why, BaseChoice::T1(_)));
    assert_eq!(p.imported[0].base, "block_size_x_64.vec_2");
    let p = super::plan(vec![File::Results(t), t1(128)], None).expect("plans");
    assert!(
        matches!(&p.imported[0].why, BaseChoice::First(Some(w)) if w.contains("did not run")),
        "{:?}",
        p.imported[0].why
    );
}

#[test]
fn t4_results_read_with_their_statuses_and_units() {
    let text = r#"{"schema_version": "1.0.0", "metadata": {"timeunit": "milliseconds"}, "results": [
      {"timestamp": "t", "configuration": {"tpb": 64, "mode": "ldg"}, "objectives": ["time"],
       "times": {"compilation": 12.0, "benchmark": 5.0, "framework": 0, "search_algorithm": 0, "validation": 1.0, "runtimes": [1.0, 1.5]},
       "invalidity": "correct", "correctness": 1, "measurements": [{"name": "time", "value": 1.25, "unit": "ms"}]},
      {"configuration": {"tpb": 32, "mode": "ldg"}, "times": {"compilation": 3.0, "runtimes": []},
       "invalidity": "compile", "correctness": 1, "measurements": [{"name": "time", "value": "", "unit": "ms"}]},
      {"configuration": {"tpb": 32, "mode": "ca"}, "times": {}, "invalidity": "constraints", "correctness": 1},
      {"configuration": {"tpb": 64, "mode": "ca"}, "times": {}, "invalidity": "correctness", "correctness": 0}
    ]}"#;
    let t = results(&temp("run.T4.json", text.as_bytes()));
    assert_eq!(t.format, "t4");
    assert_eq!(
        t.params[0],
        ("tpb".to_string(), vec![KtValue::Int(32), KtValue::Int(64)])
    );
    assert_eq!(
        t.params[1].1,
        [KtValue::Str("ldg".into()), KtValue::Str("ca".into())]
    );
    assert_eq!(t.configs[0].outcome, Outcome::Ok(1.25));
    assert_eq!(
        (t.configs[0].compile_ms, t.configs[0].run_ms),
        (Some(12.0), Some(6.0))
    );
    let statuses: Vec<Status> = t
        .configs
        .iter()
        .map(|c| match &c.outcome {
            Outcome::Ok(_) => Status::Ok,
            Outcome::Failed(s, _) => *s,
        })
        .collect();
    assert_eq!(
        statuses,
        [
            Status::Ok,
            Status::BuildFailed,
            Status::Invalid,
            Status::VerifyFailed
        ]
    );
    let p = plan(vec![File::Results(t)], None).expect("plans");
    assert_eq!(p.imported[0].package, "run");
    assert_eq!(p.imported[0].device, "unknown");
}

fn error_of(name: &str, text: &str) -> String {
    read(&temp(name, text.as_bytes()))
        .expect_err("refused")
        .to_string()
}

#[test]
fn malformed_files_name_the_file_and_the_field() {
    let e = error_of(
        "nocache.json",
        r#"{"device_name": "d", "kernel_name": "k", "tune_params_keys": ["x"], "tune_params": {"x": [1]}, "cache": 3}"#,
    );
    assert!(
        e.contains("nocache.json") && e.contains("field `cache`") && e.contains("an object"),
        "{e}"
    );
    let e = error_of(
        "keys.json",
        r#"{"device_name": "d", "kernel_name": 5, "tune_params_keys": ["x"], "tune_params": {"x": [1]}, "cache": {}}"#,
    );
    assert!(
        e.contains("field `kernel_name`") && e.contains("a number where a string"),
        "{e}"
    );
    let e = error_of(
        "time.json",
        &CACHE.replace("\"time\": 2.0", "\"time\": \"Slow\""),
    );
    assert!(
        e.contains("cache[\"64,1\"].time") && e.contains("Slow"),
        "{e}"
    );
    let e = error_of(
        "times.json",
        &CACHE.replace("[2.1, 1.9, 2.0]", "[2.1, null]"),
    );
    assert!(
        e.contains("cache[\"64,1\"].times") && e.contains("a list of numbers"),
        "{e}"
    );
    let e = error_of(
        "param.json",
        &CACHE.replace(
            "\"block_size_x\": 64, \"vec\": 1, \"time\": 2.0",
            "\"vec\": 1, \"time\": 2.0",
        ),
    );
    assert!(
        e.contains("cache[\"64,1\"]") && e.contains("`block_size_x`"),
        "{e}"
    );
    let e = error_of(
        "list.json",
        &CACHE.replace("\"vec\": [1, 2]", "\"vec\": [1, [2]]"),
    );
    assert!(e.contains("tune_params.vec"), "{e}");
    let e = error_of(
        "t4.json",
        r#"{"results": [{"configuration": {"x": 1}, "times": {}, "invalidity": "sideways", "correctness": 1}]}"#,
    );
    assert!(e.contains("results[0]") && e.contains("sideways"), "{e}");
    let e = error_of(
        "t4time.json",
        r#"{"results": [{"configuration": {"x": 1}, "times": {}, "invalidity": "correct", "correctness": 1, "measurements": []}]}"#,
    );
    assert!(
        e.contains("results[0].measurements") && e.contains("`time`"),
        "{e}"
    );
    let e = error_of(
        "t1.json",
        r#"{"ConfigurationSpace": {"TuningParameters": [{"Name": "x", "Values": "[1]"}]}}"#,
    );
    assert!(e.contains("TuningParameters[0].Default"), "{e}");
    let e = error_of("broken.json", "{\"cache\": ");
    assert!(e.contains("broken.json is not JSON"), "{e}");
    let e = read(&temp("broken.json.gz", &gz("[1, 2")))
        .expect_err("refused")
        .to_string();
    assert!(e.contains("not JSON (after gunzip)"), "{e}");
    let e = error_of("other.json", r#"{"a": 1, "b": 2}"#);
    assert!(
        e.contains("not a file gputune imports") && e.contains("`a`, `b`"),
        "{e}"
    );
    let e =
        read(&std::env::temp_dir().join("gputune-import-no-such-file.json")).expect_err("refused");
    assert!(e.to_string().contains("cannot read"), "{e}");
}

#[test]
fn a_t4_configuration_without_parameters_is_refused_by_name() {
    // Found by the generated inputs (tests/fuzz/regressions/import): an empty first
    // configuration left the parameters of the others unindexed (a panic).
    let text = r#"{"schema_version": "1.0.0", "results": [
      {"configuration": {}, "times": {}, "invalidity": "correct"},
      {"configuration": {"tpb": 32}, "times": {}, "invalidity": "compile"}]}"#;
    let err = read(&temp("empty.T4.json", text.as_bytes())).expect_err("refused");
    assert!(
        err.to_string().contains("results[0].configuration"),
        "{err}"
    );
    assert!(err.to_string().contains("has no parameters"), "{err}");
}
