//! gputune-runtime: what a crate tuned by gputune links.
//!
//! A crate tuned by `cargo gputune` has `#[tune]` functions (from `gputune-macros`), a build
//! script that writes their variants (`build`, feature `build`), and `harness = false` bench
//! targets written with this crate. `cargo gputune` never links that code: it builds the bench
//! binaries, runs them as child processes and reads their JSON (the protocol is
//! `docs/bench-json.md` in the repository). The commands that search, report and apply are in
//! the repository's README and `docs/`; this page is the path through the crate's own API.
//!
//! # A user's path
//!
//! ## 1. Annotate the function: `#[tune]`
//!
//! `#[tune]` declares the tunable parameters, their ranges and `base`, the production default.
//! Each parameter is a `const` in the body, named in upper case. Without the build-script
//! helper (as here) the function is compiled once, with the base values:
//!
//! ```
//! use gputune_macros::tune;
//!
//! /// Sums `data` in chunks of `CHUNK` elements, each with `LANES` independent accumulators.
//! #[tune(lanes = [1, 4, 8], chunk = pow2(8..=12), base(lanes = 4, chunk = 1024))]
//! pub fn sum(data: &[f32]) -> f32 {
//!     let chunk_sum = |c: &[f32]| {
//!         let mut acc = [0.0f32; LANES];
//!         for (i, v) in c.iter().enumerate() {
//!             acc[i % LANES] += v;
//!         }
//!         acc.iter().sum::<f32>()
//!     };
//!     data.chunks(CHUNK).map(chunk_sum).sum()
//! }
//!
//! assert_eq!(sum(&[0.5; 4096]), 2048.0);
//! // The parameters as data, next to the function: names and base values.
//! assert_eq!(SUM_PARAMS, [("lanes", "4"), ("chunk", "1024")]);
//! ```
//!
//! The grammar (ranges, steps, `pow2`, lists, `require(…)`, `size(…)`) is the
//! `gputune-macros` documentation's and `docs/writing.md`'s.
//!
//! ## 2. The build-script helper
//!
//! The crate's `Cargo.toml` has `gputune-macros` and `gputune-runtime` as dependencies,
//! `gputune-runtime` with feature `build` as a build-dependency, `[lib] bench = false`, and
//! its benches as `[[bench]]` targets with `harness = false`. Its `build.rs`:
//!
//! ```no_run
//! # #[cfg(feature = "build")]
//! fn main() {
//!     gputune_runtime::build::main();
//! }
//! # #[cfg(not(feature = "build"))]
//! # fn main() {}
//! ```
//!
//! The helper finds the `#[tune]` functions of `src/`, checks every attribute, and writes to
//! `OUT_DIR` the variants that `GPUTUNE_VARIANTS` selects (`cargo gputune` sets it for each
//! batch it builds; `sum.*` is every variant, `sum.lanes_8.chunk_256` one), each behind its
//! own `cfg`, and a dispatch that picks the variant a bench asks for.
//!
//! ## 3. A bench: `State` and `exec`
//!
//! nvbench's API, in Rust. A bench is a function of a [`State`]: it reads the state's axis
//! values ([`State::get_int64`], …), declares the work ([`State::add_element_count`],
//! [`State::add_global_memory_reads`]) and hands the code to time to [`State::exec`], which
//! runs it until a stopping criterion ([`criterion`]) is satisfied. [`Bench`] names the
//! function and its axes (`add_int64_axis`, `add_int64_power_of_two_axis`, type axes with
//! [`Bench::with_types`] and [`type_instances!`]), says which `#[tune]` function it measures
//! ([`Bench::tunes`]: `--variant LABEL` then runs that variant) and on what
//! ([`Bench::backend`]: the CPU unless told). A bench binary's `main` is
//! [`main`]`(vec![bench, …])`; [`runner::run`] is the same without exiting the process.
//! Inputs made once per workload, however many variants a process runs, come from
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
//! ## 4. On a GPU: the kernel handle
//!
//! With the `cuda` feature (`cargo doc -p gputune-runtime --features cuda` shows these
//! modules), a `static` `kernel::Kernel` holds a CUDA source and the kernel's name, and a
//! `#[tune]` function launches through it: `get(TUNED, …)` compiles the variant with NVRTC,
//! every tuning parameter a `-D` define under its upper-case name, and starts compiling the
//! process's other variants in the background; `check` refuses a launch the compiled kernel or
//! the device cannot take, so that variant is recorded `invalid`, not a crash:
//!
//! ```no_run
//! # #[cfg(feature = "cuda")]
//! # mod gpu {
//! use std::sync::Arc;
//!
//! use gputune_macros::tune;
//! use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
//! use gputune_runtime::kernel::Kernel;
//! use gputune_runtime::BoxError;
//!
//! static SCALE: Kernel = Kernel::new(
//!     r#"__global__ void scale(const float* x, float* y, float a, unsigned n) {
//!         unsigned i = blockIdx.x * TPB + threadIdx.x;
//!         if (i < n) y[i] = a * x[i];
//!     }"#,
//!     "scale",
//! );
//!
//! #[tune(tpb = [128, 256, 512], base(tpb = 256))]
//! pub fn scale(
//!     stream: &Arc<CudaStream>,
//!     x: &CudaSlice<f32>,
//!     y: &mut CudaSlice<f32>,
//!     a: f32,
//! ) -> Result<(), BoxError> {
//!     let n = x.len() as u32;
//!     let kernel = SCALE.get(TUNED, stream, &[])?;
//!     let config = kernel.check(LaunchConfig {
//!         grid_dim: (n.div_ceil(TPB as u32), 1, 1),
//!         block_dim: (TPB as u32, 1, 1),
//!         shared_mem_bytes: 0,
//!     })?;
//!     let mut launch = stream.launch_builder(kernel.function());
//!     launch.arg(x).arg(y).arg(&a).arg(&n);
//!     // SAFETY: the arguments are the kernel's parameters, in order.
//!     unsafe { launch.launch(config) }?;
//!     Ok(())
//! }
//! # }
//! ```
//!
//! Its bench runs on the CUDA backend (`.backend(BackendKind::Cuda)`), gets its stream from
//! `State::cuda`, makes its inputs on the device with `generate` (seeded `uniform`, `normal`,
//! CUB's reduced-entropy values: one launch, where a host loop takes seconds) once per
//! workload, and checks each variant's outputs against base's before timing it:
//!
//! ```no_run
//! # #[cfg(feature = "cuda")]
//! # mod gpu {
//! # use std::sync::Arc;
//! # use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream};
//! # fn scale(_: &Arc<CudaStream>, _: &CudaSlice<f32>, _: &mut CudaSlice<f32>, _: f32)
//! #     -> Result<(), gputune_runtime::BoxError> { Ok(()) }
//! use gputune_runtime::device::BackendKind;
//! use gputune_runtime::{generate, Bench, BenchResult, BoxError, State};
//!
//! fn bench_scale(state: &mut State<'_>) -> BenchResult {
//!     let n = usize::try_from(state.get_int64("Elements")?)?;
//!     state.add_element_count(n as u64);
//!     state.add_global_memory_reads::<f32>(n as u64);
//!     state.add_global_memory_writes::<f32>(n as u64);
//!     let make_buffers = |state: &State<'_>| {
//!         let stream = &state.cuda()?.stream;
//!         let mut x = stream.alloc_zeros::<f32>(n)?;
//!         generate::uniform(stream, &mut x, 0.0, 1.0, 1)?; // seeded: the same on every run
//!         Ok::<_, BoxError>((x, stream.alloc_zeros::<f32>(n)?))
//!     };
//!     state.with_setup(make_buffers, |state, (x, y)| {
//!         state.exec_verified(y, |launch, y| scale(launch.stream()?, x, y, 3.0))
//!     })?
//! }
//!
//! fn main() {
//!     gputune_runtime::main(vec![Bench::new("scale", bench_scale)
//!         .tunes("scale")
//!         .backend(BackendKind::Cuda)
//!         .add_int64_power_of_two_axis("Elements", [20, 24])]);
//! }
//! # }
//! # fn main() {}
//! ```
//!
//! ## 5. Production builds
//!
//! `cargo gputune search` measures the variants, `cargo gputune apply` writes the significant,
//! verified winners to the package's `gputune.toml` (per device model, and per size range with
//! `--per-size`). A build without `GPUTUNE_VARIANTS` (`cargo build`, a dependent crate's build)
//! compiles only the production dispatch: the entry of `gputune.toml` for the device the
//! program runs on, else base ([`tuned`] is its run-time half: which device, which entry). Where
//! the best choice depends on what a program meets only as it runs, [`autotune`] picks a launch
//! parameter while an iterative program runs, and remembers it for the next run.
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
//!   run-time half); `build` (feature `build`): the build-script helper that generates it.
//! - `kernel` (feature `cuda`): the kernel handle, above.
//! - `generate` (feature `cuda`): device-side data generators, like CUB's `gen` (seeded
//!   uniform, normal and reduced-entropy values written by the GPU).

/// Says on stderr, past libtest's capture (so it shows without `--nocapture` too), that the
/// running test checked nothing on this machine (`skipped: TEST: WHY`): a test that needs a GPU,
/// NVRTC or nvcc and returns early where they are missing must not read as a check that passed.
pub fn skipped(why: &str) {
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("test").to_owned();
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
}

pub mod autotune;
pub mod axis;
pub mod backend;
pub mod bench;
#[cfg(feature = "build")]
pub mod build;
pub mod capture;
pub mod cli;
pub mod criterion;
#[cfg(any(feature = "cuda", feature = "build"))]
mod cuda_text;
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
