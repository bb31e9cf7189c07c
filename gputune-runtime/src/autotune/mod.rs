//! Runtime autotuning of launch parameters: HOOMD-blue's autotuner, extended.
//!
//! An iterative program (a stencil sweep, a particle update) calls the same kernel many
//! times. Wrap each call in [`Autotuner::begin`] and [`Autotuner::end`]: while tuning, `begin`
//! hands out each candidate in turn and the pair times the launch; once every candidate has
//! `n` samples the best by the chosen [`Statistic`] wins, and from then on `begin` returns the
//! winner and neither call does any timing work (no events, no synchronisation). Every
//! `period` launches the candidates are sampled once more, so the choice follows changes in
//! clocks or workload.
//!
//! What HOOMD-blue does not: winners are kept per problem-size bucket ([`bucket_pow2`] by
//! default, each bucket tuned on its own), persisted per device and tuner in a
//! [`CacheFile`] so that a second run of the program starts tuned, and the state machine is
//! separate from the clock ([`Timer`]: [`CpuTimer`], `CudaEventTimer` with the `cuda`
//! feature, and [`sim::SimTimer`] for tests).
//!
//! Cost: a startup scan times `k · n` launches (`k` candidates, `n` samples) and each rescan
//! `k`, so over `L` launches a share of about `(k − 1) · (n + L / period) · r / L` of the time
//! goes to losing candidates, `r` being their mean slowdown over the winner: for 32 block
//! sizes, `n = 5`, `period = 100 000` and `L = 200 000`, about 0.11 % · r.
//!
//! The library prints nothing by itself. [`AutotunerBuilder::on_tuned`] (or
//! [`log_to_stderr`](AutotunerBuilder::log_to_stderr)) receives each key's [`Summary`] — the
//! winner, best and worst statistic and their ratio — once, when the key is first tuned;
//! [`Autotuner::summary`] returns the same data at any time. Cache problems never stop
//! tuning; they wait in [`Autotuner::take_cache_errors`].
//!
//! ```
//! use gputune_runtime::autotune::{sim::SimDevice, Autotuner};
//!
//! # fn main() -> Result<(), gputune_runtime::autotune::Error> {
//! // A simulated kernel whose best block size is 256 (a test tool: no real timing).
//! let device = SimDevice::new(1, 0.02, |block: &u32, _n| 1e-5 * (1.0 + (f64::from(*block).log2() - 8.0).abs()));
//! let mut tuner = Autotuner::builder("demo", (32..=1024).step_by(32).collect::<Vec<u32>>())
//!     .samples(5)
//!     .clamp_block_sizes(1024)
//!     .build(device.timer())?;
//! let n = 1 << 20;
//! for _ in 0..1_000 {
//!     let block = tuner.begin(n)?;
//!     device.launch(&block, n); // launch the kernel with `block` threads per block here
//!     tuner.end()?;
//! }
//! assert!(tuner.is_complete());
//! assert_eq!(tuner.winner(n), Some(&256));
//! # Ok(())
//! # }
//! ```

mod cache;
#[cfg(feature = "cuda")]
mod cuda;
mod error;
mod scan;
pub mod sim;
mod timer;

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

pub use cache::{CacheEntry, CacheFile, CACHE_ENV};
#[cfg(feature = "cuda")]
pub use cuda::{device_id, max_threads_per_block, CudaEventTimer};
pub use error::{Error, Result};
pub use scan::{Phase, Refine, Statistic};
pub use timer::{CpuTimer, Timer};

use scan::{Scan, Step};

/// Samples per candidate unless told otherwise (HOOMD-blue's choice).
pub const DEFAULT_SAMPLES: usize = 5;

/// Untimed launches between scans unless told otherwise (HOOMD-blue's default period).
pub const DEFAULT_PERIOD: u64 = 100_000;

