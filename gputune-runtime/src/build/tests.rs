//! The build helper on crates written to a temporary directory: what a `gputune.toml` of each
//! version compiles in, and which entries fail the build, named.

use super::*;

/// A crate in a fresh directory with `lib` as `src/lib.rs` and `toml` as `gputune.toml`.
fn package(name: &str, lib: &str, toml: Option<&str>) -> Inputs {
    let dir = std::env::temp_dir().join(format!("gputune-build-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).expect("temp dir");
    std::fs::write(dir.join("src/lib.rs"), lib).expect("lib.rs");
    if let Some(t) = toml {
        std::fs::write(dir.join(gputune_toml::FILE_NAME), t).expect("gputune.toml");
    }
    Inputs {
        package_dir: dir,
        package: "p".into(),
        selection: String::new(),
    }
}

const SIZED: &str = "
    #[tune(ipt = [1, 2, 4], tpb = [64, 128], base(ipt = 1, tpb = 64), size(Elements = n))]
    pub fn scale(n: usize) -> usize { IPT * TPB * n }
";

fn generate(name: &str, toml: &str) -> Result<Generated, BuildError> {
    let inputs = package(name, SIZED, Some(toml));
    let out = generate_from(&inputs);
    let _ = std::fs::remove_dir_all(&inputs.package_dir);
    out
}

#[test]
fn models_architectures_and_sizes_compile_in_their_distinct_winners() {
    let toml = r#"version = 2
[[scale."*"."NVIDIA H200"]]
size-axis = "Elements"
size-below = 65536
ipt = 1
tpb = 128
[[scale."*"."NVIDIA H200"]]
size-axis = "Elements"
size-from = 65536
ipt = 4
tpb = 128
[scale."*".sm_90]
measured-on = "NVIDIA H100"
ipt = 4
tpb = 128
"#;
    let g = generate("sized", toml).expect("builds");
    let f = &g.manifest.functions[0];
    assert_eq!(f.size_axis.as_deref(), Some("Elements"));
    assert_eq!(
        f.compiled,
        ["base", "ipt_1.tpb_128", "ipt_4.tpb_128"],
        "three entries, two distinct winners"
    );
    let applied: Vec<String> = f
        .applied
        .iter()
        .map(|a| format!("{} {} {:?} {}", a.arch, a.model, a.sizes, a.label))
        .collect();
    assert_eq!(
        applied,
        [
            "NVIDIA H200 true Some([[0, 65535]]) ipt_1.tpb_128".to_string(),
            format!(
                "NVIDIA H200 true Some([[65536, {}]]) ipt_4.tpb_128",
                u64::MAX
            ),
            "sm_90 false None ipt_4.tpb_128".to_string(),
        ]
    );
    let source = &g
        .files
        .iter()
        .find(|(p, _)| p == "gputune/scale.rs")
        .expect("dispatch")
        .1;
    assert!(source.contains("arm_at(&__GPUTUNE_TABLE, __gputune_workload, &__gputune_sizes)"));
}

#[test]
fn version_1_files_still_build() {
    let toml = "version = 1\n[scale.\"*\".sm_90]\nipt = 2\ntpb = 64\n";
    let g = generate("v1", toml).expect("builds");
    let f = &g.manifest.functions[0];
    assert_eq!(f.compiled, ["base", "ipt_2.tpb_64"]);
    assert!(!f.applied[0].model);
}

#[test]
fn malformed_and_conflicting_entries_fail_the_build_naming_the_entry() {
    let cases = [
        (
            "overlap",
            "version = 2\n[[scale.\"*\".cpu]]\nsize-axis = \"Elements\"\nsize-below = 100\nipt = 1\ntpb = 64\n\
             [[scale.\"*\".cpu]]\nsize-axis = \"Elements\"\nsize-from = 99\nipt = 2\ntpb = 64\n",
            "[scale.\"*\".cpu]: the size ranges Elements ..100 and Elements 99.. overlap",
        ),
        (
            "axis",
            "version = 2\n[[scale.\"T=f32\".\"NVIDIA H200\"]]\nsize-axis = \"Rows\"\nipt = 1\ntpb = 64\n",
            "[scale.\"T=f32\".\"NVIDIA H200\"]: unknown size axis `Rows`",
        ),
        (
            "same-device",
            "version = 2\n[scale.\"*\".\"NVIDIA H200\"]\nipt = 1\ntpb = 64\n\
             [scale.\"*\".sm_90]\nmeasured-on = \"NVIDIA H200\"\nipt = 2\ntpb = 64\n",
            "[scale.\"*\".\"NVIDIA H200\"] and [scale.\"*\".sm_90] (measured-on = \"NVIDIA H200\") \
             name different points for the same device",
        ),
        (
            "parameter",
            "version = 2\n[scale.\"*\".\"NVIDIA H200\"]\nipt = 1\n",
            "[scale.\"*\".\"NVIDIA H200\"]: missing `tpb`",
        ),
    ];
    for (name, toml, needle) in cases {
        let e = generate(name, toml)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("gputune.toml: ") && e.contains(needle),
            "{name}: {e}"
        );
    }
    // A per-size entry for a function that declares no size.
    let inputs = package(
        "unsized",
        "#[tune(ipt = [1, 2], base(ipt = 1))] pub fn f() {}",
        Some("version = 2\n[[f.\"*\".cpu]]\nsize-axis = \"Elements\"\nipt = 2\n"),
    );
    let e = generate_from(&inputs)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let _ = std::fs::remove_dir_all(&inputs.package_dir);
    assert!(
        e.contains("[f.\"*\".cpu]: a per-size entry (Elements ..), but `f` declares no size"),
        "{e}"
    );
}
