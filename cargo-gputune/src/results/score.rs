//! Scoring, as CUB's tuning infrastructure does it, with DESIGN's fixes.
//!
//! Per runtime workload, speedup = median(base cold GPU times) / median(variant's). A
//! workload's weight is the product of its `{io}` axes' weights ([`io_weight`], from the
//! *declared* order of values, CUB #11225), normalised over the workloads measured for both
//! base and the variant (so partial coverage still scores). score = Σ weight · speedup; min,
//! mean and max are of the unweighted speedups. Base scores 1.
//!
//! Significance: a workload differs when a two-sided Mann–Whitney U test on the raw samples
//! ([`mann_whitney_p`], normal approximation with tie correction) rejects equality at
//! [`ALPHA`] *and* the speedup is further from 1 than either side's noise (relative standard
//! deviation of the samples; [`differs`]). The test alone sees shifts of a few hundredths of
//! a per cent in a thousand samples, smaller than the drift between two measurements of the
//! same code a second apart (an H200 marked a point identical to base 0.05 % "slower", and,
//! against the smaller of the two noises, another 0.09 % "slower"). Both noises are those of
//! consecutive samples, which a slower drift does not show: a shift under
//! [`NOISE_THRESHOLD`] is never significant (criterion.rs's `noise_threshold`). A variant is
//! significant when the workloads that differ *in the direction of its score* carry at least
//! half of its weight; a variant within noise is never applied.

use statrs::distribution::{ContinuousCDF, Normal};

/// Significance level of the per-workload test.
pub const ALPHA: f64 = 0.05;

/// The smallest shift from base that can be significant, as a fraction (0.005 is 0.5 %).
///
/// Ten samples taken one after another can agree to 0.02 % and still sit 0.2 % away from
/// the same code measured a few seconds earlier in the same process: on an H200, the point
/// of a compute-bound convolution identical to base read 0.23 % slower than base (1 search
/// of 5), each side's noise 0.01–0.02 %. The noises of consecutive samples do not see such
/// drift, so below this floor a difference is drift, not a result. criterion.rs has the same
/// notion (`noise_threshold`, 1 % there); 0.5 % keeps twice the largest drift seen on our
/// GPUs, and gains of 1 % (the sum's on an H200) significant.
pub const NOISE_THRESHOLD: f64 = 0.005;

/// The `{io}` weight of the `index`-th of `count` declared values:
/// 1 − exp(−(b + index·(e − b)/count)), b = −ln(1 − 0.6), e = −ln(1 − 0.999).
pub fn io_weight(index: usize, count: usize) -> f64 {
    let b = -(1.0f64 - 0.6).ln();
    let e = -(1.0f64 - 0.999).ln();
    let count = count.max(1) as f64;
    1.0 - (-(b + index as f64 * (e - b) / count)).exp()
}

/// One runtime workload of base and a variant.
#[derive(Debug, Clone, Copy)]
pub struct Pair<'a> {
    /// The workload's weight before normalisation.
    pub weight: f64,
    /// Base's median.
    pub base_center: f64,
    /// The variant's median.
    pub center: f64,
    /// Base's samples.
    pub base_samples: &'a [f64],
    /// The variant's samples.
    pub samples: &'a [f64],
}

/// A variant's score against base.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    /// Σ normalised weight · speedup.
    pub score: f64,
    /// Smallest speedup.
    pub min: f64,
    /// Mean speedup.
    pub mean: f64,
    /// Largest speedup.
    pub max: f64,
    /// Whether the difference from base is beyond noise.
    pub significant: bool,
    /// Runtime workloads scored.
    pub workloads: usize,
}

/// Where a variant stands against base: what `report`'s sig column (`+`, `-`, `~`) and
/// `search`'s lines (`faster`, `slower`, `within noise`) say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Significantly faster than base.
    Faster,
    /// Significantly slower than base.
    Slower,
    /// Not distinguishable from base.
    WithinNoise,
}

