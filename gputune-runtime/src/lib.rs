//! gputune-runtime: what a crate tuned by gputune links.
//!
//! - [`Bench`], [`State`] and [`main`]: nvbench's benchmark API for `harness = false` bench
//!   targets.
//! - [`criterion`]: when to stop sampling (stdrel, entropy, sample-count, custom).
//! - [`measure`]: the cold and hot timing loops, backend-agnostic.
//! - [`backend`]: the CPU backend (monotonic clock) and, with the `cuda` feature, the CUDA
//!   backend (cudarc, dynamically loaded).
//! - [`verify`]: outputs checked against base (or an answer) before a variant is timed.
//! - [`stats`]: summary statistics; [`output`]: the JSON document and the human table.
//! - [`autotune`]: the runtime autotuner (HOOMD-blue's, extended): picks a launch parameter
//!   while an iterative program runs, and remembers it for the next run.
//! - [`tuned`]: which variant of a `#[tune]` function runs (the generated dispatch's
//!   run-time half); [`build`] (feature `build`): the build-script helper that generates it.
//! - `generate` (feature `cuda`): device-side data generators, like CUB's `gen` (seeded
//!   uniform, normal and reduced-entropy values written by the GPU).

pub mod autotune;
pub mod axis;
pub mod backend;
pub mod bench;
#[cfg(feature = "build")]
pub mod build;
pub mod cli;
pub mod criterion;
pub mod device;
pub mod error;
#[cfg(feature = "cuda")]
pub mod generate;
pub mod kept;
#[cfg(feature = "cuda")]
pub mod kernel;
pub mod launch;
mod launched;
pub mod measure;
pub mod output;
pub mod runner;
pub mod state;
pub mod stats;
mod timeline;
pub mod tuned;
pub mod verify;

pub use bench::{Bench, BenchFn};
pub use error::{BenchResult, BoxError, Error, ErrorKind, Result};
pub use launch::Launch;
pub use runner::{main, main_with};
pub use state::State;

#[cfg(feature = "cuda")]
pub use cudarc;

#[cfg(all(test, feature = "cuda"))]
/// Says on stderr, past libtest's capture (so it shows without `--nocapture` too), that the
/// running test checked nothing on this machine: a pass that returned early must not read as a
/// check that passed.
pub(crate) fn test_skipped(why: &str) {
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("test").to_owned();
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
}
