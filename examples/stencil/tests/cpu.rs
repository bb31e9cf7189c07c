//! The CPU variant end to end: the tuner completes, the result is the reference result, and
//! a second run with the same cache starts tuned.

use std::path::PathBuf;

use gputune_example_stencil::{cpu_tuner, initial_field, reference, run_cpu, Shape};
use gputune_runtime::autotune::{CacheFile, CpuTimer, Phase};

const SHAPE: Shape = Shape { nx: 96, ny: 200 };
const ITERATIONS: u64 = 300;

/// A fresh cache path for this test process, removed when dropped.
struct TempCache(PathBuf);

impl TempCache {
    fn new(name: &str) -> TempCache {
        let dir =
            std::env::temp_dir().join(format!("gputune-stencil-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempCache(dir)
    }
    fn file(&self) -> CacheFile {
        CacheFile::new(self.0.join("autotune.json"))
    }
}

impl Drop for TempCache {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_tuned_run_matches_the_reference_and_the_next_run_starts_tuned() {
    let cache = TempCache::new("cpu");
    let initial = initial_field(SHAPE);
    let expected = reference(SHAPE, &initial, ITERATIONS);
    let key = SHAPE.cells() as u64;

    let mut first = cpu_tuner()
        .cache_file(cache.file())
        .build(CpuTimer::new())
        .expect("build");
    assert!(!first.is_complete());
    let field = run_cpu(&mut first, SHAPE, &initial, ITERATIONS, 2).expect("first run");
    assert!(
        first.is_complete(),
        "300 sweeps cover 8 candidates x 5 samples"
    );
    assert!(first.take_cache_errors().is_empty());
    // Bit for bit: every rows-per-task choice computes each cell the same way.
    assert_eq!(field, expected);
    let summary = first.summary(key).expect("tuned");
    assert!(summary.candidates.iter().all(|c| c.samples_taken == 5));
    let winner = summary.winner;
    assert!(!summary.from_cache);

    let mut second = cpu_tuner()
        .cache_file(cache.file())
        .build(CpuTimer::new())
        .expect("build");
    assert!(second.is_complete(), "the cached winner was not loaded");
    assert_eq!(second.phase(key), Some(Phase::Idle));
    assert_eq!(second.winner(key), Some(&winner));
    let field = run_cpu(&mut second, SHAPE, &initial, ITERATIONS, 2).expect("second run");
    assert_eq!(field, expected);
    let summary = second.summary(key).expect("cached");
    assert!(summary.from_cache);
    assert!(
        summary.candidates.iter().all(|c| c.samples_taken == 0),
        "the second run sampled: {summary:?}"
    );
}
