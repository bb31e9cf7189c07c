//! From the files read to what the store gets: per results file a package (the file's name),
//! a `#[tune]` attribute that holds exactly its configurations, a base, and one row per
//! configuration, as a search would have stored them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gputune_grammar::{Point, Value};
use gputune_protocol::{Status, StopReason};

use super::{require::require, Config, Defaults, File, ImportError, KtValue, Outcome, Tuning};
use crate::results::store::{Measurement, Space};
use crate::strategy::Params;

/// The most points a space's parameters may span (before the configurations narrow it):
/// `#[tune]` spaces are enumerated whole, by `replay` and `report --coverage` among others.
pub const MAX_PRODUCT: u128 = 1 << 24;

/// Why the base is the configuration it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseChoice {
    /// `--base` named it.
    Named,
    /// The default of a T1 file.
    T1(String),
    /// The first configuration that ran; with why a T1 default was not taken, if one was
    /// given.
    First(Option<String>),
}

impl std::fmt::Display for BaseChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BaseChoice::Named => f.write_str("named by --base"),
            BaseChoice::T1(file) => write!(f, "the default of {file}"),
            BaseChoice::First(None) => f.write_str("the file's first configuration that ran"),
            BaseChoice::First(Some(why)) => {
                write!(f, "the file's first configuration that ran; {why}")
            }
        }
    }
}

/// What one results file becomes.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The file.
    pub path: std::path::PathBuf,
    /// Its package in the store.
    pub package: String,
    /// Its kernel (the bench and function).
    pub kernel: String,
    /// Its device.
    pub device: String,
    /// Configurations per status.
    pub statuses: BTreeMap<&'static str, usize>,
    /// The base's label.
    pub base: String,
    /// Why that one.
    pub why: BaseChoice,
}

/// Everything an import writes, decided before anything is.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Per results file.
    pub imported: Vec<Imported>,
    /// The rows.
    pub rows: Vec<Measurement>,
    /// The spaces.
    pub spaces: Vec<Space>,
}

/// Plans the import of `files`, with `base` (`name=value,…` or a label) as every results
/// file's base if given.
pub fn plan(files: Vec<File>, base: Option<&str>) -> Result<Plan, ImportError> {
    let mut tunings = Vec::new();
    let mut defaults = Vec::new();
    let mut devices = Vec::new();
    for f in files {
        match f {
            File::Results(t) => tunings.push(t),
            File::Defaults(d) => defaults.push(d),
            File::Metadata(_, d) => devices.extend(d),
        }
    }
    if tunings.is_empty() {
        return Err(ImportError::Mismatch(
            "no results to import: give a Kernel Tuner cache or a T4 results file (T1 and T4 \
             metadata files only go with one)"
                .into(),
        ));
    }
    let mut plan = Plan {
        imported: Vec::new(),
        rows: Vec::new(),
        spaces: Vec::new(),
    };
    let mut packages: BTreeMap<String, String> = BTreeMap::new();
    for mut t in tunings {
        if t.device.is_empty() {
            t.device = match devices.as_slice() {
                [one] => one.clone(),
                _ => "unknown".into(),
            };
        }
        let package = package_of(&t.path);
        if let Some(other) = packages.insert(package.clone(), t.path.display().to_string()) {
            return Err(ImportError::Mismatch(format!(
                "{} and {other} would both be package `{package}` (a file's name without \
                 .json and .gz): import them into separate stores, or rename one",
                t.path.display()
            )));
        }
        one(&mut plan, &t, package, base, &defaults)?;
    }
    Ok(plan)
}

/// The package a file becomes: its name without `.gz`, `.json` and `.T4`.
fn package_of(path: &Path) -> String {
    let mut name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "imported".into());
    for ext in [".gz", ".json", ".T4", ".t4"] {
        if let Some(s) = name.strip_suffix(ext) {
            name = s.to_string();
        }
    }
    name
}

