//! Without a GPU: what `build.rs` made of llm.c's files and of the two `#[tune]` attributes.

use gputune_runtime::kernel::NvccImage;
use gputune_runtime::skipped;

/// The images `build.rs` had nvcc compile, per file (the build helper's table).
const LAYERNORM: &[NvccImage] = include!(concat!(
    env!("OUT_DIR"),
    "/gputune/nvcc/src_layernorm_forward_cu.rs"
));
const SOFTMAX: &[NvccImage] = include!(concat!(
    env!("OUT_DIR"),
    "/gputune/nvcc/src_softmax_forward_cu.rs"
));

/// The kernels `src/lib.rs` launches from each file.
const LAYERNORM_KERNELS: [&str; 8] = [
    "layernorm_forward_kernel1",
    "mean_kernel",
    "rstd_kernel",
    "normalization_kernel",
    "layernorm_forward_kernel3",
    "layernorm_forward_kernel4",
    "layernorm_forward_kernel5",
    "layernorm_forward_kernel6",
];
const SOFTMAX_KERNELS: [&str; 8] = [
    "softmax_forward_kernel1",
    "softmax_forward_kernel2",
    "softmax_forward_kernel3",
    "softmax_forward_kernel4",
    "softmax_forward_online_kernel1",
    "softmax_forward_online_kernel2",
    "softmax_forward_kernel7",
    "softmax_forward_online_kernel8",
];

/// Each file is compiled once, not once per variant: one image, for no tuned function, with
/// llm.c's `--use_fast_math`, holding every kernel the wrappers launch under its C++ name.
#[test]
fn each_llm_c_file_is_compiled_once_by_nvcc_with_every_kernel() {
    for (file, images, kernels) in [
        ("layernorm_forward.cu", LAYERNORM, LAYERNORM_KERNELS),
        ("softmax_forward.cu", SOFTMAX, SOFTMAX_KERNELS),
    ] {
        assert_eq!(images.len(), 1, "{file}: one image, whatever the variants");
        let image = &images[0];
        assert_eq!((image.function, image.values), ("", ""), "{file}");
        if image.error.contains("nvcc was not found") {
            return skipped("needs nvcc (the CUDA toolkit or PyPI's wheels: NVCC=…)");
        }
        assert_eq!(
            image.error, "",
            "{file}: nvcc compiled it as llm.c ships it"
        );
        assert!(!image.image.is_empty(), "{file}");
        assert!(image.archs.contains("sm_90"), "{file}: {}", image.archs);
        assert!(
            image.options.contains(&"--use_fast_math"),
            "{file}: {:?}",
            image.options
        );
        for kernel in kernels {
            assert!(
                image.entries.iter().any(|&(name, _)| name == kernel),
                "{file} has no kernel {kernel}: {:?}",
                image.entries
            );
        }
    }
}

/// Every label of a tuned function, from the build script's manifest.
fn labels(function: &str) -> Vec<String> {
    let path = concat!(env!("OUT_DIR"), "/gputune/manifest.json");
    let text = std::fs::read_to_string(path).expect("the build script's manifest");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let functions = manifest["functions"].as_array().expect("functions");
    let f = functions
        .iter()
        .find(|f| f["name"] == function)
        .expect(function);
    let labels = f["labels"].as_array().expect("labels").iter();
    labels
        .map(|l| l.as_str().expect("a label").to_string())
        .collect()
}

/// The spaces are llm.c's sweeps: its kernel versions × its block sizes (32 … 1024), with
/// softmax's version 3 once (its launcher sets 32 threads whatever it is asked).
#[test]
fn the_spaces_are_llm_c_s_versions_times_its_block_sizes() {
    let sweep = |versions: std::ops::RangeInclusive<u32>, version_3_once: bool| {
        let mut labels = Vec::new();
        for v in versions {
            for b in [32, 64, 128, 256, 512, 1024] {
                if !(version_3_once && v == 3 && b != 32) {
                    labels.push(format!("version_{v}.block_size_{b}"));
                }
            }
        }
        labels
    };
    assert_eq!(labels("layernorm_forward"), sweep(1..=6, false));
    assert_eq!(labels("softmax_forward"), sweep(1..=8, true));
    assert_eq!(labels("softmax_forward").len(), 43);
}
