//! gputune-runtime: what a crate tuned by gputune links.
//!
//! A crate tuned by `cargo gputune` has `#[tune]` functions (from `gputune-macros`), a build
//! script that writes their variants (`build`, feature `build`), and `harness = false` bench
//! targets written with this crate. `cargo gputune` never links that code: it builds the bench
//! binaries, runs them as child processes and reads their JSON (the protocol is
//! `docs/bench-json.md` in the repository). How to write such a crate, and the commands that
//! search, report and apply: the repository's README ("Your first tuned kernel") and `docs/`.
//!
//! # The bench API
//!
//! nvbench's, in Rust. A bench is a function of a [`State`]: it reads the state's axis values
//! ([`State::get_int64`], …), declares the work ([`State::add_element_count`],
//! [`State::add_global_memory_reads`]) and hands the code to time to [`State::exec`], which
//! runs it until a stopping criterion ([`criterion`]) is satisfied. [`Bench`] names the
//! function and its axes (`add_int64_axis`, `add_int64_power_of_two_axis`, type axes with
//! [`Bench::with_types`] and [`type_instances!`]), says which `#[tune]` function it measures
//! ([`Bench::tunes`]) and on what ([`Bench::backend`]: the CPU unless told). A bench binary's
//! `main` is [`main`]`(vec![bench, …])`; [`runner::run`] is the same without exiting the
//! process. Inputs made once per workload, however many variants a process runs, come from
//! [`State::with_setup`]; [`State::verify`] and [`State::exec_verified`] check a variant's
//! outputs against base's before timing it ([`verify`]).
//!
//! A CPU bench, run here as `cargo gputune` runs a bench binary (with a fixed number of
//! samples, so that the example is quick):
//!
//! ```
//! use gputune_runtime::{criterion::Criteria, Bench, BenchResult, State};
//!
//! fn sum(state: &mut State<'_>) -> BenchResult {
//!     let n = usize::try_from(state.get_int64("Elements")?)?;
//!     let data = vec![1.0f32; n];
//!     state.add_element_count(n as u64);
//!     state.add_global_memory_reads::<f32>(n as u64);
//!     state.exec(|_launch| {
//!         std::hint::black_box(data.iter().sum::<f32>());
//!         Ok(())
//!     });
//!     Ok(())
//! }
//!
//! let benches = vec![Bench::new("sum", sum).add_int64_power_of_two_axis("Elements", [10, 12])];
//! let json = std::env::temp_dir().join(format!("gputune-guide-{}.json", std::process::id()));
//! let args: Vec<String> = ["sum", "--stopping-criterion", "sample-count", "--target-samples", "20"]
//!     .into_iter()
//!     .map(String::from)
//!     .chain(["--no-batch".into(), "--json".into(), json.display().to_string()])
//!     .collect();
//! // A bench binary's `fn main() { gputune_runtime::main(benches) }` does this with its own
//! // command line, then exits with the code.
//! let code = gputune_runtime::runner::run(&args, benches, Criteria::builtin())?;
//! assert_eq!(code, 0);
//!
//! // The results document `cargo gputune` reads: one state per axis value, every sample kept.
//! let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
//! let states = doc["benchmarks"][0]["states"].as_array().expect("states");
//! assert_eq!(states.len(), 2);
//! for state in states {
//!     assert_eq!(state["status"], "ok");
//!     assert_eq!(state["samples"]["cpu"].as_array().map(Vec::len), Some(20));
//! }
//! # std::fs::remove_file(&json)?;
//! # Ok::<(), gputune_runtime::BoxError>(())
//! ```
//!
//! # On a GPU
//!
//! With the `cuda` feature (`cargo doc -p gputune-runtime --features cuda` shows these
//! modules): `kernel::Kernel` is the kernel handle a `#[tune]` function launches through (the
//! CUDA source and the kernel's name; `get(TUNED, …)` compiles the variant with NVRTC, every
//! tuning parameter a `-D` define, and starts compiling the process's other variants in the
//! background); `generate` makes inputs on the device (seeded `uniform`, `normal`, and CUB's
//! reduced-entropy values); a CUDA bench adds `.backend(BackendKind::Cuda)` and gets its
//! context and stream from `State::cuda`.
//!
//! # The modules
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
//! - `kernel` (feature `cuda`): the kernel handle, above.
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
mod kept;
#[cfg(feature = "cuda")]
pub mod kernel;
pub mod launch;
mod launched;
pub mod measure;
pub mod output;
pub mod provenance;
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
