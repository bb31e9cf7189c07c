//! One key's tuning as plain data: which candidate comes next, the recent samples of each,
//! and the winner. No clock, no I/O: [`super::Autotuner`] feeds it readings.
//!
//! A scan samples the candidates round-robin, one sample each per round, so slow drifts
//! (clocks, temperature, other work) spread over all candidates instead of penalising the
//! ones sampled last. Each candidate keeps its last `n` samples. The startup scan runs `n`
//! rounds; a rescan replaces the oldest sample of every candidate in a single round (HOOMD's
//! "replace one of the sets of samples"), unless some candidate has fewer than `n` samples
//! (a winner loaded from the cache has none), in which case rounds go on until each has `n`.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// How the samples of one candidate are reduced to the number candidates are ranked by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Statistic {
    /// The middle sample (robust to a rare slow outlier; the count is odd, so it is a sample).
    #[default]
    Median,
    /// The arithmetic mean.
    Mean,
    /// The slowest sample (for kernels whose worst case matters).
    Max,
}

impl Statistic {
    /// The statistic of `samples`; `None` when there are none.
    pub fn of(self, samples: &[f64]) -> Option<f64> {
        if samples.is_empty() {
            return None;
        }
        Some(match self {
            Statistic::Median => {
                let mut sorted = samples.to_vec();
                sorted.sort_by(f64::total_cmp);
                crate::stats::quantile_sorted(&sorted, 0.5)
            }
            Statistic::Mean => crate::stats::mean(samples),
            Statistic::Max => samples.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    /// The lower-case name (`median`, `mean`, `max`).
    pub fn name(self) -> &'static str {
        match self {
            Statistic::Median => "median",
            Statistic::Mean => "mean",
            Statistic::Max => "max",
        }
    }
}

/// What one key's tuning is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// First scan: no winner yet; every `begin` is timed.
    Startup,
    /// Tuned: `begin` returns the winner and nothing is timed.
    Idle,
    /// A periodic rescan: every `begin` is timed; the old winner stands until it ends.
    Rescan,
}

/// An optional second stage of every scan: the candidates within `margin` of the best are
/// sampled `rounds × n` more times each, and the winner is chosen over all their samples.
/// Near-ties (block sizes a percent apart, where five samples of one launch each cannot tell
/// them apart reliably) are then decided on enough samples, at the cost of a few more timed
/// launches of near-optimal parameters only.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Refine {
    /// Relative distance from the best statistic within which a candidate is a finalist.
    pub margin: f64,
    /// Most finalists (the best ones).
    pub max_finalists: usize,
    /// Extra samples per finalist, in multiples of `n`.
    pub rounds: usize,
}

/// A refine stage in progress.
#[derive(Debug, Clone)]
struct Refining {
    finalists: Vec<usize>,
    /// Index into `finalists` of the next timed launch.
    pos: usize,
    /// Timed launches still to take.
    left: usize,
    /// The extra samples of each candidate (empty for non-finalists).
    extra: Vec<Vec<f64>>,
}

/// What `begin` should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Untimed launch with the winner (candidate index).
    Winner(usize),
    /// Timed launch with this candidate index.
    Sample(usize),
}

/// One key's tuning state.
#[derive(Debug, Clone)]
pub(super) struct Scan {
    /// The last `n` samples of each candidate, oldest first.
    pub(super) samples: Vec<VecDeque<f64>>,
    /// The candidate the next timed launch uses.
    next: usize,
    tuning: bool,
    pub(super) winner: Option<usize>,
    /// Untimed launches since the last scan ended.
    idle_begins: u64,
    /// Every sample ever taken, per candidate (for accounting, not for ranking).
    pub(super) taken: Vec<u64>,
    /// Seconds of every sample ever taken, per candidate.
    pub(super) time: Vec<f64>,
    /// The statistic of each candidate when the last scan ended (or as cached).
    pub(super) statistics: Vec<Option<f64>>,
    pub(super) scans_completed: u64,
    refining: Option<Refining>,
}

impl Scan {
    /// A key seen for the first time: startup.
    pub(super) fn new(candidates: usize) -> Scan {
        Scan {
            samples: vec![VecDeque::new(); candidates],
            next: 0,
            tuning: true,
            winner: None,
            idle_begins: 0,
            taken: vec![0; candidates],
            time: vec![0.0; candidates],
            statistics: vec![None; candidates],
            scans_completed: 0,
            refining: None,
        }
    }

