//! `cargo gputune import`: the community's tuning data into a store.
//!
//! Kernel Tuner cache files (every layout Kernel Tuner 1.x writes: with or without
//! `schema_version`, closed or left open by an interrupted run, plain or gzip) and the T4
//! results format of the FAIR benchmark hub are read into one model ([`Tuning`]), which
//! [`plan`] turns into the rows and spaces a search would have stored; T1 files give the
//! default configuration (base), T4 metadata files the device. Every file is read and checked
//! before anything is written, so a malformed one leaves the store as it was (or absent).
//! `docs/community-data.md` says how each field maps.

use std::io::Read;
use std::path::{Path, PathBuf};

use gputune_protocol::Status;
use serde::Deserialize;

mod kt_cache;
mod ordered;
mod plan;
mod require;
mod t1;
mod t4;
mod value;

pub use ordered::Ordered;
pub use plan::{plan, BaseChoice, Imported, Plan};
pub use t4::Invalidity;
pub use value::KtValue;

/// Kernel Tuner's names of a failed configuration, as its caches write them.
pub const KT_ERRORS: [&str; 4] = [
    "InvalidConfig",
    "CompilationFailedConfig",
    "RuntimeFailedConfig",
    "ErrorConfig",
];

/// A time at or above this is not a time: Kernel Tuner before 1.0 wrote 1e20 for a
/// configuration it could not launch, and its strategies use `sys.float_info.max`.
pub const HUGE_TIME_MS: f64 = 1e20;

/// What can go wrong reading a file to import; each names the file and, where it can, the
/// field.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not JSON (after gunzip, where it is gzip).
    #[error("{path} is not JSON{gz}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// `" (after gunzip)"` or empty.
        gz: &'static str,
        /// The parser's message, with line and column.
        source: serde_json::Error,
    },
    /// A field is missing or wrong.
    #[error("{path}: field `{field}`: {problem}")]
    Field {
        /// The file.
        path: PathBuf,
        /// Where in the file, as a path of keys (`cache["1,2"].time`).
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// JSON, but none of the formats.
    #[error(
        "{path} is not a file gputune imports: not a Kernel Tuner cache (`tune_params` and \
         `cache`), T4 results (`results`), T4 metadata (`metadata`) or T1 file \
         (`ConfigurationSpace`); its top-level fields are {fields}"
    )]
    Unknown {
        /// The file.
        path: PathBuf,
        /// Its top-level keys.
        fields: String,
    },
    /// The files do not go together, or `--base` names nothing.
    #[error("{0}")]
    Mismatch(String),
}

impl ImportError {
    pub(crate) fn field(
        path: &Path,
        field: impl Into<String>,
        problem: impl Into<String>,
    ) -> ImportError {
        ImportError::Field {
            path: path.to_path_buf(),
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// What became of one configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Measured: Kernel Tuner's `time` (ms).
    Ok(f64),
    /// Failed, with the store's status and what the file said.
    Failed(Status, String),
}

/// One configuration of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Its value of each parameter, in declaration order.
    pub values: Vec<KtValue>,
    /// Its time or failure.
    pub outcome: Outcome,
    /// The samples (`times`, ms).
    pub times_ms: Vec<f64>,
    /// `compile_time` (ms).
    pub compile_ms: Option<f64>,
    /// `benchmark_time` + `verification_time` (ms): what Kernel Tuner's simulation mode
    /// charges besides the compile time.
    pub run_ms: Option<f64>,
}

/// One file's tuning results in one model, whatever the format.
#[derive(Debug, Clone, PartialEq)]
pub struct Tuning {
    /// The file.
    pub path: PathBuf,
    /// `kt-cache` or `t4`, for the revision and the messages.
    pub format: &'static str,
    /// The kernel (`kernel_name`).
    pub kernel: String,
    /// The device (`device_name`).
    pub device: String,
    /// `problem_size` as JSON text, if the file says.
    pub problem_size: Option<String>,
    /// Parameter names and values, in declaration order.
    pub params: Vec<(String, Vec<KtValue>)>,
    /// The configurations, in file order, each once.
    pub configs: Vec<Config>,
    /// FNV-1a of the file's JSON text: a file imported again is the same revision.
    pub digest: u64,
}

/// A T1 file: the problem's parameters with their defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Defaults {
    /// The file.
    pub path: PathBuf,
    /// `(name, default)` in declaration order.
    pub values: Vec<(String, KtValue)>,
}

/// One file to import, read.
#[derive(Debug, Clone, PartialEq)]
pub enum File {
    /// Results: a Kernel Tuner cache or a T4 results file.
    Results(Tuning),
    /// A T1 problem description (its defaults).
    Defaults(Defaults),
    /// A T4 metadata file: the device name, if it says.
    Metadata(PathBuf, Option<String>),
}

/// The top-level keys of a JSON object, to tell the formats apart without reading twice what
/// does not matter.
#[derive(Deserialize)]
struct Probe {
    #[serde(flatten)]
    keys: std::collections::BTreeMap<String, serde::de::IgnoredAny>,
}

