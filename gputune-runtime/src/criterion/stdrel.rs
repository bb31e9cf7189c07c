use std::collections::VecDeque;

use super::StoppingCriterion;

/// How many noise estimates the plateau rule looks back over.
const NOISE_WINDOW: usize = 512;
/// The plateau rule needs more than this many estimates.
const PLATEAU_MIN_ESTIMATES: usize = 64;
/// …and is checked every this many samples.
const PLATEAU_CHECK_EVERY: u64 = 16;
/// Noise has plateaued when the estimates' stdev is below this fraction of their mean.
const PLATEAU_THRESHOLD: f64 = 0.05;
/// Noise is estimated only from this many samples on.
const MIN_SAMPLES_FOR_NOISE: u64 = 5;

/// nvbench's default criterion: relative standard deviation of the GPU times.
///
/// Noise is the sample stdev (n − 1) over the mean, estimated from 5 samples on. The
/// criterion keeps going while the total GPU time is at most `min_time`, then stops once the
/// noise is below `max_noise`. A kernel whose noise never gets that low is caught by the
/// plateau rule: once more than 64 estimates exist, every 16 samples, it stops when the last
/// (at most 512) estimates have a stdev under 5 % of their mean. (nvbench measures that
/// spread around the latest estimate rather than the mean; we follow DESIGN and use the mean.)
#[derive(Debug, Clone)]
pub struct Stdrel {
    max_noise: f64,
    min_time: f64,
    samples: u64,
    total_time: f64,
    // Welford's running mean and sum of squared deviations: O(1) per sample, no catastrophic
    // cancellation, and the same value nvbench gets by recomputing over all samples.
    mean: f64,
    m2: f64,
    noise: VecDeque<f64>,
}

impl Stdrel {
    /// A criterion with `max_noise` as a fraction (0.005 = 0.5 %) and `min_time` in seconds.
    pub fn new(max_noise: f64, min_time: f64) -> Stdrel {
        Stdrel {
            max_noise,
            min_time,
            samples: 0,
            total_time: 0.0,
            mean: 0.0,
            m2: 0.0,
            noise: VecDeque::with_capacity(NOISE_WINDOW),
        }
    }

    /// The latest noise estimate (relative stdev), once there is one.
    pub fn noise(&self) -> Option<f64> {
        self.noise.back().copied()
    }

    fn plateaued(&self) -> bool {
        let n = self.noise.len();
        let mean = self.noise.iter().sum::<f64>() / n as f64;
        let var = self
            .noise
            .iter()
            .map(|v| (v - mean) * (v - mean))
            .sum::<f64>()
            / (n - 1) as f64;
        var.sqrt() / mean < PLATEAU_THRESHOLD
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
        self.samples += 1;
        self.total_time += seconds;
        let delta = seconds - self.mean;
        self.mean += delta / self.samples as f64;
        self.m2 += delta * (seconds - self.mean);
        if self.samples >= MIN_SAMPLES_FOR_NOISE {
            let noise = (self.m2 / (self.samples - 1) as f64).sqrt() / self.mean;
            if noise.is_finite() {
                if self.noise.len() == NOISE_WINDOW {
                    self.noise.pop_front();
                }
                self.noise.push_back(noise);
            }
        }
    }

    fn is_finished(&self) -> bool {
        if self.total_time <= self.min_time {
            return false;
        }
        let Some(&noise) = self.noise.back() else {
            return false;
        };
        if noise < self.max_noise {
            return true;
        }
        self.noise.len() > PLATEAU_MIN_ESTIMATES
            && self.samples % PLATEAU_CHECK_EVERY == 0
            && self.plateaued()
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
}
