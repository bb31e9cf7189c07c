//! `cargo gputune` as a library: the stages (discovery, builds, runs, store, scoring,
//! reporting) behind a thin `main`, as cargo-nextest keeps its runner apart from its CLI. It
//! never links user code: it talks to bench binaries as child processes through the typed
//! protocol of `gputune-protocol` (`docs/bench-json.md`).
//!
//! Exit codes: 0 success, 1 a regression (`check`) or a failed operation, 2 usage error;
//! Ctrl-C ends it by SIGINT (130 in a shell) after one line on stderr
//! ([`shell::interrupt`]).
//!
//! The rooms, from the top down; each folder's own comment says what it holds and what it
//! may import, and no folder imports one above it:
//! - [`shell`]: the command line (clap's types stop here), each subcommand as calls into the
//!   stages with typed options, Ctrl-C.
//! - [`measure`]: building and running bench binaries and storing what they measure: search,
//!   bundles and their shards, several GPUs, SLURM, `check --remeasure`.
//! - [`replay`]: a strategy run against a store's recorded results instead of a GPU.
//! - [`results`]: the store and everything read from it: scores, `report` (terminal, plots,
//!   HTML), per-size winners, `apply`, `check`'s verdicts, `merge`, `import`/`export`.
//! - [`strategy`]: the search strategies, behind one narrow interface.
//! - [`host`]: what every stage stands on: cargo, child processes, file locks, where lines go,
//!   the usage error.

pub mod host;
pub mod measure;
pub mod replay;
pub mod results;
pub mod shell;
pub mod strategy;

pub use shell::{main_with, run, EXIT_USAGE};
