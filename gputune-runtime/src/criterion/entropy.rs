use std::collections::{HashMap, VecDeque};

use super::StoppingCriterion;

/// How many of the latest entropy values the trend line is fitted over (nvbench's 299).
const WINDOW: usize = 299;

/// Below this `Σ(y − ȳ)²` a window of H is flat and its line a perfect fit (nvbench's 1e-9).
pub const FLAT: f64 = 1e-9;

/// nvbench's entropy criterion: stop when new samples stop adding information.
///
/// This is nvbench's `entropy_criterion.cxx` as of 2026. Sample values are counted exactly (no
/// binning). After each sample the entropy of their frequency distribution,
/// `H = log2(n) − (Σ c·log2 c)/n` (clamped at 0), is appended to a window of the last 299
/// values, and a least-squares line is fitted to `H` against its index in that window. When
/// the sample count is even and the window holds two values or more, the criterion stops once
/// the line's angle `atan(slope)` in degrees is at most `max_angle` (0.048) and its R² is at
/// least `min_r2` (0.36). `Σ c·log2 c` is updated as nvbench updates it; the line in O(1) per
/// sample.
///
/// R² as nvbench takes it: a window whose `Σ(y − ȳ)²` is under `FLAT` (1e-9) is a perfect
/// fit (R² = 1). Such a window is flat: on an exactly periodic stream (two values in turn) H
/// swings by a few 1e-6 bits around a constant, and although a line explains little of that
/// swing, H has settled, which is what the criterion asks; without the cutoff such a stream
/// would run to the timeout. The sums here are kept relative to a value of the window, so a
/// constant window has `Σ(y − ȳ)²` = 0 exactly; one distinct value has H = 0 exactly, not
/// log2(n) − n·log2(n)/n's rounding.
#[derive(Debug, Clone)]
pub struct Entropy {
    max_angle: f64,
    min_r2: f64,
    samples: u64,
    counts: HashMap<u64, u64>,
    /// Σ c·log2 c over the distinct values' counts.
    sum_c_log_c: f64,
    trend: SlidingLine,
}

impl Entropy {
    /// A criterion with the given angle limit (degrees) and R² floor.
    pub fn new(max_angle: f64, min_r2: f64) -> Entropy {
        Entropy {
            max_angle,
            min_r2,
            samples: 0,
            counts: HashMap::new(),
            sum_c_log_c: 0.0,
            trend: SlidingLine::new(WINDOW),
        }
    }

    /// The entropy of the samples seen so far, in bits.
    pub fn entropy(&self) -> f64 {
        // One distinct value has zero entropy; computing it as log2(n) − n·log2(n)/n from the
        // running sum would leave rounding noise that the trend line reads as a signal.
        if self.counts.len() <= 1 {
            return 0.0;
        }
        let n = self.samples as f64;
        (n.log2() - self.sum_c_log_c / n).max(0.0)
    }

    /// Slope angle in degrees and R² of the current trend line, once it has two points.
    pub fn trend(&self) -> Option<(f64, f64)> {
        self.trend
            .fit()
            .map(|(slope, r2)| (slope_to_degrees(slope), r2))
    }
}

/// How much `Σ c·log2 c` grows when one count goes from `old` to `old + 1`, in nvbench's
/// arithmetic: `new·log2(1 + 1/old) + log2(old)`, which is `new·log2(new) − old·log2(old)`.
fn c_log_c_step(old: u64) -> f64 {
    let new = (old + 1) as f64;
    if old == 0 {
        return new * new.log2();
    }
    let old = old as f64;
    new * (1.0 + 1.0 / old).log2() + old.log2()
}

/// A slope as an angle in degrees, as nvbench converts it (`atan2(slope, 1)·180/π`).
fn slope_to_degrees(slope: f64) -> f64 {
    slope.atan2(1.0) * 180.0 / std::f64::consts::PI
}

impl StoppingCriterion for Entropy {
    fn name(&self) -> &str {
        "entropy"
    }

    fn params(&self) -> Vec<(String, f64)> {
        vec![
            ("max-angle".into(), self.max_angle),
            ("min-r2".into(), self.min_r2),
        ]
    }

    fn initialize(&mut self) {
        *self = Entropy::new(self.max_angle, self.min_r2);
    }

    fn add_measurement(&mut self, seconds: f64) {
        self.samples += 1;
        // +0.0 folds -0.0 into 0.0 so equal values share one key.
        let count = self.counts.entry((seconds + 0.0).to_bits()).or_insert(0);
        self.sum_c_log_c += c_log_c_step(*count);
        *count += 1;
        let h = self.entropy();
        self.trend.push(h);
    }

    fn is_finished(&self) -> bool {
        // nvbench checks only even sample counts, to halve the cost of the check.
        if self.samples % 2 != 0 {
            return false;
        }
        // `trend` is `None` below two values of H. H is always finite, so the slope and R² are
        // too; nvbench checks that they are, and so does this, at no cost.
        match self.trend() {
            Some((angle, r2)) => {
                angle.is_finite() && angle <= self.max_angle && r2.is_finite() && r2 >= self.min_r2
            }
            None => false,
        }
    }
}

/// Least-squares line over a sliding window of the latest values, x being the index within
/// the window, updated in O(1) per value.
///
/// Sums are kept relative to a reference value taken from the data (so a constant window
/// gives exact zeros and R² = 1), and rebuilt from the window once per window length so
/// rounding cannot accumulate.
#[derive(Debug, Clone)]
struct SlidingLine {
    capacity: usize,
    values: VecDeque<f64>,
    reference: f64,
    sum_y: f64,
    sum_xy: f64,
    sum_yy: f64,
    pushes_since_rebuild: usize,
}

