//! Kernels someone else compiled: a module the application ships (PTX text such as
//! `candle_kernels::REDUCE`, or a cubin's or fatbin's bytes), and the images nvcc made at
//! build time, one per variant (`gputune_runtime::build::Builder::kernels`). Nothing is compiled on
//! the GPU host: the module is loaded once per process and context, and the tuning
//! parameters of a shipped module change only the launch.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};

use crate::backend::cuda::{device_cc, load_static};
use crate::error::{Error, Result};
use crate::tuned::Tuned;

/// One variant's image, compiled by nvcc at build time; the build helper writes the table of
/// them that `gputune_macros::nvcc_kernel!` embeds.
#[derive(Debug)]
pub struct NvccImage {
    /// The tuned function whose variant it is (empty: an untuned kernel).
    pub function: &'static str,
    /// The variant's values as its `TUNED` holds them.
    pub values: &'static str,
    /// The further defines it was compiled with (an element type), as `get` is handed them.
    pub extra: &'static [(&'static str, &'static str)],
    /// The fatbin (empty where nvcc failed).
    pub image: &'static [u8],
    /// nvcc's message where it rejected the source: the variant does not build.
    pub error: &'static str,
    /// What the image holds: `sm_90,compute_90`.
    pub archs: &'static str,
    /// Each kernel's name as C++ writes it (`scale`, `ns::scale<float>`) and its symbol.
    pub entries: &'static [(&'static str, &'static str)],
    /// nvcc's version and options beyond defines, for the variant's record.
    pub options: &'static [&'static str],
}

