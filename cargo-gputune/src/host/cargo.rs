//! What cargo knows: discovery through `cargo metadata`, and builds of bench targets with a
//! `GPUTUNE_VARIANTS` selection, read back from cargo's JSON messages.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use cargo_metadata::{Message, Metadata, MetadataCommand, Package};
use gputune_protocol::hash::Fnv64;
use gputune_protocol::manifest::Manifest;

use crate::host::lock::{Busy, FileLock};
use crate::host::process::{self, Exit};
use crate::host::usage::Usage;

/// Cargo's conventions as the user gave them (`-p`, `--bench`, `--profile`, `--db`, …), built
/// by `commands` from the command line.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Path to Cargo.toml.
    pub manifest_path: Option<PathBuf>,
    /// Package(s) whose benches and results to use (default, as cargo: the package of the
    /// current directory or --manifest-path, else every workspace member that uses gputune).
    pub package: Vec<String>,
    /// Every workspace member, even when run inside one (as cargo's --workspace).
    pub workspace: bool,
    /// Bench target(s) to use (default: all of the selected packages).
    pub bench: Vec<String>,
    /// Build profile (default: release).
    pub profile: Option<String>,
    /// Build with the release profile (the default).
    pub release: bool,
    /// Features to activate, as cargo takes them.
    pub features: Option<String>,
    /// Target directory (default: CARGO_TARGET_DIR or cargo's).
    pub target_dir: Option<PathBuf>,
    /// Require Cargo.lock to be up to date.
    pub locked: bool,
    /// Do not access the network.
    pub offline: bool,
    /// The store (default: TARGET_DIR/gputune/gputune.db).
    pub db: Option<PathBuf>,
}

impl Options {
    /// The profile builds use.
    pub fn profile(&self) -> String {
        self.profile.clone().unwrap_or_else(|| "release".into())
    }
}

/// A bench target of a package that links gputune-runtime.
#[derive(Debug, Clone)]
pub struct BenchTarget {
    /// The package name.
    pub package: String,
    /// The package's id, as cargo's messages name it.
    pub package_id: String,
    /// The bench target's name.
    pub bench: String,
}

/// The workspace as cargo describes it.
pub struct Workspace {
    /// `cargo metadata`'s answer.
    pub metadata: Metadata,
    /// The target directory (`--target-dir`, `CARGO_TARGET_DIR` or cargo's default).
    pub target_dir: PathBuf,
}

impl Workspace {
    /// The directory of the workspace member `package` (where its Cargo.toml is).
    pub fn package_dir(&self, package: &str) -> Option<PathBuf> {
        self.metadata
            .packages
            .iter()
            .find(|p| p.name.as_str() == package && p.source.is_none())
            .and_then(|p| p.manifest_path.parent())
            .map(|d| d.as_std_path().to_path_buf())
    }

    /// Runs `cargo metadata` with the cargo options.
    pub fn discover(args: &Options) -> Result<Workspace> {
        let mut cmd = MetadataCommand::new();
        if let Some(path) = &args.manifest_path {
            cmd.manifest_path(path);
        }
        let mut other = Vec::new();
        if args.locked {
            other.push("--locked".to_string());
        }
        if args.offline {
            other.push("--offline".to_string());
        }
        cmd.other_options(other);
        let metadata = cmd.exec().context("`cargo metadata` failed")?;
        let target_dir = args
            .target_dir
            .clone()
            .unwrap_or_else(|| metadata.target_directory.clone().into_std_path_buf());
        Ok(Workspace {
            metadata,
            target_dir,
        })
    }

    /// The directory gputune keeps its store, binaries and logs in.
    pub fn gputune_dir(&self) -> PathBuf {
        self.target_dir.join("gputune")
    }

    /// The work area of a search into the store at `store`: its event stream and batch
    /// binaries. One per store, so that searches into different stores (which may run at
    /// once: the store's lock only keeps out a second search of the same store) never read
    /// each other's files.
    pub fn work_dir(&self, store: &Path) -> PathBuf {
        let canonical = store
            .parent()
            .and_then(|d| d.canonicalize().ok())
            .zip(store.file_name())
            .map_or_else(|| store.to_path_buf(), |(d, f)| d.join(f));
        let mut h = Fnv64::new();
        h.write(canonical.as_os_str().as_encoded_bytes());
        self.gputune_dir()
            .join("work")
            .join(format!("{:016x}", h.finish()))
    }

