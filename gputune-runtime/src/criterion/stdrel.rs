use std::collections::VecDeque;

use super::StoppingCriterion;

/// How many valid noise estimates the plateau rule looks back over (nvbench's ring buffer).
const NOISE_WINDOW: usize = 512;
/// The plateau rule needs more than this many valid estimates.
const PLATEAU_MIN_ESTIMATES: usize = 64;
/// …and is checked only when the sample count is a multiple of this.
const PLATEAU_CHECK_EVERY: u64 = 16;
/// Noise has plateaued when the estimates' biased stdev is below this fraction of their mean.
const PLATEAU_THRESHOLD: f64 = 0.05;
/// Noise is estimated only from this many samples on (nvbench's
/// `min_samples_for_noise_estimate`).
pub(super) const MIN_SAMPLES_FOR_NOISE: u64 = 5;
/// This many invalid noise estimates in a row stop the criterion, before the min-time gate.
pub(super) const INVALID_NOISE_LIMIT: u64 = 64;

/// nvbench's default criterion: relative standard deviation of the GPU times.
///
/// This is nvbench's `stdrel_criterion.cxx` as it is since its #374 (2026), rule for rule:
///
/// - From the 5th sample on, every sample gives a noise estimate: the sample stdev (n − 1)
///   over the mean of all samples so far. An estimate is *invalid* when it cannot be formed
///   or is not finite: a mean that is 0, negative or not finite (all-zero timings, an infinite
///   sample), a variance that is NaN.
/// - 64 invalid estimates in a row stop the criterion at once, before the min-time gate: a
///   kernel whose timer reads 0 stops after 68 samples rather than at the 15 s timeout. A valid
///   estimate resets the count.
/// - Otherwise it keeps going while the total GPU time, computed as mean × n, is at most
///   `min_time`; while no valid estimate exists; and while the latest estimate is invalid.
/// - It stops once the latest estimate is below `max_noise`.
/// - Plateau rule, for kernels whose noise never gets that low: when more than 64 valid
///   estimates exist and the sample count is a multiple of 16, it stops if the last (at most
///   512) valid estimates have a biased (divide-by-n) variance below (5 % of their mean)².
///
/// The running mean and variance are updated as nvbench's `online_mean_variance` updates
/// them, operation for operation, so the estimates round as nvbench's do: O(1) per sample.
#[derive(Debug, Clone)]
pub struct Stdrel {
    max_noise: f64,
    min_time: f64,
    times: MeanVariance,
    /// Invalid noise estimates since the last valid one.
    invalid_in_a_row: u64,
    /// The latest valid noise estimates, oldest first.
    noise: VecDeque<f64>,
}

impl Stdrel {
    /// A criterion with `max_noise` as a fraction (0.005 = 0.5 %) and `min_time` in seconds.
    pub fn new(max_noise: f64, min_time: f64) -> Stdrel {
        Stdrel {
            max_noise,
            min_time,
            times: MeanVariance::default(),
            invalid_in_a_row: 0,
            noise: VecDeque::with_capacity(NOISE_WINDOW),
        }
    }

    /// The latest valid noise estimate (relative stdev), once there is one.
    pub fn noise(&self) -> Option<f64> {
        self.noise.back().copied()
    }

    /// How many noise estimates in a row, up to the latest, were invalid.
    pub fn invalid_noise_in_a_row(&self) -> u64 {
        self.invalid_in_a_row
    }

    /// The plateau rule: the valid estimates' biased variance against (5 % of their mean)².
    fn plateaued(&self) -> bool {
        let mut summary = MeanVariance::default();
        for &v in &self.noise {
            summary.push(v);
        }
        if !summary.mean.is_finite() || !summary.variance.is_finite() {
            return false;
        }
        // Squared on the right rather than a square root on the left: nvbench compares it so.
        let scaled = summary.mean * PLATEAU_THRESHOLD;
        summary.variance < scaled * scaled
    }
}

impl StoppingCriterion for Stdrel {
    fn name(&self) -> &str {
        "stdrel"
    }

    fn params(&self) -> Vec<(String, f64)> {
        vec![
            ("max-noise".into(), self.max_noise),
            ("min-time".into(), self.min_time),
        ]
    }

