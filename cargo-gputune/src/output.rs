//! Where lines go: progress and status to stderr (for people; silenced by `-q`), results to
//! stdout (for people and pipes alike). On a terminal a search draws a progress bar with its
//! ETA under the result lines; elsewhere (a pipe, a CI log) it prints plain lines only.

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::{CargoArgs, Color};

/// The CLI's output settings.
pub struct Output {
    quiet: bool,
    verbose: u8,
    color: bool,
    terminal: bool,
    bar: Option<ProgressBar>,
    /// Result lines go to stderr, because stdout carries a JSON document.
    pub json: bool,
}

impl Output {
    /// Quiet and plain: nothing but result lines (for tests and callers of the library that
    /// print their own way).
    pub fn silent() -> Output {
        Output {
            quiet: true,
            verbose: 0,
            color: false,
            terminal: false,
            bar: None,
            json: false,
        }
    }

    /// From `-q`, `-v` and `--color` (and `NO_COLOR`).
    pub fn new(args: &CargoArgs) -> Output {
        let terminal = std::io::stderr().is_terminal();
        let color = match args.color {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => std::env::var_os("NO_COLOR").is_none() && terminal,
        };
        Output {
            quiet: args.quiet,
            verbose: if args.quiet { 0 } else { args.verbose },
            color,
            terminal,
            bar: None,
            json: false,
        }
    }

    /// Runs `f` with the progress bar (if any) taken off the screen, so that lines written
    /// meanwhile do not tear it.
    fn around_bar(&self, f: impl FnOnce()) {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    fn write_status(&self, word: &str, text: &str) {
        self.around_bar(|| {
            let mut err = std::io::stderr().lock();
            let _ = if self.color {
                writeln!(err, "\x1b[1;32m{word:>12}\x1b[0m {text}")
            } else {
                writeln!(err, "{word:>12} {text}")
            };
        });
    }

    /// A status line on stderr, like cargo's `Compiling …`.
    pub fn status(&mut self, text: &str) {
        if !self.quiet {
            self.write_status("gputune", text);
        }
    }

    /// A line shown with `-v` only: the commands a search runs.
    pub fn verbose(&mut self, text: &str) {
        if self.verbose > 0 {
            self.write_status("Running", text);
        }
    }

    /// A result line on stdout (stderr in JSON mode).
    pub fn line(&mut self, text: &str) {
        self.around_bar(|| {
            if self.json {
                eprintln!("{text}");
                return;
            }
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{text}");
            let _ = out.flush();
        });
    }

    /// Starts a progress bar of `len` steps on a terminal (nothing otherwise, or with `-q`).
    pub fn start_progress(&mut self, len: u64, prefix: &str) {
        self.finish_progress();
        if self.quiet || !self.terminal {
            return;
        }
        let template = "{prefix:>12.cyan.bold} [{bar:30}] {pos}/{len} ETA {eta} {wide_msg}";
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr())
            .with_style(style)
            .with_prefix(prefix.to_string());
        self.bar = Some(bar);
    }

    /// What the search does right now, next to the bar.
    pub fn progress_message(&mut self, text: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(text.to_string());
        }
    }

    /// One step done.
    pub fn advance(&mut self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Removes the bar.
    pub fn finish_progress(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.finish_progress();
    }
}
