//! Winners persisted between runs of a program: one small JSON file.
//!
//! An entry is keyed by device (a GPU's name and architecture, or `cpu`), tuner name and
//! problem-size key, and remembers the candidate list it was tuned over: a winner is reused
//! only for the same candidates, since a new candidate may beat it. Writes go to a temporary
//! file in the same directory, then a rename, so a reader never sees half a file; two
//! processes writing at the same moment can lose one's update (last rename wins), which
//! costs a retune, never a wrong result.
//!
//! The file (format version 1) looks like this:
//!
//! ```json
//! {
//!   "version": 1,
//!   "entries": [
//!     {
//!       "device": "NVIDIA H100 80GB HBM3 (sm_90)",
//!       "tuner": "jacobi",
//!       "key": 16777216,
//!       "candidates": [32, 64, 96],
//!       "winner": 64,
//!       "statistic": "median",
//!       "samples": 5,
//!       "statistics": [4.1e-5, 3.9e-5, 4.0e-5]
//!     }
//!   ]
//! }
//! ```

use std::ffi::OsString;
use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::scan::Statistic;

/// The environment variable naming the cache file used by
/// [`AutotunerBuilder::persist`](super::AutotunerBuilder::persist).
pub const CACHE_ENV: &str = "GPUTUNE_AUTOTUNE_CACHE";

/// The format version this code reads and writes.
const VERSION: u32 = 1;

/// One persisted winner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    /// What was timed ([`Timer::device`](super::Timer::device)).
    pub device: String,
    /// The tuner's name.
    pub tuner: String,
    /// The problem-size key (the bucket of the size).
    pub key: u64,
    /// The candidates tuned over, in order, as JSON.
    pub candidates: Vec<serde_json::Value>,
    /// The winner, as JSON.
    pub winner: serde_json::Value,
    /// How samples were reduced.
    pub statistic: Statistic,
    /// Samples per candidate.
    pub samples: usize,
    /// Each candidate's statistic in seconds, in candidate order (`null` where unknown).
    pub statistics: Vec<Option<f64>>,
}

#[derive(Serialize, Deserialize)]
struct Document {
    version: u32,
    entries: Vec<CacheEntry>,
}

/// Where winners are persisted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheFile {
    path: PathBuf,
}

impl CacheFile {
    /// The cache file at `path` (created on the first write).
    pub fn new(path: impl Into<PathBuf>) -> CacheFile {
        CacheFile { path: path.into() }
    }

