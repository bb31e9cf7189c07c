//! The documents a bench binary prints or writes: `--list`, `--devices`, the results of
//! `--json`, and the `--jsonl` event stream.

use serde::{Deserialize, Serialize};

use crate::provenance::Provenance;
use crate::record::{Scalar, StateRecord};

/// Which backend measures a bench's states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// CPU code timed with a monotonic clock.
    Cpu,
    /// CUDA kernels timed with CUDA events.
    Cuda,
}

impl Backend {
    /// `cpu` or `cuda`.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// The kind of an axis's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AxisKind {
    /// 64-bit integers (also power-of-two axes, whose `flags` say `pow2`).
    Int64,
    /// 64-bit floats.
    Float64,
    /// Strings.
    String,
    /// Rust types a generic bench is instantiated for: the compile-time workloads.
    Type,
}

/// One value of an axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AxisValueDoc {
    /// As `-a` accepts it and state names show it (`2^20`, `f32`).
    pub input_string: String,
    /// nvbench's description (empty).
    pub description: String,
    /// The value (a number for numeric axes).
    pub value: Scalar,
}

/// One axis of a bench.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AxisDoc {
    /// The full name, marks included (`Elements{io}`).
    pub name: String,
    /// The name without marks (`Elements`).
    pub plain_name: String,
    /// A `{ct}` axis: a compile-time workload.
    pub compile_time: bool,
    /// An `{io}` axis: its values are in order of importance.
    pub importance_ordered: bool,
    /// The kind of its values.
    #[serde(rename = "type")]
    pub kind: AxisKind,
    /// `pow2` for power-of-two axes, else empty.
    pub flags: String,
    /// Its values, in declared order.
    pub values: Vec<AxisValueDoc>,
}

impl AxisDoc {
    /// The values as `-a` and state names write them.
    pub fn input_strings(&self) -> Vec<String> {
        self.values.iter().map(|v| v.input_string.clone()).collect()
    }
}

/// One bench of a binary, as `--list` gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchListing {
    /// Its name.
    pub name: String,
    /// Its index in the binary's registration order.
    pub index: usize,
    /// The tuned function it tunes, if any.
    pub tunes: Option<String>,
    /// The backend it declares.
    pub backend: Backend,
    /// How many states its axes make.
    pub states: usize,
    /// Its axes after `-a`, in declaration order.
    pub axes: Vec<AxisDoc>,
}

/// What `--list` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListDoc {
    /// [`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION).
    pub protocol: u32,
    /// The benches.
    pub benchmarks: Vec<BenchListing>,
}

/// A device, as a bench identifies it. Fields a backend cannot know are `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// Ordinal within its backend.
    pub id: u32,
    /// The backend it belongs to.
    pub backend: Backend,
    /// Marketing name (`NVIDIA H100 80GB HBM3`, or the CPU model).
    pub name: String,
    /// Compute capability as major·10 + minor (CUDA only).
    pub sm_version: Option<u32>,
    /// Default SM clock in Hz.
    pub sm_default_clock_rate: Option<f64>,
    /// Streaming multiprocessors, or CPU cores.
    pub number_of_sms: Option<u32>,
    /// Maximum threads per block.
    pub max_threads_per_block: Option<u32>,
    /// Global memory in bytes.
    pub global_memory_size: Option<u64>,
    /// Peak memory clock in Hz.
    pub global_memory_bus_peak_clock_rate: Option<f64>,
    /// Memory bus width in bits.
    pub global_memory_bus_width: Option<u32>,
    /// Peak bandwidth in bytes/s: 2 · memory clock · bus width / 8.
    pub global_memory_bus_bandwidth: Option<f64>,
    /// Last-level cache in bytes.
    pub l2_cache_size: Option<u64>,
    /// Shared memory per block in bytes (opt-in maximum).
    pub shared_memory_per_block: Option<u64>,
    /// Whether ECC is on.
    pub ecc_state: Option<bool>,
}

impl Device {
    /// The architecture results are keyed by: `sm_90`, or `cpu`.
    pub fn arch(&self) -> String {
        match (self.backend, self.sm_version) {
            (Backend::Cuda, Some(v)) => format!("sm_{v}"),
            _ => "cpu".to_string(),
        }
    }

