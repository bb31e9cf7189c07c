//! Measuring: bench binaries built, run through the bench protocol (`protocol`: `--list`,
//! `--devices`, runs whose results come back as events) and what they measure stored as it
//! comes. `search` builds batches of variants and runs them (`runs`: the passes that `search`
//! and `run-bundle` share; `measured` and `finals`: the first pass and the second that
//! decides); `bundle` builds here and measures elsewhere, as one search over the GPUs of one
//! host (`devices`: one of the search's `lanes` per GPU), or split into `shard`s of a SLURM job
//! array (`slurm`); `remeasure` measures `check`'s UNDECIDED workloads again, base and variants
//! `interleave`d in one process.
//!
//! May import: `host`, `strategy` and `results` (the store it writes, the scores and lines it
//! prints as variants finish). Never `shell`: it takes typed options (`search::Settings`,
//! `bundle::RunBundle`, `remeasure::Settings`, …), not clap's types.

pub mod bundle;
pub mod counters;
pub mod devices;
mod energy;
mod finals;
mod interleave;
pub(crate) mod lanes;
mod listed;
mod measured;
mod one_gpu;
mod probed;
pub mod protocol;
pub mod remeasure;
pub mod runs;
pub mod search;
pub mod shard;
pub mod slurm;
