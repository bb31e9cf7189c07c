//! One measured state, as a bench reports it: the `states` entries of the results document and
//! the `state` of a `--jsonl` event.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A scalar on the wire: integers and floats stay numbers, text stays text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// Text (string and type axes, string summaries).
    Text(String),
}

impl Scalar {
    /// The number, if it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Int(v) => Some(*v as f64),
            Scalar::Float(v) => Some(*v),
            Scalar::Text(_) => None,
        }
    }
}

/// What kind of failure a state's error is; `cargo gputune` chooses the variant's
/// [`Status`](crate::Status) from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A kernel compiled at run time did not compile: the variant does not build
    /// (`build_failed`).
    Compile,
    /// The launch configuration exceeds the kernel's or the device's limits: the variant is
    /// not a valid point (`invalid`).
    Invalid,
    /// The launches failed, or the device failed while running them, and the context is
    /// still usable (`launch_failed`).
    Launch,
    /// A sticky device error: the context is unusable and the bench process ends with exit
    /// code 4 after reporting this state (`crashed`).
    DeviceLost,
    /// The outputs differ from the reference (`verify_failed`).
    Verification,
    /// Anything else: an error of the bench's own code, a variant that is not compiled in
    /// (`launch_failed`).
    Other,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 6] = [
        ErrorKind::Compile,
        ErrorKind::Invalid,
        ErrorKind::Launch,
        ErrorKind::DeviceLost,
        ErrorKind::Verification,
        ErrorKind::Other,
    ];

    /// The name on the wire: `compile`, `invalid`, `launch`, `device_lost`, `verification`
    /// or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Compile => "compile",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Launch => "launch",
            ErrorKind::DeviceLost => "device_lost",
            ErrorKind::Verification => "verification",
            ErrorKind::Other => "other",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// How a state ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateStatus {
    /// Measured.
    Ok,
    /// Skipped by the bench (`skip_reason` says why).
    Skipped,
    /// Failed (`error` and `error_kind` say why).
    Failed,
    /// The cold loop hit `--timeout`; its samples are kept.
    Timeout,
}

impl StateStatus {
    /// Every status, in declaration order.
    pub const ALL: [StateStatus; 4] = [
        StateStatus::Ok,
        StateStatus::Skipped,
        StateStatus::Failed,
        StateStatus::Timeout,
    ];
}

/// Why a state's cold loop stopped taking samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Stop {
    /// The stopping criterion was satisfied.
    Criterion,
    /// The wall-clock `--timeout` ended it.
    Timeout,
    /// It lost the race (`--race`): its first quartile was more than `margin` above `best`,
    /// the best median (seconds) of an earlier variant on the same state.
    Raced {
        /// The median it lost against, in seconds.
        best: f64,
        /// The margin, a fraction (0.05 is 5 %).
        margin: f64,
    },
    /// It tied the race's best (`--decide` with `--tie-margin`): the confidence interval of
    /// its median against the best's lay within `margin` of it on both sides, so more samples
    /// could not rank the two further apart than that.
    Tied {
        /// The median it tied, in seconds.
        best: f64,
        /// The equivalence margin, a fraction (0.01 is 1 %).
        margin: f64,
    },
}

impl Stop {
    /// Why the loop stopped, without the race's numbers: what the store keeps.
    pub fn reason(&self) -> StopReason {
        match self {
            Stop::Criterion => StopReason::Criterion,
            Stop::Timeout => StopReason::Timeout,
            Stop::Raced { .. } => StopReason::Raced,
            Stop::Tied { .. } => StopReason::Tied,
        }
    }
}

/// Why a state's cold loop stopped, as the store's `stop` column keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The stopping criterion was satisfied: measured in full.
    Criterion,
    /// The wall-clock timeout ended it.
    Timeout,
    /// It lost the race (`--race`, `--decide`): clearly slower than an earlier variant.
    Raced,
    /// A search that decides screened it with `--min-samples` cold samples, and it could not
    /// be the winner (nor tie it within noise), so it was not measured further.
    Screened,
    /// `check --remeasure` measured it again, interleaved with base in one process, until its
    /// verdict against the baseline was settled or its sample budget was spent.
    Remeasured,
    /// It tied the best so far within the equivalence margin (`--tie-margin`) before its
    /// criterion was met: measured until the difference was resolved to lie within it.
    Tied,
}

impl StopReason {
    /// Every reason.
    pub const ALL: [StopReason; 6] = [
        StopReason::Criterion,
        StopReason::Timeout,
        StopReason::Raced,
        StopReason::Screened,
        StopReason::Remeasured,
        StopReason::Tied,
    ];

