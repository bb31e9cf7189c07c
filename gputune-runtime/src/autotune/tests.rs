//! The autotuner against the simulated device: behaviour only, never wall-clock time.

use std::sync::{Arc, Mutex};

use super::sim::{SimDevice, SimTimer};
use super::*;

const POW2: [u32; 6] = [32, 64, 128, 256, 512, 1024];
const BIG: u64 = 1 << 20;
const SMALL: u64 = 1000;

/// The simulated kernel: best block size 256 for large problems and 64 for small ones; each
/// factor of two away costs 25 %, far more than the 5 % noise.
fn cost(block: &u32, n: u64) -> f64 {
    let best: f64 = if n >= 1 << 16 { 256.0 } else { 64.0 };
    let off = (f64::from(*block).log2() - best.log2()).abs();
    1e-9 * n.max(1) as f64 * (1.0 + 0.25 * off)
}

fn device(seed: u64) -> SimDevice<u32> {
    SimDevice::new(seed, 0.05, cost)
}

fn tuner() -> AutotunerBuilder<u32> {
    Autotuner::builder("test", POW2.to_vec()).period(u64::MAX)
}

/// `launches` begin / launch / end cycles at `size`; the parameters used, in order.
fn drive(
    tuner: &mut Autotuner<u32, SimTimer>,
    dev: &SimDevice<u32>,
    size: u64,
    launches: u64,
) -> Vec<u32> {
    (0..launches)
        .map(|_| {
            let p = tuner.begin(size).expect("begin");
            dev.launch(&p, size);
            tuner.end().expect("end");
            p
        })
        .collect()
}

#[test]
fn every_candidate_is_sampled_n_times_round_robin() {
    for n in [1, 3, 5, 7] {
        let dev = device(1);
        let mut t = tuner().samples(n).build(dev.timer()).expect("build");
        let k = POW2.len() as u64;
        let mut used = drive(&mut t, &dev, BIG, k * n as u64 - 1);
        assert!(!t.is_complete(), "complete one sample early (n = {n})");
        assert_eq!(t.phase(BIG), Some(Phase::Startup));
        used.extend(drive(&mut t, &dev, BIG, 1));
        assert!(t.is_complete(), "n = {n}");
        // One sample of each candidate per round, in the given order.
        assert!(
            used.chunks(POW2.len()).all(|round| round == POW2),
            "{used:?}"
        );
        assert_eq!(t.phase(BIG), Some(Phase::Idle));
        for p in POW2 {
            assert_eq!(dev.launches_of(&p), n as u64, "block {p}, n = {n}");
        }
        assert_eq!(dev.timer_calls(), 2 * k * n as u64);
        let summary = t.summary(BIG).expect("tuned");
        assert!(summary
            .candidates
            .iter()
            .all(|c| c.samples_taken == n as u64));
        assert_eq!(summary.scans, 1);
    }
}

#[test]
fn the_known_best_is_chosen() {
    for statistic in [Statistic::Median, Statistic::Mean, Statistic::Max] {
        for seed in 0..20 {
            let dev = device(seed);
            let mut t = tuner()
                .statistic(statistic)
                .build(dev.timer())
                .expect("build");
            drive(&mut t, &dev, BIG, 30);
            assert_eq!(t.winner(BIG), Some(&256), "{statistic:?}, seed {seed}");
            let s = t.summary(BIG).expect("tuned");
            let best = s.best.expect("measured");
            let exact = cost(&256, BIG);
            assert!((best / exact - 1.0).abs() <= 0.05, "{best} vs {exact}");
            assert!(s.spread.is_some_and(|r| r > 1.4), "{:?}", s.spread);
        }
    }
}

#[test]
fn idle_launches_return_the_winner_and_do_no_timer_work() {
    let dev = device(2);
    let mut t = tuner().build(dev.timer()).expect("build");
    drive(&mut t, &dev, BIG, 30);
    let calls = dev.timer_calls();
    let used = drive(&mut t, &dev, BIG, 10_000);
    assert!(used.iter().all(|&p| p == 256));
    assert_eq!(
        dev.timer_calls(),
        calls,
        "an idle begin or end touched the timer"
    );
}