    fn initialize(&mut self) {
        *self = Stdrel::new(self.max_noise, self.min_time);
    }

    fn add_measurement(&mut self, seconds: f64) {
        self.times.push(seconds);
        if self.times.count < MIN_SAMPLES_FOR_NOISE {
            return;
        }
        let stdev = self.times.unbiased_variance().sqrt();
        match relative_dispersion(stdev, self.times.mean).filter(|n| n.is_finite()) {
            Some(noise) => {
                self.invalid_in_a_row = 0;
                if self.noise.len() == NOISE_WINDOW {
                    self.noise.pop_front();
                }
                self.noise.push_back(noise);
            }
            None => self.invalid_in_a_row += 1,
        }
    }

    fn is_finished(&self) -> bool {
        if self.invalid_in_a_row >= INVALID_NOISE_LIMIT {
            return true;
        }
        // mean × n, not a running sum: the two differ in the last bit, and nvbench compares
        // this one. (A NaN total passes this gate, as it does in nvbench; the checks below
        // then hold the criterion back.)
        let total_time = self.times.mean * self.times.count as f64;
        if total_time <= self.min_time {
            return false;
        }
        let Some(&latest) = self.noise.back() else {
            return false;
        };
        if self.invalid_in_a_row != 0 {
            return false;
        }
        if latest < self.max_noise {
            return true;
        }
        self.noise.len() > PLATEAU_MIN_ESTIMATES
            && self.times.count % PLATEAU_CHECK_EVERY == 0
            && self.plateaued()
    }
}

/// `dispersion / center`, or `None` where that is no relative dispersion: a center that is not
/// positive and finite, a dispersion that is negative or NaN (nvbench's
/// `compute_relative_dispersion`). An infinite quotient is returned; the caller decides.
fn relative_dispersion(dispersion: f64, center: f64) -> Option<f64> {
    if center <= 0.0 || !center.is_finite() || dispersion < 0.0 || dispersion.is_nan() {
        return None;
    }
    Some(dispersion / center)
}

/// Running mean and biased variance, in nvbench's `online_mean_variance` arithmetic: the first
/// two values are taken exactly, later ones with the update
/// `var += f·((d² − var) − f·d²)`, `f = 1/n`, `d = x − mean`.
#[derive(Debug, Clone, Copy, Default)]
struct MeanVariance {
    count: u64,
    mean: f64,
    /// Biased (divide-by-n) variance.
    variance: f64,
}

impl MeanVariance {
    fn push(&mut self, x: f64) {
        self.count += 1;
        match self.count {
            1 => self.mean = x,
            2 => {
                let first = self.mean;
                self.mean = 0.5 * (first + x);
                let half = 0.5 * (first - x);
                self.variance = half * half;
            }
            n => {
                let f = 1.0 / n as f64;
                let d = x - self.mean;
                self.mean += f * d;
                let d2 = d * d;
                self.variance += f * ((d2 - self.variance) - f * d2);
            }
        }
    }

