//! stdrel and entropy held to a second, plain implementation of nvbench's rules.
//!
//! The plain implementations below keep every sample and recompute every statistic from
//! scratch at every step: the mean and the variance over the whole sample list (two passes),
//! H over the whole table of value counts, the trend line and its R² over the whole window of
//! 299 values of H (two passes), the plateau over the whole window of 512 noise estimates, the
//! run of invalid estimates by counting back through all of them. None of the incremental
//! arithmetic of the criteria (nvbench's online mean and variance, the running Σ c·log2 c, the
//! sliding sums of the line) is shared, so an error in one shows as a different stop.
//!
//! Streams come from a seeded generator (no dependency, the same streams on every run): jitter
//! on a clock tick, two levels, drift, outliers, zero timings, infinite samples, constant and
//! periodic streams, each with drawn criterion parameters. Every stream must stop at the same
//! sample under both; the periodic ones reach nvbench's flat-window cutoff (Σ(y − ȳ)² < 1e-9 ⇒
//! R² = 1), so that rule is held too.

use super::{Entropy, Stdrel, StoppingCriterion};

/// nvbench's stdrel, recomputed from all samples at every step.
struct PlainStdrel {
    max_noise: f64,
    min_time: f64,
    samples: Vec<f64>,
    /// One entry per sample from the 5th on: the noise estimate, or `None` if invalid.
    estimates: Vec<Option<f64>>,
}

impl PlainStdrel {
    fn new(max_noise: f64, min_time: f64) -> PlainStdrel {
        PlainStdrel {
            max_noise,
            min_time,
            samples: Vec::new(),
            estimates: Vec::new(),
        }
    }

    fn mean(values: &[f64]) -> f64 {
        values.iter().sum::<f64>() / values.len() as f64
    }

    fn push(&mut self, x: f64) {
        self.samples.push(x);
        let n = self.samples.len();
        if n < 5 {
            return;
        }
        let mean = Self::mean(&self.samples);
        let var = self
            .samples
            .iter()
            .map(|v| (v - mean) * (v - mean))
            .sum::<f64>()
            / (n - 1) as f64;
        // Invalid: a mean that is not positive and finite, a NaN variance, an infinite ratio.
        let noise = var.sqrt() / mean;
        let valid = mean > 0.0 && mean.is_finite() && !var.is_nan() && noise.is_finite();
        self.estimates.push(valid.then_some(noise));
    }

    fn finished(&self) -> bool {
        let invalid_run = self
            .estimates
            .iter()
            .rev()
            .take_while(|e| e.is_none())
            .count();
        if invalid_run >= 64 {
            return true;
        }
        let n = self.samples.len();
        if n == 0 || Self::mean(&self.samples) * n as f64 <= self.min_time {
            return false;
        }
        let valid: Vec<f64> = self.estimates.iter().flatten().copied().collect();
        let Some(&latest) = valid.last() else {
            return false;
        };
        if invalid_run != 0 {
            return false;
        }
        if latest < self.max_noise {
            return true;
        }
        if valid.len() > 64 && n % 16 == 0 {
            let window = &valid[valid.len().saturating_sub(512)..];
            let mean = Self::mean(window);
            let biased =
                window.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / window.len() as f64;
            if mean.is_finite() && biased.is_finite() && biased.sqrt() < 0.05 * mean {
                return true;
            }
        }
        false
    }
}

/// nvbench's entropy criterion, recomputed from the whole count table and window each step.
struct PlainEntropy {
    max_angle: f64,
    min_r2: f64,
    n: u64,
    /// Value (bits, -0.0 as 0.0) → count, sorted: the sample list without its order.
    counts: std::collections::BTreeMap<u64, u64>,
    /// H after every sample.
    entropies: Vec<f64>,
}

/// What the plain entropy rule says at one step.
#[derive(Debug, Clone, Copy, PartialEq)]
struct EntropyVerdict {
    stop: bool,
    /// The window was not constant, yet nvbench's cutoff (Σ(y − ȳ)² < 1e-9) set R² = 1 and the
    /// angle was within the limit: the documented case where gputune's exact R² decides.
    flat_cutoff: bool,
}