    /// A key whose winner came from the cache: idle from the start, no samples.
    pub(super) fn cached(winner: usize, statistics: Vec<Option<f64>>) -> Scan {
        let mut scan = Scan::new(statistics.len());
        scan.tuning = false;
        scan.winner = Some(winner);
        scan.statistics = statistics;
        scan
    }

    pub(super) fn phase(&self) -> Phase {
        match (self.tuning, self.winner) {
            (false, Some(_)) => Phase::Idle,
            (_, None) => Phase::Startup,
            (true, Some(_)) => Phase::Rescan,
        }
    }

    /// Decides the parameter of the next launch; `period` untimed launches separate scans.
    pub(super) fn begin(&mut self, period: u64) -> Step {
        if !self.tuning {
            if let Some(winner) = self.winner {
                if self.idle_begins < period {
                    self.idle_begins += 1;
                    return Step::Winner(winner);
                }
            }
            self.tuning = true;
            self.next = 0;
        }
        Step::Sample(self.next)
    }

    /// Records the reading of the timed launch of the candidate `begin` chose; true when
    /// this reading completed a scan (the winner is then up to date).
    pub(super) fn record(
        &mut self,
        seconds: f64,
        samples: usize,
        statistic: Statistic,
        refine: Option<Refine>,
    ) -> bool {
        if let Some(r) = self.refining.as_mut() {
            let i = self.next;
            r.extra[i].push(seconds);
            self.taken[i] += 1;
            self.time[i] += seconds;
            r.left -= 1;
            r.pos = (r.pos + 1) % r.finalists.len();
            self.next = r.finalists[r.pos];
            if r.left > 0 {
                return false;
            }
            let r = self
                .refining
                .take()
                .unwrap_or_else(|| unreachable!("matched above"));
            for &f in &r.finalists {
                let mut all: Vec<f64> = self.samples[f].iter().copied().collect();
                all.extend(&r.extra[f]);
                self.statistics[f] = statistic.of(&all);
            }
            let winner = r
                .finalists
                .iter()
                .filter_map(|&i| self.statistics[i].map(|s| (i, s)))
                .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
                .map(|(i, _)| i);
            self.finish(winner);
            return true;
        }
        let i = self.next;
        let ring = &mut self.samples[i];
        ring.push_back(seconds);
        while ring.len() > samples {
            ring.pop_front();
        }
        self.taken[i] += 1;
        self.time[i] += seconds;
        self.next += 1;
        if self.next < self.samples.len() {
            return false;
        }
        self.next = 0;
        if self.samples.iter().any(|s| s.len() < samples) {
            return false;
        }
        self.statistics = self
            .samples
            .iter()
            .map(|s| statistic.of(&s.iter().copied().collect::<Vec<_>>()))
            .collect();
        let winner = self
            .statistics
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|s| (i, s)))
            // min_by keeps the first of equal values: ties go to the earlier candidate.
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i);
        if let (Some(r), Some(best)) = (refine, winner.and_then(|w| self.statistics[w])) {
            let mut finalists: Vec<(usize, f64)> = self
                .statistics
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.filter(|&s| s <= best * (1.0 + r.margin)).map(|s| (i, s)))
                .collect();
            finalists.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            finalists.truncate(r.max_finalists.max(1));
            if finalists.len() > 1 && r.rounds > 0 {
                let finalists: Vec<usize> = finalists.into_iter().map(|(i, _)| i).collect();
                self.next = finalists[0];
                self.refining = Some(Refining {
                    left: finalists.len() * r.rounds * samples,
                    pos: 0,
                    extra: vec![Vec::new(); self.samples.len()],
                    finalists,
                });
                return false;
            }
        }
        self.finish(winner);
        true
    }

    fn finish(&mut self, winner: Option<usize>) {
        self.winner = winner;
        self.tuning = false;
        self.next = 0;
        self.idle_begins = 0;
        self.scans_completed += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_match_hand_computed_values() {
        let s = [3.0, 1.0, 10.0, 2.0, 4.0];
        assert_eq!(Statistic::Median.of(&s), Some(3.0));
        assert_eq!(Statistic::Mean.of(&s), Some(4.0));
        assert_eq!(Statistic::Max.of(&s), Some(10.0));
        assert_eq!(Statistic::Median.of(&[]), None);
    }

    /// Feeds `readings[candidate]` to a scan until it completes; returns the begins taken.
    fn run_scan(scan: &mut Scan, readings: &[f64], samples: usize, stat: Statistic) -> usize {
        let mut begins = 0;
        loop {
            begins += 1;
            match scan.begin(u64::MAX) {
                Step::Sample(i) => {
                    if scan.record(readings[i], samples, stat, None) {
                        return begins;
                    }
                }
                Step::Winner(_) => panic!("idle before the scan ended"),
            }
        }
    }

    #[test]
    fn refine_resamples_only_the_near_ties_and_decides_on_all_samples() {
        // Candidate 1 looks best in the first three samples each (1.00 against 1.01), but
        // candidate 0 is faster in the refine stage's twelve; candidate 2 (twice as slow) is
        // no finalist and is never sampled again.
        let refine = Refine {
            margin: 0.05,
            max_finalists: 3,
            rounds: 2,
        };
        let mut scan = Scan::new(3);
        let reading = |i: usize, n: u64| match (i, n) {
            (0, n) if n < 3 => 1.01,
            (0, _) => 0.98,
            (1, _) => 1.00,
            _ => 2.0,
        };
        let mut begins = 0;
        loop {
            begins += 1;
            let Step::Sample(i) = scan.begin(u64::MAX) else {
                panic!("idle before the scan ended");
            };
            let r = reading(i, scan.taken[i]);
            if scan.record(r, 3, Statistic::Median, Some(refine)) {
                break;
            }
        }
        assert_eq!(scan.winner, Some(0));
        assert_eq!(scan.taken, vec![9, 9, 3]);
        assert_eq!(begins, 3 * 3 + 2 * 2 * 3);
        assert_eq!(scan.phase(), Phase::Idle);
        // Without refine, the first impression stands.
        let mut plain = Scan::new(3);
        run_scan(&mut plain, &[1.01, 1.00, 2.0], 3, Statistic::Median);
        assert_eq!(plain.winner, Some(1));
    }

    #[test]
    fn startup_runs_n_rounds_and_a_rescan_one() {
        let mut scan = Scan::new(3);
        assert_eq!(scan.phase(), Phase::Startup);
        assert_eq!(
            run_scan(&mut scan, &[3.0, 1.0, 2.0], 5, Statistic::Median),
            15
        );
        assert_eq!(scan.winner, Some(1));
        assert_eq!(scan.phase(), Phase::Idle);
        assert_eq!(scan.taken, [5, 5, 5]);
        // period 2: two untimed begins, then a one-round rescan.
        assert_eq!(scan.begin(2), Step::Winner(1));
        assert_eq!(scan.begin(2), Step::Winner(1));
        assert_eq!(scan.begin(2), Step::Sample(0));
        assert_eq!(scan.phase(), Phase::Rescan);
        assert!(!scan.record(3.0, 5, Statistic::Median, None));
        assert!(!scan.record(1.0, 5, Statistic::Median, None));
        assert!(scan.record(2.0, 5, Statistic::Median, None));
        assert_eq!(scan.taken, [6, 6, 6]);
        assert!(scan.samples.iter().all(|s| s.len() == 5));
    }

    #[test]
    fn a_cached_winner_rescans_until_every_candidate_has_n_samples() {
        let mut scan = Scan::cached(0, vec![Some(1.0), Some(2.0)]);
        assert_eq!(scan.phase(), Phase::Idle);
        assert_eq!(scan.begin(0), Step::Sample(0));
        assert_eq!(scan.phase(), Phase::Rescan);
        // 3 samples each = 3 rounds of 2 (begin repeats a candidate until it is recorded).
        assert_eq!(run_scan(&mut scan, &[5.0, 4.0], 3, Statistic::Mean), 6);
        assert_eq!(scan.winner, Some(1));
    }

    #[test]
    fn ties_go_to_the_earlier_candidate() {
        let mut scan = Scan::new(3);
        run_scan(&mut scan, &[2.0, 1.0, 1.0], 1, Statistic::Max);
        assert_eq!(scan.winner, Some(1));
    }
}