/// Where a prebuilt kernel's code comes from.
#[derive(Debug, Clone, Copy)]
pub(super) enum Prebuilt {
    /// PTX text an application ships: the driver JIT-compiles it on load.
    Ptx(&'static str),
    /// PTX text an application hands out through a function (candle's
    /// `candle_kernels::REDUCE.ptx()`, which a `static` cannot call).
    PtxFrom(fn() -> &'static str),
    /// A cubin or fatbin an application ships.
    Image(&'static [u8]),
    /// nvcc's images, one per variant.
    Nvcc(&'static [NvccImage]),
}

/// A loaded kernel and its module.
pub(super) struct Loaded {
    pub function: CudaFunction,
    pub module: super::compiled::Module,
}

/// The module of a prebuilt kernel, its names and the options its kernels' records name.
fn module_of(
    (module, context): (Arc<CudaModule>, &Arc<CudaContext>),
    names: Vec<(String, String)>,
    options: Vec<String>,
) -> super::compiled::Module {
    super::compiled::Module {
        module,
        context: context.clone(),
        names,
        options,
        siblings: std::sync::Mutex::default(),
    }
}

/// The function `name` of a module an application ships (PTX text, or an image's bytes),
/// loaded once per context.
fn shipped(
    context: &Arc<CudaContext>,
    code: &'static [u8],
    ptx_text: bool,
    name: &str,
) -> Result<Loaded> {
    let what = if ptx_text {
        "shipped PTX"
    } else {
        "shipped image"
    };
    let module = load_static(context, code, ptx_text)?;
    let function = module.load_function(name).map_err(|e| {
        // PTX says what it holds; an image's names would take a parser of its own.
        let holds = if ptx_text {
            let entries = crate::cuda_text::ptx_entries(&String::from_utf8_lossy(code));
            if entries.is_empty() {
                "; it holds no kernels".to_string()
            } else {
                format!("; it holds {}", entries.join(", "))
            }
        } else {
            String::new()
        };
        Error::Compile(format!("kernel `{name}` is not in the {what} ({e}){holds}"))
    })?;
    Ok(Loaded {
        function,
        module: module_of((module, context), Vec::new(), vec![what.to_string()]),
    })
}

impl Prebuilt {
    /// The function `name` of the variant `tuned`, with `extra` defines, on `context`.
    pub fn load(
        self,
        name: &str,
        tuned: Tuned,
        extra: &[(&str, &str)],
        context: &Arc<CudaContext>,
    ) -> Result<Loaded> {
        match self {
            Prebuilt::PtxFrom(text) => Prebuilt::Ptx(text()).load(name, tuned, extra, context),
            Prebuilt::Ptx(text) => shipped(context, text.as_bytes(), true, name),
            Prebuilt::Image(bytes) => shipped(context, bytes, false, name),
            Prebuilt::Nvcc(table) => {
                let image = find_image(table, tuned, extra)?;
                if !image.error.is_empty() {
                    return Err(Error::Compile(image.error.to_string()));
                }
                let cc = device_cc(context)?;
                if !runs_on(image.archs, cc) {
                    return Err(Error::Compile(format!(
                        "the nvcc image of {} holds {} and this device is sm_{cc}: rebuild with \
                         GPUTUNE_CUDA_ARCHS={cc} (or CUDA_COMPUTE_CAP={cc})",
                        describe(image),
                        image.archs
                    )));
                }
                let symbol = image
                    .entries
                    .iter()
                    .find(|(n, s)| super::compiled::same_name(n, name) || *s == name)
                    .map(|(_, s)| *s)
                    .ok_or_else(|| {
                        let names: Vec<&str> = image.entries.iter().map(|(n, _)| *n).collect();
                        Error::Compile(format!(
                            "kernel `{name}` is not in the nvcc image of {}; it holds {}",
                            describe(image),
                            names.join(", ")
                        ))
                    })?;
                let module = load_static(context, image.image, false)?;
                let function = module.load_function(symbol).map_err(|e| {
                    Error::Compile(format!("loading `{symbol}` from the nvcc image: {e}"))
                })?;
                let names = image
                    .entries
                    .iter()
                    .map(|(n, s)| (n.to_string(), s.to_string()))
                    .collect();
                let options = image.options.iter().map(|o| o.to_string()).collect();
                Ok(Loaded {
                    function,
                    module: module_of((module, context), names, options),
                })
            }
        }
    }
}

/// The image of the variant `tuned` with `extra` defines, or why there is none.
pub(super) fn find_image(
    table: &'static [NvccImage],
    tuned: Tuned,
    extra: &[(&str, &str)],
) -> Result<&'static NvccImage> {
    let same_extra = |e: &[(&str, &str)]| e == extra;
    table
        .iter()
        .find(|i| {
            i.function == tuned.function() && i.values == tuned.values() && same_extra(i.extra)
        })
        .ok_or_else(|| {
            let function = if tuned.function().is_empty() {
                "the untuned kernel".to_string()
            } else {
                format!("`{}`", tuned.function())
            };
            let sets: Vec<String> = table
                .iter()
                .filter(|i| i.function == tuned.function())
                .map(|i| format!("{:?}", i.extra))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            Error::Compile(format!(
                "nvcc built no image of {function} with values {:?} and defines {extra:?} ({} \
                 images of it, define sets {}): list the function and the define set in \
                 build.rs (`Builder::kernels(CudaFile::new(…).functions(…).instance(…))`)",
                tuned.values().replace(crate::tuned::VALUE_SEPARATOR, ","),
                table
                    .iter()
                    .filter(|i| i.function == tuned.function())
                    .count(),
                if sets.is_empty() {
                    "none".to_string()
                } else {
                    sets.join(" ")
                }
            ))
        })
}

fn describe(image: &NvccImage) -> String {
    if image.function.is_empty() {
        "the untuned kernel".to_string()
    } else {
        format!(
            "`{}` ({})",
            image.function,
            image.values.replace(crate::tuned::VALUE_SEPARATOR, ",")
        )
    }
}

/// Whether a device of compute capability `cc` (`90`) can run an image holding `archs`
/// (`sm_80,compute_80`): a cubin of the same major version and no newer minor, or PTX of no
/// newer architecture, which the driver JIT-compiles.
pub fn runs_on(archs: &str, cc: i32) -> bool {
    archs.split(',').any(|a| {
        if let Some(sm) = a.strip_prefix("sm_").and_then(|v| v.parse::<i32>().ok()) {
            sm / 10 == cc / 10 && sm % 10 <= cc % 10
        } else if let Some(ptx) = a
            .strip_prefix("compute_")
            .and_then(|v| v.parse::<i32>().ok())
        {
            ptx <= cc
        } else {
            false
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_runs_where_its_cubin_or_ptx_can() {
        assert!(runs_on("sm_90,compute_90", 90));
        assert!(!runs_on("sm_90,compute_90", 80), "too new for an A100");
        assert!(runs_on("sm_80,compute_80", 90), "PTX JITs forward");
        assert!(!runs_on("sm_80", 90), "a cubin does not cross majors");
        assert!(runs_on("sm_80", 86), "a cubin runs on a newer minor");
        assert!(!runs_on("sm_86", 80));
        assert!(!runs_on("", 90));
    }

    const IMAGES: &[NvccImage] = &[
        NvccImage {
            function: "scale",
            values: "4\u{1f}256",
            extra: &[("VALUE_T", "float")],
            image: b"",
            error: "",
            archs: "sm_90,compute_90",
            entries: &[("scale", "scale")],
            options: &[],
        },
        NvccImage {
            function: "scale",
            values: "8\u{1f}128",
            extra: &[("VALUE_T", "float")],
            image: b"",
            error: "nvcc rejected it",
            archs: "sm_90,compute_90",
            entries: &[],
            options: &[],
        },
    ];

    const BASE: Tuned = Tuned::new(
        "scale",
        &[("ipt", "IPT", "4"), ("tpb", "TPB", "256")],
        "4\u{1f}256",
    );

    #[test]
    fn a_variant_s_image_is_found_by_function_values_and_defines() {
        let found = find_image(IMAGES, BASE, &[("VALUE_T", "float")]).expect("base's image");
        assert_eq!(found.values, "4\u{1f}256");
        let e = find_image(IMAGES, BASE, &[("VALUE_T", "double")]).expect_err("not built");
        let text = e.to_string();
        assert!(text.contains("values \"4,256\""), "{text}");
        assert!(text.contains("[(\"VALUE_T\", \"float\")]"), "{text}");
        assert!(text.contains("build.rs"), "{text}");
        assert!(find_image(IMAGES, Tuned::UNTUNED, &[]).is_err());
    }

    #[test]
    fn names_compare_without_whitespace() {
        assert!(super::super::compiled::same_name(
            "scale<float, 4>",
            "scale<float,4>"
        ));
        assert!(!super::super::compiled::same_name(
            "scale<float>",
            "scale<double>"
        ));
    }
}