    /// The stable name: `criterion`, `timeout`, `raced`, `screened`, `remeasured` or `tied`.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Criterion => "criterion",
            StopReason::Timeout => "timeout",
            StopReason::Raced => "raced",
            StopReason::Screened => "screened",
            StopReason::Remeasured => "remeasured",
            StopReason::Tied => "tied",
        }
    }

    /// The reason named `name`.
    pub fn from_name(name: &str) -> Option<StopReason> {
        StopReason::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// One axis value of a state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AxisValueRecord {
    /// The axis's full name (`Elements{io}`).
    pub name: String,
    /// Its kind.
    #[serde(rename = "type")]
    pub kind: crate::AxisKind,
    /// The value (a number for numeric axes).
    pub value: Scalar,
    /// The value as the state's name and `-a` write it (`2^20` on a power-of-two axis).
    pub input_string: String,
}

/// The tolerances outputs were compared with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute floor as a fraction of the output's largest `|reference|` (absent before
    /// the floor existed: 0).
    #[serde(default)]
    pub floor: f64,
}

/// What an element-wise comparison of outputs found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Elements compared.
    pub checked: u64,
    /// Elements outside the tolerance.
    pub mismatches: u64,
    /// Largest absolute error (`None` when infinite: one side NaN and the other not).
    pub max_abs_error: Option<f64>,
    /// Largest relative error over non-zero references (`None` when infinite).
    pub max_rel_error: Option<f64>,
    /// Index of the worst element, if any differed.
    pub worst_index: Option<u64>,
}

/// What a state's outputs were verified against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifiedAgainst {
    /// Base's outputs for the same workload.
    Base,
    /// An answer the bench gave.
    Expected,
    /// A user check function.
    Check,
}

/// How a state's outputs were verified before timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerificationRecord {
    /// The reference.
    pub against: VerifiedAgainst,
    /// Whether the outputs passed.
    pub passed: bool,
    /// The tolerances (absent for a user check).
    pub tolerance: Option<Tolerance>,
    /// The comparison (absent for a user check, and for base against itself).
    pub comparison: Option<Comparison>,
    /// What a failed user check said.
    pub message: Option<String>,
}

/// The stopping criterion a state was measured with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriterionRecord {
    /// Its name (`stdrel`, `entropy`, `sample-count`, or a custom one).
    pub name: String,
    /// Its parameters by name.
    pub params: BTreeMap<String, f64>,
}

/// One value of a summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryDatum {
    /// `value`, as nvbench names it.
    pub name: String,
    /// `int64`, `float64` or `string`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The value itself: a number stays a number.
    pub value: Scalar,
}

/// A named statistic of a state, in nvbench's layout (`nv/cold/time/gpu/mean`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The tag that identifies it.
    pub tag: String,
    /// A short column name.
    pub name: String,
    /// How to show it: `duration`, `percentage`, `sample_size`, `byte_rate`, …
    pub hint: String,
    /// A sentence on what it is.
    pub description: String,
    /// Its value, as a one-element list as nvbench writes it.
    pub data: Vec<SummaryDatum>,
}

impl Summary {
    /// A summary of one value.
    pub fn new(tag: &str, name: &str, hint: &str, description: &str, value: Scalar) -> Summary {
        let kind = match value {
            Scalar::Int(_) => "int64",
            Scalar::Float(_) => "float64",
            Scalar::Text(_) => "string",
        };
        Summary {
            tag: tag.into(),
            name: name.into(),
            hint: hint.into(),
            description: description.into(),
            data: vec![SummaryDatum {
                name: "value".into(),
                kind: kind.into(),
                value,
            }],
        }
    }

    /// Its value.
    pub fn value(&self) -> Option<&Scalar> {
        self.data.first().map(|d| &d.value)
    }
}

/// Every kept cold sample, in order, in seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Samples {
    /// Device times (CUDA events; the monotonic clock on a CPU).
    pub gpu: Vec<f64>,
    /// Host wall times per sample, launch overhead included.
    pub cpu: Vec<f64>,
    /// The SM clock of each sample in Hz, as the timestamp kernels around it read it
    /// (`%clock64` cycles over `%globaltimer` nanoseconds on SM 0): a down-clocked sample
    /// shows here. Empty where the backend reads no clock (a CPU) and from benches before
    /// protocol 8.
    #[serde(default)]
    pub sm_clock: Vec<f64>,
}

/// The hot (batched) loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    /// Executions per batch.
    pub batch_size: u64,
    /// Mean time per execution of each batch, in seconds.
    pub batch_means: Vec<f64>,
}

/// The energy of a state's launches (`--energy`, since protocol 9): the device's energy counter
/// read around batches of back-to-back launches, each batch from one update of the counter to
/// a later one, so that the counter's resolution does not enter the numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnergyRecord {
    /// Why no energy was measured (no NVML, a counter the GPU does not have, a CPU backend),
    /// or `None` when it was.
    pub unavailable: Option<String>,
    /// The counter's update interval as observed under load, seconds: what sized the batches.
    pub counter_interval: Option<f64>,
    /// The batches, in order.
    pub batches: Vec<EnergyBatch>,
}

/// One batch of the energy measurement: from one update of the counter to a later one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EnergyBatch {
    /// Executions of the state's launches between the two updates.
    pub launches: u64,
    /// The counter's advance between them, joules.
    pub joules: f64,
    /// Host wall time between them, seconds.
    pub seconds: f64,
    /// Device time of those launches (CUDA events), seconds.
    pub gpu_seconds: f64,
}

