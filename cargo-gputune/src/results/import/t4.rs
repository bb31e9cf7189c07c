//! The T4 format of the FAIR benchmark hub (Kernel Tuner's `store_output_file`): a results
//! file (`schema_version`, `results`: per configuration its `configuration`, `times`,
//! `invalidity`, `correctness`, `measurements` and `objectives`) and a metadata file (the
//! hardware, with `nvidia-smi`'s device query).
//!
//! T4 results carry neither the kernel, the device nor the declared parameter values:
//! gputune's export adds them under `metadata` (`kernel_name`, `device_name`,
//! `problem_size`, `tune_params`), where the schema leaves room, and reads them back; without
//! them the kernel is `kernel`, the device that of a metadata file imported alongside (else
//! `unknown`), and the values those the configurations take.

use std::collections::HashMap;
use std::path::Path;

use gputune_protocol::Status;
use serde::Deserialize;
use serde_json::Value as Json;

use super::{
    diagnose, digest, outcome_of_time, Config, ImportError, Kind, KtValue, Ordered, Outcome, Tuning,
};

#[derive(Deserialize)]
struct ResultsFile {
    results: Vec<Entry>,
    #[serde(default)]
    metadata: Option<Meta>,
}

/// The results file's `metadata`: Kernel Tuner writes `timeunit`; the rest is gputune's.
#[derive(Deserialize, Default)]
struct Meta {
    #[serde(default)]
    timeunit: Option<String>,
    #[serde(default)]
    kernel_name: Option<String>,
    #[serde(default)]
    device_name: Option<String>,
    #[serde(default)]
    problem_size: Option<Json>,
    #[serde(default)]
    tune_params: Option<Ordered<Vec<Json>>>,
}

#[derive(Deserialize)]
struct Entry {
    configuration: Ordered<Json>,
    times: Times,
    invalidity: Invalidity,
    #[serde(default)]
    objectives: Vec<String>,
    #[serde(default)]
    measurements: Vec<Measurement>,
}

#[derive(Deserialize)]
struct Times {
    #[serde(default, alias = "compilation_time")]
    compilation: Option<f64>,
    #[serde(default)]
    benchmark: Option<f64>,
    #[serde(default)]
    validation: Option<f64>,
    #[serde(default)]
    runtimes: Option<Vec<f64>>,
}

/// Why a configuration is invalid, or `correct`.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Invalidity {
    /// It ran past its limit.
    Timeout,
    /// It did not compile.
    Compile,
    /// It failed at run time.
    Runtime,
    /// Its output was wrong.
    Correctness,
    /// It is outside the restrictions.
    Constraints,
    /// It ran and was right.
    Correct,
}

impl Invalidity {
    /// The store's status.
    pub fn status(self) -> Status {
        match self {
            Invalidity::Timeout => Status::Timeout,
            Invalidity::Compile => Status::BuildFailed,
            Invalidity::Runtime => Status::LaunchFailed,
            Invalidity::Correctness => Status::VerifyFailed,
            Invalidity::Constraints => Status::Invalid,
            Invalidity::Correct => Status::Ok,
        }
    }

    /// T4's name of a store status.
    pub fn of_status(status: Status) -> &'static str {
        match status {
            Status::Ok => "correct",
            Status::BuildFailed | Status::BuildTimeout => "compile",
            Status::Timeout => "timeout",
            Status::VerifyFailed => "correctness",
            Status::Invalid => "constraints",
            Status::LaunchFailed | Status::Crashed | Status::Skipped => "runtime",
        }
    }
}

#[derive(Deserialize)]
struct Measurement {
    name: String,
    value: Json,
    #[serde(default)]
    unit: String,
}

const ENTRY_FIELDS: &[(&str, Kind, bool)] = &[
    ("configuration", Kind::Obj, true),
    ("times", Kind::Obj, true),
    ("invalidity", Kind::Str, true),
    ("objectives", Kind::Strs, false),
    ("measurements", Kind::List, false),
];

