//! A 2-D Jacobi sweep (the heat equation with fixed boundaries) whose launch parameter the
//! runtime autotuner picks while the iteration runs.
//!
//! - On the CPU, the parameter is the number of rows a worker takes per task: small tasks
//!   balance the load, large ones pay less for handing tasks out. [`run_cpu`] drives it
//!   with an [`Autotuner`] and a [`CpuTimer`](gputune_runtime::autotune::CpuTimer).
//! - On a GPU (feature `cuda`, module `gpu`), it is the CUDA block size, 32 to 1024 in
//!   steps of 32, clamped to the kernel's maximum threads per block; the binary
//!   `stencil-autotune` runs it and reports how much time tuning cost.
//!
//! Both compute exactly what [`step_reference`] computes.

use std::sync::{Mutex, PoisonError};

use gputune_runtime::autotune::{self, Autotuner, AutotunerBuilder, Timer};

#[cfg(feature = "cuda")]
pub mod gpu;

/// The rows-per-task candidates of the CPU variant.
pub const CPU_ROWS_PER_TASK: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

/// The autotuner name of the CPU variant (its name in the cache).
pub const CPU_TUNER: &str = "jacobi-cpu";

/// A row-major grid of `nx` columns and `ny` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Cells per row.
    pub nx: usize,
    /// Rows.
    pub ny: usize,
}

impl Shape {
    /// Cells in the grid.
    pub fn cells(self) -> usize {
        self.nx * self.ny
    }
}

/// A deterministic starting field with no zeros: a hot left edge, a cold right edge and a
/// ripple inside, so that every sweep changes every interior cell.
pub fn initial_field(shape: Shape) -> Vec<f32> {
    let Shape { nx, ny } = shape;
    let mut field = Vec::with_capacity(shape.cells());
    for y in 0..ny {
        for x in 0..nx {
            let v = if x == 0 {
                100.0
            } else if x + 1 == nx {
                1.0
            } else {
                10.0 + ((x * 7 + y * 13) % 17) as f32 * 0.5
            };
            field.push(v);
        }
    }
    field
}

/// One sweep of row `y` of `src` into `row` (the same row of the destination).
fn step_row(shape: Shape, src: &[f32], row: &mut [f32], y: usize) {
    let Shape { nx, ny } = shape;
    let base = y * nx;
    if y == 0 || y + 1 == ny || nx < 3 {
        row.copy_from_slice(&src[base..base + nx]);
        return;
    }
    row[0] = src[base];
    row[nx - 1] = src[base + nx - 1];
    for (x, cell) in row.iter_mut().enumerate().take(nx - 1).skip(1) {
        let i = base + x;
        // Grouped as the CUDA kernel groups it: the two variants agree bit for bit.
        *cell = 0.25 * ((src[i - 1] + src[i + 1]) + (src[i - nx] + src[i + nx]));
    }
}

/// One sweep, serially: the reference every variant is checked against.
///
/// # Panics
/// When `src` or `dst` does not hold `shape.cells()` values.
pub fn step_reference(shape: Shape, src: &[f32], dst: &mut [f32]) {
    assert!(src.len() == shape.cells() && dst.len() == shape.cells());
    if shape.cells() == 0 {
        return;
    }
    for (y, row) in dst.chunks_mut(shape.nx).enumerate() {
        step_row(shape, src, row, y);
    }
}

/// `iterations` serial sweeps of `field`.
pub fn reference(shape: Shape, field: &[f32], iterations: u64) -> Vec<f32> {
    let mut a = field.to_vec();
    let mut b = a.clone();
    for _ in 0..iterations {
        step_reference(shape, &a, &mut b);
        std::mem::swap(&mut a, &mut b);
    }
    a
}

/// One sweep by `threads` workers (the caller's thread among them) that take
/// `rows_per_task` rows at a time from a shared queue.
///
/// # Panics
/// When `src` or `dst` does not hold `shape.cells()` values.
pub fn step_parallel(
    shape: Shape,
    src: &[f32],
    dst: &mut [f32],
    rows_per_task: usize,
    threads: usize,
) {
    assert!(src.len() == shape.cells() && dst.len() == shape.cells());
    if shape.cells() == 0 {
        return;
    }
    let rows = rows_per_task.max(1);
    // Handing out a task costs one lock: the price that large tasks amortise.
    let tasks = Mutex::new(dst.chunks_mut(rows * shape.nx).enumerate());
    let worker = || loop {
        let next = tasks.lock().unwrap_or_else(PoisonError::into_inner).next();
        let Some((task, chunk)) = next else { break };
        for (r, row) in chunk.chunks_mut(shape.nx).enumerate() {
            step_row(shape, src, row, task * rows + r);
        }
    };
    if threads <= 1 {
        worker();
        return;
    }
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(worker);
        }
        worker();
    });
}

/// The autotuner of the CPU variant, before its cache and logging are chosen.
pub fn cpu_tuner() -> AutotunerBuilder<u32> {
    Autotuner::builder(CPU_TUNER, CPU_ROWS_PER_TASK.to_vec())
}

/// Sweeps `field` `iterations` times with `threads` workers, the rows per task chosen by
/// `tuner` (keyed by the number of cells); returns the final field.
pub fn run_cpu<T: Timer>(
    tuner: &mut Autotuner<u32, T>,
    shape: Shape,
    field: &[f32],
    iterations: u64,
    threads: usize,
) -> autotune::Result<Vec<f32>> {
    let mut a = field.to_vec();
    let mut b = a.clone();
    let key = shape.cells() as u64;
    for _ in 0..iterations {
        let rows = tuner.begin(key)?;
        step_parallel(shape, &a, &mut b, rows as usize, threads);
        tuner.end()?;
        std::mem::swap(&mut a, &mut b);
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_averages_the_interior_and_keeps_the_boundary() {
        let shape = Shape { nx: 3, ny: 3 };
        let src = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
        let mut dst = [0.0; 9];
        step_reference(shape, &src, &mut dst);
        // Centre: (4 + 6 + 2 + 8) / 4 = 5.
        assert_eq!(dst, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
        let src = [1.0, 1.0, 1.0, 1.0, 0.0, 3.0, 1.0, 1.0, 1.0];
        step_reference(shape, &src, &mut dst);
        assert_eq!(dst[4], 1.5);
        assert_eq!(dst[3], 1.0);
    }

    #[test]
    fn parallel_sweeps_match_the_reference_for_every_task_size() {
        for shape in [
            Shape { nx: 37, ny: 29 },
            Shape { nx: 1, ny: 5 },
            Shape { nx: 5, ny: 1 },
            Shape { nx: 0, ny: 4 },
        ] {
            let src = initial_field(shape);
            let mut expected = vec![f32::NAN; shape.cells()];
            step_reference(shape, &src, &mut expected);
            for rows in [0, 1, 3, 8, 64] {
                for threads in [1, 2, 3] {
                    let mut dst = vec![f32::NAN; shape.cells()];
                    step_parallel(shape, &src, &mut dst, rows, threads);
                    assert_eq!(dst, expected, "{shape:?} rows {rows} threads {threads}");
                }
            }
        }
    }

    #[test]
    fn the_initial_field_has_no_zeros() {
        let f = initial_field(Shape { nx: 64, ny: 64 });
        assert!(f.iter().all(|&v| v > 0.0));
    }
}