/// The default problem-size bucket: the next power of two (0 and 1 share bucket 1).
///
/// Sizes within a factor of two usually share a winner, and a program whose size drifts
/// (particles leaving a domain) does not retune at every step.
pub fn bucket_pow2(size: u64) -> u64 {
    size.checked_next_power_of_two().unwrap_or(u64::MAX)
}

/// What is known about one key's tuning, as plain data: what the spread log prints and
/// what a caller can report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary<P> {
    /// The tuner's name.
    pub tuner: String,
    /// What was timed ([`Timer::device`]).
    pub device: String,
    /// The problem-size key.
    pub key: u64,
    /// The parameter `begin` returns while idle.
    pub winner: P,
    /// How samples are reduced.
    pub statistic: Statistic,
    /// The winner's statistic in seconds, where known.
    pub best: Option<f64>,
    /// The slowest candidate's statistic in seconds, where known.
    pub worst: Option<f64>,
    /// `worst / best`: what choosing blindly could cost.
    pub spread: Option<f64>,
    /// Whether the winner came from the cache and has not been measured in this process.
    pub from_cache: bool,
    /// Scans completed in this process.
    pub scans: u64,
    /// Every candidate, in order.
    pub candidates: Vec<CandidateSummary<P>>,
}

/// One candidate of a [`Summary`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateSummary<P> {
    /// The parameter.
    pub param: P,
    /// Its statistic in seconds over its current samples (or as cached).
    pub statistic: Option<f64>,
    /// Timed launches with it in this process, all scans together.
    pub samples_taken: u64,
    /// Seconds of those timed launches.
    pub time_sampled: f64,
}

impl<P: fmt::Debug> fmt::Display for Summary<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "autotuner {} [key {}] on {}: {:?} wins",
            self.tuner, self.key, self.device, self.winner
        )?;
        if let Some(best) = self.best {
            write!(f, " at {} ({})", micros(best), self.statistic.name())?;
        }
        let slowest = self
            .candidates
            .iter()
            .filter_map(|c| c.statistic.map(|s| (c, s)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some((c, worst)), Some(spread)) = (slowest, self.spread) {
            write!(
                f,
                "; slowest {:?} at {}; spread {spread:.2}x",
                c.param,
                micros(worst)
            )?;
        }
        if self.from_cache {
            write!(f, " (from the cache)")?;
        }
        Ok(())
    }
}

fn micros(seconds: f64) -> String {
    format!("{:.3} us", seconds * 1e6)
}

/// Where winners go, as the builder was told.
enum Persistence {
    Off,
    Default,
    File(CacheFile),
}

/// Whether a candidate may be used.
type Validity<P> = Box<dyn Fn(&P) -> bool>;

/// Called with a key's summary the first time it is tuned in this process.
type TunedSink<P> = Box<dyn FnMut(&Summary<P>) + Send>;

/// Configures an [`Autotuner`]; see [`Autotuner::builder`].
pub struct AutotunerBuilder<P> {
    name: String,
    candidates: Vec<P>,
    samples: usize,
    statistic: Statistic,
    period: u64,
    refine: Option<Refine>,
    valid: Option<Validity<P>>,
    bucket: fn(u64) -> u64,
    persistence: Persistence,
    device: Option<String>,
    on_tuned: Option<TunedSink<P>>,
}

impl<P: fmt::Debug> fmt::Debug for AutotunerBuilder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AutotunerBuilder")
            .field("name", &self.name)
            .field("candidates", &self.candidates)
            .field("samples", &self.samples)
            .field("statistic", &self.statistic)
            .field("period", &self.period)
            .finish_non_exhaustive()
    }
}

impl<P: Clone + PartialEq + fmt::Debug + Serialize> AutotunerBuilder<P> {
    /// Samples per candidate in a scan: odd, so that the median is a sample (default 5).
    pub fn samples(mut self, n: usize) -> Self {
        self.samples = n;
        self
    }