impl PlainEntropy {
    fn new(max_angle: f64, min_r2: f64) -> PlainEntropy {
        PlainEntropy {
            max_angle,
            min_r2,
            n: 0,
            counts: Default::default(),
            entropies: Vec::new(),
        }
    }

    fn push(&mut self, x: f64) {
        self.n += 1;
        *self.counts.entry((x + 0.0).to_bits()).or_insert(0) += 1;
        let n = self.n as f64;
        let sum: f64 = self
            .counts
            .values()
            .map(|&c| c as f64 * (c as f64).log2())
            .sum();
        self.entropies.push((n.log2() - sum / n).max(0.0));
    }

    fn verdict(&self) -> EntropyVerdict {
        let no = EntropyVerdict {
            stop: false,
            flat_cutoff: false,
        };
        if self.entropies.len() < 2 || self.n % 2 != 0 {
            return no;
        }
        let ys = &self.entropies[self.entropies.len().saturating_sub(299)..];
        let len = ys.len() as f64;
        let mean_x = (len - 1.0) / 2.0;
        let mean_y = ys.iter().sum::<f64>() / len;
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for (i, y) in ys.iter().enumerate() {
            sxy += (i as f64 - mean_x) * (y - mean_y);
            sxx += (i as f64 - mean_x) * (i as f64 - mean_x);
        }
        let slope = sxy / sxx;
        let intercept = mean_y - slope * mean_x;
        let angle = slope.atan().to_degrees();
        if angle > self.max_angle {
            return no;
        }
        let ss_tot: f64 = ys.iter().map(|y| (y - mean_y) * (y - mean_y)).sum();
        let ss_res: f64 = ys
            .iter()
            .enumerate()
            .map(|(i, y)| (y - (slope * i as f64 + intercept)).powi(2))
            .sum();
        if ss_tot < 1e-9 {
            return EntropyVerdict {
                stop: true,
                flat_cutoff: ss_tot > 0.0 && 1.0 - ss_res / ss_tot < self.min_r2,
            };
        }
        let r2 = (1.0 - ss_res / ss_tot).clamp(0.0, 1.0);
        EntropyVerdict {
            stop: r2 >= self.min_r2,
            flat_cutoff: false,
        }
    }
}

/// SplitMix64: a small, seeded generator, so every run sees the same streams.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[(self.next() % from.len() as u64) as usize]
    }
}

