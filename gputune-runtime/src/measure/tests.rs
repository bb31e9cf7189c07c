use std::cell::Cell;
use std::rc::Rc;

use super::*;
use crate::backend::ColdSample;
use crate::criterion::{Entropy, SampleCount};
use crate::device::{BackendKind, DeviceInfo};
use crate::launch::Launch;

/// A simulated device: a fixed cost per execution, a scripted SM clock, and a wall
/// clock that advances by a fixed step per sample.
struct Simulated {
    info: DeviceInfo,
    cost: f64,
    clocks: Vec<f64>,
    samples: usize,
    wall: Rc<Cell<f64>>,
    wall_step: f64,
    /// `samples` at each `begin_cold_run`.
    runs_begun: Vec<usize>,
}

impl Simulated {
    fn new(cost: f64, wall_step: f64) -> (Simulated, Rc<Cell<f64>>) {
        let wall = Rc::new(Cell::new(0.0));
        let info = DeviceInfo {
            sm_default_clock_rate: Some(1.0e9),
            ..DeviceInfo::bare(BackendKind::Cpu, "simulated")
        };
        let sim = Simulated {
            info,
            cost,
            clocks: Vec::new(),
            samples: 0,
            wall: wall.clone(),
            wall_step,
            runs_begun: Vec::new(),
        };
        (sim, wall)
    }
}

impl Backend for Simulated {
    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn cold_sample(&mut self, launches: &mut Launches<'_>) -> Result<ColdSample> {
        launches(&mut Launch::cpu()).map_err(crate::Error::Launch)?;
        let clock = self.clocks.get(self.samples).copied().unwrap_or(1.0e9);
        self.samples += 1;
        self.wall.set(self.wall.get() + self.wall_step);
        Ok(ColdSample {
            gpu_time: self.cost,
            cpu_time: self.cost * 1.1,
            sm_clock_rate: Some(clock),
        })
    }

    fn begin_cold_run(&mut self) {
        self.runs_begun.push(self.samples);
    }

    fn hot_batch(&mut self, launches: &mut Launches<'_>, count: u64) -> Result<f64> {
        for _ in 0..count {
            launches(&mut Launch::cpu()).map_err(crate::Error::Launch)?;
        }
        Ok(self.cost * count as f64)
    }
}

fn noop() -> impl FnMut(&mut Launch<'_>) -> std::result::Result<(), crate::BoxError> {
    |_| Ok(())
}

#[test]
fn timeout_marks_the_measurement() {
    let (mut sim, wall) = Simulated::new(1e-3, 0.5);
    let mut never = SampleCount::new(u64::MAX);
    let settings = ColdSettings {
        timeout: 3.0,
        ..ColdSettings::default()
    };
    let m = measure_cold_with_clock(&mut sim, &mut noop(), &mut never, &settings, &|| wall.get())
        .expect("simulated device does not fail");
    assert!(m.timed_out);
    // warm-up at 0.5 s, then samples at 1.0 … 3.5: the sixth sample crosses 3 s.
    assert_eq!(m.gpu_times.len(), 6);
}

#[test]
fn every_cold_run_is_announced_before_its_warm_up() {
    // The CUDA backend flushes L2 for the next sample at the end of one; a run's first
    // sample must not trust a flush that ran before whatever came between two runs.
    let (mut sim, wall) = Simulated::new(1e-3, 0.0);
    let settings = ColdSettings {
        min_samples: 10,
        ..ColdSettings::default()
    };
    for _ in 0..2 {
        let mut count = SampleCount::new(10);
        measure_cold_with_clock(&mut sim, &mut noop(), &mut count, &settings, &|| wall.get())
            .expect("simulated device does not fail");
    }
    // Each run: announced, then its warm-up and ten samples.
    assert_eq!(sim.runs_begun, vec![0, 11]);
    assert_eq!(sim.samples, 22);
}

#[test]
fn min_samples_hold_back_a_satisfied_criterion() {
    let (mut sim, wall) = Simulated::new(1e-3, 0.0);
    let mut entropy = Entropy::new(0.048, 0.36);
    let settings = ColdSettings {
        min_samples: 25,
        ..ColdSettings::default()
    };
    let m = measure_cold_with_clock(&mut sim, &mut noop(), &mut entropy, &settings, &|| {
        wall.get()
    })
    .expect("simulated device does not fail");
    assert!(!m.timed_out);
    // constant samples satisfy entropy at once; the first even count ≥ 25 is 26.
    assert_eq!(m.gpu_times.len(), 26);
}