    /// Adds a refine stage to every scan (default none): the candidates whose statistic is
    /// within `margin` (0.02 is 2 %) of the best, at most `max_finalists` of them, are sampled
    /// `rounds × n` more times and the winner is chosen over all their samples. It decides
    /// near-ties that `n` single-launch samples cannot, and times only near-optimal
    /// parameters to do it.
    pub fn refine(mut self, margin: f64, max_finalists: usize, rounds: usize) -> Self {
        self.refine = Some(Refine {
            margin,
            max_finalists,
            rounds,
        });
        self
    }

    /// How samples are reduced (default [`Statistic::Median`]).
    pub fn statistic(mut self, statistic: Statistic) -> Self {
        self.statistic = statistic;
        self
    }

    /// Untimed launches of a key between the end of one scan and the start of the next
    /// (default [`DEFAULT_PERIOD`]); `u64::MAX` never rescans.
    pub fn period(mut self, launches: u64) -> Self {
        self.period = launches;
        self
    }

    /// Keeps only the candidates for which `valid` holds; the others are never returned.
    pub fn valid(mut self, valid: impl Fn(&P) -> bool + 'static) -> Self {
        self.valid = Some(Box::new(valid));
        self
    }

    /// Maps a problem size to the key it is tuned under (default [`bucket_pow2`]).
    pub fn bucket(mut self, bucket: fn(u64) -> u64) -> Self {
        self.bucket = bucket;
        self
    }

    /// Persists winners to `file`, and starts from the winners it holds for this device,
    /// tuner and candidate list.
    pub fn cache_file(mut self, file: CacheFile) -> Self {
        self.persistence = Persistence::File(file);
        self
    }

    /// Persists winners to [`CacheFile::default_location`] (`$GPUTUNE_AUTOTUNE_CACHE`, else
    /// the user's cache directory). Without this or [`cache_file`](Self::cache_file) nothing
    /// is read or written.
    pub fn persist(mut self) -> Self {
        self.persistence = Persistence::Default;
        self
    }

    /// The device identity winners are cached under, instead of the timer's.
    pub fn device(mut self, device: impl Into<String>) -> Self {
        self.device = Some(device.into());
        self
    }

    /// Calls `sink` with a key's [`Summary`] (the performance spread) once, when the key is
    /// first tuned in this process (measured, or loaded from the cache). Nothing is logged
    /// otherwise: [`Autotuner::summary`] gives the same data on demand.
    pub fn on_tuned(mut self, sink: impl FnMut(&Summary<P>) + Send + 'static) -> Self {
        self.on_tuned = Some(Box::new(sink));
        self
    }

    /// [`on_tuned`](Self::on_tuned) printing one line to standard error.
    pub fn log_to_stderr(self) -> Self {
        self.on_tuned(|summary| eprintln!("{summary}"))
    }

    /// Checks the configuration, loads cached winners, and returns the tuner.
    ///
    /// A cache that cannot be read is not fatal: the tuner tunes as without one, and the
    /// error waits in [`Autotuner::take_cache_errors`].
    pub fn build<T: Timer>(self, timer: T) -> Result<Autotuner<P, T>> {
        if self.samples % 2 == 0 {
            return Err(Error::Config(format!(
                "samples per candidate must be odd (so the median is a sample), got {}",
                self.samples
            )));
        }
        if self.period == 0 {
            return Err(Error::Config(
                "the period must be at least one launch; use u64::MAX to never rescan".into(),
            ));
        }
        let given = self.candidates.len();
        let mut candidates: Vec<P> = Vec::with_capacity(given);
        for c in self.candidates {
            let valid = self.valid.as_ref().map_or(true, |valid| valid(&c));
            if valid && !candidates.contains(&c) {
                candidates.push(c);
            }
        }
        if candidates.is_empty() {
            return Err(Error::Config(format!(
                "no valid candidate among the {given} given to autotuner {}",
                self.name
            )));
        }
        let candidate_values = candidates
            .iter()
            .map(serde_json::to_value)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::Config(format!("a candidate cannot be written as JSON: {e}")))?;
        let mut tuner = Autotuner {
            device: self.device.unwrap_or_else(|| timer.device()),
            name: self.name,
            candidates,
            candidate_values,
            samples: self.samples,
            statistic: self.statistic,
            period: self.period,
            refine: self.refine,
            bucket: self.bucket,
            timer,
            keys: BTreeMap::new(),
            open: Open::Closed,
            cache: None,
            cache_errors: Vec::new(),
            on_tuned: self.on_tuned,
        };
        tuner.cache = match self.persistence {
            Persistence::Off => None,
            Persistence::File(file) => Some(file),
            Persistence::Default => match CacheFile::default_location() {
                Ok(file) => Some(file),
                Err(e) => {
                    tuner.cache_errors.push(e);
                    None
                }
            },
        };
        tuner.load_cache();
        Ok(tuner)
    }
}