impl Verdict {
    /// The report's mark: `+` faster, `-` slower, `~` within noise.
    pub fn mark(self) -> &'static str {
        match self {
            Verdict::Faster => "+",
            Verdict::Slower => "-",
            Verdict::WithinNoise => "~",
        }
    }

    /// In words, as `search` prints it.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within noise",
        }
    }

    /// As the report JSON and CSV write it.
    pub fn key(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within_noise",
        }
    }
}

impl Score {
    /// Faster or slower when significant, else within noise.
    pub fn verdict(&self) -> Verdict {
        match (self.significant, self.score > 1.0) {
            (false, _) => Verdict::WithinNoise,
            (true, true) => Verdict::Faster,
            (true, false) => Verdict::Slower,
        }
    }
}

/// Scores the workloads measured for both; `None` when there are none.
pub fn score(pairs: &[Pair<'_>]) -> Option<Score> {
    let pairs: Vec<&Pair<'_>> = pairs
        .iter()
        .filter(|p| p.center > 0.0 && p.base_center > 0.0 && p.weight > 0.0)
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let total: f64 = pairs.iter().map(|p| p.weight).sum();
    let speedups: Vec<f64> = pairs.iter().map(|p| p.base_center / p.center).collect();
    let score: f64 = pairs
        .iter()
        .zip(&speedups)
        .map(|(p, s)| p.weight / total * s)
        .sum();
    let faster = score > 1.0;
    let significant_weight: f64 = pairs
        .iter()
        .zip(&speedups)
        .filter(|(p, s)| (**s > 1.0) == faster && differs(p, **s))
        .map(|(p, _)| p.weight / total)
        .sum();
    Some(Score {
        score,
        min: speedups.iter().copied().fold(f64::INFINITY, f64::min),
        mean: speedups.iter().sum::<f64>() / speedups.len() as f64,
        max: speedups.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        significant: score != 1.0 && significant_weight >= 0.5,
        workloads: pairs.len(),
    })
}

/// Whether a workload's variant differs from base beyond noise: the Mann–Whitney test rejects
/// equality at [`ALPHA`], and `speedup` is further from 1 than the relative standard
/// deviation of either side's samples and than [`NOISE_THRESHOLD`].
///
/// Why the larger of the two: with hundreds of samples the test sees shifts of 0.1 % that
/// are drift within a process (a point identical to base, measured after it, read 0.9991
/// with 2.9 % noise against base's 0.09 % on an H200), and a side with outliers has its
/// noise for a reason. A speedup worth applying clears both.
pub fn differs(pair: &Pair<'_>, speedup: f64) -> bool {
    let floor = match (
        relative_stdev(pair.base_samples),
        relative_stdev(pair.samples),
    ) {
        (Some(a), Some(b)) => a.max(b).max(NOISE_THRESHOLD),
        _ => return false,
    };
    (speedup - 1.0).abs() > floor && mann_whitney_p(pair.base_samples, pair.samples) < ALPHA
}

/// Sample standard deviation (n − 1) over the mean; `None` under 2 samples.
pub fn relative_stdev(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean > 0.0).then(|| var.sqrt() / mean)
}

