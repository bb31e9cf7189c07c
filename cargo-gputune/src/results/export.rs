//! `cargo gputune export`: a store's results in the community's formats, a Kernel Tuner
//! cache file or T4 results, for Kernel Tuner's simulation mode and the benchmark hub's tools.
//!
//! One file holds one kernel on one device at one problem size: one group of the store
//! (package, bench, device, compile-time workload) on one runtime workload. Each measured
//! point of the space becomes a configuration; base is the configuration of its point (an
//! imported store holds it twice, a search's store may hold only `base`). Times go back to
//! milliseconds; statuses to Kernel Tuner's failure names (the one a file imported said, where
//! the row's message keeps it) and to T4's `invalidity`.

use std::collections::{BTreeMap, HashMap};

use gputune_grammar::TuneSpec;
use gputune_protocol::Status;
use serde::Serialize;
use serde_json::{json, Value as Json};

use crate::results::import::{status_of_kt_error, Invalidity, KtValue, Ordered};
use crate::results::store::{Dated, Measurement, Store};
use crate::results::Group;
use crate::strategy::Params;

/// The formats (the command line's `--format` is mapped to these by `commands`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// T4 results (FAIR benchmark hub, Kernel Tuner's `store_output_file`).
    T4,
    /// A Kernel Tuner cache file (`tune_kernel(cache=…)`, simulation mode).
    KtCache,
}

/// Why a store cannot be exported as asked.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Nothing, or more than one group, to export.
    #[error("{0}")]
    Choice(String),
    /// The store keeps no parameters for the group.
    #[error(
        "the store keeps no #[tune] attribute of `{0}`, and Kernel Tuner's formats need its \
         parameters"
    )]
    NoSpace(String),
    /// The store's attribute does not parse.
    #[error("the stored attribute of `{0}` does not parse: {1}")]
    BadSpace(String, String),
    /// The store could not be read.
    #[error("cannot read the store: {0}")]
    Store(String),
}

/// One configuration to write.
struct Entry {
    values: Vec<KtValue>,
    row: Measurement,
    created: String,
}

/// The file (JSON text) of the one group in `groups` (after `-p`) on runtime workload
/// `workload` (needed where the group has several).
pub fn export(
    store: &Store,
    groups: &[Group],
    format: ExportFormat,
    workload: Option<&str>,
) -> Result<String, ExportError> {
    let g = match groups {
        [g] => g,
        [] => {
            return Err(ExportError::Choice(
                "the store holds no results to export".into(),
            ))
        }
        many => {
            let list: Vec<String> = many
                .iter()
                .map(|g| {
                    format!(
                        "{} ({}.{} [{}] on {})",
                        g.package,
                        g.bench,
                        g.function,
                        g.ct_workload,
                        crate::results::present::device_name(g)
                    )
                })
                .collect();
            return Err(ExportError::Choice(format!(
                "the store holds {} groups, and a file holds one kernel on one device: choose \
                 one with -p PACKAGE; they are: {}",
                many.len(),
                list.join("; ")
            )));
        }
    };
    let attribute = store
        .space(&g.package, &g.function)
        .map_err(|e| ExportError::Store(format!("{e:#}")))?
        .ok_or_else(|| ExportError::NoSpace(g.function.clone()))?
        .1;
    let spec = gputune_grammar::parse_str(&attribute)
        .map_err(|e| ExportError::BadSpace(g.function.clone(), e.to_string()))?;
    let rt = workload_of(g, workload)?;
    let created = stamps(store)?;
    let entries = entries(g, &spec, &rt, &created);
    let problem_size: Json = rt
        .strip_prefix("problem_size=")
        .and_then(|p| serde_json::from_str(p).ok())
        .unwrap_or_else(|| Json::String(rt.clone()));
    let device = g.device.split('|').next().unwrap_or(&g.device).to_string();
    let header = Header {
        names: spec.params.iter().map(|p| p.name.clone()).collect(),
        tune_params: Ordered(
            spec.params
                .iter()
                .map(|p| {
                    (
                        p.name.clone(),
                        p.values
                            .iter()
                            .map(|v| KtValue::from_grammar(v).to_json())
                            .collect(),
                    )
                })
                .collect(),
        ),
        device,
        kernel: g.function.clone(),
        problem_size,
    };
    match format {
        ExportFormat::KtCache => kt_cache(&entries, header),
        ExportFormat::T4 => t4(&entries, header),
    }
    .map_err(|e| ExportError::Store(e.to_string()))
}