impl AutotunerBuilder<u32> {
    /// Clamps block-size candidates to `max` (a kernel's maximum threads per block, from
    /// `max_threads_per_block` with the `cuda` feature): larger ones become `max`, so the
    /// largest launchable block is still tried; duplicates and zeros are dropped.
    pub fn clamp_block_sizes(mut self, max: u32) -> Self {
        let mut clamped: Vec<u32> = Vec::with_capacity(self.candidates.len());
        for c in self.candidates.iter().map(|&c| c.min(max)) {
            if c > 0 && !clamped.contains(&c) {
                clamped.push(c);
            }
        }
        self.candidates = clamped;
        self
    }
}

/// The sample `begin` opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Closed,
    /// An idle launch: `end` has nothing to do.
    Untimed,
    /// A timed launch of this key.
    Timed(u64),
}

#[derive(Debug)]
struct Keyed {
    scan: Scan,
    /// Whether the sink has seen this key.
    announced: bool,
    /// The winner came from the cache and no scan has finished since.
    from_cache: bool,
}

/// Chooses a launch parameter at run time by timing the candidates on real launches.
///
/// `P` is the parameter (a block size, a tile count, an algorithm choice); `T` times the
/// launches. Build one per kernel with [`Autotuner::builder`].
pub struct Autotuner<P, T = CpuTimer> {
    name: String,
    device: String,
    candidates: Vec<P>,
    candidate_values: Vec<serde_json::Value>,
    samples: usize,
    statistic: Statistic,
    period: u64,
    refine: Option<Refine>,
    bucket: fn(u64) -> u64,
    timer: T,
    keys: BTreeMap<u64, Keyed>,
    open: Open,
    cache: Option<CacheFile>,
    cache_errors: Vec<Error>,
    on_tuned: Option<TunedSink<P>>,
}

impl<P: fmt::Debug, T: fmt::Debug> fmt::Debug for Autotuner<P, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Autotuner")
            .field("name", &self.name)
            .field("device", &self.device)
            .field("candidates", &self.candidates)
            .field("samples", &self.samples)
            .field("statistic", &self.statistic)
            .field("period", &self.period)
            .field("timer", &self.timer)
            .field("keys", &self.keys)
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl<P: Clone + PartialEq + fmt::Debug + Serialize> Autotuner<P, CpuTimer> {
    /// Starts configuring a tuner called `name` (its name in the cache) over `candidates`,
    /// tried in the given order.
    pub fn builder(name: impl Into<String>, candidates: impl Into<Vec<P>>) -> AutotunerBuilder<P> {
        AutotunerBuilder {
            name: name.into(),
            candidates: candidates.into(),
            samples: DEFAULT_SAMPLES,
            statistic: Statistic::default(),
            period: DEFAULT_PERIOD,
            refine: None,
            valid: None,
            bucket: bucket_pow2,
            persistence: Persistence::Off,
            device: None,
            on_tuned: None,
        }
    }
}

