//! nvcc on the build host: found as the ecosystem finds it, run once per distinct
//! compilation, its outputs cached by content.
//!
//! Discovery follows the conventions of candle's `cudaforge` and of CMake: `NVCC` (the
//! binary), then `CUDA_HOME`, `CUDA_PATH`, `CUDA_ROOT` and `CUDA_TOOLKIT_ROOT_DIR` (a toolkit
//! root holding `bin/nvcc`), then `PATH`, then `/usr/local/cuda` and `/opt/cuda`. PyPI's wheels
//! unpacked into `ROOT` are a toolkit root at `ROOT/nvidia/cu13`; installed with pip, they are
//! found in python3's site-packages.
//!
//! A build host has no GPU, so the architectures come from the environment:
//! [`ARCHS_ENV`] (`90,80` or `sm_90`), else candle's `CUDA_COMPUTE_CAP`, else `sm_90`. Each
//! gets a cubin; the newest also gets PTX, which later GPUs JIT-compile.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use gputune_protocol::hash::Fnv128;

/// The architectures to compile for: `90`, `sm_90` or `90,80` (any separator of `,`, `;` or
/// spaces).
pub const ARCHS_ENV: &str = "GPUTUNE_CUDA_ARCHS";

/// candle's variable for the one architecture it builds for (`90`).
pub const COMPUTE_CAP_ENV: &str = "CUDA_COMPUTE_CAP";

/// The architecture built for when nothing says otherwise: the GPU machines' H100 and H200.
pub const DEFAULT_ARCH: u32 = 90;

/// The variables that name a toolkit root, in the order they are tried.
pub const ROOT_VARS: [&str; 4] = [
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_ROOT",
    "CUDA_TOOLKIT_ROOT_DIR",
];

/// Toolkit roots tried after `PATH`.
pub const DEFAULT_ROOTS: [&str; 2] = ["/usr/local/cuda", "/opt/cuda"];

/// How to get an nvcc without installing CUDA: the pinned PyPI wheels.
pub const INSTALL_HINT: &str = "install the CUDA toolkit, or without it the PyPI wheels: \
`python3 -m pip download --no-deps -d W nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 \
nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85`, unpack each \
into ROOT (`python3 -m zipfile -e W/X.whl ROOT`), `chmod +x ROOT/nvidia/cu13/bin/* \
ROOT/nvidia/cu13/nvvm/bin/*`, and set CUDA_HOME=ROOT/nvidia/cu13";

/// Why nvcc cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NvccError {
    /// No nvcc where the conventions look.
    #[error("nvcc was not found; searched {}; {INSTALL_HINT}", searched.join(", "))]
    NotFound {
        /// Each place looked at, with the variable that named it.
        searched: Vec<String>,
    },
    /// nvcc is there but does not run.
    #[error("{nvcc} does not run: {message}")]
    Broken {
        /// The binary.
        nvcc: String,
        /// What running it said.
        message: String,
    },
    /// The architecture list cannot be read.
    #[error("{var}={value:?}: expected compute capabilities such as `90`, `sm_90` or `90,80`")]
    Archs {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
}

/// An nvcc that runs, and its release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nvcc {
    /// The binary.
    pub path: PathBuf,
    /// Its version (`13.0.88`), part of every cache key and of each variant's record.
    pub version: String,
    /// The toolkit root it sits in (`bin/..`): where `lib/libcudart_static.a` is.
    pub root: PathBuf,
}

/// Where discovery looks, in order: `(what named it, the candidate binary)`.
pub fn candidates(var: impl Fn(&str) -> Option<OsString>) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    if let Some(nvcc) = var("NVCC").filter(|v| !v.is_empty()) {
        out.push(("NVCC".to_string(), PathBuf::from(nvcc)));
    }
    for name in ROOT_VARS {
        if let Some(root) = var(name).filter(|v| !v.is_empty()) {
            out.push((
                name.to_string(),
                PathBuf::from(root).join("bin").join("nvcc"),
            ));
        }
    }
    if let Some(path) = var("PATH") {
        for dir in std::env::split_paths(&path) {
            if !dir.as_os_str().is_empty() {
                out.push(("PATH".to_string(), dir.join("nvcc")));
            }
        }
    }
    for root in DEFAULT_ROOTS {
        out.push((
            "default".to_string(),
            Path::new(root).join("bin").join("nvcc"),
        ));
    }
    // A directory on PATH twice is looked at once.
    let mut seen = std::collections::HashSet::new();
    out.retain(|(_, p)| seen.insert(p.clone()));
    out
}