impl SlidingLine {
    fn new(capacity: usize) -> SlidingLine {
        SlidingLine {
            capacity,
            values: VecDeque::with_capacity(capacity),
            reference: 0.0,
            sum_y: 0.0,
            sum_xy: 0.0,
            sum_yy: 0.0,
            pushes_since_rebuild: 0,
        }
    }

    fn push(&mut self, y: f64) {
        if self.values.len() == self.capacity {
            if let Some(front) = self.values.pop_front() {
                let d0 = front - self.reference;
                // Every remaining index drops by one: Σ(i−1)·d = Σi·d − Σd over i ≥ 1.
                self.sum_y -= d0;
                self.sum_xy -= self.sum_y;
                self.sum_yy -= d0 * d0;
            }
        }
        let d = y - self.reference;
        self.sum_xy += self.values.len() as f64 * d;
        self.sum_y += d;
        self.sum_yy += d * d;
        self.values.push_back(y);
        self.pushes_since_rebuild += 1;
        if self.pushes_since_rebuild >= self.capacity {
            self.rebuild();
        }
    }

    fn rebuild(&mut self) {
        self.reference = self.values.back().copied().unwrap_or(0.0);
        self.sum_y = 0.0;
        self.sum_xy = 0.0;
        self.sum_yy = 0.0;
        for (i, v) in self.values.iter().enumerate() {
            let d = v - self.reference;
            self.sum_y += d;
            self.sum_xy += i as f64 * d;
            self.sum_yy += d * d;
        }
        self.pushes_since_rebuild = 0;
    }

    /// `(slope, R²)`, or `None` below two points.
    fn fit(&self) -> Option<(f64, f64)> {
        let n = self.values.len();
        if n < 2 {
            return None;
        }
        let nf = n as f64;
        let sum_x = nf * (nf - 1.0) / 2.0;
        let sum_xx = (nf - 1.0) * nf * (2.0 * nf - 1.0) / 6.0;
        let var_x = sum_xx - sum_x * sum_x / nf;
        let cov = self.sum_xy - sum_x * self.sum_y / nf;
        let var_y = self.sum_yy - self.sum_y * self.sum_y / nf;
        let slope = cov / var_x;
        let r2 = if var_y < FLAT {
            1.0
        } else {
            (cov * cov / (var_x * var_y)).min(1.0)
        };
        Some((slope, r2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::linear_regression;

    fn stop_at(
        c: &mut Entropy,
        min_samples: u64,
        stream: impl Iterator<Item = f64>,
    ) -> Option<u64> {
        c.initialize();
        for (i, s) in stream.enumerate() {
            c.add_measurement(s);
            let n = i as u64 + 1;
            if n >= min_samples && c.is_finished() {
                return Some(n);
            }
        }
        None
    }

    #[test]
    fn entropy_of_counts_matches_the_definition() {
        let mut c = Entropy::new(0.048, 0.36);
        for v in [1.0, 1.0, 2.0, 3.0] {
            c.add_measurement(v);
        }
        // p = 1/2, 1/4, 1/4 → H = 0.5 + 0.5 + 0.5 = 1.5 bits
        assert!((c.entropy() - 1.5).abs() < 1e-12);
        c.initialize();
        c.add_measurement(0.0);
        c.add_measurement(-0.0);
        assert_eq!(c.entropy(), 0.0, "-0.0 and 0.0 are one value");
    }

    #[test]
    fn constant_samples_stop_at_min_samples() {
        let mut c = Entropy::new(0.048, 0.36);
        assert_eq!(stop_at(&mut c, 10, std::iter::repeat(1.25e-3)), Some(10));
        // Far past the first rebuild of the trend window as well.
        assert_eq!(stop_at(&mut c, 1000, std::iter::repeat(1e-3)), Some(1000));
    }

    #[test]
    fn all_distinct_samples_need_about_nineteen_hundred() {
        // H = log2(n): its slope over the last 299 values falls below tan(0.048°) near n ≈ 1.87k.
        let mut c = Entropy::new(0.048, 0.36);
        let n = stop_at(&mut c, 10, (1..).map(|i| i as f64 * 1e-6)).expect("stops");
        assert!((1800..=1950).contains(&n), "stopped after {n}");
    }

    #[test]
    fn only_even_sample_counts_are_checked() {
        let mut c = Entropy::new(0.048, 0.36);
        c.add_measurement(1.0);
        c.add_measurement(1.0);
        c.add_measurement(1.0);
        assert!(!c.is_finished());
        c.add_measurement(1.0);
        assert!(c.is_finished());
    }

    #[test]
    fn sliding_line_agrees_with_a_full_refit() {
        let mut line = SlidingLine::new(WINDOW);
        let mut all = Vec::new();
        let mut state = 12345u64;
        for i in 0..2000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let y = (i as f64).sqrt() + (state >> 40) as f64 * 1e-7;
            line.push(y);
            all.push(y);
            if i % 97 == 0 && all.len() >= 2 {
                let window = &all[all.len().saturating_sub(WINDOW)..];
                let (slope, _, r2) = linear_regression(window).expect("two points");
                let (s, r) = line.fit().expect("two points");
                assert!(
                    (s - slope).abs() < 1e-9 * slope.abs().max(1e-3),
                    "{s} vs {slope} at {i}"
                );
                assert!((r - r2).abs() < 1e-6, "{r} vs {r2} at {i}");
            }
        }
    }
}