impl<P: Clone + PartialEq + fmt::Debug + Serialize, T: Timer> Autotuner<P, T> {
    /// The parameter to launch with, for a problem of `size` (elements, particles: whatever
    /// the key buckets; pass a constant when there is one workload). Launch right after it,
    /// then call [`end`](Self::end).
    ///
    /// While tuning this starts the timer; when idle it only counts the launch. A `begin`
    /// whose `end` never came (the launch failed) is forgotten: its sample is not recorded.
    pub fn begin(&mut self, size: u64) -> Result<P> {
        let key = (self.bucket)(size);
        self.open = Open::Closed;
        let n = self.candidates.len();
        let keyed = self.keys.entry(key).or_insert_with(|| Keyed {
            scan: Scan::new(n),
            announced: false,
            from_cache: false,
        });
        match keyed.scan.begin(self.period) {
            Step::Winner(i) => {
                if !keyed.announced {
                    // A cached winner: announced on first use rather than at build time, so
                    // that only the keys this run uses are logged.
                    keyed.announced = true;
                    self.announce(key);
                }
                self.open = Open::Untimed;
                Ok(self.candidates[i].clone())
            }
            Step::Sample(i) => {
                self.timer.start().map_err(Error::Timer)?;
                self.open = Open::Timed(key);
                Ok(self.candidates[i].clone())
            }
        }
    }

    /// Closes the launch opened by [`begin`](Self::begin). While tuning this waits for the
    /// launch (on a GPU) and records its time; when idle it does nothing.
    ///
    /// A timer error discards the sample: the same candidate is sampled again by the next
    /// `begin`.
    pub fn end(&mut self) -> Result<()> {
        let key = match std::mem::replace(&mut self.open, Open::Closed) {
            Open::Untimed => return Ok(()),
            Open::Closed => return Err(Error::Sequence("end() without a begin()")),
            Open::Timed(key) => key,
        };
        let seconds = self.timer.stop().map_err(Error::Timer)?;
        if !(seconds.is_finite() && seconds >= 0.0) {
            return Err(Error::Timer(
                format!("the timer read {seconds} s; the sample is discarded").into(),
            ));
        }
        let Some(keyed) = self.keys.get_mut(&key) else {
            return Err(Error::Sequence("end() for a key that was never begun"));
        };
        if !keyed
            .scan
            .record(seconds, self.samples, self.statistic, self.refine)
        {
            return Ok(());
        }
        keyed.from_cache = false;
        let first = !std::mem::replace(&mut keyed.announced, true);
        self.persist(key);
        if first {
            self.announce(key);
        }
        Ok(())
    }

    /// Whether every key seen so far (and every key loaded from the cache) has a winner.
    /// False before the first `begin` of a tuner without cached winners.
    pub fn is_complete(&self) -> bool {
        !self.keys.is_empty() && self.keys.values().all(|k| k.scan.winner.is_some())
    }

    /// Whether the key of `size` has a winner.
    pub fn is_complete_for(&self, size: u64) -> bool {
        self.winner(size).is_some()
    }

    /// The winner for `size`, once there is one.
    pub fn winner(&self, size: u64) -> Option<&P> {
        let keyed = self.keys.get(&(self.bucket)(size))?;
        keyed.scan.winner.map(|i| &self.candidates[i])
    }

    /// What the key of `size` is doing; `None` before its first `begin`.
    pub fn phase(&self, size: u64) -> Option<Phase> {
        self.keys.get(&(self.bucket)(size)).map(|k| k.scan.phase())
    }

    /// The key `size` is tuned under.
    pub fn key_of(&self, size: u64) -> u64 {
        (self.bucket)(size)
    }

    /// The spread and per-candidate accounting of the key of `size`, once it has a winner.
    pub fn summary(&self, size: u64) -> Option<Summary<P>> {
        self.summary_of_key((self.bucket)(size))
    }

    /// The candidates tuned over: valid, clamped, without duplicates, in order.
    pub fn candidates(&self) -> &[P] {
        &self.candidates
    }

