//! C++ launchers in one static library: each variant's object with every symbol it defines
//! for others renamed to one of its own (`scale_launch__gputune_<key>`: the kernels' host
//! stubs and inline functions have the same C++ names in every variant), archived together
//! and linked with the CUDA runtime; the table `gputune_macros::launchers!` reads.

use std::path::Path;
use std::process::Command;

use super::builder::CudaFile;
use super::images::{lit, pairs, Job, Outcome};
use super::nvcc::Nvcc;
use super::{io, BuildError};

/// A defined global symbol of an object file: its name and `nm`'s type letter.
type Symbol = (String, char);

/// The defined global symbols of `object` (`nm --defined-only --extern-only -P`).
fn defined(object: &Path) -> Result<Vec<Symbol>, BuildError> {
    symbols(object, &["--defined-only", "--extern-only", "-P"])
}

/// The symbols `nm` lists of `object` with `flags`.
fn symbols(object: &Path, flags: &[&str]) -> Result<Vec<Symbol>, BuildError> {
    let out = tool(Command::new(binutil("NM", "nm")).args(flags).arg(object))?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let name = parts.next()?;
            let kind = parts.next()?.chars().next()?;
            Some((name.to_string(), kind))
        })
        .collect())
}

/// `$NAME` where set (cross toolchains), else the tool's usual name.
fn binutil(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// Runs a binutils command; its stdout, or [`BuildError::Tool`] with what it said.
fn tool(command: &mut Command) -> Result<String, BuildError> {
    let name = command.get_program().to_string_lossy().into_owned();
    let out = command.output().map_err(|e| BuildError::Tool {
        tool: name.clone(),
        message: format!("did not start ({e}); it comes with binutils"),
    })?;
    if !out.status.success() {
        return Err(BuildError::Tool {
            tool: name,
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The launchers among an object's symbols: those `file` names, else every strong text
/// symbol with C linkage that is not the compiler's own (`__cuda…`).
fn launchers_of(file: &CudaFile, symbols: &[Symbol]) -> Vec<String> {
    if !file.launcher_names.is_empty() {
        return file.launcher_names.clone();
    }
    symbols
        .iter()
        .filter(|(name, kind)| *kind == 'T' && !name.starts_with("_Z") && !name.starts_with("__"))
        .map(|(name, _)| name.clone())
        .collect()
}

/// The symbol a variant's launcher `name` is renamed to.
pub fn variant_symbol(name: &str, key: &str) -> String {
    format!("{name}__gputune_{}", &key[..key.len().min(16)])
}

/// Renames and archives the objects of `file`'s jobs into one static library under `out`;
/// returns the table file (path relative to `out`, Rust text) and the link directives.
pub fn library(
    file: &CudaFile,
    package: &str,
    jobs: &[Job],
    made: &[Outcome],
    out: &Path,
) -> Result<(String, String, Vec<String>), BuildError> {
    let table = gputune_grammar::cuda_table_file("launchers", &file.path);
    let stem: String = format!("gputune_{package}_{}", file.path)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let dir = out.join("gputune").join("launchers").join(&stem);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;

    let mut objects: Vec<(std::path::PathBuf, Vec<String>)> = Vec::new();
    let mut externs: Vec<(String, String)> = Vec::new(); // (rust name, link name)
    let mut items = Vec::new();
    for (job, outcome) in jobs.iter().zip(made) {
        let (error, symbols) = match &outcome.made {
            Err(e) => (e.clone(), Vec::new()),
            Ok(m) => {
                let object = dir.join(format!("{}.o", outcome.key));
                // Jobs of one key share one object: renamed once, its launchers kept.
                let launchers = match objects.iter().find(|(o, _)| *o == object) {
                    Some((_, names)) => names.clone(),
                    None => {
                        let raw = dir.join(format!("{}.raw.o", outcome.key));
                        std::fs::write(&raw, &m.bytes).map_err(io(&raw))?;
                        let names = rename_launchers(file, job, &raw, &object, &outcome.key)?;
                        objects.push((object, names.clone()));
                        names
                    }
                };
                let mut symbols = Vec::new();
                for name in launchers {
                    let link = variant_symbol(&name, &outcome.key);
                    let rust = match externs.iter().position(|(_, l)| *l == link) {
                        Some(i) => externs[i].0.clone(),
                        None => {
                            let rust = format!("__gputune_launcher_{}", externs.len());
                            externs.push((rust.clone(), link));
                            rust
                        }
                    };
                    symbols.push(format!(
                        "({}, {rust} as unsafe extern \"C\" fn())",
                        lit(&name)
                    ));
                }
                (String::new(), symbols)
            }
        };
        items.push(format!(
            "::gputune_runtime::kernel::LauncherImage {{ function: {}, values: {}, extra: {}, \
             error: {}, symbols: &[{}] }}",
            lit(&job.variant.function),
            lit(&job.variant.values),
            pairs(&job.extra),
            lit(&error),
            symbols.join(", ")
        ));
    }

    let mut directives = Vec::new();
    if !objects.is_empty() {
        let archive = dir.join(format!("lib{stem}.a"));
        let _ = std::fs::remove_file(&archive);
        tool(
            Command::new(binutil("AR", "ar"))
                .arg("crs")
                .arg(&archive)
                .args(objects.iter().map(|(o, _)| o)),
        )?;
        directives.push(format!("rustc-link-search=native={}", dir.display()));
        directives.push(format!("rustc-link-lib=static={stem}"));
    }
    let declarations: Vec<String> = externs
        .iter()
        .map(|(rust, link)| format!("        #[link_name = {}]\n        fn {rust}();", lit(link)))
        .collect();
    let text = format!(
        "{{\n    #[allow(dead_code)]\n    unsafe extern \"C\" {{\n{}\n    }}\n    &[\n        {}\n    ]\n}}\n",
        declarations.join("\n"),
        items.join(",\n        ")
    );
    Ok((table, text, directives))
}

/// Writes `raw` with every symbol it defines renamed for the variant, to `object`, and returns
/// its launchers' names; fails naming a launcher the object lacks.
fn rename_launchers(
    file: &CudaFile,
    job: &Job,
    raw: &Path,
    object: &Path,
    key: &str,
) -> Result<Vec<String>, BuildError> {
    let symbols = defined(raw)?;
    let launchers = launchers_of(file, &symbols);
    let variant = || {
        if job.variant.function.is_empty() {
            "the untuned build".to_string()
        } else {
            format!("{}.{}", job.variant.function, job.variant.label)
        }
    };
    let c_names = || {
        let names: Vec<&str> = symbols
            .iter()
            .filter(|(n, k)| *k == 'T' && !n.starts_with("_Z") && !n.starts_with("__"))
            .map(|(n, _)| n.as_str())
            .collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    for name in &launchers {
        if !symbols.iter().any(|(n, k)| n == name && *k == 'T') {
            return Err(BuildError::MissingLauncher {
                file: file.path.clone(),
                symbol: name.clone(),
                variant: variant(),
                found: c_names(),
            });
        }
    }
    // Every symbol the object defines gets the variant's suffix, weak and local ones too: an
    // inline function or a template that reads a tuning macro has the same C++ name in every
    // variant and another body, and the linker keeps one COMDAT group of a name for all of
    // them. A group is named by a symbol (`_ZN4dim3C5Ejjj`, local), so renaming every defined
    // symbol renames every group: a group left shared would be dropped from all objects but
    // one, and the others' calls into it would point nowhere.
    let mut all = self::symbols(raw, &["--defined-only", "-P"])?;
    all.sort();
    all.dedup_by(|a, b| a.0 == b.0);
    let renames: String = all
        .iter()
        .map(|(name, _)| format!("{name} {}\n", variant_symbol(name, key)))
        .collect();
    let map = object.with_extension("syms");
    std::fs::write(&map, renames).map_err(io(&map))?;
    tool(
        Command::new(binutil("OBJCOPY", "objcopy"))
            .arg(format!("--redefine-syms={}", map.display()))
            .arg(raw)
            .arg(object),
    )?;
    let renamed = defined(object)?;
    for name in &launchers {
        let want = variant_symbol(name, key);
        if !renamed.iter().any(|(n, _)| *n == want) {
            return Err(BuildError::MissingLauncher {
                file: file.path.clone(),
                symbol: want,
                variant: variant(),
                found: c_names(),
            });
        }
    }
    Ok(launchers)
}

/// What a binary that calls launchers links besides them: the toolkit's static CUDA runtime
/// (which loads the driver at run time, as cudarc does) and the C++ runtime.
pub fn runtime_links(nvcc: &Nvcc) -> Vec<String> {
    let mut out = Vec::new();
    match nvcc.lib_dir() {
        Some(dir) => {
            out.push(format!("rustc-link-search=native={}", dir.display()));
            out.push("rustc-link-lib=static=cudart_static".to_string());
        }
        None => out.push(format!(
            "warning=no libcudart_static.a under {}: launchers will not link (install the \
             nvidia-cuda-runtime wheel beside nvcc)",
            nvcc.root.display()
        )),
    }
    for lib in ["stdc++", "dl", "rt", "pthread"] {
        out.push(format!("rustc-link-lib=dylib={lib}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launchers_are_the_c_symbols_unless_named() {
        let symbols: Vec<Symbol> = vec![
            ("_Z5scalePKfPffj".into(), 'T'),
            ("scale_launch".into(), 'T'),
            ("__cudaRegisterLinkedBinary".into(), 'T'),
            ("DW.ref.__gxx_personality_v0".into(), 'V'),
            ("table".into(), 'D'),
        ];
        assert_eq!(
            launchers_of(&CudaFile::new("src/l.cu"), &symbols),
            ["scale_launch"]
        );
        let named = CudaFile::new("src/l.cu").launcher_names(&["other"]);
        assert_eq!(launchers_of(&named, &symbols), ["other"]);
        assert_eq!(
            variant_symbol("scale_launch", "0123456789abcdef0123456789abcdef"),
            "scale_launch__gputune_0123456789abcdef"
        );
    }
}
