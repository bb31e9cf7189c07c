//! What build.rs declares of a crate whose kernels nvcc compiles: [`Builder`] runs the
//! `#[tune]` code generation of [`super::generate`] and then compiles each declared CUDA file
//! once per variant the build compiles in.
//!
//! ```no_run
//! use gputune_runtime::build::{Builder, CudaFile};
//!
//! // The whole `main` of build.rs:
//! Builder::new()
//!     // Device code: one fatbin per variant of `scale`, for `gputune_macros::nvcc_kernel!`.
//!     .kernels(CudaFile::new("src/scale.cu").functions(&["scale"]))
//!     // Host launchers: one object per variant in one static library, for `launchers!`.
//!     .launchers(CudaFile::new("src/launch.cu").functions(&["scale_cxx"]))
//!     .main();
//! ```
//!
//! Each variant's parameters are `-D` defines under their `const` names (`ipt` → `IPT`),
//! as NVRTC's kernels get them; [`CudaFile::instance`] adds define sets that are not tuning
//! parameters (an element type), each compiled for every variant. Compilations run in
//! parallel on the build host's cores (`NUM_JOBS`), each distinct one once, cached by
//! content ([`super::nvcc::cache_dir`]). nvcc missing or a variant it rejects does not fail
//! the build: the variant's entry holds the message, and running it reports it (a search
//! records it `build_failed`, the others go on).

use std::path::{Path, PathBuf};

use super::images::{self, Job};
use super::manifest::Manifest;
use super::nvcc::{self, Compilation, Nvcc, Output};
use super::{emit, generate_from, io, out_dir, BuildError, CompiledIn, Generated, Inputs};

/// A CUDA file of the crate that nvcc compiles at build time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CudaFile {
    pub(super) path: String,
    pub(super) functions: Vec<String>,
    pub(super) instances: Vec<Vec<(String, String)>>,
    pub(super) defines: Vec<(String, String)>,
    pub(super) options: Vec<String>,
    pub(super) renames: Vec<(String, String)>,
    pub(super) launcher_names: Vec<String>,
}

impl CudaFile {
    /// The file at `path`, relative to the crate's root (`src/scale.cu`), compiled once
    /// without tuning defines until [`CudaFile::functions`] names the tuned functions whose
    /// variants it serves.
    pub fn new(path: &str) -> CudaFile {
        CudaFile {
            path: path.to_string(),
            ..CudaFile::default()
        }
    }

    /// The `#[tune]` functions whose variants launch this file's code: it is compiled once
    /// per variant of each that the build compiles in.
    pub fn functions(mut self, functions: &[&str]) -> CudaFile {
        self.functions = functions.iter().map(|f| f.to_string()).collect();
        self
    }

    /// One more set of defines that are not tuning parameters (`&[("VALUE_T", "float")]`),
    /// compiled for every variant; the kernel handle or launcher picks it by the `extra`
    /// defines it is handed. Without any, one set: none.
    pub fn instance(mut self, defines: &[(&str, &str)]) -> CudaFile {
        self.instances.push(
            defines
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        );
        self
    }

    /// A define of every compilation of the file.
    pub fn define(mut self, name: &str, value: &str) -> CudaFile {
        self.defines.push((name.to_string(), value.to_string()));
        self
    }

    /// An nvcc option of every compilation (`--use_fast_math`, `-lineinfo`, `-I…`). A relative
    /// path in it is from the crate's directory, where cargo runs build scripts
    /// (`--system-include=src/cublas-stub`). Headers outside `src/` that it reaches are not
    /// part of the cache key, nor watched for changes.
    pub fn option(mut self, option: &str) -> CudaFile {
        self.options.push(option.to_string());
        self
    }

    /// Passes the tuning parameter `param` under the macro name `to` instead of its `const`
    /// name.
    pub fn rename(mut self, param: &str, to: &str) -> CudaFile {
        self.renames.push((param.to_string(), to.to_string()));
        self
    }

    /// The launchers this file must define (for [`Builder::launchers`]): the build fails
    /// naming any that a variant's object lacks. Without it, every `extern "C"` function the
    /// file defines is a launcher.
    pub fn launcher_names(mut self, names: &[&str]) -> CudaFile {
        self.launcher_names = names.iter().map(|n| n.to_string()).collect();
        self
    }

    /// The define sets beyond tuning parameters ([`CudaFile::instance`]; one empty set).
    fn instances(&self) -> Vec<Vec<(String, String)>> {
        if self.instances.is_empty() {
            vec![Vec::new()]
        } else {
            self.instances.clone()
        }
    }

    /// The macro name of a parameter whose `const` name is `const_name`.
    fn macro_name<'a>(&'a self, param: &str, const_name: &'a str) -> &'a str {
        self.renames
            .iter()
            .find(|(from, _)| from == param)
            .map_or(const_name, |(_, to)| to.as_str())
    }