#[test]
fn a_rescan_starts_after_period_idle_launches_and_takes_one_round() {
    let dev = device(3);
    let mut t = tuner().period(1000).build(dev.timer()).expect("build");
    drive(&mut t, &dev, BIG, 30);
    let calls = dev.timer_calls();
    let idle = drive(&mut t, &dev, BIG, 1000);
    assert!(idle.iter().all(|&p| p == 256));
    assert_eq!(dev.timer_calls(), calls);
    // Launch 1001 is timed: the rescan has begun.
    let p = t.begin(BIG).expect("begin");
    assert_eq!((p, t.phase(BIG)), (32, Some(Phase::Rescan)));
    assert_eq!(dev.timer_calls(), calls + 1);
    // The old winner still stands while rescanning.
    assert_eq!(t.winner(BIG), Some(&256));
    dev.launch(&p, BIG);
    t.end().expect("end");
    // One sample per candidate, then idle again.
    let rescan = drive(&mut t, &dev, BIG, 5);
    assert_eq!(rescan, POW2[1..]);
    assert_eq!(t.phase(BIG), Some(Phase::Idle));
    let s = t.summary(BIG).expect("tuned");
    assert_eq!(s.scans, 2);
    assert!(s.candidates.iter().all(|c| c.samples_taken == 6));
    assert_eq!(dev.timer_calls(), calls + 2 * 6);
}

#[test]
fn rescans_follow_a_change_in_the_best_parameter() {
    let dev = device(4);
    let mut t = tuner().period(100).build(dev.timer()).expect("build");
    drive(&mut t, &dev, BIG, 30);
    assert_eq!(t.winner(BIG), Some(&256));
    // The device changes under the program: 64 is now best at every size.
    dev.set_cost(|b: &u32, n| cost(b, n.min(1000)) * 1000.0);
    // Each rescan replaces one of the five samples; the median moves after three.
    drive(&mut t, &dev, BIG, 2 * 106);
    assert_eq!(t.winner(BIG), Some(&256), "moved after two of five samples");
    drive(&mut t, &dev, BIG, 106);
    assert_eq!(t.winner(BIG), Some(&64));
}

#[test]
fn invalid_candidates_are_never_returned() {
    let dev = device(5);
    let mut t = tuner()
        .period(50)
        .valid(|&b| b != 256 && b != 512)
        .build(dev.timer())
        .expect("build");
    assert_eq!(t.candidates(), [32, 64, 128, 1024]);
    let used = drive(&mut t, &dev, BIG, 1000);
    assert!(used.iter().all(|&p| p != 256 && p != 512));
    assert_eq!(dev.launches_of(&256) + dev.launches_of(&512), 0);
    // The best valid one wins.
    assert_eq!(t.winner(BIG), Some(&128));

    let none = Autotuner::builder("test", POW2.to_vec())
        .valid(|&b| b > 4096)
        .build(dev.timer());
    assert!(matches!(none, Err(Error::Config(_))), "{none:?}");
}

#[test]
fn block_sizes_are_clamped_to_the_kernels_maximum() {
    let dev = device(6);
    let all: Vec<u32> = (32..=2048).step_by(32).collect();
    let t = Autotuner::builder("test", all.clone())
        .clamp_block_sizes(1000)
        .build(dev.timer())
        .expect("build");
    // 32..=992 (31 sizes) stay; everything above becomes 1000, once.
    assert_eq!(t.candidates().len(), 32);
    assert_eq!(t.candidates().last(), Some(&1000));
    assert!(t.candidates().iter().all(|&b| b <= 1000));

    // Where the unclamped best (1024) cannot launch, the largest launchable size wins.
    let big_best = SimDevice::new(7, 0.05, |b: &u32, _| 1e-6 * 2048.0 / f64::from(*b));
    let mut t = Autotuner::builder("test", all)
        .clamp_block_sizes(768)
        .build(big_best.timer())
        .expect("build");
    let used = drive(&mut t, &big_best, BIG, 1000);
    assert!(used.iter().all(|&b| b <= 768));
    assert_eq!(t.winner(BIG), Some(&768));

    let zero = Autotuner::builder("test", POW2.to_vec())
        .clamp_block_sizes(0)
        .build(dev.timer());
    assert!(matches!(zero, Err(Error::Config(_))), "{zero:?}");
}

