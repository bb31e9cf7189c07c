//! Where lines go: progress and status to stderr (for people; silenced by `-q`), results to
//! stdout (for people and pipes alike).

use std::io::{IsTerminal, Write};

use crate::cli::{CargoArgs, Color};

/// The CLI's output settings.
pub struct Output {
    quiet: bool,
    color: bool,
    /// Result lines go to stderr, because stdout carries a JSON document.
    pub json: bool,
}

impl Output {
    /// From `-q` and `--color` (and `NO_COLOR`).
    pub fn new(args: &CargoArgs) -> Output {
        let color = match args.color {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => {
                std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
            }
        };
        Output {
            quiet: args.quiet,
            color,
            json: false,
        }
    }

    /// A status line on stderr, like cargo's `Compiling …`.
    pub fn status(&mut self, text: &str) {
        if self.quiet {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = if self.color {
            writeln!(err, "\x1b[1;32m{:>12}\x1b[0m {}", "gputune", text)
        } else {
            writeln!(err, "{:>12} {}", "gputune", text)
        };
    }

    /// A result line on stdout (stderr in JSON mode).
    pub fn line(&mut self, text: &str) {
        if self.json {
            eprintln!("{text}");
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}
