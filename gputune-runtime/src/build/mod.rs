//! The build-script helper (feature `build`): call it from the `build.rs` of a crate with
//! `#[tune]` functions.
//!
//! ```no_run
//! // The whole `main` of build.rs:
//! gputune_runtime::build::main();
//! ```
//!
//! It finds every `#[tune]` function under `src/`, enumerates its space, and writes to
//! `OUT_DIR/gputune/`:
//! - `NAME.rs` per function: the dispatch over the compiled-in variants ([`codegen`]),
//!   which the macro includes as the function's body;
//! - `manifest.json`: functions, parameters, values, base, space size, labels, and what
//!   this build compiled in ([`manifest`]), for `cargo gputune`.
//!
//! It tells cargo: `rustc-check-cfg` for `gputune_variant` with every valid
//! `function.label`, `rustc-cfg` for the selected ones, and what it depends on (`src/`,
//! `gputune.toml`, `GPUTUNE_VARIANTS` and the file it may name). What a build compiles in
//! is chosen by [`selection::VARIANTS_ENV`]; production builds use [`gputune_toml`].

mod builder;
pub mod codegen;
mod images;
mod launchers;
pub mod nvcc;
pub use gputune_protocol::gputune_toml;
pub use gputune_protocol::manifest;
pub mod scan;
pub mod selection;

use std::path::{Path, PathBuf};

pub use self::builder::{Builder, CudaFile};

use self::codegen::Dispatch;
use self::gputune_toml::GputuneToml;
use self::manifest::{Applied, Function, Manifest, Param, MANIFEST_VERSION};
use self::scan::Found;

/// Why the build helper cannot generate the variants.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A variable cargo sets is missing: the helper runs outside a build script.
    #[error("{0} is not set: call gputune_runtime::build from a build script (build.rs)")]
    NotInBuildScript(&'static str),
    /// `GPUTUNE_VARIANTS` is malformed or names something that does not exist.
    #[error("GPUTUNE_VARIANTS: {0}")]
    Selection(String),
    /// `gputune.toml` is malformed.
    #[error(transparent)]
    Toml(#[from] gputune_toml::TomlError),
    /// A tuning parameter's define that the CUDA file declares itself (nvcc would keep the
    /// file's).
    #[error("{0}")]
    DefineClash(String),
    /// A CUDA file of build.rs names a function that is not a `#[tune]` function.
    #[error("build.rs: {file} is compiled for `{function}`, which is not a #[tune] function of this crate ({known})")]
    UnknownFunction {
        /// The CUDA file.
        file: String,
        /// The name.
        function: String,
        /// The crate's tuned functions.
        known: String,
    },
    /// The architecture list is malformed.
    #[error(transparent)]
    Nvcc(#[from] nvcc::NvccError),
    /// A launcher build.rs names is not in a variant's compiled object.
    #[error("{file}: launcher `{symbol}` is not defined in the object nvcc made for {variant} (its extern \"C\" functions: {found})")]
    MissingLauncher {
        /// The CUDA file.
        file: String,
        /// The launcher's name.
        symbol: String,
        /// Which variant.
        variant: String,
        /// What the object defines.
        found: String,
    },
    /// A binutils tool (`nm`, `objcopy`, `ar`) failed on nvcc's objects.
    #[error("{tool} failed: {message}")]
    Tool {
        /// The tool.
        tool: String,
        /// What it said.
        message: String,
    },
    /// Two tuned functions share a name.
    #[error("two #[tune] functions are named `{name}` ({first} and {second}); tuned function names must be unique in a crate")]
    Duplicate {
        /// The name.
        name: String,
        /// Where the first is.
        first: String,
        /// Where the second is.
        second: String,
    },
}

/// What the helper works from: everything a build script learns from its environment.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The package root (`CARGO_MANIFEST_DIR`).
    pub package_dir: PathBuf,
    /// The package name (`CARGO_PKG_NAME`).
    pub package: String,
    /// The value of `GPUTUNE_VARIANTS` (empty when unset).
    pub selection: String,
}

/// What the helper produces: files to write under `OUT_DIR` and lines for cargo.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The manifest.
    pub manifest: Manifest,
    /// `(path relative to OUT_DIR, contents)`.
    pub files: Vec<(String, String)>,
    /// `cargo::` directives, without the prefix.
    pub directives: Vec<String>,
    /// Warnings for the build output.
    pub warnings: Vec<String>,
    /// Every variant this build compiles in, per function: what nvcc compiles per variant.
    pub variants: Vec<CompiledIn>,
}