#[test]
fn keys_are_tuned_independently() {
    let dev = device(8);
    let mut t = tuner().build(dev.timer()).expect("build");
    assert_eq!(t.key_of(SMALL), 1024);
    assert_eq!(t.key_of(600), t.key_of(SMALL));
    assert_ne!(t.key_of(BIG), t.key_of(SMALL));

    drive(&mut t, &dev, BIG, 30);
    assert!(t.is_complete_for(BIG));
    assert_eq!(t.phase(SMALL), None);
    drive(&mut t, &dev, SMALL, 29);
    assert!(!t.is_complete(), "one key is still in startup");
    // Tuning the small key did not disturb the big one.
    assert_eq!(t.phase(BIG), Some(Phase::Idle));
    drive(&mut t, &dev, 600, 1);
    assert!(t.is_complete());
    assert_eq!(t.winner(BIG), Some(&256));
    assert_eq!(t.winner(SMALL), Some(&64));
    // Interleaved idle launches each get their own key's winner.
    for _ in 0..10 {
        assert_eq!(drive(&mut t, &dev, SMALL, 1), [64]);
        assert_eq!(drive(&mut t, &dev, BIG, 1), [256]);
    }
}

#[test]
fn the_persisted_winner_is_loaded_by_the_next_run() {
    let dir = test_dir("persist");
    let file = CacheFile::new(dir.join("autotune.json"));
    {
        let dev = device(9);
        let mut t = tuner()
            .cache_file(file.clone())
            .build(dev.timer())
            .expect("build");
        drive(&mut t, &dev, BIG, 30);
        drive(&mut t, &dev, SMALL, 30);
        assert!(t.take_cache_errors().is_empty());
    }
    let entries = file.load().expect("a valid cache file");
    assert_eq!(entries.len(), 2);
    assert!(entries
        .iter()
        .all(|e| e.device == "sim" && e.tuner == "test"));

    // The second run: complete before any launch, and no sample is ever taken.
    let dev = device(10);
    let logged = Arc::new(Mutex::new(Vec::new()));
    let sink = logged.clone();
    let mut t = tuner()
        .cache_file(file.clone())
        .on_tuned(move |s| sink.lock().expect("log").push(s.clone()))
        .build(dev.timer())
        .expect("build");
    assert!(t.is_complete());
    assert_eq!(t.phase(BIG), Some(Phase::Idle));
    assert_eq!(t.winner(BIG), Some(&256));
    assert_eq!(t.winner(SMALL), Some(&64));
    assert!(drive(&mut t, &dev, BIG, 1000).iter().all(|&p| p == 256));
    assert!(drive(&mut t, &dev, SMALL, 1000).iter().all(|&p| p == 64));
    assert_eq!(dev.timer_calls(), 0);
    let s = t.summary(BIG).expect("cached");
    assert!(s.from_cache && s.scans == 0);
    assert!(s.candidates.iter().all(|c| c.samples_taken == 0));
    assert!(s.best.is_some(), "the statistics are cached too");
    // Announced once per key used, as coming from the cache.
    let log = logged.lock().expect("log").clone();
    assert_eq!(log.len(), 2);
    assert!(log.iter().all(|s| s.from_cache));

    // A different tuner name, device or candidate list does not reuse the entry.
    let others = [
        Autotuner::builder("other", POW2.to_vec()),
        Autotuner::builder("test", POW2.to_vec()).device("another GPU"),
        Autotuner::builder("test", POW2[..5].to_vec()),
    ];
    for builder in others {
        let t = builder
            .cache_file(file.clone())
            .build(dev.timer())
            .expect("build");
        assert!(!t.is_complete() && t.phase(BIG).is_none(), "{t:?}");
    }
}

#[test]
fn a_corrupt_cache_is_reported_and_the_tuner_retunes() {
    let dir = test_dir("corrupt");
    let path = dir.join("autotune.json");
    std::fs::write(&path, "{\"version\": 1, \"entries\": [ oops").expect("write");
    let dev = device(11);
    let mut t = tuner()
        .cache_file(CacheFile::new(&path))
        .build(dev.timer())
        .expect("a corrupt cache does not stop the tuner");
    let errors = t.take_cache_errors();
    assert!(
        matches!(errors.as_slice(), [Error::CorruptCache { .. }]),
        "{errors:?}"
    );
    assert!(!t.is_complete());
    drive(&mut t, &dev, BIG, 30);
    assert_eq!(t.winner(BIG), Some(&256));
    assert!(t.take_cache_errors().is_empty());
    // The file was replaced by a valid one.
    assert_eq!(CacheFile::new(&path).load().map(|e| e.len()).ok(), Some(1));
}