    /// A parameter whose define the file (or a header of the crate) declares itself: nvcc
    /// would keep the file's `#define` over `-D` with a warning the build never shows, and
    /// every variant would compile the same code; a `const` or function of that name would
    /// not compile. Caught here, naming the line and what to do, as the kernel handle does
    /// for NVRTC.
    fn check_defines(
        &self,
        variants: &[CompiledIn],
        (own, headers): (Option<&str>, &[(String, String)]),
        reads: &dyn Fn(&str) -> bool,
    ) -> Result<(), BuildError> {
        let mut params: Vec<(&str, &str)> = variants
            .iter()
            .filter(|v| self.functions.contains(&v.function))
            .flat_map(|v| v.params.iter().map(|(n, c, _)| (n.as_str(), c.as_str())))
            .collect();
        params.sort_unstable();
        params.dedup();
        if params.is_empty() {
            return Ok(());
        }
        let texts = std::iter::once((self.path.as_str(), own))
            .chain(headers.iter().map(|(n, t)| (n.as_str(), Some(t.as_str()))));
        for (name, text) in texts {
            let Some(text) = text else { continue };
            let declared = crate::cuda_text::declared(text);
            for (param, const_name) in &params {
                let macro_name = self.macro_name(param, const_name);
                if let Some(d) = declared.get(macro_name).filter(|_| reads(macro_name)) {
                    return Err(BuildError::DefineClash(d.clash(param, macro_name, name)));
                }
            }
        }
        Ok(())
    }

    /// Every compilation of this file for the compiled-in `variants`: per variant of each of
    /// its functions (or once, untuned) and per define set.
    pub(super) fn jobs(
        &self,
        variants: &[CompiledIn],
        (package_dir, headers): (&Path, &[(String, String)]),
        archs: &[u32],
        output: Output,
    ) -> Result<Vec<Job>, BuildError> {
        // A parameter no CUDA file of the crate names only changes the launch: no define,
        // so its values share one compilation. Options (`-I…`) may reach headers elsewhere.
        let source_path = package_dir.join(&self.path);
        let own = std::fs::read_to_string(&source_path).ok();
        let identifiers = if self.options.iter().any(|o| o.starts_with("-I")) {
            None
        } else {
            let mut ids = own
                .as_deref()
                .map(crate::cuda_text::identifiers)
                .unwrap_or_default();
            for (_, text) in headers {
                ids.extend(crate::cuda_text::identifiers(text));
            }
            Some(ids)
        };
        let reads = |name: &str| match &identifiers {
            Some(ids) => ids.contains(name),
            None => true,
        };
        self.check_defines(variants, (own.as_deref(), headers), &reads)?;
        let untuned = CompiledIn {
            function: String::new(),
            label: "untuned".to_string(),
            values: String::new(),
            params: Vec::new(),
        };
        let mut of_file: Vec<&CompiledIn> = Vec::new();
        if self.functions.is_empty() {
            of_file.push(&untuned);
        }
        for function in &self.functions {
            let mine: Vec<&CompiledIn> = variants
                .iter()
                .filter(|v| &v.function == function)
                .collect();
            if mine.is_empty() {
                let mut known: Vec<&str> = variants.iter().map(|v| v.function.as_str()).collect();
                known.dedup();
                return Err(BuildError::UnknownFunction {
                    file: self.path.clone(),
                    function: function.clone(),
                    known: if known.is_empty() {
                        "it has none".to_string()
                    } else {
                        format!("it has {}", known.join(", "))
                    },
                });
            }
            of_file.extend(mine);
        }
        let source = package_dir.join(&self.path);
        let dir = source.parent().unwrap_or(package_dir).to_path_buf();
        let mut options = vec![
            "-std=c++17".to_string(),
            format!("-I{}", dir.display()),
            format!("-I{}", package_dir.join("src").display()),
        ];
        options.extend(self.options.iter().cloned());
        let mut jobs = Vec::new();
        for variant in of_file {
            for extra in self.instances() {
                let mut defines = extra.clone();
                defines.extend(self.defines.iter().cloned());
                defines.extend(
                    variant
                        .params
                        .iter()
                        .filter_map(|(name, const_name, value)| {
                            let macro_name = self.macro_name(name, const_name);
                            reads(macro_name).then(|| (macro_name.to_string(), value.clone()))
                        }),
                );
                jobs.push(Job {
                    variant: variant.clone(),
                    extra,
                    compilation: Compilation {
                        source: source.clone(),
                        defines,
                        options: options.clone(),
                        archs: archs.to_vec(),
                        output,
                    },
                });
            }
        }
        Ok(jobs)
    }
}