/// One results file into `plan`.
fn one(
    plan: &mut Plan,
    t: &Tuning,
    package: String,
    base: Option<&str>,
    defaults: &[Defaults],
) -> Result<(), ImportError> {
    let file = t.path.display().to_string();
    let names: Vec<String> = t.params.iter().map(|(n, _)| n.clone()).collect();
    let mut values: Vec<Vec<Value>> = Vec::new();
    for (i, (name, declared)) in t.params.iter().enumerate() {
        let mut vs: Vec<Value> = Vec::new();
        let listed = declared
            .iter()
            .chain(t.configs.iter().map(|c| &c.values[i]));
        for v in listed.map(KtValue::to_grammar) {
            if let Some(first) = vs.first() {
                if !v.same_kind(first) {
                    return Err(ImportError::field(
                        &t.path,
                        format!("tune_params.{name}"),
                        format!(
                            "mixes {} and {} values, which a gputune parameter cannot",
                            first.kind(),
                            v.kind()
                        ),
                    ));
                }
            }
            if !vs.contains(&v) {
                vs.push(v);
            }
        }
        values.push(vs);
    }
    let product: u128 = values.iter().map(|v| v.len() as u128).product();
    if product > MAX_PRODUCT {
        return Err(ImportError::Mismatch(format!(
            "{file}: its parameters span {product} points; gputune enumerates spaces of at most {MAX_PRODUCT}"
        )));
    }
    let index = |i: usize, v: &KtValue| {
        let g = v.to_grammar();
        values[i].iter().position(|x| *x == g).unwrap_or(0)
    };
    let points: Vec<Vec<usize>> = t
        .configs
        .iter()
        .map(|c| {
            c.values
                .iter()
                .enumerate()
                .map(|(i, v)| index(i, v))
                .collect()
        })
        .collect();
    let labels: Vec<String> = points.iter().map(|p| label(&names, &values, p)).collect();
    let (base_at, why) = choose_base(t, &names, &values, &labels, base, defaults)?;
    let attribute = attribute(&names, &values, &points, &points[base_at]);
    check_attribute(t, &attribute, &labels)?;
    plan.spaces.push(Space {
        package: package.clone(),
        function: t.kernel.clone(),
        size: labels.len(),
        attribute,
    });
    let revision = format!("{}-{:016x}", t.format, t.digest);
    let rt_workload = t
        .problem_size
        .as_ref()
        .map_or_else(|| "*".to_string(), |p| format!("problem_size={p}"));
    let mut statuses: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (c, l) in t.configs.iter().zip(&labels) {
        let row = row_of(t, c, &package, &revision, &rt_workload, l);
        *statuses.entry(row.status.as_str()).or_default() += 1;
        plan.rows.push(row);
    }
    let base_row = row_of(
        t,
        &t.configs[base_at],
        &package,
        &revision,
        &rt_workload,
        "base",
    );
    plan.rows.push(base_row);
    plan.imported.push(Imported {
        path: t.path.clone(),
        package,
        kernel: t.kernel.clone(),
        device: t.device.clone(),
        statuses,
        base: labels[base_at].clone(),
        why,
    });
    Ok(())
}

fn label(names: &[String], values: &[Vec<Value>], point: &[usize]) -> String {
    Point {
        values: names
            .iter()
            .zip(point)
            .enumerate()
            .map(|(i, (n, &v))| (n.clone(), values[i][v].clone()))
            .collect(),
    }
    .label()
}

/// The `#[tune]` attribute of the space: each parameter's values as a list, the predicate
/// that admits exactly the configurations, and the base.
fn attribute(
    names: &[String],
    values: &[Vec<Value>],
    points: &[Vec<usize>],
    base: &[usize],
) -> String {
    let mut items: Vec<String> = names
        .iter()
        .zip(values)
        .map(|(n, vs)| {
            let list: Vec<String> = vs.iter().map(Value::rust_literal).collect();
            format!("{n} = [{}]", list.join(", "))
        })
        .collect();
    let unique: BTreeSet<&Vec<usize>> = points.iter().collect();
    let unique: Vec<Vec<usize>> = unique.into_iter().cloned().collect();
    if let Some(r) = require(names, values, &unique) {
        items.push(format!("require({r})"));
    }
    let base: Vec<String> = names
        .iter()
        .zip(base)
        .enumerate()
        .map(|(i, (n, &v))| format!("{n} = {}", values[i][v].rust_literal()))
        .collect();
    items.push(format!("base({})", base.join(", ")));
    items.join(", ")
}

/// The attribute must parse (a parameter's name must be an identifier) and hold exactly the
/// file's configurations.
fn check_attribute(t: &Tuning, attribute: &str, labels: &[String]) -> Result<(), ImportError> {
    let spec = gputune_grammar::parse_str(attribute).map_err(|e| {
        ImportError::field(
            &t.path,
            "tune_params",
            format!(
                "its parameters cannot be a gputune space ({e}); every name must be an \
                 identifier other than `require` and `base`"
            ),
        )
    })?;
    let space: BTreeSet<String> = spec.space().iter().map(Point::label).collect();
    let want: BTreeSet<String> = labels.iter().cloned().collect();
    if space != want {
        return Err(ImportError::Mismatch(format!(
            "{}: the space written for it holds {} points where the file has {} \
             configurations (a bug in gputune's import; please report it)",
            t.path.display(),
            space.len(),
            want.len()
        )));
    }
    Ok(())
}