#[test]
fn even_or_zero_samples_and_a_zero_period_are_rejected() {
    let dev = device(12);
    for n in [0, 2, 4, 6] {
        let r = tuner().samples(n).build(dev.timer());
        assert!(
            matches!(&r, Err(Error::Config(m)) if m.contains("odd")),
            "{r:?}"
        );
    }
    let r = tuner().period(0).build(dev.timer());
    assert!(matches!(r, Err(Error::Config(_))), "{r:?}");
    let r = Autotuner::<u32>::builder("test", Vec::new()).build(dev.timer());
    assert!(matches!(r, Err(Error::Config(_))), "{r:?}");
}

#[test]
fn end_needs_a_begin_and_an_unfinished_sample_is_forgotten() {
    let dev = device(13);
    let mut t = tuner().build(dev.timer()).expect("build");
    assert!(matches!(t.end(), Err(Error::Sequence(_))));
    // A launch that failed between begin and end: the next begin repeats the candidate.
    assert_eq!(t.begin(BIG).expect("begin"), 32);
    assert_eq!(t.begin(BIG).expect("begin"), 32);
    dev.launch(&32, BIG);
    t.end().expect("end");
    assert!(matches!(t.end(), Err(Error::Sequence(_))));
    drive(&mut t, &dev, BIG, 29);
    assert!(t.is_complete());
    let s = t.summary(BIG).expect("tuned");
    assert!(s.candidates.iter().all(|c| c.samples_taken == 5));
}

#[test]
fn a_timer_error_discards_the_sample() {
    let dev = device(14);
    let mut t = tuner().build(dev.timer()).expect("build");
    let p = t.begin(BIG).expect("begin");
    dev.launch(&p, BIG);
    dev.fail_next_stop();
    assert!(matches!(t.end(), Err(Error::Timer(_))));
    assert_eq!(
        t.begin(BIG).expect("begin"),
        p,
        "the failed sample is retaken"
    );
    dev.launch(&p, BIG);
    t.end().expect("end");
    drive(&mut t, &dev, BIG, 29);
    assert!(t.is_complete());
    assert_eq!(t.winner(BIG), Some(&256));
}

#[test]
fn the_spread_is_reported_once_per_key() {
    let dev = device(15);
    let logged = Arc::new(Mutex::new(Vec::new()));
    let sink = logged.clone();
    let mut t = tuner()
        .period(100)
        .on_tuned(move |s: &Summary<u32>| sink.lock().expect("log").push(s.clone()))
        .build(dev.timer())
        .expect("build");
    drive(&mut t, &dev, BIG, 29);
    assert!(
        logged.lock().expect("log").is_empty(),
        "logged before tuned"
    );
    // Startup, then four rescans.
    drive(&mut t, &dev, BIG, 1 + 4 * 106);
    assert_eq!(t.summary(BIG).map(|s| s.scans), Some(5));
    let log = logged.lock().expect("log").clone();
    assert_eq!(log.len(), 1);
    let s = &log[0];
    assert_eq!((s.winner, s.scans, s.from_cache), (256, 1, false));
    let (best, worst) = (s.best.expect("best"), s.worst.expect("worst"));
    assert_eq!(s.spread, Some(worst / best));
    // The slowest is 32 (three factors of two from 256).
    let exact = cost(&32, BIG) / cost(&256, BIG);
    assert!((worst / best / exact - 1.0).abs() < 0.11, "{:?}", s.spread);
    let line = s.to_string();
    assert!(
        line.contains("256 wins") && line.contains("slowest 32"),
        "{line}"
    );
}

#[test]
fn sizes_bucket_to_the_next_power_of_two() {
    assert_eq!(bucket_pow2(0), 1);
    assert_eq!(bucket_pow2(1), 1);
    assert_eq!(bucket_pow2(1000), 1024);
    assert_eq!(bucket_pow2(1024), 1024);
    assert_eq!(bucket_pow2(1025), 2048);
    assert_eq!(bucket_pow2(u64::MAX), u64::MAX);
    // A custom bucket: every size its own key.
    let dev = device(16);
    let t = tuner().bucket(|n| n).build(dev.timer()).expect("build");
    assert_ne!(t.key_of(1000), t.key_of(1001));
}