    /// `$GPUTUNE_AUTOTUNE_CACHE` if set, else `gputune/autotune.json` in the user's cache
    /// directory (`$XDG_CACHE_HOME` or `~/.cache` on Linux, `~/Library/Caches` on macOS,
    /// `%LOCALAPPDATA%` on Windows).
    pub fn default_location() -> Result<CacheFile> {
        default_path(|name| std::env::var_os(name))
            .map(CacheFile::new)
            .ok_or(Error::NoCacheLocation)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry in the file; none when the file does not exist.
    pub fn load(&self) -> Result<Vec<CacheEntry>> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(Error::CacheIo {
                    action: "read",
                    path: self.path.clone(),
                    source,
                })
            }
        };
        let corrupt = |message: String| Error::CorruptCache {
            path: self.path.clone(),
            message,
        };
        let doc: Document = serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
        if doc.version != VERSION {
            return Err(corrupt(format!(
                "format version {}, but this gputune reads version {VERSION}",
                doc.version
            )));
        }
        Ok(doc.entries)
    }

    /// Adds `entry`, replacing the one with the same device, tuner and key, and rewrites the
    /// file atomically. Entries of other tuners, devices and keys are kept; a corrupt file is
    /// replaced.
    pub fn store(&self, entry: CacheEntry) -> Result<()> {
        let mut entries = match self.load() {
            Ok(entries) => entries,
            Err(Error::CorruptCache { .. }) => Vec::new(),
            Err(e) => return Err(e),
        };
        let same = |e: &CacheEntry| {
            e.device == entry.device && e.tuner == entry.tuner && e.key == entry.key
        };
        match entries.iter_mut().find(|e| same(e)) {
            Some(old) => *old = entry,
            None => entries.push(entry),
        }
        let doc = Document {
            version: VERSION,
            entries,
        };
        let mut text = serde_json::to_string_pretty(&doc).map_err(|e| Error::CacheIo {
            action: "serialise",
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        text.push('\n');
        write_atomically(&self.path, text.as_bytes())
    }
}

/// The default cache path from the environment `var`, or `None` when nothing says where.
fn default_path(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(path) = set(CACHE_ENV) {
        return Some(path);
    }
    let base = if cfg!(windows) {
        set("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        set("HOME").map(|home| home.join("Library").join("Caches"))
    } else {
        // The XDG spec says to ignore a relative XDG_CACHE_HOME.
        set("XDG_CACHE_HOME")
            .filter(|p| p.is_absolute())
            .or_else(|| set("HOME").map(|home| home.join(".cache")))
    };
    base.map(|dir| dir.join("gputune").join("autotune.json"))
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let io = |action, path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::CacheIo {
            action,
            path,
            source,
        }
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir).map_err(io("create the directory of", path))?;
    let name = path
        .file_name()
        .map_or_else(|| "autotune".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io("write", &tmp)(e));
    }
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io("replace", path)(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autotune::test_dir;

    fn entry(tuner: &str, key: u64, winner: u32) -> CacheEntry {
        CacheEntry {
            device: "sim".into(),
            tuner: tuner.into(),
            key,
            candidates: vec![32.into(), 64.into()],
            winner: winner.into(),
            statistic: Statistic::Median,
            samples: 5,
            statistics: vec![Some(2.0), None],
        }
    }

    #[test]
    fn a_missing_file_is_empty_and_entries_round_trip() {
        let dir = test_dir("cache-round-trip");
        let cache = CacheFile::new(dir.join("sub").join("autotune.json"));
        assert_eq!(cache.load().ok(), Some(Vec::new()));
        assert!(cache.store(entry("a", 1, 32)).is_ok());
        assert!(cache.store(entry("b", 1, 64)).is_ok());
        // Same device, tuner and key: replaced, not duplicated.
        assert!(cache.store(entry("a", 1, 64)).is_ok());
        let loaded = cache.load().unwrap_or_default();
        assert_eq!(loaded, vec![entry("a", 1, 64), entry("b", 1, 64)]);
        // No temporary files are left behind.
        let names: Vec<_> = fs::read_dir(dir.join("sub"))
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert_eq!(names, ["autotune.json"]);
    }

    #[test]
    fn a_corrupt_file_is_an_error_and_the_next_store_replaces_it() {
        let dir = test_dir("cache-corrupt");
        let path = dir.join("autotune.json");
        let cache = CacheFile::new(&path);
        for junk in ["{not json", "{\"version\": 99, \"entries\": []}", ""] {
            assert!(fs::write(&path, junk).is_ok());
            match cache.load() {
                Err(Error::CorruptCache { path: p, message }) => {
                    assert_eq!(p, path);
                    assert!(!message.is_empty());
                }
                other => panic!("expected CorruptCache for {junk:?}, got {other:?}"),
            }
        }
        assert!(cache.store(entry("a", 1, 32)).is_ok());
        assert_eq!(cache.load().ok(), Some(vec![entry("a", 1, 32)]));
    }

    #[test]
    fn an_unwritable_location_is_an_io_error() {
        let dir = test_dir("cache-unwritable");
        let file = dir.join("plain-file");
        assert!(fs::write(&file, "x").is_ok());
        // A path below a regular file cannot be created.
        let cache = CacheFile::new(file.join("autotune.json"));
        assert!(matches!(
            cache.store(entry("a", 1, 32)),
            Err(Error::CacheIo { .. })
        ));
    }

    #[test]
    fn the_default_path_follows_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert_eq!(
            default_path(env(&[(CACHE_ENV, "/x/c.json"), ("HOME", "/home/u")])),
            Some(PathBuf::from("/x/c.json"))
        );
        assert_eq!(default_path(env(&[])), None);
        if cfg!(all(unix, not(target_os = "macos"))) {
            assert_eq!(
                default_path(env(&[("HOME", "/home/u")])),
                Some(PathBuf::from("/home/u/.cache/gputune/autotune.json"))
            );
            assert_eq!(
                default_path(env(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/xdg")])),
                Some(PathBuf::from("/xdg/gputune/autotune.json"))
            );
            // Relative XDG_CACHE_HOME and empty variables are ignored.
            assert_eq!(
                default_path(env(&[
                    ("HOME", "/home/u"),
                    ("XDG_CACHE_HOME", "rel"),
                    (CACHE_ENV, "")
                ])),
                Some(PathBuf::from("/home/u/.cache/gputune/autotune.json"))
            );
        }
    }
}