/// One generated stream of GPU times, `len` samples long, of the given family, and the
/// typical time it was drawn around.
fn stream(rng: &mut Rng, family: u64, len: usize) -> (Vec<f64>, f64) {
    let mean = 10f64.powf(-6.0 + 4.0 * rng.unit());
    let spread = rng.pick(&[1e-4, 1e-3, 5e-3, 0.02, 0.1, 0.3]);
    let tick = rng.pick(&[0.0, 1e-9, 32e-9, 0.5e-6, 1e-6]);
    let on_clock = |t: f64| {
        if tick > 0.0 {
            (t / tick).round() * tick
        } else {
            t
        }
    };
    let mut out = Vec::with_capacity(len);
    match family {
        // Jitter around a mean, on a clock.
        0 => {
            for _ in 0..len {
                out.push(on_clock(mean * (1.0 + spread * (2.0 * rng.unit() - 1.0))));
            }
        }
        // Two levels, the upper one with probability p.
        1 => {
            let (low, high, p) = (mean, mean * (1.0 + 10.0 * spread), rng.unit());
            for _ in 0..len {
                let level = if rng.unit() < p { high } else { low };
                out.push(on_clock(level * (1.0 + 0.1 * spread * rng.unit())));
            }
        }
        // A drift, up or down.
        2 => {
            let drift = (2.0 * rng.unit() - 1.0) * 1e-3;
            for i in 0..len {
                let trend = (1.0 + drift * i as f64).max(0.1);
                out.push(on_clock(mean * trend * (1.0 + spread * rng.unit())));
            }
        }
        // Outliers: now and then a sample many times the rest.
        3 => {
            let rate = rng.pick(&[0.001, 0.01, 0.05]);
            for _ in 0..len {
                let spike = if rng.unit() < rate {
                    2.0 + 20.0 * rng.unit()
                } else {
                    1.0
                };
                out.push(on_clock(mean * spike * (1.0 + spread * rng.unit())));
            }
        }
        // Zero timings: a leading run of zeros, then zeros among the samples now and then.
        4 => {
            let lead = rng.pick(&[0, 3, 30, 63, 64, 70, 200]);
            let rate = rng.pick(&[0.0, 0.01, 0.2, 0.9]);
            for i in 0..len {
                let zero = i < lead || rng.unit() < rate;
                out.push(if zero {
                    0.0
                } else {
                    on_clock(mean * (1.0 + spread * rng.unit()))
                });
            }
        }
        // All zero: the timer cannot see the kernel.
        5 => out.resize(len, 0.0),
        // An infinite sample somewhere (a broken timer): every later mean is infinite or NaN.
        6 => {
            let at = (rng.next() % len as u64) as usize;
            for i in 0..len {
                let t = on_clock(mean * (1.0 + spread * rng.unit()));
                out.push(if i == at { f64::INFINITY } else { t });
            }
        }
        // Constant.
        7 => out.resize(len, on_clock(mean)),
        // Periodic: a cycle of two to five values, the flat-window case of the entropy rule.
        _ => {
            let period = 2 + (rng.next() % 4) as usize;
            let cycle: Vec<f64> = (0..period)
                .map(|k| on_clock(mean * (1.0 + spread * k as f64)))
                .collect();
            for i in 0..len {
                out.push(cycle[i % period]);
            }
        }
    }
    (out, mean)
}

/// The first sample count, from `min_samples` on, after which `step` (fed that sample) says
/// stop: what the measurement loop does with a criterion.
fn first_stop(
    samples: &[f64],
    min_samples: usize,
    mut step: impl FnMut(f64) -> bool,
) -> Option<usize> {
    samples
        .iter()
        .enumerate()
        .find_map(|(i, &s)| (step(s) && i + 1 >= min_samples).then_some(i + 1))
}

const STREAMS: u64 = 270;
const FAMILIES: u64 = 9;
const MAX_LEN: usize = 2000;

#[test]
fn stdrel_stops_where_the_plain_rules_do_on_generated_streams() {
    let mut rng = Rng(0x5EED_0033);
    let mut stopped = 0;
    for s in 0..STREAMS {
        let family = s % FAMILIES;
        let (samples, typical) = stream(&mut rng, family, MAX_LEN);
        let max_noise = rng.pick(&[0.001, 0.005, 0.02, 0.1]);
        // Min-time as a count of typical samples, off the integers so that no generated
        // stream ties mean × n with it exactly.
        let min_time = typical * rng.pick(&[0.0, 4.37, 40.37, 300.37, 1200.37]);
        let min_samples = rng.pick(&[1, 10]);

        let mut c = Stdrel::new(max_noise, min_time);
        c.initialize();
        let mut plain = PlainStdrel::new(max_noise, min_time);
        let ours = first_stop(&samples, min_samples, |x| {
            c.add_measurement(x);
            c.is_finished()
        });
        let theirs = first_stop(&samples, min_samples, |x| {
            plain.push(x);
            plain.finished()
        });
        assert_eq!(
            ours, theirs,
            "stream {s} (family {family}, max-noise {max_noise}, min-time {min_time:e}, \
             min-samples {min_samples}): gputune stops at {ours:?}, the plain rules at {theirs:?}"
        );
        stopped += usize::from(ours.is_some());
    }
    // The streams exercise the rules: most of them stop within their length.
    assert!(
        stopped as u64 > STREAMS * 3 / 4,
        "only {stopped} of {STREAMS} stopped"
    );
}

