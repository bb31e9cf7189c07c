//! The run's results: as plain data ([`RunReport`]), as the protocol's typed documents
//! ([`wire`]) and as a human table ([`table`]).
//!
//! The wire layout is `gputune-protocol`'s, documented in `docs/bench-json.md`.

pub mod table;
pub mod wire;

pub use table::{format_duration, to_table};
pub use wire::{axis_docs, device_record, results_doc, state_record, summaries};

use gputune_protocol::StateStatus;

use crate::axis::{Axis, AxisValue};
use crate::device::{BackendKind, DeviceInfo};
use crate::state::Outcome;

/// Everything one run produced, as plain data.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The command line.
    pub argv: Vec<String>,
    /// Devices states ran on.
    pub devices: Vec<DeviceInfo>,
    /// Benches, in registration order.
    pub benchmarks: Vec<BenchReport>,
    /// Where and how the run measured, read at the start of its first pass.
    pub provenance: Option<gputune_protocol::Provenance>,
}

/// One bench's results.
#[derive(Debug, Clone)]
pub struct BenchReport {
    /// Bench name.
    pub name: String,
    /// Index in the binary's registration order.
    pub index: usize,
    /// The tuned function it tunes, if declared.
    pub tunes: Option<String>,
    /// The backend it declares.
    pub backend: BackendKind,
    /// Its axes after `-a` overrides.
    pub axes: Vec<Axis>,
    /// Its states, in run order.
    pub states: Vec<StateReport>,
}

/// One state's results.
#[derive(Debug, Clone)]
pub struct StateReport {
    /// `Device=0 T{ct}=f32 Elements{io}=2^20`.
    pub name: String,
    /// Index into [`RunReport::devices`], if it ran on a device.
    pub device: Option<usize>,
    /// Index of the type instance.
    pub type_config_index: usize,
    /// Axis values by full name.
    pub axis_values: Vec<(String, AxisValue)>,
    /// What happened.
    pub outcome: Outcome,
}

impl StateReport {
    /// How it ended: a timed-out state (the cold loop hit its wall-clock limit) still has
    /// its samples.
    pub fn status(&self) -> StateStatus {
        if self.outcome.skipped.is_some() {
            StateStatus::Skipped
        } else if self.outcome.error.is_some() || self.outcome.cold.is_none() {
            StateStatus::Failed
        } else if self.outcome.cold.as_ref().is_some_and(|c| c.timed_out) {
            StateStatus::Timeout
        } else {
            StateStatus::Ok
        }
    }
}