/// The error of a results file that did not read, naming the field: read again untyped (only
/// when malformed), since a configuration's parameters keep their order only when read typed.
fn malformed(path: &Path, text: &[u8], e: serde_json::Error) -> ImportError {
    let fallback = |at: &str, e: &dyn std::fmt::Display| {
        ImportError::field(path, at, format!("{e} (a T4 results file)"))
    };
    let Ok(v) = serde_json::from_slice::<Json>(text) else {
        return fallback("(top level)", &e);
    };
    let top = [
        ("results", Kind::List, true),
        ("metadata", Kind::Obj, false),
    ];
    if let Some(err) = diagnose(path, &v, "", &top) {
        return err;
    }
    for (i, raw) in v["results"].as_array().into_iter().flatten().enumerate() {
        let at = format!("results[{i}]");
        if let Err(e) = Entry::deserialize(raw) {
            return diagnose(path, raw, &at, ENTRY_FIELDS).unwrap_or_else(|| fallback(&at, &e));
        }
    }
    fallback("metadata", &e)
}

/// Milliseconds per unit of a time measurement.
fn per_unit(unit: &str) -> Option<f64> {
    Some(match unit {
        "" | "ms" | "milliseconds" => 1.0,
        "s" | "seconds" => 1e3,
        "us" | "µs" | "microseconds" => 1e-3,
        "ns" | "nanoseconds" => 1e-6,
        _ => return None,
    })
}