/// Two-sided p-value of the Mann–Whitney U test of `a` against `b` (normal approximation,
/// tie-corrected); 1 when either has fewer than 2 samples or all values tie.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 < 2 || n2 < 2 {
        return 1.0;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let ties = (j - i + 1) as f64;
        let rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum_a += rank * all[i..=j].iter().filter(|x| x.1).count() as f64;
        tie_term += ties * ties * ties - ties;
        i = j + 1;
    }
    let (n1, n2, n) = (n1 as f64, n2 as f64, n as f64);
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = (u - mean).abs() / var.sqrt();
    let normal = Normal::standard();
    (2.0 * (1.0 - normal.cdf(z))).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn io_weights_match_cub_for_1_2_and_4_values() {
        assert!(close(io_weight(0, 1), 0.6, 1e-12));
        assert!(close(io_weight(0, 2), 0.6, 1e-12));
        assert!(close(io_weight(1, 2), 0.98, 1e-12));
        let four: Vec<f64> = (0..4).map(|i| io_weight(i, 4)).collect();
        for (w, want) in four.iter().zip([0.6, 0.911, 0.980, 0.996]) {
            assert!(close(*w, want, 5e-4), "{four:?}");
        }
    }

    fn pair(weight: f64, base: f64, var: f64) -> Pair<'static> {
        Pair {
            weight,
            base_center: base,
            center: var,
            base_samples: &[],
            samples: &[],
        }
    }

    #[test]
    fn score_is_the_normalised_weighted_speedup() {
        // Weights 0.6 and 0.98 (two {io} values); speedups 2 and 0.5.
        let s = score(&[pair(0.6, 2.0, 1.0), pair(0.98, 1.0, 2.0)]).expect("scored");
        let want = (0.6 * 2.0 + 0.98 * 0.5) / 1.58;
        assert!(close(s.score, want, 1e-12), "{s:?}");
        assert_eq!((s.min, s.max, s.mean), (0.5, 2.0, 1.25));
        assert_eq!(s.workloads, 2);
        // No samples: nothing is significant.
        assert!(!s.significant);
    }

    #[test]
    fn partial_coverage_normalises_over_what_was_measured() {
        // Only the 0.911 workload of four was measured: its speedup is the score.
        let s = score(&[pair(io_weight(1, 4), 3.0, 2.0)]).expect("scored");
        assert!(close(s.score, 1.5, 1e-12));
        // An unmeasured (zero centre) workload does not count.
        let s = score(&[pair(0.6, 3.0, 2.0), pair(0.98, 1.0, 0.0)]).expect("scored");
        assert!(close(s.score, 1.5, 1e-12));
        assert!(score(&[]).is_none());
    }

    #[test]
    fn base_against_itself_scores_one() {
        let s = score(&[pair(0.6, 1.0, 1.0), pair(0.98, 2.0, 2.0)]).expect("scored");
        assert!(close(s.score, 1.0, 1e-12));
        assert!(!s.significant);
    }

    #[test]
    fn mann_whitney_separates_shifted_samples_and_not_equal_ones() {
        let a: Vec<f64> = (0..50).map(|i| 1.0 + f64::from(i % 7) * 0.01).collect();
        let b: Vec<f64> = a.iter().map(|v| v + 0.2).collect();
        assert!(mann_whitney_p(&a, &b) < 1e-6);
        assert!(mann_whitney_p(&a, &a) > 0.9);
        assert_eq!(mann_whitney_p(&[1.0], &b), 1.0);
        // Hand-computed: a = [1, 2, 3], b = [4, 5, 6]: U = 0, mean 4.5, var 5.25, z = 1.964.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert!(close(p, 0.0495, 5e-4), "{p}");
    }

    #[test]
    fn significance_needs_half_the_weight_in_the_score_direction() {
        let base: Vec<f64> = (0..40).map(|i| 2.0 + f64::from(i % 5) * 0.01).collect();
        let fast: Vec<f64> = base.iter().map(|v| v / 2.0).collect();
        let pairs = [Pair {
            weight: 0.98,
            base_center: 2.02,
            center: 1.01,
            base_samples: &base,
            samples: &fast,
        }];
        assert!(score(&pairs).expect("scored").significant);
        let same = [Pair {
            weight: 0.98,
            base_center: 2.02,
            center: 2.02,
            base_samples: &base,
            samples: &base,
        }];
        assert!(!score(&same).expect("scored").significant);
        assert_eq!(
            score(&same).expect("scored").verdict(),
            Verdict::WithinNoise
        );
    }

    #[test]
    fn a_shift_smaller_than_the_noise_is_not_significant_however_many_samples() {
        // 2 000 samples a side, 0.8 % noise: a 0.05 % shift passes Mann–Whitney, not the
        // noise floor; a 3 % one passes both.
        let noisy = |scale: f64| -> Vec<f64> {
            (0..2000)
                .map(|i| {
                    scale * (1.0 + 0.008 * ((f64::from(i) * 0.618_034).fract() * 2.0 - 1.0) * 1.7)
                })
                .collect()
        };
        let base = noisy(1.0);
        let scored = |factor: f64| {
            let samples = noisy(factor);
            score(&[Pair {
                weight: 1.0,
                base_center: 1.0,
                center: factor,
                base_samples: &base,
                samples: &samples,
            }])
            .expect("scored")
        };
        let tiny = noisy(1.0005);
        assert!(
            mann_whitney_p(&base, &tiny) < ALPHA,
            "the test alone sees it"
        );
        assert_eq!(scored(1.0005).verdict(), Verdict::WithinNoise);
        assert_eq!(scored(1.03).verdict(), Verdict::Slower);
        assert_eq!(scored(0.97).verdict(), Verdict::Faster);
    }

    #[test]
    fn a_shift_within_the_noisier_sides_noise_is_not_significant() {
        // Base steady (0.1 %), the same code after it with outliers (~3 %), its median 0.1 %
        // later: drift, not a difference. Against the steadier side alone it would read
        // slower.
        let base: Vec<f64> = (0..500)
            .map(|i| 1.0 + 0.001 * ((f64::from(i) * 0.618_034).fract() - 0.5))
            .collect();
        let same: Vec<f64> = (0..500)
            .map(|i| {
                let t = 1.001 + 0.001 * ((f64::from(i) * 0.414_214).fract() - 0.5);
                if i % 25 == 0 {
                    t * 1.15
                } else {
                    t
                }
            })
            .collect();
        let pair = Pair {
            weight: 1.0,
            base_center: 1.0,
            center: 1.001,
            base_samples: &base,
            samples: &same,
        };
        assert!(mann_whitney_p(&base, &same) < ALPHA);
        assert!(relative_stdev(&same).is_some_and(|n| n > 0.01));
        assert!(!differs(&pair, 1.0 / 1.001));
        assert_eq!(
            score(&[pair]).expect("scored").verdict(),
            Verdict::WithinNoise
        );
    }

    #[test]
    fn a_shift_under_the_noise_threshold_is_drift_however_steady_the_samples() {
        // What an H200 measured: base's samples 0.01 % apart, the identical point's ten
        // 0.02 % apart, 0.23 % slower. Against the samples' noise alone that is "slower".
        let steady = |center: f64, n: usize| -> Vec<f64> {
            (0..n)
                .map(|i| center * (1.0 + 0.0002 * ((i as f64 * 0.618_034).fract() - 0.5)))
                .collect()
        };
        let base = steady(1288.06, 389);
        let scored = |center: f64| {
            let samples = steady(center, 10);
            let pair = Pair {
                weight: 1.0,
                base_center: 1288.06,
                center,
                base_samples: &base,
                samples: &samples,
            };
            (
                differs(&pair, 1288.06 / center),
                mann_whitney_p(&base, &samples),
            )
        };
        let (differs_drift, p) = scored(1291.0);
        assert!(p < ALPHA, "the test alone sees it");
        assert!(!differs_drift, "a 0.23 % shift is under the threshold");
        // Past the threshold, the same steady samples are a result.
        assert!(scored(1288.06 * 1.006).0);
        assert!(scored(1288.06 / 1.006).0);
    }

    #[test]
    fn significant_slowdowns_and_speedups_get_different_verdicts() {
        let base: Vec<f64> = (0..40).map(|i| 2.0 + f64::from(i % 5) * 0.01).collect();
        let fast: Vec<f64> = base.iter().map(|v| v / 2.0).collect();
        let slow: Vec<f64> = base.iter().map(|v| v * 2.0).collect();
        let scored = |samples: &[f64], center: f64| {
            score(&[Pair {
                weight: 1.0,
                base_center: 2.02,
                center,
                base_samples: &base,
                samples,
            }])
            .expect("scored")
        };
        let (fast, slow) = (scored(&fast, 1.01), scored(&slow, 4.04));
        assert!(fast.significant && slow.significant);
        assert_eq!(
            (fast.verdict(), slow.verdict()),
            (Verdict::Faster, Verdict::Slower)
        );
        let marks: Vec<&str> = [Verdict::Faster, Verdict::Slower, Verdict::WithinNoise]
            .iter()
            .map(|v| v.mark())
            .collect();
        assert_eq!(marks, ["+", "-", "~"]);
        assert_eq!(Verdict::Slower.words(), "slower");
    }
}