/// The build script of a crate with `#[tune]` functions and CUDA files nvcc compiles.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    kernels: Vec<CudaFile>,
    launchers: Vec<CudaFile>,
}

impl Builder {
    /// The `#[tune]` code generation alone, as [`super::main`] does it.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// A file of kernels (device code) compiled to a fatbin per variant, for
    /// `gputune_macros::nvcc_kernel!`.
    pub fn kernels(mut self, file: CudaFile) -> Builder {
        self.kernels.push(file);
        self
    }

    /// A file of C++ launchers (host code with `<<<…>>>`) compiled to an object per variant,
    /// linked as one static library with the CUDA runtime, for `gputune_macros::launchers!`.
    pub fn launchers(mut self, file: CudaFile) -> Builder {
        self.launchers.push(file);
        self
    }

    /// Generates and compiles from the build script's environment, writes under `OUT_DIR`,
    /// and prints cargo's directives.
    pub fn run(self) -> Result<Manifest, BuildError> {
        let inputs = Inputs::from_env()?;
        let out = out_dir()?;
        let mut generated = generate_from(&inputs)?;
        if !(self.kernels.is_empty() && self.launchers.is_empty()) {
            self.compile(&inputs, &out, &mut generated)?;
        }
        emit(&generated, &out)?;
        Ok(generated.manifest)
    }

    /// [`Builder::run`] for a `build.rs` `main`: on error, prints it and exits with status 1.
    pub fn main(self) {
        if let Err(e) = self.run() {
            eprintln!("error: gputune: {e}");
            println!("cargo::error=gputune: {e}");
            std::process::exit(1);
        }
    }

    fn compile(
        &self,
        inputs: &Inputs,
        out: &Path,
        generated: &mut Generated,
    ) -> Result<(), BuildError> {
        for var in ["NVCC", "NUM_JOBS", nvcc::ARCHS_ENV, nvcc::COMPUTE_CAP_ENV]
            .into_iter()
            .chain(nvcc::ROOT_VARS)
        {
            generated
                .directives
                .push(format!("rerun-if-env-changed={var}"));
        }
        let archs = nvcc::archs(|v| std::env::var(v).ok())?;
        let found = Nvcc::find();
        if let Err(e) = &found {
            generated.warnings.push(format!(
                "the CUDA files of build.rs are not compiled, and running their variants will \
                 say so: {e}"
            ));
        }
        let found = found.map_err(|e| e.to_string());
        let headers = cuda_headers(&inputs.package_dir)?;
        let cache = nvcc::cache_dir(|v| std::env::var_os(v));
        let work = out.join("gputune").join("nvcc-work");
        let run = |files: &[CudaFile], output: Output| -> Result<Vec<_>, BuildError> {
            let mut all = Vec::new();
            for file in files {
                let jobs = file.jobs(
                    &generated.variants,
                    (&inputs.package_dir, &headers),
                    &archs,
                    output,
                )?;
                let made = images::compile_all(&jobs, &found, &headers, cache.as_deref(), &work)?;
                all.push((jobs, made));
            }
            Ok(all)
        };
        let kernels = run(&self.kernels, Output::Fatbin)?;
        let launchers = run(&self.launchers, Output::Object)?;
        let version = found.as_ref().ok().map(|n| n.version.as_str());
        for (file, (jobs, made)) in self.kernels.iter().zip(kernels) {
            let (rel, text) = images::kernel_table(file, &jobs, &made, &archs, version, out)?;
            generated.files.push((rel, text));
        }
        for (file, (jobs, made)) in self.launchers.iter().zip(launchers) {
            let (rel, text, directives) =
                super::launchers::library(file, &inputs.package, &jobs, &made, out)?;
            generated.files.push((rel, text));
            generated.directives.extend(directives);
        }
        if let Ok(nvcc) = &found {
            if !self.launchers.is_empty() {
                generated
                    .directives
                    .extend(super::launchers::runtime_links(nvcc));
            }
        }
        Ok(())
    }
}

/// The CUDA sources and headers under the crate's `src/` (`.cu`, `.cuh`, `.h`, `.hpp`), by
/// path relative to the crate, with their contents: what a CUDA file may include, part of
/// every compilation's cache key.
fn cuda_headers(package_dir: &Path) -> Result<Vec<(String, String)>, BuildError> {
    let src = package_dir.join("src");
    let mut out = Vec::new();
    let mut pending: Vec<PathBuf> = vec![src.clone()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .is_some_and(|e| ["cu", "cuh", "h", "hpp", "inl"].iter().any(|x| e == *x))
            {
                let text = std::fs::read_to_string(&path).map_err(io(&path))?;
                let rel = path.strip_prefix(package_dir).unwrap_or(&path);
                out.push((rel.display().to_string(), text));
            }
        }
    }
    out.sort();
    Ok(out)
}