/// The first candidate that is a file, else [`NvccError::NotFound`] listing them all.
pub fn find_in(
    var: impl Fn(&str) -> Option<OsString>,
    is_file: impl Fn(&Path) -> bool,
) -> Result<PathBuf, NvccError> {
    let candidates = candidates(var);
    candidates
        .iter()
        .find(|(_, p)| is_file(p))
        .map(|(_, p)| p.clone())
        .ok_or_else(|| NvccError::NotFound {
            searched: candidates
                .iter()
                .map(|(by, p)| format!("{} ({by})", p.display()))
                .collect(),
        })
}

impl Nvcc {
    /// nvcc as the environment names it, checked to run; else the one `pip install
    /// nvidia-cuda-nvcc` put in Python's site-packages ([`pypi_nvcc`]).
    pub fn find() -> Result<Nvcc, NvccError> {
        match find_in(|v| std::env::var_os(v), Path::is_file) {
            Ok(path) => Nvcc::at(path),
            Err(NvccError::NotFound { mut searched }) => {
                let site = python_site_packages();
                match site.as_deref().map(pypi_nvcc) {
                    Some(path) if path.is_file() => Nvcc::at(path),
                    Some(path) => {
                        searched.push(format!("{} (python3's site-packages)", path.display()));
                        Err(NvccError::NotFound { searched })
                    }
                    None => Err(NvccError::NotFound { searched }),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// The nvcc at `path`, checked to run (`--version`).
    pub fn at(path: PathBuf) -> Result<Nvcc, NvccError> {
        let broken = |message: String| NvccError::Broken {
            nvcc: path.display().to_string(),
            message,
        };
        let out = Command::new(&path)
            .arg("--version")
            .output()
            .map_err(|e| broken(e.to_string()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(broken(String::from_utf8_lossy(&out.stderr).into_owned()));
        }
        let version =
            parse_version(&text).ok_or_else(|| broken(format!("no version in {text:?}")))?;
        let root = path
            .parent()
            .and_then(Path::parent)
            .map_or_else(PathBuf::new, Path::to_path_buf);
        Ok(Nvcc {
            path,
            version,
            root,
        })
    }

    /// Where the toolkit's static CUDA runtime is, for linking C++ launchers.
    pub fn lib_dir(&self) -> Option<PathBuf> {
        ["lib64", "lib", "targets/x86_64-linux/lib"]
            .iter()
            .map(|d| self.root.join(d))
            .find(|d| d.join("libcudart_static.a").is_file())
    }
}

/// Where `pip install nvidia-cuda-nvcc` puts nvcc under a site-packages directory.
pub fn pypi_nvcc(site_packages: &Path) -> PathBuf {
    site_packages
        .join("nvidia")
        .join("cu13")
        .join("bin")
        .join("nvcc")
}

/// python3's site-packages (`purelib`), where Python is installed.
fn python_site_packages() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then(|| PathBuf::from(text))
}

/// `13.0.88` from `nvcc --version`'s `Cuda compilation tools, release 13.0, V13.0.88`.
pub fn parse_version(text: &str) -> Option<String> {
    let release = text.lines().find(|l| l.contains("release"))?;
    let v = release.rsplit(", V").next()?.trim();
    (!v.is_empty() && v.chars().next()?.is_ascii_digit()).then(|| v.to_string())
}

/// The architectures to compile for, from [`ARCHS_ENV`], else [`COMPUTE_CAP_ENV`], else
/// [`DEFAULT_ARCH`]: sorted, without repeats.
pub fn archs(var: impl Fn(&str) -> Option<String>) -> Result<Vec<u32>, NvccError> {
    for name in [ARCHS_ENV, COMPUTE_CAP_ENV] {
        let Some(value) = var(name).filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        let bad = || NvccError::Archs {
            var: name,
            value: value.clone(),
        };
        let mut out = Vec::new();
        for item in value.split([',', ';', ' ']).filter(|s| !s.is_empty()) {
            let digits = item
                .trim_start_matches("sm_")
                .trim_start_matches("compute_");
            let arch: u32 = digits.parse().map_err(|_| bad())?;
            if !(30..=1300).contains(&arch) {
                return Err(bad());
            }
            out.push(arch);
        }
        if out.is_empty() {
            return Err(bad());
        }
        out.sort_unstable();
        out.dedup();
        return Ok(out);
    }
    Ok(vec![DEFAULT_ARCH])
}

/// nvcc's `-gencode` options for `archs`: a cubin for each, PTX for the newest.
pub fn gencode(archs: &[u32]) -> Vec<String> {
    let newest = archs.iter().max().copied();
    archs
        .iter()
        .flat_map(|a| {
            let code = if Some(*a) == newest {
                format!("[sm_{a},compute_{a}]")
            } else {
                format!("sm_{a}")
            };
            [
                "-gencode".to_string(),
                format!("arch=compute_{a},code={code}"),
            ]
        })
        .collect()
}

/// What the images of `archs` hold, as [`crate::kernel::NvccImage::archs`] lists them.
pub fn image_archs(archs: &[u32]) -> String {
    let newest = archs.iter().max();
    let mut out: Vec<String> = archs.iter().map(|a| format!("sm_{a}")).collect();
    if let Some(a) = newest {
        out.push(format!("compute_{a}"));
    }
    out.join(",")
}

/// What one nvcc run makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Device code only: a fatbin of cubins and PTX for the driver to load.
    Fatbin,
    /// Host and device code: an object file for a static library of C++ launchers.
    Object,
}

/// One compilation: a `.cu` file with defines and options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compilation {
    /// The source file.
    pub source: PathBuf,
    /// `-D` defines, in order.
    pub defines: Vec<(String, String)>,
    /// Further options (`-I` directories of the crate, `-O3`, `--use_fast_math`, …).
    pub options: Vec<String>,
    /// The architectures.
    pub archs: Vec<u32>,
    /// What it makes.
    pub output: Output,
}

impl Compilation {
    /// nvcc's arguments, output and kept intermediates aside.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec![match self.output {
            Output::Fatbin => "--fatbin".to_string(),
            Output::Object => "-c".to_string(),
        }];
        if self.output == Output::Object {
            args.extend(["-Xcompiler".to_string(), "-fPIC".to_string()]);
        }
        args.extend(gencode(&self.archs));
        args.extend(self.options.iter().cloned());
        args.extend(self.defines.iter().map(|(n, v)| format!("-D{n}={v}")));
        args
    }

    /// The cache key: nvcc's version, the arguments, the source's text and `headers` (the
    /// contents of every file the source may include, by path).
    pub fn key(&self, version: &str, source: &str, headers: &[(String, String)]) -> String {
        let mut h = Fnv128::new();
        h.field(b"gputune nvcc");
        h.field(version.as_bytes());
        let args = self.args();
        h.field(&(args.len() as u64).to_le_bytes());
        for a in &args {
            h.field(a.as_bytes());
        }
        h.field(source.as_bytes());
        h.field(&(headers.len() as u64).to_le_bytes());
        for (name, contents) in headers {
            h.field(name.as_bytes());
            h.field(contents.as_bytes());
        }
        format!("{:032x}", h.finish())
    }
}