#[test]
fn throttled_samples_are_discarded() {
    let (mut sim, wall) = Simulated::new(1e-3, 0.0);
    // warm-up, then two throttled samples (0.5 GHz < 0.75 · 1 GHz), then normal ones.
    sim.clocks = vec![1.0e9, 0.5e9, 0.7e9, 0.9e9];
    let mut ten = SampleCount::new(10);
    let m = measure_cold_with_clock(
        &mut sim,
        &mut noop(),
        &mut ten,
        &ColdSettings::default(),
        &|| wall.get(),
    )
    .expect("simulated device does not fail");
    assert_eq!(m.throttled_samples, 2);
    assert_eq!(m.gpu_times.len(), 10);
    assert_eq!(sim.samples, 13);
}

#[test]
fn launch_errors_stop_the_measurement() {
    let (mut sim, wall) = Simulated::new(1e-3, 0.0);
    let mut ten = SampleCount::new(10);
    let mut failing = |_: &mut Launch<'_>| -> std::result::Result<(), crate::BoxError> {
        Err("out of resources".into())
    };
    let err = measure_cold_with_clock(
        &mut sim,
        &mut failing,
        &mut ten,
        &ColdSettings::default(),
        &|| wall.get(),
    )
    .expect_err("launch fails");
    assert!(err.to_string().contains("out of resources"));
}

#[test]
fn hot_batches_reach_the_target_time() {
    // 2^-10 s per execution keeps the arithmetic exact: ceil(0.05 / 2^-10) = 52 per
    // batch, 52 · 2^-10 = 0.05078125 s a batch, so ten batches pass 0.5 s and nine do not.
    let cost = 1.0 / 1024.0;
    let (mut sim, _) = Simulated::new(cost, 0.0);
    let m = measure_hot(&mut sim, &mut noop(), cost, &HotSettings::default())
        .expect("simulated device does not fail");
    assert_eq!(m.batch_size, 52);
    assert_eq!(m.batch_means.len(), 10);
    assert_eq!(m.mean(), cost);
}

fn race(best: f64, cost: f64) -> ColdMeasurement {
    let (mut sim, wall) = Simulated::new(cost, 0.0);
    let mut many = SampleCount::new(1000);
    let settings = ColdSettings {
        race: Some(Race {
            best,
            margin: 0.05,
            confidence: None,
            below: 0.0,
            tie: 0.0,
        }),
        ..ColdSettings::default()
    };
    measure_cold_with_clock(&mut sim, &mut noop(), &mut many, &settings, &|| wall.get())
        .expect("simulated device does not fail")
}

#[test]
fn a_clearly_slower_state_loses_the_race_at_the_first_check() {
    let m = race(1e-3, 1.06e-3);
    assert_eq!(m.gpu_times.len(), Race::FIRST_CHECK);
    assert_eq!(
        m.raced,
        Some(Race {
            best: 1e-3,
            margin: 0.05,
            confidence: None,
            below: 0.0,
            tie: 0.0,
        })
    );
}

#[test]
fn a_state_within_the_margin_runs_its_criterion_to_the_end() {
    let m = race(1e-3, 1.04e-3);
    assert_eq!(m.gpu_times.len(), 1000);
    assert_eq!(m.raced, None);
}

#[test]
fn the_race_is_checked_when_the_count_doubles_and_on_the_first_quartile() {
    let best = Race {
        best: 1.0,
        margin: 0.05,
        confidence: None,
        below: 0.0,
        tie: 0.0,
    };
    let slow = |n: usize| vec![1.2; n];
    assert!(!best.lost(&slow(19)));
    assert!(best.lost(&slow(20)));
    assert!(!best.lost(&slow(30)), "30 is not a checkpoint");
    assert!(best.lost(&slow(40)));
    assert!(!best.lost(&slow(60)));
    assert!(best.lost(&slow(80)));
    // Half the samples as fast as the best: the first quartile is, so it stays in.
    let mixed: Vec<f64> = (0..40)
        .map(|i| if i % 2 == 0 { 1.0 } else { 1.2 })
        .collect();
    assert!(!best.lost(&mixed));
    // A quarter fast is not enough to stay in once the rest are clearly slower.
    let mostly_slow: Vec<f64> = (0..40)
        .map(|i| if i % 5 == 0 { 1.0 } else { 1.2 })
        .collect();
    assert!(best.lost(&mostly_slow));
}