    /// The identity a store keys results by: devices of one identity are interchangeable
    /// for timing (`NVIDIA H200|sm_90|sms=132|bus=6144|ecc=true`).
    pub fn identity(&self) -> String {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "null".into());
        format!(
            "{}|{}|sms={}|bus={}|ecc={}",
            self.name,
            self.arch(),
            opt(self.number_of_sms.map(|v| v.to_string())),
            opt(self.global_memory_bus_width.map(|v| v.to_string())),
            opt(self.ecc_state.map(|v| v.to_string())),
        )
    }
}

/// What `--devices` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DevicesDoc {
    /// [`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION).
    pub protocol: u32,
    /// The devices the selected benches need.
    pub devices: Vec<Device>,
}

/// The results document's `meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// The bench's command line.
    pub argv: Vec<String>,
    /// [`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION).
    pub protocol: u32,
    /// The gputune version that wrote it.
    pub gputune: String,
    /// Where and how the process measured, read at the start of its first pass (since
    /// protocol 8; `None` from a bench that did not say).
    #[serde(default)]
    pub provenance: Option<Provenance>,
}

/// One bench's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    /// Its name.
    pub name: String,
    /// Its index in the binary's registration order.
    pub index: usize,
    /// The tuned function it tunes, if any.
    pub tunes: Option<String>,
    /// The backend it declares.
    pub backend: Backend,
    /// Its axes after `-a`.
    pub axes: Vec<AxisDoc>,
    /// Its states, in run order.
    pub states: Vec<StateRecord>,
}

/// What `--json FILE` writes: nvbench's layout, typed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultsDoc {
    /// The run.
    pub meta: Meta,
    /// The devices states ran on.
    pub devices: Vec<Device>,
    /// The benches.
    pub benchmarks: Vec<BenchResults>,
}

/// One line of the `--jsonl` stream, written whole and flushed when it happens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A requested variant starts (`None` without `--variant`: the production choice).
    Variant {
        /// The bench.
        bench: String,
        /// The variant's label.
        variant: Option<String>,
    },
    /// A state finished.
    State {
        /// The bench.
        bench: String,
        /// The variant's label.
        variant: Option<String>,
        /// The state, as in the results document.
        state: Box<StateRecord>,
    },
    /// Where and how the pass that starts measured: the first event of every pass, before
    /// its first variant (since protocol 8).
    Provenance {
        /// What the process read at the start of the pass.
        provenance: Box<Provenance>,
        /// The device the pass measures on, as `--devices` describes it, so that the caller
        /// needs no probe process of its own to learn it (`None` from a bench that does not
        /// send it: the caller then probes).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        device: Option<Box<Device>>,
    },
    /// Under `--more-on-stdin`: a pass's variants are all done, and the process waits for
    /// the next pass's line on stdin.
    PassDone,
    /// The process is done measuring: where its wall time went. The last event of a process
    /// that ends normally.
    Process {
        /// Where the time went.
        timeline: Timeline,
    },
}

/// Where a bench process's wall time went, in seconds: what stood between its start and its
/// samples (issue 15's critical path). The parts overlap nothing but `total`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// From the process's start to its first cold sample; `null` when it took none.
    pub first_sample: Option<f64>,
    /// Opening the devices (on a GPU, creating the CUDA context).
    pub device_open: f64,
    /// Inside `State::with_setup`'s setup closures (host-side data, device buffers).
    pub setup: f64,
    /// Running base for the reference outputs that verification compares with.
    pub reference: f64,
    /// Waiting for kernels to compile (NVRTC): what background compilation did not hide.
    pub compile_wait: f64,
    /// Inside the cold and hot measurement loops (warm-up included).
    pub measure: f64,
    /// The kept cold samples' device times, summed: the time the kernels themselves ran, the
    /// floor under `measure` (since protocol 7; 0 from older benches).
    #[serde(default)]
    pub kernels: f64,
    /// From the process's start to this event.
    pub total: f64,
}