/// A variant a build compiles in (base, an applied winner, or one a search selected).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledIn {
    /// The tuned function.
    pub function: String,
    /// `base` or the point's label.
    pub label: String,
    /// Its values as its `TUNED` holds them ([`gputune_grammar::VALUE_SEPARATOR`] between).
    pub values: String,
    /// Each parameter's declared name, `const` name and value as a define writes it.
    pub params: Vec<(String, String, String)>,
}

impl Inputs {
    /// Reads the inputs from the variables cargo gives a build script.
    pub fn from_env() -> Result<Inputs, BuildError> {
        let var = |name: &'static str| {
            std::env::var(name).map_err(|_| BuildError::NotInBuildScript(name))
        };
        Ok(Inputs {
            package_dir: PathBuf::from(var("CARGO_MANIFEST_DIR")?),
            package: var("CARGO_PKG_NAME")?,
            selection: std::env::var(selection::VARIANTS_ENV).unwrap_or_default(),
        })
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> BuildError + '_ {
    move |source| BuildError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Scans, enumerates and generates, without touching `OUT_DIR` or printing.
pub fn generate_from(inputs: &Inputs) -> Result<Generated, BuildError> {
    let mut directives = vec![
        format!("rerun-if-env-changed={}", selection::VARIANTS_ENV),
        format!("rerun-if-env-changed={}", gputune_toml::STAMP_ENV),
    ];
    let mut warnings = Vec::new();

    let src = inputs.package_dir.join("src");
    directives.push(format!("rerun-if-changed={}", src.display()));
    let mut functions: Vec<Found> = Vec::new();
    let files = if src.is_dir() {
        scan::rust_files(&src).map_err(io(&src))?
    } else {
        Vec::new()
    };
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(io(&path))?;
        let rel = path
            .strip_prefix(&inputs.package_dir)
            .unwrap_or(&path)
            .display()
            .to_string();
        let (found, skipped) = scan::scan_source(&rel, &text);
        warnings.extend(
            skipped
                .into_iter()
                .map(|s| format!("{}: {}", s.file, s.message)),
        );
        for f in found {
            if let Some(first) = functions.iter().find(|g| g.name == f.name) {
                return Err(BuildError::Duplicate {
                    name: f.name.clone(),
                    first: first.file.clone(),
                    second: f.file,
                });
            }
            functions.push(f);
        }
    }

    // Watch gputune.toml only while it exists: cargo reruns a build script on every build
    // while a watched file is missing. `cargo gputune apply` touches build.rs when it
    // creates the file, so its first appearance is seen too.
    let toml_path = inputs.package_dir.join(gputune_toml::FILE_NAME);
    let toml = if toml_path.is_file() {
        directives.push(format!("rerun-if-changed={}", toml_path.display()));
        let text = std::fs::read_to_string(&toml_path).map_err(io(&toml_path))?;
        GputuneToml::parse(&text)?
    } else {
        GputuneToml::default()
    };
    for name in toml.functions.keys() {
        if !functions.iter().any(|f| &f.name == name) {
            warnings.push(format!(
                "gputune.toml: `{name}` is not a #[tune] function of this crate; its entries are unused"
            ));
        }
    }

    let selection_text = match inputs.selection.trim().strip_prefix('@') {
        Some(file) => {
            let path = inputs.package_dir.join(file);
            directives.push(format!("rerun-if-changed={}", path.display()));
            std::fs::read_to_string(&path).map_err(io(&path))?
        }
        None => inputs.selection.clone(),
    };
    let selectors = selection::parse(&selection_text).map_err(BuildError::Selection)?;
    let selected = selection::resolve(&selectors, &inputs.package, &functions)
        .map_err(BuildError::Selection)?;