/// A simulated device with a known cost per variant and seeded noise: Gaussian jitter of
/// `noise` (relative) and, one sample in fifty, an outlier up to 30 % slow.
struct Noisy {
    info: DeviceInfo,
    cost: f64,
    noise: f64,
    rng: u64,
}

impl Noisy {
    fn uniform(&mut self) -> f64 {
        // xorshift64*: enough for test noise, and the same on every machine.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

impl Backend for Noisy {
    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn cold_sample(&mut self, _: &mut Launches<'_>) -> Result<ColdSample> {
        let (u1, u2) = (self.uniform().max(1e-300), self.uniform());
        let gauss = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        let outlier = if self.uniform() < 0.02 {
            0.3 * self.uniform()
        } else {
            0.0
        };
        let t = self.cost * (1.0 + self.noise * gauss + outlier);
        Ok(ColdSample {
            gpu_time: t,
            cpu_time: t,
            sm_clock_rate: None,
        })
    }

    fn hot_batch(&mut self, _: &mut Launches<'_>, count: u64) -> Result<f64> {
        Ok(self.cost * count as f64)
    }
}

/// `0..n` in an order shuffled by `seed` (xorshift64, the same on every machine).
fn seeded_order(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for i in (1..order.len()).rev() {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        order.swap(i, (rng % (i as u64 + 1)) as usize);
    }
    order
}

/// One simulated search under `--decide z` over variants of the given relative costs in a
/// seeded order: the labels raced out, and the samples taken in all.
fn decide_search(costs: &[f64], z: Option<f64>, seed: u64) -> (Vec<usize>, usize) {
    let (sim, _) = Simulated::new(1.0, 0.0);
    let order = seeded_order(costs.len(), seed);
    let mut best: Option<(f64, f64)> = None;
    let (mut raced, mut samples) = (Vec::new(), 0);
    for &v in &order {
        let mut device = Noisy {
            info: sim.info.clone(),
            cost: 1e-4 * costs[v],
            noise: 0.01,
            rng: seed ^ (v as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03),
        };
        let settings = ColdSettings {
            race: match (z, best) {
                (Some(z), Some((median, upper))) => Some(Race {
                    best: median,
                    margin: upper / median - 1.0,
                    confidence: Some(z),
                    below: 0.0,
                    tie: 0.0,
                }),
                _ => None,
            },
            ..ColdSettings::default()
        };
        let mut full = SampleCount::new(160);
        let m = measure_cold_with_clock(&mut device, &mut noop(), &mut full, &settings, &|| 0.0)
            .expect("simulated device does not fail");
        samples += m.gpu_times.len();
        if m.raced.is_some() {
            raced.push(v);
            continue;
        }
        let mut sorted = m.gpu_times.clone();
        sorted.sort_by(f64::total_cmp);
        let median = crate::stats::quantile_sorted(&sorted, 0.5);
        let upper = crate::stats::median_interval(&sorted, z.unwrap_or(0.0)).1;
        if best.map_or(true, |(b, _)| median < b) {
            best = Some((median, upper));
        }
    }
    (raced, samples)
}

#[test]
fn decisions_come_each_time_the_count_grows_by_root_two() {
    let points: Vec<usize> = (0..700).filter(|&n| Race::is_decision_point(n)).collect();
    assert_eq!(
        points,
        [10, 14, 20, 28, 40, 57, 80, 113, 160, 226, 320, 453, 640]
    );
}

#[test]
fn deciding_never_drops_the_best_or_its_ties_and_spends_less_on_the_slow() {
    // Relative costs: the best (0) and an exact tie (1), near misses within the 1 % noise,
    // and clearly slower variants that a search should not time to the last digit.
    let costs = [1.0, 1.0, 1.002, 1.005, 1.01, 1.03, 1.06, 1.1, 1.3, 2.0];
    let seeds = 400;
    let (mut dropped_best, mut spent, mut spent_full) = (0, 0, 0);
    for seed in 0..seeds {
        let (raced, samples) = decide_search(&costs, Some(3.0), seed);
        dropped_best += raced.iter().filter(|&&v| v <= 1).count();
        spent += samples;
        spent_full += decide_search(&costs, None, seed).1;
    }
    // The documented error rate (docs/bench-json.md, `--decide`): at z = 3 the best or a
    // tie of it is dropped in well under 1 % of searches; here, in none of 400.
    assert_eq!(dropped_best, 0, "the best or its tie was raced out");
    assert!(
        (spent as f64) < 0.6 * spent_full as f64,
        "{spent} samples against {spent_full} without deciding"
    );
}

#[test]
fn the_early_look_drops_only_what_is_far_behind_beyond_its_own_spread() {
    let best = Race {
        best: 1.0,
        margin: 0.01,
        confidence: Some(3.0),
        below: 0.0,
        tie: 0.0,
    };
    // Upper bound 1.01, times the tie threshold: 1.015; times the spread of the samples.
    assert!(best.lost(&[1.10, 1.10, 1.10]));
    assert!(best.lost(&[1.03, 1.031, 1.032]));
    // 2 % behind, but the samples spread over 8 %: their noise could hide a tie.
    assert!(!best.lost(&[1.02, 1.05, 1.10]));
    // Within the tie threshold of the bound.
    assert!(!best.lost(&[1.014, 1.014, 1.014]));
    // Only at three samples (then at ten, and as the count doubles).
    assert!(!best.lost(&[1.5, 1.5]));
    assert!(!best.lost(&[1.5, 1.5, 1.5, 1.5]));
    // `--race`'s fixed margin has no early look.
    let margin = Race {
        confidence: None,
        ..best
    };
    assert!(!margin.lost(&[1.5, 1.5, 1.5]));
}

#[test]
fn a_state_far_behind_stops_after_three_samples_even_under_min_samples() {
    let (mut sim, wall) = Simulated::new(2e-3, 0.0);
    let mut screening = SampleCount::new(10);
    let settings = ColdSettings {
        min_samples: 10,
        race: Some(Race {
            best: 1e-3,
            margin: 0.01,
            confidence: Some(3.0),
            below: 0.0,
            tie: 0.0,
        }),
        ..ColdSettings::default()
    };
    let m = measure_cold_with_clock(&mut sim, &mut noop(), &mut screening, &settings, &|| {
        wall.get()
    })
    .expect("simulated device does not fail");
    assert_eq!(m.gpu_times.len(), Race::EARLY_CHECK);
    assert!(m.raced.is_some());
}

/// One simulated screening process: every variant (in a seeded order) gets up to ten samples
/// of a noisy device whose times drift up by `drift` over the process (a warming GPU), and
/// leaves as soon as `lost` says so against the best finished so far (its median and the
/// upper bound of its median, as the bench's race book keeps them). The variants dropped,
/// and the samples taken.
fn screening(
    costs: &[f64],
    drift: f64,
    lost: &dyn Fn(&Race, &[f64]) -> bool,
    seed: u64,
) -> (Vec<usize>, usize) {
    let (sim, _) = Simulated::new(1.0, 0.0);
    let order = seeded_order(costs.len(), seed);
    let mut best: Option<Race> = None;
    let (mut dropped, mut taken) = (Vec::new(), 0);
    for (at, &v) in order.iter().enumerate() {
        let warmed = 1.0 + drift * at as f64 / costs.len() as f64;
        let mut device = Noisy {
            info: sim.info.clone(),
            cost: 1e-4 * costs[v] * warmed,
            noise: 0.01,
            rng: seed ^ (v as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03),
        };
        let mut samples = Vec::new();
        let mut out = false;
        while samples.len() < 10 {
            let sample = device.cold_sample(&mut noop()).expect("simulated");
            samples.push(sample.gpu_time);
            if best.is_some_and(|b| lost(&b, &samples)) {
                out = true;
                break;
            }
        }
        taken += samples.len();
        if out {
            dropped.push(v);
            continue;
        }
        samples.sort_by(f64::total_cmp);
        let median = crate::stats::quantile_sorted(&samples, 0.5);
        let upper = crate::stats::median_interval(&samples, 3.0).1;
        if best.map_or(true, |b| median < b.best) {
            best = Some(Race {
                best: median,
                margin: upper / median - 1.0,
                confidence: Some(3.0),
                below: 0.0,
                tie: 0.0,
            });
        }
    }
    (dropped, taken)
}

#[test]
fn screening_early_never_drops_the_best_or_its_tie_and_the_test_catches_a_rule_that_does() {
    // The best (0) and an exact tie (1), near misses, and variants far behind: most of a
    // space. 1 % noise, one outlier in fifty, and a drift of 0.4 % over the process.
    let costs = [
        1.0, 1.0, 1.002, 1.005, 1.01, 1.03, 1.06, 1.1, 1.2, 1.3, 1.5, 2.0, 2.5, 3.0,
    ];
    let seeds = 500;
    let production = |race: &Race, samples: &[f64]| race.lost(samples);
    // Too early: the minimum of three above the best's bound, nothing for their own noise or
    // drift.
    let naive = |race: &Race, samples: &[f64]| {
        samples.len() == Race::EARLY_CHECK
            && samples.iter().copied().fold(f64::INFINITY, f64::min)
                > race.best * (1.0 + race.margin)
    };
    let never = |_: &Race, _: &[f64]| false;
    let (mut dropped_best, mut naive_dropped_best, mut spent, mut spent_full) = (0, 0, 0, 0);
    for seed in 0..seeds {
        let (dropped, samples) = screening(&costs, 0.004, &production, seed);
        dropped_best += dropped.iter().filter(|&&v| v <= 1).count();
        spent += samples;
        let (dropped, _) = screening(&costs, 0.004, &naive, seed);
        naive_dropped_best += dropped.iter().filter(|&&v| v <= 1).count();
        spent_full += screening(&costs, 0.004, &never, seed).1;
    }
    eprintln!(
        "screening: {dropped_best} drops of the best or its tie, {spent} samples; too early: \
         {naive_dropped_best} drops; in full: {spent_full} samples"
    );
    assert_eq!(
        dropped_best, 0,
        "the best or its tie was dropped at screening"
    );
    // The assertion above fails on it.
    assert!(
        naive_dropped_best > 0,
        "a rule that drops too early must fail this test ({naive_dropped_best} drops)"
    );
    assert!(
        (spent as f64) < 0.85 * spent_full as f64,
        "{spent} samples against {spent_full} screening everything in full"
    );
}

/// What one simulated finals process decided.
struct Finals {
    /// Each variant stopped as a tie, with the leader it tied.
    ties: Vec<(usize, usize)>,
    /// The median of each variant that was not raced out (tied ones included).
    medians: Vec<(usize, f64)>,
    /// Samples taken in all.
    samples: usize,
}

/// One simulated finals process under `--decide z` with the equivalence margin `tie`: the
/// variants in a seeded order, each measured until its criterion (160 samples), until it
/// loses the race against the leader (the fastest measured in full so far, as the bench's
/// race book keeps it), or until it ties the leader.
fn finals(costs: &[f64], z: f64, tie: f64, seed: u64) -> Finals {
    let (sim, _) = Simulated::new(1.0, 0.0);
    let mut leader: Option<(usize, Race)> = None;
    let mut out = Finals {
        ties: Vec::new(),
        medians: Vec::new(),
        samples: 0,
    };
    for v in seeded_order(costs.len(), seed) {
        let mut device = Noisy {
            info: sim.info.clone(),
            cost: 1e-4 * costs[v],
            noise: 0.01,
            rng: seed ^ (v as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03),
        };
        let settings = ColdSettings {
            race: leader.map(|(_, race)| race),
            ..ColdSettings::default()
        };
        let mut full = SampleCount::new(160);
        let m = measure_cold_with_clock(&mut device, &mut noop(), &mut full, &settings, &|| 0.0)
            .expect("simulated device does not fail");
        out.samples += m.gpu_times.len();
        if m.raced.is_some() {
            continue;
        }
        let mut sorted = m.gpu_times.clone();
        sorted.sort_by(f64::total_cmp);
        let median = crate::stats::quantile_sorted(&sorted, 0.5);
        out.medians.push((v, median));
        if let (Some(_), Some((l, _))) = (m.tied, leader) {
            out.ties.push((v, l));
            continue;
        }
        let (lower, upper) = crate::stats::median_interval(&sorted, z);
        if leader.map_or(true, |(_, race)| median < race.best) {
            leader = Some((
                v,
                Race {
                    best: median,
                    margin: upper / median - 1.0,
                    confidence: Some(z),
                    below: 1.0 - lower / median,
                    tie,
                },
            ));
        }
    }
    out
}

/// The wrong decisions of one finals process: ties whose true costs differ by more than the
/// margin, and a winner (the fastest median, as a search ranks) more than the margin slower
/// than the true best.
fn wrong_decisions(costs: &[f64], f: &Finals, tie: f64) -> usize {
    let wrong_ties = f
        .ties
        .iter()
        .filter(|&&(v, l)| (costs[v] / costs[l] - 1.0).abs() > tie)
        .count();
    let best = costs.iter().copied().fold(f64::INFINITY, f64::min);
    let winner = f.medians.iter().min_by(|a, b| a.1.total_cmp(&b.1));
    wrong_ties + usize::from(winner.map_or(true, |&(w, _)| costs[w] > best * (1.0 + tie)))
}

#[test]
fn finalists_stop_when_tied_within_the_margin_and_the_test_catches_a_stop_that_is_wrong() {
    // Finalists as a search meets them: the best, an exact tie, near misses inside and outside
    // a 1 % margin, and one clearly behind; 1 % noise and one outlier in fifty.
    let costs = [1.0, 1.0, 1.003, 1.006, 1.012, 1.015, 1.02, 1.03, 1.06];
    let (z, tie, seeds) = (3.0, 0.01, 300);
    let (mut wrong, mut ties, mut spent, mut spent_untied) = (0, 0, 0, 0);
    // The same stop with its confidence mis-set (0.3 standard errors, not 3): it calls ties
    // on noise.
    let mut loose_wrong = 0;
    for seed in 0..seeds {
        let f = finals(&costs, z, tie, seed);
        wrong += wrong_decisions(&costs, &f, tie);
        ties += f.ties.len();
        spent += f.samples;
        spent_untied += finals(&costs, z, 0.0, seed).samples;
        loose_wrong += wrong_decisions(&costs, &finals(&costs, 0.3, tie, seed), tie);
    }
    eprintln!(
        "finals: {ties} ties, {wrong} wrong decisions, {spent} samples ({spent_untied} without \
         the tie stop); mis-set: {loose_wrong} wrong decisions"
    );
    assert_eq!(wrong, 0, "a tie outside the margin, or a winner beyond it");
    // The assertion above fails on a stop that decides too early.
    assert!(
        loose_wrong > 0,
        "a stop with its confidence mis-set must fail this test ({loose_wrong} wrong)"
    );
    // The stop does stop: ties are called, and the finals take fewer samples.
    assert!(ties >= seeds as usize, "{ties} ties in {seeds} finals");
    assert!(
        (spent as f64) < 0.9 * spent_untied as f64,
        "{spent} samples against {spent_untied} without the tie stop"
    );
}

#[test]
fn a_tie_needs_both_intervals_inside_the_margin() {
    let race = Race {
        best: 1.0,
        margin: 0.002,
        confidence: Some(3.0),
        below: 0.002,
        tie: 0.01,
    };
    // 40 samples (a decision point) tight around 1.003: inside 1 ± 1 % with the best's bounds.
    let close: Vec<f64> = (0..40).map(|i| 1.003 + 1e-4 * f64::from(i % 5)).collect();
    assert!(race.tied(&close));
    // Around 1.009: its upper bound over 0.998 · 1.01.
    let near: Vec<f64> = close.iter().map(|t| t + 0.006).collect();
    assert!(!race.tied(&near));
    // Not at a count that is no decision point, nor without a margin or under `--race`.
    assert!(!race.tied(&close[..39]));
    assert!(!Race { tie: 0.0, ..race }.tied(&close));
    assert!(!Race {
        confidence: None,
        ..race
    }
    .tied(&close));
    // Faster beyond the margin is no tie either: it is the new best.
    let faster: Vec<f64> = close.iter().map(|t| t - 0.03).collect();
    assert!(!race.tied(&faster));
}

#[test]
fn a_tie_takes_min_samples_and_is_reported_as_such() {
    let (mut sim, wall) = Simulated::new(1e-3, 0.0);
    let race = Race {
        best: 1e-3,
        margin: 0.001,
        confidence: Some(3.0),
        below: 0.001,
        tie: 0.01,
    };
    let settings = ColdSettings {
        min_samples: 20,
        race: Some(race),
        ..ColdSettings::default()
    };
    let mut full = SampleCount::new(1000);
    let m = measure_cold_with_clock(&mut sim, &mut noop(), &mut full, &settings, &|| wall.get())
        .expect("simulated device does not fail");
    // Exactly the best's time: a tie at the first decision point past --min-samples.
    assert_eq!(m.gpu_times.len(), 20);
    assert_eq!(m.tied, Some(race));
    assert!(m.raced.is_none());
}