/// The runtime workload to export.
fn workload_of(g: &Group, wanted: Option<&str>) -> Result<String, ExportError> {
    let all: std::collections::BTreeSet<&str> = g
        .variants
        .values()
        .flatten()
        .map(|m| m.rt_workload.as_str())
        .filter(|w| *w != "*")
        .collect();
    match (wanted, all.len()) {
        (Some(w), _) if all.contains(w) => Ok(w.to_string()),
        (Some(w), _) => Err(ExportError::Choice(format!(
            "--workload `{w}` is not a runtime workload of {}; it has: {}",
            g.package,
            all.into_iter().collect::<Vec<_>>().join(", ")
        ))),
        (None, 0) => Ok("*".into()),
        (None, 1) => Ok(all.into_iter().next().unwrap_or("*").to_string()),
        (None, _) => Err(ExportError::Choice(format!(
            "{} was measured on {} runtime workloads, and a file holds one problem size: \
             choose one with --workload; they are: {}",
            g.package,
            all.len(),
            all.into_iter().collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// `created` of every row, by its key.
fn stamps(store: &Store) -> Result<HashMap<(String, String, String), String>, ExportError> {
    let rows: Vec<Dated> = store
        .dated_measurements()
        .map_err(|e| ExportError::Store(format!("{e:#}")))?;
    Ok(rows
        .into_iter()
        .map(|d| {
            let m = d.measurement;
            (
                (
                    m.revision + "|" + &m.device + "|" + &m.package,
                    m.variant,
                    m.rt_workload,
                ),
                d.created,
            )
        })
        .collect())
}

/// The configurations: every measured point of the space in the space's order, and base's
/// point from the base row where the point has no row of its own.
fn entries(
    g: &Group,
    spec: &TuneSpec,
    rt: &str,
    created: &HashMap<(String, String, String), String>,
) -> Vec<Entry> {
    let params = Params::from_spec(spec);
    let row_of = |label: &str| {
        let ms = g.variants.get(label)?;
        ms.iter()
            .find(|m| m.rt_workload == rt)
            .or_else(|| ms.iter().find(|m| m.rt_workload == "*"))
    };
    let base_label = spec.base_point().label();
    let mut out = Vec::new();
    let mut labels: Vec<String> = spec.space().iter().map(|p| p.label()).collect();
    // A measured label outside the stored space (an older attribute) still goes out.
    let extra: Vec<String> = g
        .variants
        .keys()
        .filter(|l| *l != "base" && params.parse(l).is_some() && !labels.contains(l))
        .cloned()
        .collect();
    labels.extend(extra);
    for label in labels {
        let row =
            row_of(&label).or_else(|| (label == base_label).then(|| row_of("base")).flatten());
        let (Some(row), Some(indices)) = (row, params.parse(&label)) else {
            continue;
        };
        let values = indices
            .iter()
            .zip(&spec.params)
            .map(|(&i, p)| KtValue::from_grammar(&p.values[i]))
            .collect();
        let key = (
            row.revision.clone() + "|" + &row.device + "|" + &row.package,
            row.variant.clone(),
            row.rt_workload.clone(),
        );
        out.push(Entry {
            values,
            row: row.clone(),
            created: created.get(&key).cloned().unwrap_or_default(),
        });
    }
    out
}

/// Kernel Tuner's name of a failed row's status: the one its message keeps (an imported
/// row), else the closest.
fn kt_error(m: &Measurement) -> &'static str {
    if let Some(name) = m.message.as_deref().and_then(|msg| {
        crate::results::import::KT_ERRORS
            .iter()
            .find(|e| **e == msg && status_of_kt_error(e) == Some(m.status))
    }) {
        return name;
    }
    match m.status {
        Status::Invalid => "InvalidConfig",
        Status::BuildFailed | Status::BuildTimeout => "CompilationFailedConfig",
        _ => "RuntimeFailedConfig",
    }
}

fn ms(s: Option<f64>) -> f64 {
    s.map_or(0.0, |s| s * 1e3)
}

#[derive(Serialize)]
struct KtCacheFile {
    schema_version: &'static str,
    device_name: String,
    kernel_name: String,
    problem_size: Json,
    tune_params_keys: Vec<String>,
    tune_params: Ordered<Vec<Json>>,
    objective: &'static str,
    cache: Ordered<Ordered<Json>>,
}

#[derive(Serialize)]
struct T4File {
    schema_version: &'static str,
    metadata: T4Metadata,
    results: Vec<T4Result>,
}

/// `timeunit` is Kernel Tuner's; the rest is gputune's: what T4 results lack and an import
/// needs.
#[derive(Serialize)]
struct T4Metadata {
    timeunit: &'static str,
    kernel_name: String,
    device_name: String,
    problem_size: Json,
    tune_params: Ordered<Vec<Json>>,
}

#[derive(Serialize)]
struct T4Result {
    timestamp: String,
    configuration: Ordered<Json>,
    objectives: [&'static str; 1],
    times: Json,
    invalidity: &'static str,
    correctness: u8,
    measurements: Json,
}

/// What a file holds besides its configurations.
struct Header {
    names: Vec<String>,
    tune_params: Ordered<Vec<Json>>,
    device: String,
    kernel: String,
    problem_size: Json,
}

/// A row's time (ms), or Kernel Tuner's name of its failure.
fn time_of(m: &Measurement) -> Json {
    match (m.status, m.center) {
        (Status::Ok, Some(c)) => json!(c * 1e3),
        _ => json!(kt_error(m)),
    }
}

fn kt_cache(entries: &[Entry], h: Header) -> Result<String, serde_json::Error> {
    let cache = entries
        .iter()
        .map(|e| {
            let key: Vec<String> = e.values.iter().map(KtValue::python).collect();
            let m = &e.row;
            let mut o: Vec<(String, Json)> = h
                .names
                .iter()
                .cloned()
                .zip(e.values.iter().map(KtValue::to_json))
                .collect();
            o.push(("time".into(), time_of(m)));
            if !m.samples.is_empty() {
                o.push((
                    "times".into(),
                    json!(m.samples.iter().map(|s| s * 1e3).collect::<Vec<_>>()),
                ));
            }
            o.push(("compile_time".into(), json!(ms(m.build_seconds))));
            o.push(("verification_time".into(), json!(0.0)));
            o.push(("benchmark_time".into(), json!(ms(m.run_seconds))));
            o.push(("strategy_time".into(), json!(0.0)));
            o.push(("framework_time".into(), json!(0.0)));
            o.push(("timestamp".into(), json!(e.created)));
            (key.join(","), Ordered(o))
        })
        .collect();
    serde_json::to_string(&KtCacheFile {
        schema_version: "1.1.0",
        device_name: h.device,
        kernel_name: h.kernel,
        problem_size: h.problem_size,
        tune_params_keys: h.names,
        tune_params: h.tune_params,
        objective: "time",
        cache: Ordered(cache),
    })
}

fn t4(entries: &[Entry], h: Header) -> Result<String, serde_json::Error> {
    let results = entries
        .iter()
        .map(|e| {
            let m = &e.row;
            T4Result {
                timestamp: e.created.clone(),
                configuration: Ordered(
                    h.names
                        .iter()
                        .cloned()
                        .zip(e.values.iter().map(KtValue::to_json))
                        .collect(),
                ),
                objectives: ["time"],
                times: json!({
                    "compilation": ms(m.build_seconds),
                    "benchmark": ms(m.run_seconds),
                    "framework": 0.0,
                    "search_algorithm": 0.0,
                    "validation": 0.0,
                    "runtimes": m.samples.iter().map(|s| s * 1e3).collect::<Vec<_>>(),
                }),
                invalidity: Invalidity::of_status(m.status),
                correctness: 1,
                measurements: json!([{"name": "time", "value": time_of(m), "unit": "ms"}]),
            }
        })
        .collect();
    serde_json::to_string(&T4File {
        schema_version: "1.0.0",
        metadata: T4Metadata {
            timeunit: "milliseconds",
            kernel_name: h.kernel,
            device_name: h.device,
            problem_size: h.problem_size,
            tune_params: h.tune_params,
        },
        results,
    })
}

/// The groups of `rows` by package, for `-p`.
pub fn by_package(groups: Vec<Group>, packages: &[String]) -> Vec<Group> {
    if packages.is_empty() {
        return groups;
    }
    let wanted: BTreeMap<&str, ()> = packages.iter().map(|p| (p.as_str(), ())).collect();
    groups
        .into_iter()
        .filter(|g| wanted.contains_key(g.package.as_str()))
        .collect()
}