    /// The packages selected as cargo selects them: `-p` (each must be a member), else with
    /// `--workspace` every member (`None`), else the package whose manifest cargo was pointed
    /// at (the current directory's, or `--manifest-path`), else — at a virtual workspace's
    /// root — every member.
    pub fn selected_packages(&self, args: &Options) -> Result<Option<Vec<String>>> {
        let members: Vec<&Package> = self.metadata.workspace_packages();
        for p in &args.package {
            if !members.iter().any(|m| m.name.as_str() == p) {
                let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
                return Err(anyhow::Error::new(Usage(format!(
                    "package `{p}` is not in the workspace; members: {}",
                    names.join(", ")
                ))));
            }
        }
        if !args.package.is_empty() {
            return Ok(Some(args.package.clone()));
        }
        if args.workspace {
            return Ok(None);
        }
        let root = self.metadata.resolve.as_ref().and_then(|r| r.root.as_ref());
        Ok(root
            .and_then(|id| members.iter().find(|m| &m.id == id))
            .map(|p| vec![p.name.to_string()]))
    }

    /// The bench targets that the selected packages (see [`Workspace::selected_packages`])
    /// and `--bench` select among packages that depend on gputune-runtime.
    pub fn bench_targets(&self, args: &Options) -> Result<Vec<BenchTarget>> {
        let members: Vec<&Package> = self.metadata.workspace_packages();
        let selected = self.selected_packages(args)?;
        let mut out = Vec::new();
        for pkg in members {
            if selected
                .as_ref()
                .is_some_and(|s| !s.iter().any(|p| p == pkg.name.as_str()))
            {
                continue;
            }
            if !pkg.dependencies.iter().any(|d| d.name == "gputune-runtime") {
                continue;
            }
            for t in &pkg.targets {
                if !t.kind.iter().any(|k| k.to_string() == "bench") {
                    continue;
                }
                let named = args.bench.iter().any(|b| b == &t.name);
                if !args.bench.is_empty() && !named {
                    continue;
                }
                // cargo does not build a target whose required features are off (`cargo
                // bench` skips it quietly): skip it too, unless it was asked for by name.
                let enabled =
                    enabled_features(pkg.name.as_str(), &pkg.features, args.features.as_deref());
                let missing: Vec<&str> = t
                    .required_features
                    .iter()
                    .map(String::as_str)
                    // `dep/feature` requirements are cargo's to judge.
                    .filter(|f| !f.contains('/') && !enabled.contains(*f))
                    .collect();
                if !missing.is_empty() {
                    if named {
                        return Err(anyhow::Error::new(Usage(format!(
                            "bench target `{}` of {} needs the feature(s) {}: add `--features {}`",
                            t.name,
                            pkg.name,
                            missing.join(", "),
                            missing.join(",")
                        ))));
                    }
                    continue;
                }
                out.push(BenchTarget {
                    package: pkg.name.to_string(),
                    package_id: pkg.id.repr.clone(),
                    bench: t.name.clone(),
                });
            }
        }
        if out.is_empty() {
            return Err(anyhow::Error::new(Usage(format!(
                "no bench targets found{}{}: a bench is a `[[bench]]` with `harness = false` in a \
                 package that depends on gputune-runtime",
                match &selected {
                    None => String::new(),
                    Some(s) => format!(" in {}", s.join(", ")),
                },
                if args.bench.is_empty() {
                    String::new()
                } else {
                    format!(" named {}", args.bench.join(", "))
                },
            ))));
        }
        Ok(out)
    }
}

/// The features of package `package` (whose `[features]` table is `table`) that a build
/// with `--features requested` turns on: `default` (cargo-gputune has no
/// `--no-default-features`), the requested ones (`feat` or `package/feat`, separated by
/// commas or spaces), and everything they turn on in turn.
pub(crate) fn enabled_features(
    package: &str,
    table: &std::collections::BTreeMap<String, Vec<String>>,
    requested: Option<&str>,
) -> std::collections::BTreeSet<String> {
    let mut pending: Vec<String> = requested
        .unwrap_or_default()
        .split([',', ' '])
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .filter_map(|f| match f.split_once('/') {
            Some((p, feature)) => (p == package).then(|| feature.to_string()),
            None => Some(f.to_string()),
        })
        .collect();
    if table.contains_key("default") {
        pending.push("default".into());
    }
    let mut enabled = std::collections::BTreeSet::new();
    while let Some(feature) = pending.pop() {
        if !enabled.insert(feature.clone()) {
            continue;
        }
        for entry in table.get(&feature).into_iter().flatten() {
            // `dep:x` turns on a dependency, not a feature; `x/f` turns on the optional
            // dependency `x` (its implicit feature) unless written `x?/f`.
            if entry.starts_with("dep:") {
                continue;
            }
            let name = match entry.split_once('/') {
                Some((dep, _)) if dep.ends_with('?') => continue,
                Some((dep, _)) => dep,
                None => entry.as_str(),
            };
            pending.push(name.to_string());
        }
    }
    enabled
}

