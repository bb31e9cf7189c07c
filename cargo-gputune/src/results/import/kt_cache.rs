//! Kernel Tuner's cache files.
//!
//! Kernel Tuner 1.x writes one JSON object: `device_name`, `kernel_name`, `problem_size`,
//! `tune_params_keys`, `tune_params`, `objective` (and, in the schema versions 1.0.0 to
//! 1.1.0 of its cache tools, `schema_version`), and `cache`: one entry per configuration,
//! keyed by its values joined with commas, holding the values, `time` (ms, or a failure's
//! name), `times`, `compile_time`, `verification_time`, `benchmark_time` and more. While it
//! tunes, the file is left open (no closing `}\n}`, maybe a trailing comma): Kernel Tuner
//! reads such a file as closed, and so does this.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use gputune_protocol::Status;
use serde::Deserialize;
use serde_json::Value as Json;

use super::{
    diagnose, digest, outcome_of_time, status_of_kt_error, Config, ImportError, Kind, KtValue,
    Ordered, Outcome, Tuning, KT_ERRORS,
};

#[derive(Deserialize)]
struct CacheFile {
    device_name: String,
    kernel_name: String,
    #[serde(default)]
    problem_size: Option<Json>,
    tune_params_keys: Vec<String>,
    tune_params: Ordered<Vec<Json>>,
    cache: Ordered<Json>,
}

const TOP_FIELDS: &[(&str, Kind, bool)] = &[
    ("device_name", Kind::Str, true),
    ("kernel_name", Kind::Str, true),
    ("tune_params_keys", Kind::Strs, true),
    ("tune_params", Kind::Obj, true),
    ("cache", Kind::Obj, true),
];

const ENTRY_FIELDS: &[(&str, Kind, bool)] = &[
    ("time", Kind::Any, true),
    ("times", Kind::Nums, false),
    ("compile_time", Kind::Num, false),
    ("verification_time", Kind::Num, false),
    ("benchmark_time", Kind::Num, false),
];

/// One configuration's entry: the fields Kernel Tuner always writes, and the rest (the
/// parameter values, observers' measurements such as `GFLOP/s`).
#[derive(Deserialize)]
struct Entry {
    time: Json,
    #[serde(default)]
    times: Option<Vec<f64>>,
    #[serde(default)]
    compile_time: Option<f64>,
    #[serde(default)]
    verification_time: Option<f64>,
    #[serde(default)]
    benchmark_time: Option<f64>,
    #[serde(flatten)]
    rest: HashMap<String, Json>,
}

/// The text as Kernel Tuner reads it: a cache left open by a run that was interrupted (no
/// closing brackets, maybe a trailing comma) is closed first, as its `read_cache` does.
pub(super) fn closed(text: &[u8]) -> Cow<'_, [u8]> {
    let trimmed = text.trim_ascii_end();
    let open = trimmed.len() > 3
        && !trimmed.ends_with(b"}\n}")
        && !trimmed.ends_with(b"}}}")
        && trimmed.starts_with(b"{")
        && serde_json::from_slice::<serde::de::IgnoredAny>(trimmed).is_err();
    if !open || !looks_like_cache(trimmed) {
        return Cow::Borrowed(text);
    }
    let body = trimmed.strip_suffix(b",").unwrap_or(trimmed);
    let mut out = body.to_vec();
    out.extend_from_slice(b"}\n}");
    Cow::Owned(out)
}

fn looks_like_cache(text: &[u8]) -> bool {
    let needle = b"\"cache\"";
    text.windows(needle.len()).any(|w| w == needle)
}

