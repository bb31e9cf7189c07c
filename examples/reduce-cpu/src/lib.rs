//! A chunked parallel sum reduction on the CPU: a real kernel with real tuning parameters.
//!
//! `threads` workers pull fixed-size chunks from a shared counter and sum each chunk with
//! `LANES` independent accumulators (so the compiler can keep several additions in flight
//! and vectorise them); the partial sums are added at the end. The best thread count, chunk
//! size and lane count depend on the machine's cores and caches and on the element type —
//! exactly what gputune tunes: [`sum`] is the tuned entry point.

use std::ops::Add;
use std::sync::atomic::{AtomicUsize, Ordering};

use gputune_macros::tune;

/// Sums `data` with the tuned thread count, chunk size and lane count.
///
/// The space is 8 thread counts × 12 chunk sizes × 3 lane counts = 288 variants; base is a
/// single thread over 4096-element chunks with 8 lanes.
#[tune(
    threads = 1..=8,
    chunk = pow2(8..=19),
    lanes = [1, 4, 8],
    base(threads = 1, chunk = 4096, lanes = 8)
)]
pub fn sum<T: Element>(data: &[T]) -> T {
    sum_chunked::<T, LANES>(data, THREADS, CHUNK)
}

/// An element type the reduction sums.
pub trait Element: Copy + Default + Send + Sync + Add<Output = Self> + 'static {
    /// A deterministic, non-zero test value for index `i` (inputs are never all zeros).
    fn from_index(i: usize) -> Self;
    /// The value as `f64`, for checking results.
    fn to_f64(self) -> f64;
}

impl Element for f32 {
    fn from_index(i: usize) -> Self {
        ((i % 1000) as f32 + 1.0) * 0.001
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Element for f64 {
    fn from_index(i: usize) -> Self {
        ((i % 1000) as f64 + 1.0) * 0.001
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// Sums `part` with `LANES` independent accumulators.
fn sum_lanes<T: Element, const LANES: usize>(part: &[T]) -> T {
    let mut acc = [T::default(); LANES];
    let mut blocks = part.chunks_exact(LANES);
    for block in &mut blocks {
        for (a, v) in acc.iter_mut().zip(block) {
            *a = *a + *v;
        }
    }
    let tail = blocks.remainder().iter().fold(T::default(), |a, v| a + *v);
    acc.iter().fold(tail, |a, v| a + *v)
}

/// Sums `data` with `threads` workers (at least one) taking chunks of `chunk` elements (at
/// least one), each chunk with `LANES` accumulators.
pub fn sum_chunked<T: Element, const LANES: usize>(data: &[T], threads: usize, chunk: usize) -> T {
    let threads = threads.max(1);
    let chunk = chunk.max(1);
    let n_chunks = data.len().div_ceil(chunk);
    if threads == 1 || n_chunks <= 1 {
        return data
            .chunks(chunk)
            .fold(T::default(), |a, c| a + sum_lanes::<T, LANES>(c));
    }
    let next = AtomicUsize::new(0);
    let worker = || {
        let mut acc = T::default();
        loop {
            let c = next.fetch_add(1, Ordering::Relaxed);
            if c >= n_chunks {
                break acc;
            }
            let end = ((c + 1) * chunk).min(data.len());
            acc = acc + sum_lanes::<T, LANES>(&data[c * chunk..end]);
        }
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.min(n_chunks))
            .map(|_| s.spawn(worker))
            .collect();
        handles.into_iter().fold(T::default(), |a, h| {
            // A worker only panics on a bug; carry the panic to the caller unchanged.
            a + h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(n: usize) -> f64 {
        (0..n).map(f64::from_index).sum()
    }

    #[test]
    fn every_configuration_computes_the_same_sum() {
        for n in [0, 1, 7, 1000, 65_537] {
            let data: Vec<f64> = (0..n).map(f64::from_index).collect();
            let expect = reference(n);
            for threads in [1, 2, 3, 8] {
                for chunk in [1, 5, 64, 4096, 1 << 20] {
                    for got in [
                        sum_chunked::<f64, 1>(&data, threads, chunk),
                        sum_chunked::<f64, 4>(&data, threads, chunk),
                        sum_chunked::<f64, 8>(&data, threads, chunk),
                    ] {
                        assert!(
                            (got - expect).abs() <= 1e-9 * expect.abs().max(1.0),
                            "n={n} threads={threads} chunk={chunk}: {got} vs {expect}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn f32_sums_stay_close_to_the_f64_reference() {
        let n = 1 << 20;
        let data: Vec<f32> = (0..n).map(f32::from_index).collect();
        let expect = reference(n);
        let got = sum_chunked::<f32, 8>(&data, 2, 4096).to_f64();
        assert!((got - expect).abs() / expect < 1e-5, "{got} vs {expect}");
    }

    #[test]
    fn the_tuned_sum_runs_its_production_variant() {
        let data: Vec<f64> = (0..10_000).map(f64::from_index).collect();
        assert!((sum(&data) - reference(10_000)).abs() < 1e-9);
    }
}