impl EnergyBatch {
    /// Joules per execution of the launches.
    pub fn joules_per_launch(&self) -> f64 {
        self.joules / self.launches as f64
    }

    /// Average power over the batch, watts.
    pub fn watts(&self) -> f64 {
        self.joules / self.seconds
    }
}

impl EnergyRecord {
    /// Joules per execution of each batch.
    pub fn joules_per_launch(&self) -> Vec<f64> {
        self.batches
            .iter()
            .map(EnergyBatch::joules_per_launch)
            .filter(|j| j.is_finite())
            .collect()
    }

    /// Average power of each batch, watts.
    pub fn watts(&self) -> Vec<f64> {
        self.batches
            .iter()
            .map(EnergyBatch::watts)
            .filter(|w| w.is_finite())
            .collect()
    }
}

/// One state's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateRecord {
    /// `Device=0 T{ct}=f32 Elements{io}=2^26 …`.
    pub name: String,
    /// The `id` of its device, if one was chosen.
    pub device: Option<u32>,
    /// Index of the type instance.
    pub type_config_index: usize,
    /// Its axis values, in the bench's axis order.
    pub axis_values: Vec<AxisValueRecord>,
    /// How it ended.
    pub status: StateStatus,
    /// nvbench's skip flag.
    pub is_skipped: bool,
    /// Why the bench skipped it.
    pub skip_reason: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// What kind of failure `error` is (absent when it did not fail).
    pub error_kind: Option<ErrorKind>,
    /// Why its cold loop stopped (absent when none ran).
    pub stop: Option<Stop>,
    /// How its outputs were verified, if the bench verified them.
    pub verification: Option<VerificationRecord>,
    /// The variant of the tuned function that ran (`base`, `ipt_8.tpb_128`), if any.
    pub variant: Option<String>,
    /// The stopping criterion.
    pub criterion: Option<CriterionRecord>,
    /// Elements per execution, as the bench declared.
    pub element_count: u64,
    /// Bytes read per execution.
    pub global_memory_read_bytes: u64,
    /// Bytes written per execution.
    pub global_memory_write_bytes: u64,
    /// Statistics by tag.
    pub summaries: Vec<Summary>,
    /// Every kept cold sample (absent when no cold loop ran).
    pub samples: Option<Samples>,
    /// The hot loop, if it ran.
    pub batch: Option<Batch>,
    /// What each kernel the state launched through a kernel handle compiled to, in the
    /// order first launched (empty for CPU benches and kernels loaded by hand).
    #[serde(default)]
    pub kernels: Vec<KernelRecord>,
    /// Its energy under `--energy` (since protocol 9): measured, or why not; `None` without
    /// `--energy` and when no cold loop ran.
    #[serde(default)]
    pub energy: Option<EnergyRecord>,
}

/// What one kernel compiled to, as the driver reports it (`cuFuncGetAttribute`), and the
/// compiler options that made it: what a variant's registers and spills are read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelRecord {
    /// The kernel's name expression (`scale`, `ns::sum<float>`).
    pub name: String,
    /// Registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub registers: u32,
    /// Local memory per thread in bytes: spills and local arrays
    /// (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`).
    pub local_bytes: u32,
    /// Static shared memory per block in bytes (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`).
    pub shared_bytes: u32,
    /// The compiler options of this variant beyond the target architecture, the include
    /// directories and the defines (`-std=c++17`, `--use_fast_math`, `--maxrregcount=32`).
    pub options: Vec<String>,
}

impl StateRecord {
    /// A record of state `name` with `status` and nothing measured: what a bench reports for
    /// a state it skipped, and a starting point for tests and fakes.
    pub fn unmeasured(name: &str, status: StateStatus) -> StateRecord {
        StateRecord {
            name: name.to_string(),
            device: None,
            type_config_index: 0,
            axis_values: Vec::new(),
            status,
            is_skipped: status == StateStatus::Skipped,
            skip_reason: None,
            error: None,
            error_kind: None,
            stop: None,
            verification: None,
            variant: None,
            criterion: None,
            element_count: 0,
            global_memory_read_bytes: 0,
            global_memory_write_bytes: 0,
            summaries: Vec::new(),
            samples: None,
            batch: None,
            kernels: Vec::new(),
            energy: None,
        }
    }

    /// The numeric value of the summary tagged `tag`.
    pub fn summary(&self, tag: &str) -> Option<f64> {
        self.summaries
            .iter()
            .find(|s| s.tag == tag)?
            .value()?
            .as_f64()
    }

    /// The kind of its failure, `None` when it did not fail. A failed state without a kind
    /// (a bench that reports none) counts as [`ErrorKind::Other`].
    pub fn failure(&self) -> Option<ErrorKind> {
        (self.status == StateStatus::Failed || self.error.is_some())
            .then(|| self.error_kind.unwrap_or(ErrorKind::Other))
    }
}