/// A finished build.
#[derive(Debug)]
pub enum BuildOutcome {
    /// The bench executable (copied to `dest`) and the package's manifest.
    Built {
        /// Where the executable was copied.
        executable: PathBuf,
        /// The package's gputune manifest, if the package has the build helper.
        manifest: Option<Manifest>,
        /// Wall time.
        seconds: f64,
    },
    /// The compiler or build script failed; the last lines of its output.
    Failed {
        /// What cargo said.
        message: String,
        /// Wall time.
        seconds: f64,
    },
    /// Killed at the limit.
    TimedOut {
        /// Wall time.
        seconds: f64,
    },
}

/// The longest selection passed in `GPUTUNE_VARIANTS` itself; longer ones go through a file.
const SELECTION_IN_ENV: usize = 32 * 1024;

/// Builds `target` with `GPUTUNE_VARIANTS=selection` and copies its executable to `dest`.
pub fn build(
    ws: &Workspace,
    args: &Options,
    target: &BenchTarget,
    selection: &str,
    dest: &Path,
    limit: Option<Duration>,
) -> Result<BuildOutcome> {
    // Cargo serialises builds in one target directory, but between its exit and the copy
    // below another search's build could replace the executable (or its logs): the whole
    // build is one critical section among the searches sharing this target directory.
    let _lock = FileLock::acquire(&ws.gputune_dir().join("build.lock"), Busy::Wait)?
        .map_err(|_| anyhow::anyhow!("a blocking lock cannot be busy"))?;
    let logs = ws.gputune_dir().join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let stem = dest
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "build".into());
    let json_path = logs.join(format!("{stem}.json"));
    let log_path = logs.join(format!("{stem}.log"));
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(["build", "--message-format=json-render-diagnostics", "-p"])
        .arg(&target.package)
        .args(["--bench", &target.bench, "--profile", &args.profile()]);
    if let Some(path) = &args.manifest_path {
        cmd.arg("--manifest-path").arg(path);
    }
    if let Some(f) = &args.features {
        cmd.args(["--features", f]);
    }
    if args.locked {
        cmd.arg("--locked");
    }
    if args.offline {
        cmd.arg("--offline");
    }
    // Linux caps one environment variable at 128 KiB (about 1 300 labels of a large space):
    // a longer selection goes through a file, which the build script reads as `@FILE`.
    let selection = if selection.len() > SELECTION_IN_ENV {
        let file = logs.join(format!("{stem}.variants"));
        std::fs::write(&file, selection.replace(',', "\n"))
            .with_context(|| format!("cannot write {}", file.display()))?;
        format!("@{}", file.display())
    } else {
        selection.to_string()
    };
    // The build script watches gputune.toml only while it exists; the stamp makes one
    // written by hand since the last build rebuild the production dispatch too.
    let toml = ws
        .package_dir(&target.package)
        .map(|d| d.join(gputune_protocol::gputune_toml::FILE_NAME))
        .and_then(|p| std::fs::read(p).ok());
    cmd.env("CARGO_TARGET_DIR", &ws.target_dir)
        .env("GPUTUNE_VARIANTS", &selection)
        .env(
            gputune_protocol::gputune_toml::STAMP_ENV,
            gputune_protocol::gputune_toml::stamp(toml.as_deref()),
        )
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&json_path)?)
        .stderr(std::fs::File::create(&log_path)?);
    let finished = process::run(&mut cmd, limit).context("cannot run cargo")?;
    let seconds = finished.seconds;
    match finished.exit {
        Exit::TimedOut => return Ok(BuildOutcome::TimedOut { seconds }),
        Exit::Code(0) => {}
        _ => {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let tail: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
            let tail = tail[tail.len().saturating_sub(12)..].join("\n");
            return Ok(BuildOutcome::Failed {
                message: tail,
                seconds,
            });
        }
    }
    let text = std::fs::read(&json_path)?;
    let mut executable = None;
    let mut out_dir = None;
    for message in Message::parse_stream(&text[..]).flatten() {
        match message {
            Message::CompilerArtifact(a)
                if a.target.name == target.bench && a.package_id.repr == target.package_id =>
            {
                executable = a.executable.map(|e| e.into_std_path_buf());
            }
            Message::BuildScriptExecuted(b) if b.package_id.repr == target.package_id => {
                out_dir = Some(b.out_dir.into_std_path_buf());
            }
            _ => {}
        }
    }
    let Some(executable) = executable else {
        bail!(
            "cargo built `{}` but named no executable for it",
            target.bench
        );
    };
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Copy, so the next build (another batch) cannot overwrite a binary still to be run.
    let tmp = dest.with_extension(format!("tmp{}", std::process::id()));
    std::fs::copy(&executable, &tmp)
        .with_context(|| format!("cannot copy {} to {}", executable.display(), tmp.display()))?;
    std::fs::rename(&tmp, dest)?;
    let manifest = match out_dir {
        Some(dir) => {
            let path = dir.join("gputune").join("manifest.json");
            match std::fs::read_to_string(&path) {
                Ok(text) => Some(
                    serde_json::from_str(&text)
                        .with_context(|| format!("{} is not a gputune manifest", path.display()))?,
                ),
                Err(_) => None,
            }
        }
        None => None,
    };
    Ok(BuildOutcome::Built {
        executable: dest.to_path_buf(),
        manifest,
        seconds,
    })
}