/// Parses a T4 results file's text.
pub(super) fn parse(path: &Path, text: &[u8]) -> Result<Tuning, ImportError> {
    let file: ResultsFile = serde_json::from_slice(text).map_err(|e| malformed(path, text, e))?;
    let meta = file.metadata.unwrap_or_default();
    let scale = match meta.timeunit.as_deref() {
        None => 1.0,
        Some(u) => per_unit(u).ok_or_else(|| {
            ImportError::field(path, "metadata.timeunit", format!("unknown unit \"{u}\""))
        })?,
    };
    let mut names: Vec<String> = Vec::new();
    let mut declared: HashMap<String, Vec<KtValue>> = HashMap::new();
    if let Some(tp) = &meta.tune_params {
        for (name, values) in &tp.0 {
            let vs = values
                .iter()
                .map(|v| {
                    KtValue::from_json(v).ok_or_else(|| {
                        ImportError::field(
                            path,
                            format!("metadata.tune_params.{name}"),
                            format!("{v} is not a number, string or boolean"),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            names.push(name.clone());
            declared.insert(name.clone(), vs);
        }
    }
    let mut configs = Vec::with_capacity(file.results.len());
    let mut seen: HashMap<Vec<String>, usize> = HashMap::new();
    for (i, entry) in file.results.into_iter().enumerate() {
        let at = format!("results[{i}]");
        // A configuration without parameters is no point of a space; and the first one names
        // the parameters of all the others (found by the generated inputs: an empty first
        // configuration left the others' values unindexed).
        if entry.configuration.0.is_empty() {
            return Err(ImportError::field(
                path,
                format!("{at}.configuration"),
                "has no parameters",
            ));
        }
        if names.is_empty() {
            names = entry
                .configuration
                .0
                .iter()
                .map(|(k, _)| k.clone())
                .collect();
        }
        let config = config_of(path, &at, &names, entry, scale)?;
        let id: Vec<String> = config.values.iter().map(KtValue::python).collect();
        match seen.get(&id) {
            Some(&j) => configs[j] = config,
            None => {
                seen.insert(id, configs.len());
                configs.push(config);
            }
        }
    }
    if configs.is_empty() {
        return Err(ImportError::field(
            path,
            "results",
            "holds no configuration",
        ));
    }
    let params = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut values = declared.remove(name).unwrap_or_default();
            if values.is_empty() {
                values = taken(&configs, i);
            }
            (name.clone(), values)
        })
        .collect();
    Ok(Tuning {
        path: path.to_path_buf(),
        format: "t4",
        kernel: meta.kernel_name.unwrap_or_else(|| "kernel".into()),
        device: meta.device_name.unwrap_or_default(),
        problem_size: meta.problem_size.map(|p| p.to_string()),
        params,
        configs,
        digest: digest(text),
    })
}

/// The values parameter `i` takes in `configs`: ascending where all are numbers, else in
/// the order first seen.
fn taken(configs: &[Config], i: usize) -> Vec<KtValue> {
    let mut values: Vec<KtValue> = Vec::new();
    for c in configs {
        if !values.contains(&c.values[i]) {
            values.push(c.values[i].clone());
        }
    }
    let number = |v: &KtValue| match v {
        KtValue::Int(i) => Some(*i as f64),
        KtValue::Float(f) => Some(*f),
        _ => None,
    };
    if values.iter().all(|v| number(v).is_some()) {
        values.sort_by(|a, b| {
            number(a)
                .unwrap_or(0.0)
                .total_cmp(&number(b).unwrap_or(0.0))
        });
    }
    values
}

fn config_of(
    path: &Path,
    at: &str,
    names: &[String],
    entry: Entry,
    scale: f64,
) -> Result<Config, ImportError> {
    if entry.configuration.0.len() != names.len() {
        return Err(ImportError::field(
            path,
            format!("{at}.configuration"),
            format!(
                "has {} parameters where the first configuration has {}: {}",
                entry.configuration.0.len(),
                names.len(),
                names.join(", ")
            ),
        ));
    }
    let values = names
        .iter()
        .map(|name| {
            let v = entry
                .configuration
                .0
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v)
                .ok_or_else(|| {
                    ImportError::field(
                        path,
                        format!("{at}.configuration"),
                        format!("no value for `{name}`"),
                    )
                })?;
            KtValue::from_json(v).ok_or_else(|| {
                ImportError::field(
                    path,
                    format!("{at}.configuration.{name}"),
                    format!("{v} is not a number, string or boolean"),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let objective = entry.objectives.first().map_or("time", String::as_str);
    let outcome = match entry.invalidity.status() {
        Status::Ok => {
            let m = entry
                .measurements
                .iter()
                .find(|m| m.name == objective)
                .ok_or_else(|| {
                    ImportError::field(
                        path,
                        format!("{at}.measurements"),
                        format!("no measurement of the objective `{objective}`"),
                    )
                })?;
            let unit = per_unit(&m.unit).ok_or_else(|| {
                ImportError::field(
                    path,
                    format!("{at}.measurements.{objective}.unit"),
                    format!("unknown unit \"{}\"", m.unit),
                )
            })?;
            let ms = m.value.as_f64().ok_or_else(|| {
                ImportError::field(
                    path,
                    format!("{at}.measurements.{objective}.value"),
                    format!("{} is not a number", m.value),
                )
            })?;
            outcome_of_time(ms * if m.unit.is_empty() { scale } else { unit })
        }
        status => Outcome::Failed(
            status,
            format!("T4 invalidity {:?}", Invalidity::of_status(status)),
        ),
    };
    let run_ms = match (entry.times.benchmark, entry.times.validation) {
        (None, None) => None,
        (b, v) => Some((b.unwrap_or(0.0) + v.unwrap_or(0.0)) * scale),
    };
    Ok(Config {
        values,
        outcome,
        times_ms: entry
            .times
            .runtimes
            .unwrap_or_default()
            .iter()
            .map(|t| t * scale)
            .collect(),
        compile_ms: entry.times.compilation.map(|c| c * scale),
        run_ms,
    })
}

/// The device a T4 metadata file names: the first GPU of its `nvidia-smi` query, or of its
/// `rocm-smi` one.
pub(super) fn parse_metadata(path: &Path, text: &[u8]) -> Result<Option<String>, ImportError> {
    let v: Json = serde_json::from_slice(text)
        .map_err(|e| ImportError::field(path, "metadata", e.to_string()))?;
    let Some(meta) = v.get("metadata").filter(|m| m.is_object()) else {
        return Err(ImportError::field(
            path,
            "metadata",
            "not an object (a T4 metadata file)",
        ));
    };
    // The query is nvidia-smi's XML as a dictionary: one GPU is an object, several a list.
    let gpu = meta.pointer("/environment/device_query/nvidia-smi/nvidia_smi_log/gpu");
    let first = match gpu {
        Some(Json::Array(list)) => list.first(),
        other => other,
    };
    Ok(first
        .and_then(|g| g.get("product_name"))
        .and_then(Json::as_str)
        .map(str::to_string))
}
