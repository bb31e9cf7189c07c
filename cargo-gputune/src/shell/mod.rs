//! The shell: the command line and the commands. `cli` holds clap's types, and only this
//! folder sees them: `commands` (and `check`, the `check` command) turn each parsed command
//! line into typed options of the stages (`search::Settings`, `cargo::Options`,
//! `bundle::RunBundle`, …) and calls into them; `interrupt` is what Ctrl-C says.
//!
//! May import: every other folder. Nothing imports it but `lib.rs` (for `main`).

mod captured;
pub mod check;
pub mod cli;
mod commands;
pub mod interrupt;

pub use commands::run;

use crate::host::output;

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
            let usage = e.downcast_ref::<crate::host::usage::Usage>().is_some()
                || e.chain().any(|c| c.is::<crate::host::usage::Usage>());
            if usage {
                EXIT_USAGE
            } else {
                1
            }
        }
    }
}
