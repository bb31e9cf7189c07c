//! The typed contract between `cargo gputune` and bench binaries.
//!
//! `cargo gputune` never links user code: it runs bench binaries as child processes, passes
//! flags in ([`BenchArgs`]) and reads JSON out ([`ListDoc`], [`DevicesDoc`], [`ResultsDoc`],
//! [`Event`]s of [`StateRecord`]s); the build helper leaves a [`manifest::Manifest`] for it.
//! Both sides use these types, so the contract is written once and versioned once
//! ([`PROTOCOL_VERSION`]); `docs/bench-json.md` is its human description, checked against these
//! types by a test. Kinds and statuses are enums in Rust and stable snake-case strings on the
//! wire and in the store.

pub mod axis_spec;
pub mod capture;
pub mod documents;
pub mod exit;
pub mod flags;
#[cfg(feature = "toml")]
pub mod gputune_toml;
pub mod hash;
pub mod manifest;
pub mod provenance;
pub mod record;
pub mod status;
pub mod units;
pub mod workloads;

pub use documents::{
    AxisDoc, AxisKind, AxisValueDoc, BenchListing, BenchResults, Device, DevicesDoc, Event,
    ListDoc, Meta, ResultsDoc, Timeline,
};
pub use exit::ExitCode;
pub use flags::BenchArgs;
pub use provenance::{CudaProvenance, Provenance};
pub use record::{
    AxisValueRecord, Batch, Comparison, CriterionRecord, EnergyBatch, EnergyRecord, ErrorKind,
    KernelRecord, Samples, Scalar, StateRecord, StateStatus, Stop, StopReason, Summary,
    SummaryDatum, Tolerance, VerificationRecord, VerifiedAgainst,
};
pub use status::Status;

/// The version of the whole contract: flags, documents, events and their meaning. Every
/// document carries it; a reader refuses another. 4 made the contract typed: numbers are
/// numbers, the stop reason is a field, one version instead of protocol 3 and JSON 1.4; 5
/// added the `process` event (where a process's time went); 6 added `--more-on-stdin` and the
/// `pass_done` event (further passes in one process); 7 added each state's `kernels` (what
/// the kernels it launched compiled to: registers, local and shared memory, options); 8 added
/// the `provenance` event and `meta.provenance` (where and how a pass measured: toolchain,
/// host, driver, NVRTC, clocks, power limit) and each sample's SM clock (`samples.sm_clock`);
/// 9 added `--energy` and each state's `energy` (NVML's energy counter around batches of
/// launches: joules per launch and power); 10 added `--tie-margin` and the `tied` stop (an
/// equivalence margin under `--decide`) and the tolerance's `floor` (relative to the output);
/// 11 added `--workloads` (only the listed points of the axes' product run).
pub const PROTOCOL_VERSION: u32 = 11;
