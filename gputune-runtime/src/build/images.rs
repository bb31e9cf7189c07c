//! Running a CUDA file's compilations (each distinct one once, in parallel, cached by
//! content), and the table of fatbins that `gputune_macros::nvcc_kernel!` embeds.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::builder::CudaFile;
use super::nvcc::{self, Compilation, Made, Nvcc};
use super::{io, BuildError, CompiledIn};

/// One compilation of a CUDA file: which variant and define set it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The variant (or the untuned compilation).
    pub variant: CompiledIn,
    /// The define set beyond tuning parameters, as the runtime is handed it.
    pub extra: Vec<(String, String)>,
    /// What nvcc is asked.
    pub compilation: Compilation,
}

/// What one job came to: its cache key, and what nvcc made or its message.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The compilation's key ([`Compilation::key`]); empty where nvcc is missing.
    pub key: String,
    /// The output, or why there is none.
    pub made: Result<Made, String>,
}

/// Compiles every job with `nvcc` (or records why it cannot), each distinct compilation once,
/// `NUM_JOBS` (else the host's cores) at a time, reading and filling the disk cache `cache`.
pub fn compile_all(
    jobs: &[Job],
    nvcc: &Result<Nvcc, String>,
    headers: &[(String, String)],
    cache: Option<&Path>,
    work: &Path,
) -> Result<Vec<Outcome>, BuildError> {
    let nvcc = match nvcc {
        Ok(n) => n,
        Err(message) => {
            return Ok(jobs
                .iter()
                .map(|_| Outcome {
                    key: String::new(),
                    made: Err(message.clone()),
                })
                .collect())
        }
    };
    let mut sources: Vec<(&Path, String)> = Vec::new();
    let mut keys = Vec::with_capacity(jobs.len());
    for job in jobs {
        let path = job.compilation.source.as_path();
        if !sources.iter().any(|(p, _)| *p == path) {
            let text = std::fs::read_to_string(path).map_err(io(path))?;
            sources.push((path, text));
        }
        let text = sources
            .iter()
            .find(|(p, _)| *p == path)
            .map_or("", |(_, t)| t.as_str());
        keys.push(job.compilation.key(&nvcc.version, text, headers));
    }
    // Each distinct key once, in the order first asked.
    let mut distinct: Vec<usize> = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        if !distinct.iter().any(|&j| keys[j] == *key) {
            distinct.push(i);
        }
    }
    let results: Mutex<Vec<Option<Result<Made, String>>>> = Mutex::new(vec![None; jobs.len()]);
    let next = AtomicUsize::new(0);
    let threads = std::env::var("NUM_JOBS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
        .clamp(1, distinct.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = distinct.get(n) else { break };
                let made = cached_or_compiled(nvcc, &jobs[i].compilation, &keys[i], cache, work);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(made);
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(keys
        .iter()
        .map(|key| {
            let first = distinct.iter().find(|&&j| keys[j] == *key).copied();
            let made = first
                .and_then(|j| results[j].clone())
                .unwrap_or_else(|| Err("not compiled".to_string()));
            Outcome {
                key: key.clone(),
                made,
            }
        })
        .collect())
}

/// The cache's entry of `key`, else nvcc's output (stored in the cache when it succeeds).
fn cached_or_compiled(
    nvcc: &Nvcc,
    compilation: &Compilation,
    key: &str,
    cache: Option<&Path>,
    work: &Path,
) -> Result<Made, String> {
    let paths = cache.map(|dir| (dir.join(format!("{key}.bin")), dir.join(format!("{key}.entries"))));
    if let Some((bin, entries)) = &paths {
        if let (Ok(bytes), Ok(list)) = (std::fs::read(bin), std::fs::read_to_string(entries)) {
            return Ok(Made {
                bytes,
                entries: list.lines().map(str::to_string).collect(),
            });
        }
    }
    let made = nvcc.compile(compilation, &work.join(key))?;
    if let (Some((bin, entries)), Some(dir)) = (&paths, cache) {
        // A cache that cannot be written only makes the next build compile again.
        let _ = std::fs::create_dir_all(dir).and_then(|()| {
            let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
            std::fs::write(&tmp, &made.bytes)?;
            std::fs::rename(&tmp, bin)?;
            std::fs::write(&tmp, made.entries.join("\n"))?;
            std::fs::rename(&tmp, entries)
        });
    }
    Ok(made)
}

/// A kernel's name as C++ writes it (`scale`, `ns::scale<float>`) from its symbol; an
/// `extern "C"` symbol is its own name.
pub fn cxx_name(symbol: &str) -> String {
    if !symbol.starts_with("_Z") {
        return symbol.to_string();
    }
    let options = cpp_demangle::DemangleOptions::new()
        .no_params()
        .no_return_type();
    cpp_demangle::Symbol::new(symbol)
        .ok()
        .and_then(|s| s.demangle(&options).ok())
        .unwrap_or_else(|| symbol.to_string())
}

/// Rust string literal of `s`.
pub fn lit(s: &str) -> String {
    format!("{s:?}")
}

/// `&[("NAME", "value"), …]`.
pub fn pairs(pairs: &[(String, String)]) -> String {
    let items: Vec<String> = pairs
        .iter()
        .map(|(n, v)| format!("({}, {})", lit(n), lit(v)))
        .collect();
    format!("&[{}]", items.join(", "))
}

/// Writes each fatbin under `out` and returns the table file (path relative to `out`, Rust
/// text) of `file`'s images.
pub fn kernel_table(
    file: &CudaFile,
    jobs: &[Job],
    made: &[Outcome],
    archs: &[u32],
    version: Option<&str>,
    out: &Path,
) -> Result<(String, String), BuildError> {
    let dir = out.join("gputune").join("nvcc");
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let mut items = Vec::new();
    for (job, outcome) in jobs.iter().zip(made) {
        let (image, error, entries) = match &outcome.made {
            Ok(m) => {
                let path = dir.join(format!("{}.fatbin", outcome.key));
                if std::fs::read(&path).ok().as_deref() != Some(m.bytes.as_slice()) {
                    std::fs::write(&path, &m.bytes).map_err(io(&path))?;
                }
                let entries: Vec<String> = m
                    .entries
                    .iter()
                    .map(|s| format!("({}, {})", lit(&cxx_name(s)), lit(s)))
                    .collect();
                (
                    format!("::core::include_bytes!({})", lit(&path.display().to_string())),
                    String::new(),
                    entries,
                )
            }
            Err(e) => ("&[]".to_string(), e.clone(), Vec::new()),
        };
        let options: Vec<String> = record_options(&job.compilation, version)
            .iter()
            .map(|o| lit(o))
            .collect();
        items.push(format!(
            "::gputune_runtime::kernel::NvccImage {{ function: {}, values: {}, extra: {}, \
             image: {image}, error: {}, archs: {}, entries: &[{}], options: &[{}] }}",
            lit(&job.variant.function),
            lit(&job.variant.values),
            pairs(&job.extra),
            lit(&error),
            lit(&nvcc::image_archs(archs)),
            entries.join(", "),
            options.join(", ")
        ));
    }
    let rel = gputune_grammar::cuda_table_file("nvcc", &file.path);
    Ok((rel, format!("&[\n    {}\n]\n", items.join(",\n    "))))
}

/// The options a variant's record names: the compiler, its version and its options, not the
/// crate's include directories or the defines (recorded as the variant itself).
fn record_options(c: &Compilation, version: Option<&str>) -> Vec<String> {
    let mut out = vec![format!("nvcc {}", version.unwrap_or("(missing)"))];
    out.extend(
        c.args()
            .into_iter()
            .filter(|a| !a.starts_with("-D") && !a.starts_with("-I")),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_are_read_back_from_their_symbols() {
        assert_eq!(cxx_name("scale"), "scale");
        assert_eq!(cxx_name("_Z5scalePKfPffj"), "scale");
        assert_eq!(cxx_name("_ZN2ns5scaleEPf"), "ns::scale");
        assert_eq!(cxx_name("_Z5scaleIfEvPKT_PS0_"), "scale<float>");
    }
}