    let mut all_labels = Vec::new();
    let mut variants = Vec::new();
    let mut out_files = Vec::new();
    let mut manifest_functions = Vec::new();
    for f in &functions {
        let space = f.spec.space();
        all_labels.extend(space.iter().map(|p| format!("{}.{}", f.name, p.label())));
        let applied = toml.entries(&f.name, &f.spec)?;
        let chosen = selected.get(&f.name).map(Vec::as_slice).unwrap_or_default();
        let mut dispatch = Dispatch::new(f, &applied, chosen);
        let source = codegen::source(f, &mut dispatch);
        warnings.append(&mut dispatch.warnings);
        for arm in dispatch.arms.iter().filter_map(|a| a.cfg.as_ref()) {
            directives.push(format!("rustc-cfg=gputune_variant={arm:?}"));
        }
        out_files.push((format!("gputune/{}.rs", f.name), source));
        for arm in &dispatch.arms {
            let params: Vec<(String, String, String)> = f
                .spec
                .params
                .iter()
                .filter_map(|p| {
                    let v = arm.point.get(&p.name)?;
                    Some((p.name.clone(), p.const_name(), v.define_text()))
                })
                .collect();
            variants.push(CompiledIn {
                function: f.name.clone(),
                label: arm.label.clone(),
                values: params
                    .iter()
                    .map(|(_, _, v)| v.as_str())
                    .collect::<Vec<_>>()
                    .join(gputune_grammar::VALUE_SEPARATOR),
                params,
            });
        }
        manifest_functions.push(Function {
            name: f.name.clone(),
            file: f.file.clone(),
            attribute: f.attribute.clone(),
            params: f
                .spec
                .params
                .iter()
                .enumerate()
                .map(|(i, p)| Param {
                    name: p.name.clone(),
                    const_name: p.const_name(),
                    rust_type: f.spec.const_type(i).rust().to_string(),
                    form: format!("{:?}", p.form).to_lowercase(),
                    values: p.values.iter().map(json_value).collect(),
                })
                .collect(),
            base: f
                .spec
                .params
                .iter()
                .zip(&f.spec.base)
                .map(|(p, v)| (p.name.clone(), json_value(v)))
                .collect(),
            space_size: space.len(),
            labels: space.iter().map(|p| p.label()).collect(),
            type_generics: f.type_generics.clone(),
            const_generics: f.const_generics.clone(),
            compiled: dispatch.arms.iter().map(|a| a.label.clone()).collect(),
            applied: dispatch
                .policy
                .iter()
                .map(|e| Applied {
                    workload: e.workload.clone(),
                    arch: e.device.clone(),
                    model: e.kind == gputune_toml::KeyKind::Model,
                    sizes: e
                        .sizes
                        .as_ref()
                        .map(|axes| axes.iter().map(|&(first, last)| [first, last]).collect()),
                    label: dispatch.arms[e.arm].label.clone(),
                })
                .collect(),
            size_axis: f.spec.size().map(|s| s.axis.clone()),
        });
    }
    let values: Vec<String> = all_labels.iter().map(|l| format!("{l:?}")).collect();
    directives.push(format!(
        "rustc-check-cfg=cfg(gputune_variant, values({}))",
        values.join(", ")
    ));

    let manifest = Manifest {
        version: MANIFEST_VERSION,
        package: inputs.package.clone(),
        selection: inputs.selection.clone(),
        functions: manifest_functions,
    };
    let text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
    out_files.push(("gputune/manifest.json".to_string(), text));
    Ok(Generated {
        manifest,
        files: out_files,
        directives,
        warnings,
        variants,
    })
}

fn json_value(v: &gputune_grammar::Value) -> serde_json::Value {
    use gputune_grammar::Value;
    match v {
        Value::Int(i) => serde_json::Value::from(*i),
        Value::Bool(b) => serde_json::Value::from(*b),
        Value::Ident(s) | Value::Str(s) => serde_json::Value::from(s.as_str()),
    }
}

/// Generates from the build script's environment, writes the files under `OUT_DIR` and
/// prints the directives and warnings for cargo.
pub fn generate() -> Result<Manifest, BuildError> {
    let generated = generate_from(&Inputs::from_env()?)?;
    emit(&generated, &out_dir()?)?;
    Ok(generated.manifest)
}

/// `OUT_DIR`.
fn out_dir() -> Result<PathBuf, BuildError> {
    std::env::var_os("OUT_DIR")
        .map(PathBuf::from)
        .ok_or(BuildError::NotInBuildScript("OUT_DIR"))
}

/// Writes `generated`'s files under `out_dir` and prints its directives and warnings.
fn emit(generated: &Generated, out_dir: &Path) -> Result<(), BuildError> {
    for (rel, text) in &generated.files {
        let path = out_dir.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        // Rewrite only what changed, so unchanged functions keep their timestamps.
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text).map_err(io(&path))?;
        }
    }
    for d in &generated.directives {
        println!("cargo::{d}");
    }
    for w in &generated.warnings {
        println!("cargo::warning={w}");
    }
    Ok(())
}

/// [`generate`] for a `build.rs` `main`: on error, prints it and exits with status 1.
pub fn main() {
    if let Err(e) = generate() {
        eprintln!("error: gputune: {e}");
        println!("cargo::error=gputune: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests;