/// The base's index among the configurations, and why.
fn choose_base(
    t: &Tuning,
    names: &[String],
    values: &[Vec<Value>],
    labels: &[String],
    base: Option<&str>,
    defaults: &[Defaults],
) -> Result<(usize, BaseChoice), ImportError> {
    let file = t.path.display();
    let ran = |i: usize| matches!(t.configs[i].outcome, Outcome::Ok(_));
    if let Some(spec) = base {
        let wanted = named(spec, names, values).ok_or_else(|| {
            ImportError::Mismatch(format!(
                "--base `{spec}` is not a configuration of {file}'s parameters ({}): give \
                 `name=value,…` for every parameter, or a label such as `{}`",
                names.join(", "),
                labels[0]
            ))
        })?;
        let i = labels.iter().position(|l| *l == wanted).ok_or_else(|| {
            ImportError::Mismatch(format!(
                "--base `{wanted}` is not among {file}'s configurations"
            ))
        })?;
        if !ran(i) {
            return Err(ImportError::Mismatch(format!(
                "--base `{wanted}` did not run in {file} ({}): a base needs a time to score \
                 the others against",
                status_of(&t.configs[i])
            )));
        }
        return Ok((i, BaseChoice::Named));
    }
    let mut why_not = None;
    let wanted: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    if let Some(d) = defaults.iter().find(|d| {
        d.values
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<BTreeSet<_>>()
            == wanted
    }) {
        let point: Vec<Value> = names
            .iter()
            .filter_map(|n| {
                d.values
                    .iter()
                    .find(|(m, _)| m == n)
                    .map(|(_, v)| v.to_grammar())
            })
            .collect();
        let at = t
            .configs
            .iter()
            .position(|c| c.values.iter().map(KtValue::to_grammar).collect::<Vec<_>>() == point);
        let t1 = d.path.display().to_string();
        match at {
            Some(i) if ran(i) => return Ok((i, BaseChoice::T1(t1))),
            Some(i) => {
                why_not = Some(format!(
                    "{t1}'s default {} did not run ({})",
                    labels[i],
                    status_of(&t.configs[i])
                ))
            }
            None => why_not = Some(format!("{t1}'s default is not among the configurations")),
        }
    }
    let first = (0..t.configs.len()).find(|&i| ran(i)).ok_or_else(|| {
        ImportError::Mismatch(format!(
            "{file}: no configuration has a time (every one failed), so there is nothing to \
             score"
        ))
    })?;
    Ok((first, BaseChoice::First(why_not)))
}

/// The label `spec` names (`a=1,b=2` or `a_1.b_2`), if it names a point of the parameters.
fn named(spec: &str, names: &[String], values: &[Vec<Value>]) -> Option<String> {
    let params = Params(
        names
            .iter()
            .zip(values)
            .map(|(n, vs)| (n.clone(), vs.iter().map(ToString::to_string).collect()))
            .collect(),
    );
    if !spec.contains('=') {
        return params.parse(spec).map(|p| label(names, values, &p));
    }
    let given: BTreeMap<&str, &str> = spec
        .split(',')
        .map(|kv| kv.split_once('=').map(|(k, v)| (k.trim(), v.trim())))
        .collect::<Option<_>>()?;
    if given.len() != names.len() {
        return None;
    }
    let point: Vec<usize> = params
        .0
        .iter()
        .map(|(n, vs)| {
            let v = given.get(n.as_str())?;
            vs.iter().position(|x| x == v)
        })
        .collect::<Option<_>>()?;
    Some(label(names, values, &point))
}

fn status_of(c: &Config) -> String {
    match &c.outcome {
        Outcome::Ok(_) => "ok".into(),
        Outcome::Failed(s, m) => format!("{}: {m}", s.as_str()),
    }
}

/// The row of configuration `c`, under `variant`.
fn row_of(
    t: &Tuning,
    c: &Config,
    package: &str,
    revision: &str,
    rt_workload: &str,
    variant: &str,
) -> Measurement {
    let samples: Vec<f64> = c.times_ms.iter().map(|ms| ms / 1e3).collect();
    let (status, message, center) = match &c.outcome {
        Outcome::Ok(ms) => (Status::Ok, None, Some(ms / 1e3)),
        Outcome::Failed(s, m) => (*s, Some(m.clone()), None),
    };
    Measurement {
        revision: revision.to_string(),
        device: t.device.clone(),
        arch: String::new(),
        package: package.to_string(),
        bench: t.kernel.clone(),
        function: t.kernel.clone(),
        ct_workload: "*".into(),
        variant: variant.to_string(),
        rt_workload: rt_workload.to_string(),
        rt_weight: 1.0,
        status,
        message,
        center,
        noise: (status == Status::Ok)
            .then(|| crate::results::score::relative_stdev(&samples))
            .flatten(),
        bandwidth: None,
        samples,
        build_seconds: c.compile_ms.map(|ms| ms / 1e3),
        run_seconds: c.run_ms.map(|ms| ms / 1e3),
        stop: (status == Status::Ok).then_some(StopReason::Criterion),
        control: Vec::new(),
        kernels: Vec::new(),
        provenance: None,
        sm_clocks: Vec::new(),
    }
}