#[test]
fn entropy_stops_where_the_plain_rules_do_on_generated_streams() {
    let mut rng = Rng(0x5EED_E1A0);
    let (mut stopped, mut flat) = (0, 0);
    for s in 0..STREAMS {
        let family = s % FAMILIES;
        let (samples, _) = stream(&mut rng, family, MAX_LEN);
        let max_angle = rng.pick(&[0.048, 0.2]);
        let min_r2 = rng.pick(&[0.36, 0.1, 0.8]);
        let min_samples = rng.pick(&[1, 10]);

        let mut c = Entropy::new(max_angle, min_r2);
        c.initialize();
        let mut plain = PlainEntropy::new(max_angle, min_r2);
        // Both step together until both have stopped; the plain verdicts are kept so that
        // the one at its stop can be looked at.
        let (mut ours, mut theirs, mut verdicts) = (None, None, Vec::new());
        for (i, &x) in samples.iter().enumerate() {
            let eligible = i + 1 >= min_samples;
            if ours.is_none() {
                c.add_measurement(x);
                if eligible && c.is_finished() {
                    ours = Some(i + 1);
                }
            }
            if theirs.is_none() {
                plain.push(x);
                let v = plain.verdict();
                verdicts.push(v);
                if eligible && v.stop {
                    theirs = Some(i + 1);
                }
            }
            if ours.is_some() && theirs.is_some() {
                break;
            }
        }
        assert_eq!(
            ours, theirs,
            "stream {s} (family {family}, max-angle {max_angle}, min-r2 {min_r2}, \
             min-samples {min_samples})"
        );
        stopped += usize::from(ours.is_some());
        // Stops through nvbench's flat cutoff (a window not constant, yet R² taken as 1).
        flat += usize::from(theirs.is_some_and(|at| verdicts[at - 1].flat_cutoff));
    }
    assert!(
        stopped as u64 > STREAMS / 2,
        "only {stopped} of {STREAMS} stopped"
    );
    // The periodic streams reach the flat cutoff: the rule is exercised, not just present.
    assert!(flat > 0, "no stream stopped through the flat cutoff");
}

/// Two values in turn (1.000 ms, 1.001 ms): the flat window, as nvbench stops it.
///
/// After n samples H is exactly 1 bit at even n and 1 − O(1/n²) bits at odd n, so from a few
/// hundred samples on the window of 299 values of H is flat but not constant: it swings by a
/// few 1e-6 bits around a line of slope ~0. A line explains little of that swing (R² ≈ 0.1),
/// but its Σ(y − ȳ)² is under 1e-9 and nvbench takes R² = 1 there: H has settled. Without the
/// cutoff, `entropy` alone would run such a stream to the timeout.
#[test]
fn a_flat_periodic_window_stops_as_nvbench_stops_it() {
    let samples: Vec<f64> = (0..4000)
        .map(|i| if i % 2 == 0 { 1.000e-3 } else { 1.001e-3 })
        .collect();
    let mut plain = PlainEntropy::new(0.048, 0.36);
    let theirs = first_stop(&samples, 10, |x| {
        plain.push(x);
        plain.verdict().stop
    })
    .expect("nvbench's rule stops it");
    assert!(
        (500..=800).contains(&theirs),
        "nvbench's rule stops at {theirs}"
    );
    assert!(plain.verdict().flat_cutoff, "through the flat cutoff");

    let mut c = Entropy::new(0.048, 0.36);
    c.initialize();
    feed_all(&mut c, &samples[..theirs]);
    let (angle, r2) = c.trend().expect("a line");
    assert!(angle.abs() <= 0.048, "the angle passes: {angle}");
    assert!(r2 >= 0.36, "the flat window counts as a fit: {r2}");
    c.initialize();
    assert_eq!(
        first_stop(&samples, 10, |x| {
            c.add_measurement(x);
            c.is_finished()
        }),
        Some(theirs),
        "gputune's entropy stops where nvbench's does"
    );
}

fn feed_all(c: &mut dyn StoppingCriterion, samples: &[f64]) {
    for &s in samples {
        c.add_measurement(s);
    }
}