    /// The tuner's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device identity winners are cached under.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// The cache file, when persisting.
    pub fn cache_file(&self) -> Option<&CacheFile> {
        self.cache.as_ref()
    }

    /// Problems reading or writing the cache since the last call. They never stop tuning:
    /// a cache that cannot be read means tuning from scratch, one that cannot be written
    /// means the next run tunes again.
    pub fn take_cache_errors(&mut self) -> Vec<Error> {
        std::mem::take(&mut self.cache_errors)
    }

    fn summary_of_key(&self, key: u64) -> Option<Summary<P>> {
        let keyed = self.keys.get(&key)?;
        let scan = &keyed.scan;
        let winner = scan.winner?;
        let best = scan.statistics[winner];
        let worst = scan
            .statistics
            .iter()
            .flatten()
            .copied()
            .max_by(f64::total_cmp);
        Some(Summary {
            tuner: self.name.clone(),
            device: self.device.clone(),
            key,
            winner: self.candidates[winner].clone(),
            statistic: self.statistic,
            best,
            worst,
            spread: best.zip(worst).map(|(b, w)| w / b),
            from_cache: keyed.from_cache,
            scans: scan.scans_completed,
            candidates: self
                .candidates
                .iter()
                .enumerate()
                .map(|(i, p)| CandidateSummary {
                    param: p.clone(),
                    statistic: scan.statistics[i],
                    samples_taken: scan.taken[i],
                    time_sampled: scan.time[i],
                })
                .collect(),
        })
    }

    fn announce(&mut self, key: u64) {
        if self.on_tuned.is_none() {
            return;
        }
        if let (Some(summary), Some(sink)) = (self.summary_of_key(key), self.on_tuned.as_mut()) {
            sink(&summary);
        }
    }

    fn persist(&mut self, key: u64) {
        let Some(cache) = &self.cache else { return };
        let Some(scan) = self.keys.get(&key).map(|k| &k.scan) else {
            return;
        };
        let Some(winner) = scan.winner else { return };
        let entry = CacheEntry {
            device: self.device.clone(),
            tuner: self.name.clone(),
            key,
            candidates: self.candidate_values.clone(),
            winner: self.candidate_values[winner].clone(),
            statistic: self.statistic,
            samples: self.samples,
            statistics: scan.statistics.clone(),
        };
        if let Err(e) = cache.store(entry) {
            self.cache_errors.push(e);
        }
    }

    /// Starts the keys the cache has a winner for (same device, tuner and candidates) idle.
    fn load_cache(&mut self) {
        let Some(cache) = &self.cache else { return };
        let entries = match cache.load() {
            Ok(entries) => entries,
            Err(e) => {
                self.cache_errors.push(e);
                return;
            }
        };
        for entry in entries {
            if entry.device != self.device
                || entry.tuner != self.name
                || entry.candidates != self.candidate_values
            {
                continue;
            }
            let Some(winner) = self
                .candidate_values
                .iter()
                .position(|v| *v == entry.winner)
            else {
                continue;
            };
            let statistics = if entry.statistics.len() == self.candidates.len() {
                entry.statistics
            } else {
                vec![None; self.candidates.len()]
            };
            self.keys.insert(
                entry.key,
                Keyed {
                    scan: Scan::cached(winner, statistics),
                    announced: false,
                    from_cache: true,
                },
            );
        }
    }
}

/// A fresh directory under the system's temporary directory, removed on drop.
#[cfg(test)]
pub(crate) struct TestDir(std::path::PathBuf);

#[cfg(test)]
impl TestDir {
    pub(crate) fn join(&self, name: impl AsRef<std::path::Path>) -> std::path::PathBuf {
        self.0.join(name)
    }
}

#[cfg(test)]
impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
pub(crate) fn test_dir(name: &str) -> TestDir {
    let dir = std::env::temp_dir().join(format!("gputune-autotune-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::create_dir_all(&dir);
    TestDir(dir)
}

#[cfg(test)]
mod tests;
