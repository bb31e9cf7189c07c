//! Statistics of a sample, named plainly.
//!
//! Quantiles use linear interpolation between closest ranks (Hyndman & Fan type 7, the
//! default of numpy and R): for `n` sorted values, quantile `p` sits at rank `p·(n−1)`.
//! Standard deviations are sample deviations (divisor `n − 1`).

use serde::Serialize;

/// Arithmetic mean; `NaN` for an empty slice.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample standard deviation (divisor `n − 1`) around `mean`; `NaN` for fewer than two values.
pub fn sample_stdev(values: &[f64], mean: f64) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

/// Quantile `p` in `[0, 1]` of an ascending slice by linear interpolation (type 7).
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let rank = p.clamp(0.0, 1.0) * (n - 1) as f64;
            let lo = rank.floor() as usize;
            let hi = rank.ceil() as usize;
            sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
        }
    }
}

/// The distribution-free confidence interval of the median of `sorted`: the order statistics
/// at ranks `n/2 ∓ z·√n/2` (the normal approximation of the binomial count of samples below
/// the median), clamped to the samples. GPU times are skewed and heavy-tailed, so no normality
/// is assumed; with few samples the interval is simply wide (for 10 samples at `z = 3`, from
/// the smallest to the largest).
pub fn median_interval(sorted: &[f64], z: f64) -> (f64, f64) {
    let n = sorted.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let half_width = z * (n as f64).sqrt() / 2.0;
    let centre = (n as f64 - 1.0) / 2.0;
    let lo = (centre - half_width).floor().max(0.0) as usize;
    let hi = ((centre + half_width).ceil() as usize).min(n - 1);
    (sorted[lo], sorted[hi])
}

/// Least-squares line `y = slope·x + intercept` through `(i, ys[i])`, and its R².
///
/// R² is 1 when the values have no spread (nothing left to explain), as in nvbench.
pub fn linear_regression(ys: &[f64]) -> Option<(f64, f64, f64)> {
    let n = ys.len();
    if n < 2 {
        return None;
    }
    let x_mean = (n - 1) as f64 / 2.0;
    let y_mean = mean(ys);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in ys.iter().enumerate() {
        let dx = i as f64 - x_mean;
        sxy += dx * (y - y_mean);
        sxx += dx * dx;
    }
    let slope = sxy / sxx;
    let intercept = y_mean - slope * x_mean;
    let (mut ss_tot, mut ss_res) = (0.0, 0.0);
    for (i, y) in ys.iter().enumerate() {
        let pred = slope * i as f64 + intercept;
        ss_tot += (y - y_mean) * (y - y_mean);
        ss_res += (y - pred) * (y - pred);
    }
    let r2 = if ss_tot == 0.0 {
        1.0
    } else {
        1.0 - ss_res / ss_tot
    };
    Some((slope, intercept, r2))
}

/// The summary statistics of one sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub count: usize,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (quantile 0.5).
    pub median: f64,
    /// First quartile (quantile 0.25).
    pub q1: f64,
    /// Third quartile (quantile 0.75).
    pub q3: f64,
    /// Sample standard deviation; `NaN` for one value.
    pub stdev: f64,
    /// Standard deviation relative to the mean (nvbench's "noise").
    pub stdev_relative: f64,
    /// Interquartile range `q3 − q1`.
    pub iqr: f64,
}

impl Summary {
    /// Summarises `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mean = mean(values);
        let stdev = sample_stdev(values, mean);
        let q1 = quantile_sorted(&sorted, 0.25);
        let q3 = quantile_sorted(&sorted, 0.75);
        Some(Summary {
            count: values.len(),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            mean,
            median: quantile_sorted(&sorted, 0.5),
            q1,
            q3,
            stdev,
            stdev_relative: stdev / mean,
            iqr: q3 - q1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn summary_matches_hand_computed_values() {
        // Sorted: 1 2 3 4 10. mean 4, deviations -3 -2 -1 0 6, ss = 9+4+1+0+36 = 50,
        // variance 50/4 = 12.5, stdev sqrt(12.5); q1 at rank 1 = 2, q3 at rank 3 = 4.
        let s = Summary::of(&[4.0, 1.0, 10.0, 3.0, 2.0]).expect("non-empty");
        assert_eq!(s.count, 5);
        assert_eq!((s.min, s.max), (1.0, 10.0));
        assert!(close(s.mean, 4.0));
        assert!(close(s.median, 3.0));
        assert!(close(s.q1, 2.0));
        assert!(close(s.q3, 4.0));
        assert!(close(s.iqr, 2.0));
        assert!(close(s.stdev, 12.5f64.sqrt()));
        assert!(close(s.stdev_relative, 12.5f64.sqrt() / 4.0));
    }

    #[test]
    fn even_counts_interpolate() {
        // Sorted 1 2 3 4: median at rank 1.5 = 2.5; q1 at rank 0.75 = 1.75; q3 at 2.25 = 3.25.
        let s = Summary::of(&[2.0, 4.0, 1.0, 3.0]).expect("non-empty");
        assert!(close(s.median, 2.5));
        assert!(close(s.q1, 1.75));
        assert!(close(s.q3, 3.25));
    }

    #[test]
    fn one_value_has_no_spread_estimate() {
        let s = Summary::of(&[7.0]).expect("non-empty");
        assert_eq!((s.min, s.median, s.max), (7.0, 7.0, 7.0));
        assert!(s.stdev.is_nan());
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn regression_of_a_line_is_exact() {
        let ys: Vec<f64> = (0..10).map(|i| 3.0 + 0.5 * i as f64).collect();
        let (slope, intercept, r2) = linear_regression(&ys).expect("two points or more");
        assert!(close(slope, 0.5));
        assert!(close(intercept, 3.0));
        assert!(close(r2, 1.0));
        let (slope, _, r2) = linear_regression(&[2.0; 5]).expect("two points or more");
        assert_eq!((slope, r2), (0.0, 1.0));
        // y = 0, 1, 0, 1: slope 0.2, intercept 0.2, residuals -0.2 0.6 -0.6 0.2 → ss_res 0.8,
        // ss_tot 1 → R² 0.2.
        let (slope, intercept, r2) = linear_regression(&[0.0, 1.0, 0.0, 1.0]).expect("points");
        assert!(close(slope, 0.2) && close(intercept, 0.2) && close(r2, 0.2));
    }
}
