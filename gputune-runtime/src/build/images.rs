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
    let paths = cache.map(|dir| {
        (
            dir.join(format!("{key}.bin")),
            dir.join(format!("{key}.entries")),
        )
    });
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
                    format!(
                        "::core::include_bytes!({})",
                        lit(&path.display().to_string())
                    ),
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
    use crate::build::nvcc::Output;

    use crate::skipped;

    /// A scratch directory of this test process.
    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("gputune-images-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).expect("scratch directory");
        dir
    }

    /// Jobs of `file` for variants `ipt` of a function `f`.
    fn jobs(dir: &Path, file: &CudaFile, ipts: &[&str], output: Output) -> Vec<Job> {
        let variants: Vec<CompiledIn> = ipts
            .iter()
            .map(|v| CompiledIn {
                function: "f".into(),
                label: format!("ipt_{v}"),
                values: v.to_string(),
                params: vec![("ipt".into(), "IPT".into(), v.to_string())],
            })
            .collect();
        file.jobs(&variants, (dir, &[]), &[90], output)
            .expect("jobs")
    }

    #[test]
    fn a_parameter_the_file_defines_itself_fails_the_build_naming_the_line() {
        // nvcc keeps the file's own `#define` over `-D` (a warning the build never shows):
        // every variant would be the same code.
        let dir = scratch("clash");
        std::fs::write(
            dir.join("src/k.cu"),
            "// items a thread\n#define IPT 4\n__global__ void k(int* x) { x[0] = IPT; }\n",
        )
        .expect("source");
        let file = CudaFile::new("src/k.cu").functions(&["f"]);
        let variants = [CompiledIn {
            function: "f".into(),
            label: "ipt_2".into(),
            values: "2".into(),
            params: vec![("ipt".into(), "IPT".into(), "2".into())],
        }];
        let e = file
            .jobs(&variants, (&dir, &[]), &[90], Output::Fatbin)
            .expect_err("a clash");
        let e = e.to_string();
        assert!(e.contains("src/k.cu") && e.contains("line 2"), "{e}");
        assert!(e.contains("#ifndef IPT"), "says how to guard it: {e}");
        // Guarded, the parameter's value wins: no clash.
        std::fs::write(
            dir.join("src/k.cu"),
            "#ifndef IPT\n#define IPT 4\n#endif\n__global__ void k(int* x) { x[0] = IPT; }\n",
        )
        .expect("source");
        assert_eq!(jobs(&dir, &file, &["2"], Output::Fatbin).len(), 1);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn without_nvcc_every_variant_carries_the_message_and_the_table_still_compiles() {
        let dir = scratch("missing");
        std::fs::write(dir.join("src/k.cu"), "").expect("source");
        let file = CudaFile::new("src/k.cu").functions(&["f"]);
        let jobs = jobs(&dir, &file, &["1", "2"], Output::Fatbin);
        let missing = Err("nvcc was not found; searched /x/bin/nvcc (CUDA_HOME)".to_string());
        let made = compile_all(&jobs, &missing, &[], None, &dir).expect("no I/O error");
        assert!(made.iter().all(|o| o.made.is_err()));
        let (rel, text) = kernel_table(&file, &jobs, &made, &[90], None, &dir).expect("table");
        assert_eq!(rel, "gputune/nvcc/src_k_cu.rs");
        assert_eq!(text.matches("image: &[]").count(), 2, "{text}");
        assert!(text.contains("nvcc was not found"), "{text}");
        assert!(text.contains("\"nvcc (missing)\""), "{text}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_variant_nvcc_rejects_carries_its_message_and_the_others_build() {
        let Ok(nvcc) = Nvcc::find() else {
            return skipped("needs nvcc (the CUDA toolkit or PyPI's wheels)");
        };
        let dir = scratch("rejects");
        std::fs::write(
            dir.join("src/k.cu"),
            "#if IPT == 3\n#error three items per thread are not supported\n#endif\n\
             namespace ns { template <typename T> __global__ void k(T* x) { x[0] = IPT; } }\n\
             template __global__ void ns::k<float>(float*);\n\
             extern \"C\" __global__ void plain(int* x) { x[0] = IPT; }\n",
        )
        .expect("source");
        let file = CudaFile::new("src/k.cu").functions(&["f"]);
        let jobs = jobs(&dir, &file, &["1", "3", "4"], Output::Fatbin);
        let made =
            compile_all(&jobs, &Ok(nvcc), &[], None, &dir.join("work")).expect("no I/O error");
        let e = made[1].made.as_ref().expect_err("IPT 3 is rejected");
        assert!(
            e.contains("three items per thread are not supported"),
            "{e}"
        );
        assert!(e.contains("-DIPT=3"), "names the variant's defines: {e}");
        for ok in [&made[0], &made[2]] {
            let m = ok.made.as_ref().expect("the others build");
            assert!(!m.bytes.is_empty());
            let names: Vec<String> = m.entries.iter().map(|s| cxx_name(s)).collect();
            assert!(names.contains(&"ns::k<float>".to_string()), "{names:?}");
            assert!(names.contains(&"plain".to_string()), "{names:?}");
        }
        assert_ne!(made[0].key, made[2].key, "one compilation per define set");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn compilations_are_cached_by_content() {
        let Ok(nvcc) = Nvcc::find() else {
            return skipped("needs nvcc (the CUDA toolkit or PyPI's wheels)");
        };
        let dir = scratch("cache");
        std::fs::write(
            dir.join("src/k.cu"),
            "extern \"C\" __global__ void k(int* x) { x[0] = IPT; }\n",
        )
        .expect("source");
        let file = CudaFile::new("src/k.cu").functions(&["f"]);
        let jobs = jobs(&dir, &file, &["1"], Output::Fatbin);
        let cache = dir.join("cache");
        let nvcc = Ok(nvcc);
        let first = compile_all(&jobs, &nvcc, &[], Some(&cache), &dir.join("w")).expect("io");
        assert!(cache.join(format!("{}.bin", first[0].key)).is_file());
        // A cached entry is what the next build uses: nvcc is not run again.
        std::fs::write(cache.join(format!("{}.bin", first[0].key)), b"cached").expect("write");
        let again = compile_all(&jobs, &nvcc, &[], Some(&cache), &dir.join("w")).expect("io");
        assert_eq!(
            again[0].made.as_ref().map(|m| m.bytes.clone()),
            Ok(b"cached".to_vec())
        );
        // A changed header of the crate is another compilation.
        let headers = [("src/h.cuh".to_string(), "#define X 1".to_string())];
        let other = compile_all(&jobs, &nvcc, &headers, Some(&cache), &dir.join("w")).expect("io");
        assert_ne!(other[0].key, first[0].key);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_launcher_missing_from_a_variant_s_object_fails_the_build_naming_it() {
        let Ok(nvcc) = Nvcc::find() else {
            return skipped("needs nvcc (the CUDA toolkit or PyPI's wheels)");
        };
        let dir = scratch("launchers");
        std::fs::write(
            dir.join("src/l.cu"),
            "__host__ __device__ inline int per_thread() { return IPT; }\n\
             __global__ void k(int* x) { x[0] = per_thread(); }\n\
             extern \"C\" int go(int* x, cudaStream_t s) { k<<<1, 1, 0, s>>>(x); \
             return (int)cudaGetLastError() + per_thread(); }\n",
        )
        .expect("source");
        let nvcc = Ok(nvcc);
        let named = CudaFile::new("src/l.cu")
            .functions(&["f"])
            .launcher_names(&["go", "absent"]);
        let jobs_named = jobs(&dir, &named, &["1"], Output::Object);
        let made = compile_all(&jobs_named, &nvcc, &[], None, &dir.join("w")).expect("io");
        let e = crate::build::launchers::library(&named, "p", &jobs_named, &made, &dir)
            .expect_err("`absent` is not defined");
        let text = e.to_string();
        assert!(
            text.contains("launcher `absent`") && text.contains("f.ipt_1"),
            "{text}"
        );
        assert!(text.contains("its extern \"C\" functions: go"), "{text}");
        // Found by itself, each variant's `go` is renamed, and the kernels' stubs made local.
        let file = CudaFile::new("src/l.cu").functions(&["f"]);
        let jobs = jobs(&dir, &file, &["1", "2"], Output::Object);
        let made = compile_all(&jobs, &nvcc, &[], None, &dir.join("w")).expect("io");
        let (rel, text, directives) =
            crate::build::launchers::library(&file, "p", &jobs, &made, &dir).expect("library");
        assert_eq!(rel, "gputune/launchers/src_l_cu.rs");
        for o in &made {
            let symbol = crate::build::launchers::variant_symbol("go", &o.key);
            assert!(
                text.contains(&format!("#[link_name = \"{symbol}\"]")),
                "{text}"
            );
        }
        assert!(directives
            .iter()
            .any(|d| d == "rustc-link-lib=static=gputune_p_src_l_cu"));
        // Nothing the variants define for others is shared: not even the inline function whose
        // body reads IPT (a weak symbol), which the linker would otherwise keep once for all.
        let archive = dir.join("gputune/launchers/gputune_p_src_l_cu/libgputune_p_src_l_cu.a");
        let nm = std::process::Command::new("nm")
            .args(["--defined-only", "--extern-only", "-P"])
            .arg(&archive)
            .output()
            .expect("nm runs");
        let listed = String::from_utf8_lossy(&nm.stdout);
        let names: Vec<&str> = listed
            .lines()
            .filter(|l| !l.is_empty() && !l.contains('['))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        let inline = names
            .iter()
            .filter(|n| n.starts_with("_Z10per_threadv__gputune_"));
        assert_eq!(inline.count(), 2, "one per variant: {listed}");
        assert!(names.iter().all(|n| n.contains("__gputune_")), "{listed}");
        // Nor a COMDAT group (dim3's constructors are one, named by a local symbol): the linker
        // keeps one group of a name, and calls from the other variants into it pointed nowhere.
        let groups = std::process::Command::new("readelf")
            .arg("-g")
            .arg(&archive)
            .output()
            .expect("readelf runs");
        let groups = String::from_utf8_lossy(&groups.stdout);
        let signatures: Vec<&str> = groups
            .lines()
            .filter(|l| l.contains("COMDAT group section"))
            .collect();
        assert!(!signatures.is_empty(), "{groups}");
        assert!(
            signatures.iter().all(|l| l.contains("__gputune_")),
            "{groups}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn kernel_names_are_read_back_from_their_symbols() {
        assert_eq!(cxx_name("scale"), "scale");
        assert_eq!(cxx_name("_Z5scalePKfPffj"), "scale");
        assert_eq!(cxx_name("_ZN2ns5scaleEPf"), "ns::scale");
        assert_eq!(cxx_name("_Z5scaleIfEvPKT_PS0_"), "scale<float>");
    }
}
