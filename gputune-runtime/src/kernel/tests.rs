//! The kernel handle's defines, programs and plans, without a GPU.

use super::*;

#[cfg(feature = "build")]
#[test]
fn the_separator_is_the_grammars() {
    assert_eq!(VALUE_SEPARATOR, gputune_grammar::VALUE_SEPARATOR);
}

#[test]
fn a_variant_s_entries_pair_its_values_with_the_shared_table() {
    let entries: Vec<_> = TUNED_8.entries().collect();
    assert_eq!(
        entries,
        [("ipt", "IPT", "8", "4"), ("wide", "WIDE", "1", "0")]
    );
    assert_eq!(Tuned::UNTUNED.entries().count(), 0);
}

/// A source that reads both parameters of [`TUNED_8`].
const USES_BOTH: &str = "__global__ void scale() { int n = IPT; if (WIDE) n *= 2; }";

#[test]
fn a_parameter_the_source_never_names_is_no_define() {
    // `wide` only changes the launch: every value of it is the same program.
    let k = Kernel::new("__global__ void scale() { int n = IPT; } // WIDE", "scale");
    assert_eq!(k.variant_defines(TUNED_8, &[]), [("IPT", "8".to_string())]);
    assert!(!k.reads("wide", "WIDE"));
    // In an embedded header it is read; behind include directories it may be.
    let header = Kernel::new("#include \"w.cuh\"\n", "scale").headers(&[("w.cuh", "WIDE")]);
    assert!(header.reads("wide", "WIDE"));
    let dirs = Kernel::new("", "scale").include_dirs(&["/opt/lib/include"]);
    assert!(dirs.reads("wide", "WIDE"));
    let option =
        Kernel::new("", "scale").option_params(&[("wide", OptionRule::Flag("--use_fast_math"))]);
    assert!(
        option.reads("wide", "WIDE"),
        "an option parameter stays a define"
    );
}

const TUNED_8: Tuned = Tuned::new(
    "kernel_test_fn",
    &[("ipt", "IPT", "4"), ("wide", "WIDE", "0")],
    "8\u{1f}1",
);

#[test]
fn every_parameter_is_a_define_under_its_const_name_or_its_mapping() {
    let k = Kernel::new(USES_BOTH, "scale");
    assert_eq!(
        k.variant_defines(TUNED_8, &[("VALUE_T", "float")]),
        [
            ("VALUE_T", "float".to_string()),
            ("IPT", "8".to_string()),
            ("WIDE", "1".to_string())
        ]
    );
    let renamed = Kernel::new("int a = ITEMS_PER_THREAD * WIDE;", "scale")
        .rename(&[("ipt", "ITEMS_PER_THREAD")]);
    assert_eq!(
        renamed.variant_defines(TUNED_8, &[]),
        [
            ("ITEMS_PER_THREAD", "8".to_string()),
            ("WIDE", "1".to_string())
        ]
    );
}

#[test]
fn handles_of_one_module_compile_it_with_the_same_names() {
    const BOTH: &[&str] = &["first", "second"];
    let alone = Kernel::new("", "first");
    assert_eq!(alone.names(), ["first"]);
    let (a, b) = (
        Kernel::new("", "first").module_names(BOTH),
        Kernel::new("", "second").module_names(BOTH),
    );
    // The same names give the same cache key: one compilation serves both handles.
    assert_eq!(a.names(), b.names());
}

#[test]
fn the_planned_variants_become_define_sets_base_first() {
    tuned::plan(
        "kernel_test_fn",
        &["ipt_2.wide_true", "kernel_test_fn.ipt_16.wide_false"],
    );
    let k = Kernel::new(USES_BOTH, "scale");
    let sets = k
        .planned_defines(TUNED_8, &[])
        .expect("labels of the space");
    let ipt = |s: &Vec<(&str, String)>| s[0].1.clone();
    assert_eq!(sets.iter().map(ipt).collect::<Vec<_>>(), ["4", "2", "16"]);
    assert_eq!(
        sets[1][1],
        ("WIDE", "1".to_string()),
        "booleans as C writes them"
    );
    tuned::plan("kernel_test_fn", &[]);
}

#[test]
fn a_parameter_whose_define_the_source_declares_is_a_clear_error() {
    static PARAMS: &[(&str, &str)] = &[("block_size", "256"), ("ipt", "4")];
    let declares = Kernel::new(
        "constexpr int BLOCK_SIZE = 256;\n__global__ void k() { int n = IPT * BLOCK_SIZE; }",
        "k",
    )
    .file_name("k.cu");
    let e = declares
        .label_defines(PARAMS, "block_size_128.ipt_8", &[])
        .expect_err("a clash");
    assert!(
        matches!(&e, Error::Compile(m) if m.contains("`block_size`")
            && m.contains("k.cu declares `BLOCK_SIZE`")
            && m.contains("line 1: `constexpr int BLOCK_SIZE = 256;`")),
        "{e}"
    );
    // In an embedded header, named by its include name.
    let header = Kernel::new("#include \"common.h\"\n__global__ void k() {}", "k")
        .headers(&[("common.h", "__device__ void BLOCK_SIZE(int n) {}")]);
    let e = header
        .label_defines(PARAMS, "base", &[])
        .expect_err("a clash");
    assert!(
        matches!(&e, Error::Compile(m) if m.contains("common.h declares")),
        "{e}"
    );
    // Read as the macro, with a guarded default: the normal case.
    let guarded = Kernel::new(
        "#ifndef BLOCK_SIZE\n#define BLOCK_SIZE 128\n#endif\n\
         __global__ void k() { __shared__ float t[BLOCK_SIZE]; int n = IPT * BLOCK_SIZE; }",
        "k",
    );
    let defines = guarded
        .label_defines(PARAMS, "base", &[])
        .expect("no clash");
    assert_eq!(defines.len(), 2);
    // Mapped to a macro the source reads: the source's own BLOCK_SIZE stays its own.
    let renamed = Kernel::new(
        "constexpr int BLOCK_SIZE = TUNED_BLOCK;\n__global__ void k() { int n = IPT; }",
        "k",
    )
    .rename(&[("block_size", "TUNED_BLOCK")]);
    let defines = renamed
        .label_defines(PARAMS, "base", &[])
        .expect("no clash");
    assert_eq!(defines[0], ("TUNED_BLOCK".to_string(), "256".to_string()));
    // A parameter whose macro the source only reads passes.
    assert!(declares.check_defines([("ipt", "IPT")]).is_ok());
}