/// What a compilation made: the bytes, and for a fatbin the kernels' entry symbols (read from
/// its PTX).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Made {
    /// The fatbin or object file.
    pub bytes: Vec<u8>,
    /// The `.entry` symbols of its PTX (mangled as the module holds them).
    pub entries: Vec<String>,
}

impl Nvcc {
    /// Runs `c` in the scratch directory `work` (created, then removed); `Err` holds nvcc's
    /// message when it rejects the source.
    pub fn compile(&self, c: &Compilation, work: &Path) -> Result<Made, String> {
        std::fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
        let out = work.join("out");
        let result = Command::new(&self.path)
            .args(c.args())
            .arg("--keep")
            .arg("--keep-dir")
            .arg(work)
            .arg("-o")
            .arg(&out)
            .arg(&c.source)
            .output();
        let made = match result {
            Err(e) => Err(format!("{} did not start: {e}", self.path.display())),
            Ok(o) if !o.status.success() => {
                let mut message = String::from_utf8_lossy(&o.stderr).trim().to_string();
                let stdout = String::from_utf8_lossy(&o.stdout);
                if !stdout.trim().is_empty() {
                    message = format!("{}\n{message}", stdout.trim());
                }
                Err(format!(
                    "nvcc {} rejected {} ({}): {message}",
                    self.version,
                    c.source.display(),
                    defines_text(&c.defines)
                ))
            }
            Ok(_) => std::fs::read(&out)
                .map(|bytes| Made {
                    bytes,
                    entries: ptx_entries_in(work),
                })
                .map_err(|e| format!("{}: {e}", out.display())),
        };
        let _ = std::fs::remove_dir_all(work);
        made
    }
}

