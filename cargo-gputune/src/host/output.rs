//! Where lines go: progress and status to stderr (for people; silenced by `-q`), results to
//! stdout (for people and pipes alike). On a terminal a search draws a progress bar with its
//! ETA under the result lines; elsewhere (a pipe, a CI log) it prints plain lines only.
//! `--color` (and a non-empty `NO_COLOR`) decides colour for the status lines and the bar
//! alike.

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Color {
    /// On a terminal, unless NO_COLOR is set and not empty.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// The CLI's output settings.
pub struct Output {
    quiet: bool,
    verbose: u8,
    color: bool,
    terminal: bool,
    bar: Option<ProgressBar>,
    /// Whether the bar shows its ETA: only once a step was measured, since before that
    /// (while the first batch builds) it has nothing to estimate from.
    eta_shown: bool,
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
            eta_shown: false,
            json: false,
        }
    }

    /// From `-q`, `-v` (how many) and `--color` (and `NO_COLOR`).
    pub fn new(quiet: bool, verbose: u8, color: Color) -> Output {
        let terminal = std::io::stderr().is_terminal();
        let color = use_color(color, std::env::var_os("NO_COLOR"), terminal);
        // The progress bar draws through `console`, which decides colour on its own (and
        // takes an empty NO_COLOR for a set one): it follows this decision instead.
        console::set_colors_enabled_stderr(color);
        Output {
            quiet,
            verbose: if quiet { 0 } else { verbose },
            color,
            terminal,
            bar: None,
            eta_shown: false,
            json: false,
        }
    }

    /// The same settings without the progress bar: for a thread that prints beside this
    /// output (a GPU's lane of a search on several GPUs), whose lines may cross the bar.
    pub fn detached(&self) -> Output {
        Output {
            quiet: self.quiet,
            verbose: self.verbose,
            color: self.color,
            terminal: self.terminal,
            bar: None,
            eta_shown: false,
            json: self.json,
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
        self.start_progress_on(len, prefix, ProgressDrawTarget::stderr());
    }

    fn start_progress_on(&mut self, len: u64, prefix: &str, target: ProgressDrawTarget) {
        let bar = ProgressBar::with_draw_target(Some(len), target)
            .with_style(bar_style(self.color, false))
            .with_prefix(prefix.to_string());
        self.bar = Some(bar);
        self.eta_shown = false;
    }

    /// What the search does right now, next to the bar.
    pub fn progress_message(&mut self, text: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(text.to_string());
        }
    }

    /// One step measured; from the first on, the bar shows its ETA.
    pub fn advance(&mut self) {
        if let Some(bar) = &self.bar {
            if !self.eta_shown {
                bar.set_style(bar_style(self.color, true));
                self.eta_shown = true;
            }
            bar.inc(1);
        }
    }

    /// One step found done already (stored by an earlier search): it counts, but took no
    /// time, so it is left out of the ETA's rate.
    pub fn skip(&mut self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
            bar.reset_eta();
        }
    }

    /// Removes the bar.
    pub fn finish_progress(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// Colour for `--color choice`, the `NO_COLOR` variable and whether stderr is a terminal.
/// As no-color.org says, only a non-empty `NO_COLOR` turns colour off.
fn use_color(choice: Color, no_color: Option<std::ffi::OsString>, terminal: bool) -> bool {
    match choice {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => terminal && !no_color.is_some_and(|v| !v.is_empty()),
    }
}

/// The bar's look: colour only with `color`, the ETA only with `eta`. The bar takes the
/// width that is left (`wide_bar`), so the message after it is never cut.
fn bar_template(color: bool, eta: bool) -> String {
    format!(
        "{} [{{wide_bar}}] {{pos}}/{{len}}{} {{msg}}",
        if color {
            "{prefix:>12.cyan.bold}"
        } else {
            "{prefix:>12}"
        },
        if eta { " ETA {eta}" } else { "" }
    )
}

fn bar_style(color: bool, eta: bool) -> ProgressStyle {
    ProgressStyle::with_template(&bar_template(color, eta))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

impl Drop for Output {
    fn drop(&mut self) {
        self.finish_progress();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use indicatif::TermLike;

    use super::*;

    #[test]
    fn only_a_non_empty_no_color_turns_colour_off() {
        let set = |v: &str| Some(std::ffi::OsString::from(v));
        assert!(use_color(Color::Auto, None, true));
        assert!(use_color(Color::Auto, set(""), true));
        assert!(!use_color(Color::Auto, set("1"), true));
        assert!(!use_color(Color::Auto, None, false));
        assert!(!use_color(Color::Never, None, true));
        assert!(use_color(Color::Always, set("1"), false));
    }

    /// An 80-column terminal that keeps what is drawn on it.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<Vec<String>>>);

    impl Screen {
        fn last(&self) -> String {
            let lines = self.0.lock().expect("screen");
            lines
                .iter()
                .rev()
                .find(|l| !l.is_empty())
                .cloned()
                .unwrap_or_default()
        }
        fn all(&self) -> String {
            self.0.lock().expect("screen").concat()
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            80
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(s)
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().expect("screen").push(s.to_string());
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_bar_hides_its_eta_until_a_step_was_measured_and_keeps_its_message_whole() {
        let screen = Screen::default();
        let mut out = Output::silent();
        out.start_progress_on(
            288,
            "Searching",
            ProgressDrawTarget::term_like(Box::new(screen.clone())),
        );
        let bar = out.bar.clone().expect("a bar");
        out.progress_message("building 16 variants");
        bar.force_draw();
        let line = screen.last();
        assert!(
            line.contains("Searching") && line.ends_with("building 16 variants"),
            "{line:?}"
        );
        assert!(!line.contains("ETA"), "{line:?}");
        // Skipped (stored) steps do not show an ETA either.
        out.skip();
        bar.force_draw();
        assert!(!screen.last().contains("ETA"), "{:?}", screen.last());
        out.progress_message("running 16 variants [T=f32,U=i32]");
        out.advance();
        bar.force_draw();
        let line = screen.last();
        assert!(line.contains("2/288 ETA "), "{line:?}");
        assert!(
            line.ends_with("running 16 variants [T=f32,U=i32]"),
            "{line:?}"
        );
        assert!(line.chars().count() <= 80, "{line:?}");
        // Output::silent() has no colour: no escape sequence anywhere, whatever console
        // would decide.
        assert!(!screen.all().contains('\x1b'), "{:?}", screen.all());
        assert!(!bar_template(false, true).contains("cyan"));
        assert!(bar_template(true, true).contains("cyan"));
    }
}
