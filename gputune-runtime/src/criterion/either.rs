use super::{Entropy, Stdrel, StoppingCriterion};

/// nvbench's two criteria side by side: stop as soon as either of them would.
///
/// Why: the entropy criterion counts exact sample values, so where it stops depends on the
/// timer's resolution against the kernel's spread. A kernel of a few hundred microseconds on
/// a 32 ns event clock repeats values and settles after about 500 samples; a 7 ms kernel with
/// ±25 µs of spread almost never repeats one, its entropy grows as log2(n), and the trend
/// line flattens only after 1 000–1 700 samples: ten seconds of GPU time for a median that
/// stdrel, nvbench's default, calls settled after 0.5 s. Taking the first of the two keeps
/// entropy's behaviour where it is cheap (short kernels never reach stdrel's `min-time`
/// first) and stdrel's where entropy is only counting distinct clock ticks. The parameters
/// are both criteria's: `max-noise` and `min-time`, `max-angle` and `min-r2`.
#[derive(Debug, Clone)]
pub struct EntropyOrStdrel {
    entropy: Entropy,
    stdrel: Stdrel,
}

impl EntropyOrStdrel {
    /// The name `--stopping-criterion` selects it by; a search's default.
    pub const NAME: &'static str = "entropy-or-stdrel";

    /// Both criteria with their own parameters.
    pub fn new(entropy: Entropy, stdrel: Stdrel) -> EntropyOrStdrel {
        EntropyOrStdrel { entropy, stdrel }
    }
}

impl StoppingCriterion for EntropyOrStdrel {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn params(&self) -> Vec<(String, f64)> {
        let mut p = self.stdrel.params();
        p.extend(self.entropy.params());
        p
    }

    fn initialize(&mut self) {
        self.entropy.initialize();
        self.stdrel.initialize();
    }

    fn add_measurement(&mut self, seconds: f64) {
        self.entropy.add_measurement(seconds);
        self.stdrel.add_measurement(seconds);
    }

    fn is_finished(&self) -> bool {
        self.entropy.is_finished() || self.stdrel.is_finished()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples of `mean` with a deterministic spread of ±`spread` (relative) on a clock of
    /// `tick` seconds.
    fn clocked(mean: f64, spread: f64, tick: f64, n: usize) -> Vec<f64> {
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                let t = mean * (1.0 + spread * (2.0 * u - 1.0));
                (t / tick).round() * tick
            })
            .collect()
    }

    fn stops_after(c: &mut dyn StoppingCriterion, samples: &[f64]) -> Option<usize> {
        c.initialize();
        samples.iter().enumerate().find_map(|(i, &s)| {
            c.add_measurement(s);
            c.is_finished().then_some(i + 1)
        })
    }

    fn both() -> EntropyOrStdrel {
        EntropyOrStdrel::new(Entropy::new(0.048, 0.36), Stdrel::new(0.005, 0.5))
    }

    #[test]
    fn a_long_kernel_stops_with_stdrel_not_after_a_thousand_samples() {
        // 7 ms ± 0.5 % on a 32 ns clock: almost every value is new.
        let samples = clocked(7e-3, 0.005, 32e-9, 3000);
        let entropy = stops_after(&mut Entropy::new(0.048, 0.36), &samples).expect("stops");
        let stdrel = stops_after(&mut Stdrel::new(0.005, 0.5), &samples).expect("stops");
        let either = stops_after(&mut both(), &samples).expect("stops");
        assert!(entropy > 500, "entropy stopped at {entropy}");
        assert_eq!(either, stdrel.min(entropy));
        assert!(either < 100, "stopped at {either}");
    }

    #[test]
    fn a_short_kernel_stops_with_entropy_before_stdrels_min_time() {
        // 100 µs ± 1 % on a 0.5 µs clock: few distinct values, entropy settles early, and
        // 0.5 s of GPU time would take 5 000 samples.
        let samples = clocked(100e-6, 0.01, 0.5e-6, 6000);
        let entropy = stops_after(&mut Entropy::new(0.048, 0.36), &samples).expect("stops");
        let either = stops_after(&mut both(), &samples).expect("stops");
        assert_eq!(either, entropy);
        assert!(either < 5000, "stopped at {either}");
    }

    #[test]
    fn it_reports_both_criteria_parameters() {
        let names: Vec<String> = both().params().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["max-noise", "min-time", "max-angle", "min-r2"]);
    }
}