/// Parses a cache file's text.
pub(super) fn parse(path: &Path, text: &[u8]) -> Result<Tuning, ImportError> {
    let file: CacheFile = serde_json::from_slice(text).map_err(|e| top_level(path, text, e))?;
    let field = |f: String, p: String| ImportError::field(path, f, p);
    let mut params: Vec<(String, Vec<KtValue>)> = Vec::new();
    for name in &file.tune_params_keys {
        let Some((_, values)) = file.tune_params.0.iter().find(|(k, _)| k == name) else {
            return Err(field(
                "tune_params".into(),
                format!("no values for `{name}`, which `tune_params_keys` names"),
            ));
        };
        let values = values
            .iter()
            .map(|v| {
                KtValue::from_json(v).ok_or_else(|| {
                    field(
                        format!("tune_params.{name}"),
                        format!("{v} is not a number, string or boolean"),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        params.push((name.clone(), values));
    }
    if params.is_empty() {
        return Err(field(
            "tune_params_keys".into(),
            "names no parameter".into(),
        ));
    }
    let mut configs: Vec<Config> = Vec::with_capacity(file.cache.0.len());
    let mut seen: HashMap<Vec<String>, usize> = HashMap::new();
    for (key, entry) in file.cache.0 {
        let at = format!("cache[{key:?}]");
        let entry: Entry = Entry::deserialize(&entry).map_err(|e| {
            diagnose(path, &entry, &at, ENTRY_FIELDS)
                .unwrap_or_else(|| field(at.clone(), e.to_string()))
        })?;
        let config = config_of(path, &at, &file.tune_params_keys, entry)?;
        // A key written twice is read as Python's json reads it: the last one counts.
        let id: Vec<String> = config.values.iter().map(KtValue::python).collect();
        match seen.get(&id) {
            Some(&i) => configs[i] = config,
            None => {
                seen.insert(id, configs.len());
                configs.push(config);
            }
        }
    }
    if configs.is_empty() {
        return Err(field("cache".into(), "holds no configuration".into()));
    }
    Ok(Tuning {
        path: path.to_path_buf(),
        format: "kt-cache",
        kernel: file.kernel_name,
        device: file.device_name,
        problem_size: file.problem_size.map(|p| p.to_string()),
        params,
        configs,
        digest: digest(text),
    })
}

fn config_of(path: &Path, at: &str, keys: &[String], entry: Entry) -> Result<Config, ImportError> {
    let field = |f: String, p: String| ImportError::field(path, f, p);
    let values = keys
        .iter()
        .map(|k| {
            let v = entry.rest.get(k).ok_or_else(|| {
                field(at.to_string(), format!("no value for the parameter `{k}`"))
            })?;
            KtValue::from_json(v).ok_or_else(|| {
                field(
                    format!("{at}.{k}"),
                    format!("{v} is not a number, string or boolean"),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut outcome = match &entry.time {
        Json::Number(n) => match n.as_f64() {
            Some(ms) => outcome_of_time(ms),
            None => return Err(field(format!("{at}.time"), format!("{n} is not a number"))),
        },
        Json::String(s) => match status_of_kt_error(s) {
            Some(status) => Outcome::Failed(status, s.clone()),
            None => {
                return Err(field(
                    format!("{at}.time"),
                    format!(
                        "\"{s}\" is neither a time nor one of Kernel Tuner's failures ({})",
                        KT_ERRORS.join(", ")
                    ),
                ))
            }
        },
        other => {
            return Err(field(
                format!("{at}.time"),
                format!("{other} is neither a time (ms) nor a failure's name"),
            ))
        }
    };
    // Kernel Tuner takes a failure's name in any field as the configuration's failure (a
    // multi-objective cache writes it into each objective).
    if let Outcome::Ok(_) = outcome {
        let mut failures: Vec<(&String, &str)> = entry
            .rest
            .iter()
            .filter_map(|(k, v)| Some((k, v.as_str().filter(|s| KT_ERRORS.contains(s))?)))
            .collect();
        failures.sort();
        if let Some((_, name)) = failures.first() {
            let status = status_of_kt_error(name).unwrap_or(Status::LaunchFailed);
            outcome = Outcome::Failed(status, (*name).to_string());
        }
    }
    let times_ms = entry.times.unwrap_or_default();
    let run_ms = match (entry.benchmark_time, entry.verification_time) {
        (None, None) => None,
        (b, v) => Some(b.unwrap_or(0.0) + v.unwrap_or(0.0)),
    };
    Ok(Config {
        values,
        outcome,
        times_ms,
        compile_ms: entry.compile_time,
        run_ms,
    })
}

/// A top-level error, naming the field: the file is read again, untyped, to find it (only
/// when it is malformed, so a good file is read once).
fn top_level(path: &Path, text: &[u8], e: serde_json::Error) -> ImportError {
    serde_json::from_slice::<Json>(text)
        .ok()
        .and_then(|v| diagnose(path, &v, "", TOP_FIELDS))
        .unwrap_or_else(|| {
            ImportError::field(
                path,
                "(top level)",
                format!("{e} (a Kernel Tuner cache file)"),
            )
        })
}