/// A revision key: the toolchain, the build options, and the contents of the package and of
/// every local package (path dependency), so editing a kernel starts a new search.
pub fn revision(ws: &Workspace, args: &Options, target: &BenchTarget) -> Result<String> {
    let mut h = Fnv64::new();
    let rustc = Command::new("rustc")
        .arg("-vV")
        .output()
        .context("cannot run rustc -vV")?;
    h.write(&rustc.stdout);
    h.write(args.profile().as_bytes());
    h.write(args.features.as_deref().unwrap_or("").as_bytes());
    let lock = ws.metadata.workspace_root.join("Cargo.lock");
    h.write(&std::fs::read(lock).unwrap_or_default());
    let mut dirs: Vec<PathBuf> = ws
        .metadata
        .packages
        .iter()
        .filter(|p| p.source.is_none())
        .filter_map(|p| {
            p.manifest_path
                .parent()
                .map(|d| d.as_std_path().to_path_buf())
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        hash_dir(&mut h, &dir, &ws.target_dir)?;
    }
    Ok(format!("{}-{:016x}", target.package, h.finish()))
}

fn hash_dir(h: &mut Fnv64, dir: &Path, skip: &Path) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if path == skip || name == "target" || name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            // Nested packages hash themselves; a directory with its own Cargo.toml is one.
            if !path.join("Cargo.toml").is_file() {
                hash_dir(h, &path, skip)?;
            }
        } else if path.is_file() {
            h.write(name.as_bytes());
            h.write(&std::fs::read(&path)?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn table(entries: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn requested_and_default_features_are_enabled_with_what_they_enable() {
        let t = table(&[
            ("default", &["fast"]),
            ("fast", &[]),
            (
                "cuda",
                &["dep:gputune-runtime", "gputune-runtime/cuda", "extra"],
            ),
            ("extra", &[]),
            ("weak", &["other?/x"]),
            ("other", &[]),
        ]);
        let on = enabled_features("pkg", &t, None);
        assert_eq!(on.iter().collect::<Vec<_>>(), ["default", "fast"]);
        let on = enabled_features("pkg", &t, Some("cuda"));
        assert!(on.contains("cuda") && on.contains("extra") && on.contains("fast"));
        assert!(on.contains("gputune-runtime"), "x/f turns on x: {on:?}");
        let on = enabled_features("pkg", &t, Some("pkg/weak other-pkg/cuda"));
        assert!(on.contains("weak") && !on.contains("other") && !on.contains("cuda"));
        let on = enabled_features("pkg", &BTreeMap::new(), Some("a, b"));
        assert_eq!(on.iter().collect::<Vec<_>>(), ["a", "b"]);
    }
}