    /// The unbiased (n − 1) variance; NaN below two values or for a negative variance.
    fn unbiased_variance(&self) -> f64 {
        if self.count <= 1 || self.variance < 0.0 {
            return f64::NAN;
        }
        self.variance / (1.0 - 1.0 / self.count as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic stream around `mean` with uniform relative jitter of ±`spread`.
    fn jittered(mean: f64, spread: f64, n: usize) -> impl Iterator<Item = f64> {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        (0..n).map(move |_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            mean * (1.0 + spread * (2.0 * u - 1.0))
        })
    }

    fn samples_until_finished(c: &mut Stdrel, stream: impl Iterator<Item = f64>) -> Option<u64> {
        c.initialize();
        for (i, s) in stream.enumerate() {
            c.add_measurement(s);
            if c.is_finished() {
                return Some(i as u64 + 1);
            }
        }
        None
    }

    #[test]
    fn quiet_stream_stops_once_min_time_is_reached() {
        // 1 ms samples with 0.1 % jitter: noise is far below 0.5 %, so min-time (0.5 s) rules:
        // the first sample after the total exceeds 0.5 s.
        let mut c = Stdrel::new(0.005, 0.5);
        let n = samples_until_finished(&mut c, jittered(1e-3, 0.001, 10_000)).expect("stops");
        assert!((500..=502).contains(&n), "stopped after {n}");
        assert!(c.noise().is_some_and(|x| x < 0.005));
    }

    #[test]
    fn noise_that_plateaus_above_max_noise_stops_through_the_plateau_rule() {
        // ±20 % uniform jitter: noise ≈ 11.5 %, never below 0.5 %.
        let mut c = Stdrel::new(0.005, 0.5);
        let n = samples_until_finished(&mut c, jittered(1e-3, 0.2, 100_000)).expect("stops");
        let noise = c.noise().expect("estimated");
        assert!(noise > 0.05, "noise {noise}");
        assert_eq!(
            n % PLATEAU_CHECK_EVERY,
            0,
            "the plateau rule stops on a check, at {n}"
        );
        assert!(n > 500, "min-time still holds, stopped at {n}");
        assert!(n < 100_000);
    }

    #[test]
    fn the_plateau_rule_waits_for_more_than_64_estimates() {
        // min-time 0 and ±20 % jitter: only the plateau rule can stop it, and it needs more
        // than 64 estimates (the first estimate comes with sample 5), checked every 16 samples.
        let mut c = Stdrel::new(0.005, 0.0);
        let n = samples_until_finished(&mut c, jittered(1e-3, 0.2, 100_000)).expect("stops");
        assert!(n >= 80, "stopped after {n}");
        assert_eq!(n % PLATEAU_CHECK_EVERY, 0);
    }

    #[test]
    fn noise_is_the_relative_sample_stdev() {
        let mut c = Stdrel::new(0.005, 0.0);
        c.initialize();
        for v in [1.0, 2.0, 3.0, 4.0] {
            c.add_measurement(v);
        }
        assert_eq!(c.noise(), None, "no estimate below five samples");
        c.add_measurement(10.0);
        // mean 4, sample stdev sqrt(12.5)
        let expected = 12.5f64.sqrt() / 4.0;
        assert!((c.noise().unwrap_or_default() - expected).abs() < 1e-12);
    }

    #[test]
    fn the_plateau_variance_divides_by_n() {
        // 66 valid estimates alternating 1 ± 0.0499: the biased stdev is 0.0499, under 5 % of
        // their mean (1); the unbiased one, 0.0499·√(66/65) ≈ 0.05028, is over it. nvbench
        // takes the biased one, so the plateau rule stops. The window is set directly (80
        // samples of 1.0 behind it, a multiple of 16): the rule reads nothing else.
        let mut c = Stdrel::new(0.0, 0.0);
        for _ in 0..80 {
            c.times.push(1.0);
        }
        let d = 0.0499;
        assert!(d * (66.0f64 / 65.0).sqrt() > PLATEAU_THRESHOLD);
        c.noise
            .extend((0..66).map(|i| if i % 2 == 0 { 1.0 + d } else { 1.0 - d }));
        assert!(c.plateaued(), "the biased variance is under the line");
        assert!(c.is_finished());
        // Two estimates fewer (64, not more than 64): the rule does not run yet.
        c.noise.pop_front();
        c.noise.pop_front();
        assert!(!c.is_finished());
    }

    #[test]
    fn min_time_is_compared_as_mean_times_n() {
        // Ten samples of 0.1: a running sum reaches 0.9999999999999999, mean × n gives 1.0.
        let samples = [0.1; 10];
        let running: f64 = samples.iter().sum();
        assert!(running < 1.0);
        let mut c = Stdrel::new(0.005, running);
        c.initialize();
        for s in samples {
            c.add_measurement(s);
        }
        // mean × n = 1.0 > min-time (the running sum): finished; a running sum would be ≤.
        assert!(c.is_finished());
    }

    #[test]
    fn online_mean_variance_matches_the_definition() {
        let mut m = MeanVariance::default();
        for v in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            m.push(v);
        }
        assert!((m.mean - 5.0).abs() < 1e-15);
        assert!(
            (m.variance - 4.0).abs() < 1e-14,
            "biased variance {}",
            m.variance
        );
        assert!((m.unbiased_variance() - 32.0 / 7.0).abs() < 1e-14);
        let mut one = MeanVariance::default();
        one.push(3.0);
        assert!(one.unbiased_variance().is_nan());
    }
}
