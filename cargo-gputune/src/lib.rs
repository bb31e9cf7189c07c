//! `cargo gputune` as a library: the stages (discovery, builds, runs, store, scoring,
//! reporting) behind a thin `main`, as cargo-nextest keeps its runner apart from its CLI. It
//! never links user code: it talks to bench binaries as child processes through the typed
//! protocol of `gputune-protocol` (`docs/bench-json.md`).
//!
//! Exit codes: 0 success, 1 a regression (`check`) or a failed operation, 2 usage error;
//! Ctrl-C ends it by SIGINT (130 in a shell) after one line on stderr ([`interrupt`]).

pub mod apply;
pub mod bundle;
pub mod cargo;
pub mod check;
pub mod cli;
mod commands;
pub mod counters;
pub mod devices;
pub mod export;
mod finals;
pub mod html;
pub mod import;
pub mod interrupt;
pub mod lock;
mod measured;
pub mod merge;
pub mod output;
pub mod per_size;
pub mod plot;
pub mod present;
mod probed;
pub mod process;
pub mod protocol;
pub mod provenance;
pub mod replay;
pub mod report;
pub mod resolution;
pub mod results;
pub mod runs;
pub mod score;
pub mod search;
pub mod shard;
pub mod slurm;
pub mod store;
pub mod strategy;
pub mod usage;

pub use commands::run;

/// Exit code of a usage error, as cargo and clap use it.
pub const EXIT_USAGE: i32 = 2;

/// Runs `cargo gputune` on a command line (`argv[0]` is the program) and returns the
/// process exit code; errors are printed to stderr as `error: …` with their causes.
pub fn main_with(mut argv: Vec<std::ffi::OsString>) -> i32 {
    use clap::Parser;
    // `cargo gputune …` runs `cargo-gputune gputune …`; a bundle's copy is run directly
    // (`DIR/cargo-gputune run-bundle DIR`), so the subcommand name is optional.
    if argv.get(1).is_some_and(|a| a != "gputune") {
        argv.insert(1, "gputune".into());
    }
    let cli::CargoCli::Gputune(cli) = cli::CargoCli::parse_from(argv);
    interrupt::install();
    let mut out = output::Output::new(cli.cargo.quiet, cli.cargo.verbose, cli.cargo.color);
    match run(cli, &mut out) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            // A `Usage` added with `.context(…)` is found by `downcast_ref`, one at the root
            // or in a source by the chain.
            let usage = e.downcast_ref::<crate::usage::Usage>().is_some()
                || e.chain().any(|c| c.is::<crate::usage::Usage>());
            if usage {
                EXIT_USAGE
            } else {
                1
            }
        }
    }
}