fn defines_text(defines: &[(String, String)]) -> String {
    if defines.is_empty() {
        return "no defines".to_string();
    }
    defines
        .iter()
        .map(|(n, v)| format!("-D{n}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `.entry` names of every `.ptx` file nvcc kept in `dir`.
fn ptx_entries_in(dir: &Path) -> Vec<String> {
    let mut entries = Vec::new();
    let Ok(read) = std::fs::read_dir(dir) else {
        return entries;
    };
    for path in read.flatten().map(|e| e.path()) {
        if path.extension().is_some_and(|e| e == "ptx") {
            if let Ok(text) = std::fs::read_to_string(&path) {
                entries.extend(ptx_entries(&text));
            }
        }
    }
    entries.sort();
    entries.dedup();
    entries
}

pub use crate::cuda_text::ptx_entries;

/// The disk cache of nvcc's outputs: `$GPUTUNE_KERNEL_CACHE/nvcc` where that is set (`off`
/// disables it), else `$XDG_CACHE_HOME/gputune/nvcc`, else `~/.cache/gputune/nvcc`.
pub fn cache_dir(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(dir) = var("GPUTUNE_KERNEL_CACHE") {
        return (!dir.is_empty() && dir != "off").then(|| PathBuf::from(dir).join("nvcc"));
    }
    if let Some(xdg) = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return Some(xdg.join("gputune").join("nvcc"));
    }
    var("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".cache").join("gputune").join("nvcc"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    /// A fake toolkit tree: `root/bin/nvcc` as an empty file.
    fn fake_tree(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("gputune-nvcc-{}-{name}", std::process::id()));
        std::fs::create_dir_all(root.join("bin")).expect("temp dir");
        std::fs::write(root.join("bin").join("nvcc"), "").expect("fake nvcc");
        root
    }

    #[test]
    fn nvcc_is_found_as_the_ecosystem_finds_it_in_order() {
        let (home, path) = (fake_tree("home"), fake_tree("path"));
        let (home_s, path_bin) = (
            home.display().to_string(),
            path.join("bin").display().to_string(),
        );
        let explicit = path.join("bin").join("nvcc").display().to_string();
        // NVCC wins over everything; CUDA_HOME over PATH; PATH over the default roots.
        let found = find_in(
            env(&[("NVCC", &explicit), ("CUDA_HOME", &home_s)]),
            Path::is_file,
        );
        assert_eq!(found, Ok(path.join("bin").join("nvcc")));
        let found = find_in(
            env(&[("CUDA_HOME", &home_s), ("PATH", &path_bin)]),
            Path::is_file,
        );
        assert_eq!(found, Ok(home.join("bin").join("nvcc")));
        let found = find_in(
            env(&[("CUDA_PATH", "/nowhere"), ("PATH", &path_bin)]),
            Path::is_file,
        );
        assert_eq!(found, Ok(path.join("bin").join("nvcc")));
        // The PyPI layout is a toolkit root under nvidia/cu13.
        let pypi = std::env::temp_dir().join(format!("gputune-nvcc-{}-pypi", std::process::id()));
        let cu13 = pypi.join("nvidia").join("cu13");
        std::fs::create_dir_all(cu13.join("bin")).expect("temp dir");
        std::fs::write(cu13.join("bin").join("nvcc"), "").expect("fake nvcc");
        let found = find_in(
            env(&[("CUDA_HOME", &cu13.display().to_string())]),
            Path::is_file,
        );
        assert_eq!(found, Ok(cu13.join("bin").join("nvcc")));
        // As pip installs the wheel: nvidia/cu13 under site-packages.
        assert_eq!(pypi_nvcc(&pypi), cu13.join("bin").join("nvcc"));
        for dir in [home, path, pypi] {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    #[test]
    fn a_missing_nvcc_names_every_place_searched_and_how_to_install_it() {
        let e = find_in(
            env(&[("CUDA_HOME", "/no/cuda"), ("PATH", "/no/bin:/also/not")]),
            |_| false,
        )
        .expect_err("nothing is there");
        let text = e.to_string();
        for place in [
            "/no/cuda/bin/nvcc (CUDA_HOME)",
            "/no/bin/nvcc (PATH)",
            "/also/not/nvcc (PATH)",
            "/usr/local/cuda/bin/nvcc (default)",
            "nvidia-cuda-nvcc==13.0.88",
            "CUDA_HOME=ROOT/nvidia/cu13",
        ] {
            assert!(text.contains(place), "{place} in {text}");
        }
    }

    #[test]
    fn a_file_that_is_not_nvcc_is_refused_by_name() {
        let tree = fake_tree("broken");
        let e = Nvcc::at(tree.join("bin").join("nvcc")).expect_err("an empty file");
        assert!(matches!(&e, NvccError::Broken { nvcc, .. } if nvcc.ends_with("bin/nvcc")));
        let _ = std::fs::remove_dir_all(tree);
    }

    #[test]
    fn the_version_is_read_from_nvcc_s_banner() {
        let banner = "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA \
                      Corporation\nCuda compilation tools, release 13.0, V13.0.88\nBuild x";
        assert_eq!(parse_version(banner).as_deref(), Some("13.0.88"));
        assert_eq!(parse_version("no banner"), None);
    }

    #[test]
    fn architectures_come_from_gputune_then_candle_s_variable_then_sm_90() {
        let get = |pairs: &'static [(&'static str, &'static str)]| {
            archs(move |n| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| v.to_string())
            })
        };
        assert_eq!(get(&[]), Ok(vec![90]));
        assert_eq!(get(&[(COMPUTE_CAP_ENV, "80")]), Ok(vec![80]));
        assert_eq!(
            get(&[(ARCHS_ENV, "sm_90, 80;90"), (COMPUTE_CAP_ENV, "75")]),
            Ok(vec![80, 90])
        );
        assert!(matches!(
            get(&[(ARCHS_ENV, "hopper")]),
            Err(NvccError::Archs { var: ARCHS_ENV, .. })
        ));
        assert_eq!(
            gencode(&[80, 90]),
            [
                "-gencode",
                "arch=compute_80,code=sm_80",
                "-gencode",
                "arch=compute_90,code=[sm_90,compute_90]"
            ]
        );
        assert_eq!(image_archs(&[80, 90]), "sm_80,sm_90,compute_90");
    }

    #[test]
    fn each_distinct_compilation_has_its_own_key() {
        let c = |tpb: &str| Compilation {
            source: PathBuf::from("src/scale.cu"),
            defines: vec![("TPB".into(), tpb.into())],
            options: vec!["-O3".into()],
            archs: vec![90],
            output: Output::Fatbin,
        };
        let key = c("128").key("13.0.88", "src", &[]);
        assert_eq!(key, c("128").key("13.0.88", "src", &[]));
        assert_eq!(key.len(), 32);
        let mut object = c("128");
        object.output = Output::Object;
        let mut sm80 = c("128");
        sm80.archs = vec![80];
        for other in [
            c("256").key("13.0.88", "src", &[]),
            c("128").key("13.0.89", "src", &[]),
            c("128").key("13.0.88", "src ", &[]),
            c("128").key("13.0.88", "src", &[("h.cuh".into(), "x".into())]),
            object.key("13.0.88", "src", &[]),
            sm80.key("13.0.88", "src", &[]),
        ] {
            assert_ne!(other, key);
        }
    }

    #[test]
    fn kernel_entries_are_read_from_ptx() {
        let ptx = ".version 9.0\n.visible .entry _Z5scalePKfPffj(\n\t.param .u64 p\n)\n\
                   .entry local_one (\n.visible .func helper(\n";
        assert_eq!(ptx_entries(ptx), ["_Z5scalePKfPffj", "local_one"]);
    }

    #[test]
    fn the_cache_follows_the_kernel_cache_s_variables() {
        assert_eq!(
            cache_dir(env(&[("GPUTUNE_KERNEL_CACHE", "/c"), ("HOME", "/h")])),
            Some(PathBuf::from("/c/nvcc"))
        );
        assert_eq!(cache_dir(env(&[("GPUTUNE_KERNEL_CACHE", "off")])), None);
        assert_eq!(
            cache_dir(env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x/gputune/nvcc"))
        );
        assert_eq!(
            cache_dir(env(&[("HOME", "/h")])),
            Some(PathBuf::from("/h/.cache/gputune/nvcc"))
        );
    }
}