/// Reads one file: gzip or plain, then whichever format its top-level fields say.
pub fn read(path: &Path) -> Result<File, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let gz = bytes.starts_with(&[0x1f, 0x8b]);
    let text = if gz {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes.as_slice())
            .read_to_end(&mut out)
            .map_err(|source| ImportError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        out
    } else {
        bytes
    };
    let gz_note = if gz { " (after gunzip)" } else { "" };
    let text = kt_cache::closed(&text);
    let json_error = |source| ImportError::Json {
        path: path.to_path_buf(),
        gz: gz_note,
        source,
    };
    let probe: Probe = serde_json::from_slice(&text).map_err(json_error)?;
    let has = |k: &str| probe.keys.contains_key(k);
    if has("cache") && has("tune_params") {
        kt_cache::parse(path, &text).map(File::Results)
    } else if has("results") {
        t4::parse(path, &text).map(File::Results)
    } else if has("ConfigurationSpace") {
        t1::parse(path, &text).map(File::Defaults)
    } else if has("metadata") {
        t4::parse_metadata(path, &text).map(|d| File::Metadata(path.to_path_buf(), d))
    } else {
        Err(ImportError::Unknown {
            path: path.to_path_buf(),
            fields: if probe.keys.is_empty() {
                "none".into()
            } else {
                probe
                    .keys
                    .keys()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        })
    }
}

/// What a known field must hold, to name the field when a typed read fails.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// A string.
    Str,
    /// A number.
    Num,
    /// A list of numbers.
    Nums,
    /// A list of strings.
    Strs,
    /// An object.
    Obj,
    /// A list.
    List,
    /// Anything: the field is only required.
    Any,
}

impl Kind {
    fn admits(self, v: &serde_json::Value) -> bool {
        use serde_json::Value as J;
        match self {
            Kind::Str => v.is_string(),
            Kind::Num => v.is_number(),
            Kind::Nums => v.as_array().is_some_and(|a| a.iter().all(J::is_number)),
            Kind::Strs => v.as_array().is_some_and(|a| a.iter().all(J::is_string)),
            Kind::Obj => v.is_object(),
            Kind::List => v.is_array(),
            Kind::Any => true,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Str => "a string",
            Kind::Num => "a number",
            Kind::Nums => "a list of numbers",
            Kind::Strs => "a list of strings",
            Kind::Obj => "an object",
            Kind::List => "a list",
            Kind::Any => "a value",
        }
    }
}

/// The first of `fields` (name, kind, required) that `obj` lacks or holds wrongly, as an
/// error at `at` (`cache["1,2"]`): serde's own messages do not say which field a value of
/// the wrong type was in.
pub(crate) fn diagnose(
    path: &Path,
    obj: &serde_json::Value,
    at: &str,
    fields: &[(&str, Kind, bool)],
) -> Option<ImportError> {
    let join = |f: &str| {
        if at.is_empty() {
            f.to_string()
        } else {
            format!("{at}.{f}")
        }
    };
    let Some(map) = obj.as_object() else {
        return Some(ImportError::field(
            path,
            if at.is_empty() { "(top level)" } else { at },
            format!("{} is not an object", kind_of(obj)),
        ));
    };
    for &(name, kind, required) in fields {
        match map.get(name) {
            None if required => {
                return Some(ImportError::field(path, join(name), "missing"));
            }
            Some(v) if !kind.admits(v) => {
                return Some(ImportError::field(
                    path,
                    join(name),
                    format!("{} where {} belongs", kind_of(v), kind.name()),
                ));
            }
            _ => {}
        }
    }
    None
}

/// What kind of JSON value `v` is, for messages.
pub(crate) fn kind_of(v: &serde_json::Value) -> &'static str {
    use serde_json::Value as J;
    match v {
        J::Null => "null",
        J::Bool(_) => "a boolean",
        J::Number(_) => "a number",
        J::String(_) => "a string",
        J::Array(_) => "a list",
        J::Object(_) => "an object",
    }
}

/// The FNV-1a digest of `text`.
pub(crate) fn digest(text: &[u8]) -> u64 {
    let mut h = gputune_protocol::hash::Fnv64::new();
    h.write(text);
    h.finish()
}

/// The store's status of one of Kernel Tuner's failure names.
pub fn status_of_kt_error(name: &str) -> Option<Status> {
    Some(match name {
        "InvalidConfig" => Status::Invalid,
        "CompilationFailedConfig" => Status::BuildFailed,
        "RuntimeFailedConfig" | "ErrorConfig" => Status::LaunchFailed,
        _ => return None,
    })
}

/// The outcome of a numeric time: a huge one is the failure Kernel Tuner meant by it.
pub(crate) fn outcome_of_time(ms: f64) -> Outcome {
    if !ms.is_finite() || ms >= HUGE_TIME_MS {
        Outcome::Failed(
            Status::Invalid,
            format!("time {ms:e}: Kernel Tuner's mark of a configuration it could not run"),
        )
    } else {
        Outcome::Ok(ms)
    }
}

#[cfg(test)]
mod tests;
