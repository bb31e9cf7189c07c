//! Where a compared workload is in the store and what `check --remeasure` did to it: the
//! comparison's side of measuring again. The measuring itself is `measure::remeasure`,
//! which takes these rows and gives back [`Remeasured`].

use serde_json::Value;

use crate::results::store::Measurement;
use crate::results::Group;

/// Where a compared workload is in the store, and the baseline's side of it: what measuring
/// it again needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Package.
    pub package: String,
    /// Bench.
    pub bench: String,
    /// Tuned function.
    pub function: String,
    /// Device identity.
    pub device: String,
    /// The revision (code and measurement settings) its rows are stored under.
    pub revision: String,
    /// Compile-time workload.
    pub ct_workload: String,
    /// `base` or the variant's label.
    pub variant: String,
    /// Runtime workload.
    pub rt_workload: String,
    /// The baseline's workload (report JSON).
    pub then: Value,
    /// Base's workload in the baseline, for a variant.
    pub base_then: Option<Value>,
}

impl Workload {
    /// The workload of row `m` of group `g`, judged against `then` (and `base_then`).
    pub fn of(g: &Group, m: &Measurement, then: &Value, base_then: Option<&Value>) -> Workload {
        Workload {
            package: g.package.clone(),
            bench: g.bench.clone(),
            function: g.function.clone(),
            device: g.device.clone(),
            revision: g.revision.clone(),
            ct_workload: g.ct_workload.clone(),
            variant: m.variant.clone(),
            rt_workload: m.rt_workload.clone(),
            then: then.clone(),
            base_then: base_then.cloned(),
        }
    }

    /// Whether `other` is the same row of the store.
    pub fn same_row(&self, other: &Workload) -> bool {
        (
            &self.package,
            &self.bench,
            &self.device,
            &self.revision,
            &self.ct_workload,
            &self.variant,
            &self.rt_workload,
        ) == (
            &other.package,
            &other.bench,
            &other.device,
            &other.revision,
            &other.ct_workload,
            &other.variant,
            &other.rt_workload,
        )
    }

    /// Its group's and workload's place, for messages (`spin.spin [*] Steps{io}=20000`).
    pub fn place(&self) -> String {
        format!(
            "{}.{} [{}] {}",
            self.bench, self.function, self.ct_workload, self.rt_workload
        )
    }
}

/// What `--remeasure` did to one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Remeasured {
    /// Its verdict before.
    pub before: &'static str,
    /// Its new samples.
    pub samples: usize,
    /// Base's, interleaved with them.
    pub base_samples: usize,
    /// Passes of the process.
    pub rounds: usize,
    /// `--remeasure-budget`.
    pub budget: usize,
}
