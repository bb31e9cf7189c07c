//! What the score plot's two drawings (the heat map of two parameters, the lines of one)
//! share: a cell's best variant, and how a best score is printed.

/// One cell of the score plot: the best scored variant there, and how many failed.
#[derive(Default)]
pub(super) struct Cell {
    pub(super) best: Option<(f64, bool, String)>,
    pub(super) failed: usize,
}

/// A best score as the charts print it; `~` marks one within noise of base.
pub(super) fn score_text(best: &(f64, bool, String)) -> String {
    format!("{:.2}{}", best.0, if best.1 { "" } else { "~" })
}
