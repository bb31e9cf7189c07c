//! What a set of samples can resolve: the standard error of their median, from its
//! distribution-free confidence interval. `report` writes it with each workload of its JSON,
//! and `check` judges a change against it ([`verdict`](mod@crate::results::check::verdict)).
//!
//! GPU and CPU times are skewed and heavy-tailed, so no normality is assumed: the interval is
//! that of the runtime's `--decide` (`gputune_runtime::stats::median_interval`), the order
//! statistics at ranks `(n − 1)/2 ∓ z·√n/2` (the normal approximation of the binomial count of
//! samples below the median), and the standard error is its half-width over `z`. Where those
//! ranks fall outside the samples (fewer than 6 samples at 95 %), the samples bound no
//! interval at all: the error is unbounded ([`f64::INFINITY`]), rather than the spread of
//! samples too few to say anything.

use serde_json::Value;

/// The z of the 95 % intervals `check` judges with.
pub const Z: f64 = 1.96;

/// The median's standard error relative to the median, from its interval at [`Z`]; infinite
/// where the samples bound no interval (fewer than 6, or none, or a median that is not
/// positive).
pub fn median_se(samples: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
    let n = sorted.len();
    if n == 0 {
        return f64::INFINITY;
    }
    sorted.sort_by(f64::total_cmp);
    let half_width = Z * (n as f64).sqrt() / 2.0;
    let centre = (n as f64 - 1.0) / 2.0;
    let (lo, hi) = ((centre - half_width).floor(), (centre + half_width).ceil());
    if lo < 0.0 || hi > (n - 1) as f64 {
        return f64::INFINITY;
    }
    let median = match crate::results::median(sorted.clone()) {
        Some(m) if m > 0.0 => m,
        _ => return f64::INFINITY,
    };
    (sorted[hi as usize] - sorted[lo as usize]) / (2.0 * Z) / median
}

/// The standard error of a stored row's median: [`median_se`] of its samples. A row that
/// records no samples at all (an import of times alone) says nothing of its spread, and is
/// counted as exact (0): its change is judged by the band alone, as `check` judged before it
/// knew the resolution.
pub fn of_samples(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        0.0
    } else {
        median_se(samples)
    }
}

/// The same from a summary alone (a baseline exported before the report wrote
/// `median_se`): the median's standard error of normal samples, √(π/2)·σ/√n, from the
/// relative standard deviation `noise` of `n` samples; infinite under 6 samples, as
/// [`median_se`]. A summary without a noise says nothing of its spread: 0.
pub fn median_se_of_summary(noise: Option<f64>, n: usize) -> f64 {
    if n < 6 {
        return f64::INFINITY;
    }
    noise.map_or(0.0, |noise| {
        (std::f64::consts::PI / 2.0).sqrt() * noise / (n as f64).sqrt()
    })
}

/// `se` as the report JSON writes it: a number, or `null` when unbounded.
pub fn to_json(se: f64) -> Value {
    if se.is_finite() {
        Value::from(se)
    } else {
        Value::Null
    }
}

/// A workload's standard error as a baseline gives it: its `median_se` (`null`: unbounded),
/// or, from an older export without one, from its `noise` and `samples`.
pub fn of_workload(w: &Value) -> f64 {
    match w.get("median_se") {
        Some(Value::Null) => f64::INFINITY,
        Some(v) => v.as_f64().unwrap_or(f64::INFINITY),
        None => match w["samples"].as_u64().map_or(0, |n| n as usize) {
            // No samples recorded: as `of_samples`.
            0 => 0.0,
            n => median_se_of_summary(w["noise"].as_f64(), n),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_samples_bound_no_interval_and_six_do() {
        let five = [1.0, 1.01, 0.99, 1.02, 0.98];
        assert!(median_se(&five).is_infinite());
        let six = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0];
        // Ranks 0 and 5 at n = 6: the whole range, 0.04, over 2z.
        assert!((median_se(&six) - 0.04 / (2.0 * Z)).abs() < 1e-12);
        assert!(median_se(&[]).is_infinite());
    }

    #[test]
    fn more_samples_resolve_more() {
        let spread = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|i| 1.0 + 0.01 * ((i as f64 * 0.618_034).fract() - 0.5))
                .collect()
        };
        let (few, many) = (median_se(&spread(20)), median_se(&spread(2000)));
        assert!(few.is_finite() && many < few / 5.0, "{few} {many}");
        // The median's standard error is 1/(2·f·√n), f the density at the median: 100 for an
        // even spread of width 1 %.
        let expected = 1.0 / (2.0 * 100.0 * 2000f64.sqrt());
        assert!((many / expected - 1.0).abs() < 0.1, "{many} {expected}");
    }

    #[test]
    fn a_baseline_without_median_se_is_judged_from_its_noise_and_sample_count() {
        let w = serde_json::json!({ "noise": 0.01, "samples": 100 });
        let expected = (std::f64::consts::PI / 2.0).sqrt() * 0.01 / 10.0;
        assert!((of_workload(&w) - expected).abs() < 1e-12);
        let few = serde_json::json!({ "noise": 0.01, "samples": 3 });
        assert!(of_workload(&few).is_infinite());
        let unbounded = serde_json::json!({ "median_se": null, "noise": 0.01, "samples": 100 });
        assert!(of_workload(&unbounded).is_infinite());
        let given = serde_json::json!({ "median_se": 0.002 });
        assert_eq!(of_workload(&given), 0.002);
        assert_eq!(to_json(f64::INFINITY), Value::Null);
        assert_eq!(to_json(0.5), Value::from(0.5));
        // Nothing recorded of the samples: exact, as before resolutions were known.
        assert_eq!(of_workload(&serde_json::json!({ "noise": 0.01 })), 0.0);
        assert_eq!(of_samples(&[]), 0.0);
        assert!(of_samples(&[1.0, 2.0]).is_infinite());
    }
}
