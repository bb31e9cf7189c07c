//! A 2-D convolution with a 17 × 17 filter, tuned by gputune: a kernel the project's defaults
//! were not tuned on, written as a newcomer would, to be searched beside Kernel Tuner (whose
//! tutorial tunes a convolution over the same kind of parameters).
//!
//! [`fill_eighths`] makes the bench's input and filter on the device (one launch each, rather
//! than a host loop and a copy); [`eighth`] is their specification on the host, from which
//! [`output_of`] computes any output without making the input.

use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::Kernel;
use gputune_runtime::BoxError;

/// The CUDA C++ source of the kernel.
pub const SOURCE: &str = include_str!("conv.cu");

/// The filter's side: what the kernel's `FILTER_W` and `FILTER_H` say.
pub const FILTER: usize = 17;

/// The kernel handle, for tests that compile the points of the space.
pub static CONV: Kernel = Kernel::new(SOURCE, "conv");

/// The input maker of `input.cu`: not tuned, compiled once per process.
pub static FILL_EIGHTHS: Kernel = Kernel::new(include_str!("input.cu"), "fill_eighths");

/// Threads per block of the input maker.
const FILL_TPB: u32 = 256;

/// `out` (`h`×`w`) = `input` (`(h + 16)`×`(w + 16)`, row-major) convolved with the 17×17
/// `filter` (row-major), enqueued on `stream`.
///
/// Tuned over the block's shape (`block_x`×`block_y` threads) and the outputs each thread
/// computes (`tile_x`×`tile_y`), and the padding of the shared tile's rows: 268 points once
/// blocks of fewer than 64 or more than 1024 threads and input tiles over the 48 KiB of static
/// shared memory are left out.
#[tune(
    block_x = [16, 32, 64, 128],
    block_y = pow2(0..=4),
    tile_x = [1, 2, 4],
    tile_y = [1, 2, 4],
    pad = [0, 1],
    require(block_x * block_y >= 64),
    require(block_x * block_y <= 1024),
    require((block_y * tile_y + 16) * (block_x * tile_x + 16 + pad) * 4 <= 49152),
    base(block_x = 32, block_y = 8, tile_x = 1, tile_y = 1, pad = 0)
)]
pub fn conv(
    stream: &Arc<CudaStream>,
    input: &CudaSlice<f32>,
    filter: &CudaSlice<f32>,
    out: &mut CudaSlice<f32>,
    (w, h): (usize, usize),
) -> Result<(), BoxError> {
    let in_len = (w + FILTER - 1) * (h + FILTER - 1);
    if input.len() < in_len || filter.len() < FILTER * FILTER || out.len() < w * h {
        return Err(format!(
            "a {w}×{h} convolution needs {in_len} inputs and {} outputs",
            w * h
        )
        .into());
    }
    if w == 0 || h == 0 {
        return Ok(());
    }
    // The kernel computes the input's sides in `int`.
    i32::try_from(w.max(h) + FILTER - 1)?;
    let kernel = CONV.get(TUNED, stream, &[])?;
    let (tile_w, tile_h) = (BLOCK_X * TILE_X, BLOCK_Y * TILE_Y);
    let config = kernel.check(LaunchConfig {
        grid_dim: (w.div_ceil(tile_w) as u32, h.div_ceil(tile_h) as u32, 1),
        block_dim: (BLOCK_X as u32, BLOCK_Y as u32, 1),
        shared_mem_bytes: 0,
    })?;
    let (w, h) = (i32::try_from(w)?, i32::try_from(h)?);
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(out).arg(input).arg(filter).arg(&w).arg(&h);
    // SAFETY: the arguments match conv(float*, const float*, const float*, int, int); the
    // kernel reads only inside the (h + 16)×(w + 16) input and the 17×17 filter and writes only
    // inside the h×w output, which the slices hold (checked above).
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// Test data element `i`: an eighth, 1/8 to 1, picked by a multiplicative hash of `i` and
/// `seed`, so that every product of two is a multiple of 1/64 and a sum of 289 of them is
/// exact in `f32`: any order of summation gives the same bits. `input.cu` computes the same
/// values on the device.
pub fn eighth(i: usize, seed: usize) -> f32 {
    ((i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 7) % 8 + 1) as f32 / 8.0
}

/// Test data: `n` values [`eighth`]`(i, seed)`, made on the host (the tests' inputs, and the
/// specification of [`fill_eighths`]).
pub fn eighths(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| eighth(i, seed)).collect()
}

/// Fills `x` with [`eighth`]`(i, seed)` for every index `i` on the device, enqueued on
/// `stream`: what [`eighths`] makes on the host, bit for bit.
pub fn fill_eighths(
    stream: &Arc<CudaStream>,
    x: &mut CudaSlice<f32>,
    seed: usize,
) -> Result<(), BoxError> {
    if x.is_empty() {
        return Ok(());
    }
    let kernel = FILL_EIGHTHS.fixed(stream, &[])?;
    let config = kernel.grid_stride(x.len(), FILL_TPB)?;
    let (n, seed) = (x.len() as u64, seed as u64);
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(x).arg(&n).arg(&seed);
    // SAFETY: the arguments match fill_eighths(float*, unsigned long long, unsigned long
    // long); it writes x[0..n), which the slice holds.
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// One output of the convolution, on the host, of an input and a filter given element by
/// element (row-major indices): the reference a bench checks base against, from the
/// specification of its data ([`eighth`]) without making the whole input.
pub fn output_of(
    input: impl Fn(usize) -> f32,
    filter: impl Fn(usize) -> f32,
    w: usize,
    (x, y): (usize, usize),
) -> f32 {
    let in_w = w + FILTER - 1;
    let mut sum = 0.0f32;
    for j in 0..FILTER {
        for i in 0..FILTER {
            sum += input((y + j) * in_w + x + i) * filter(j * FILTER + i);
        }
    }
    sum
}

/// One output of the convolution, on the host, of an input and a filter in memory.
pub fn output_at(input: &[f32], filter: &[f32], w: usize, xy: (usize, usize)) -> f32 {
    output_of(|i| input[i], |i| filter[i], w, xy)
}

#[cfg(test)]
mod tests {
    use super::*;

    use gputune_runtime::skipped;

    #[test]
    fn the_data_is_the_formula_and_the_reference_needs_no_input_in_memory() {
        // The formula the device's maker follows: ((i · 2654435761 + seed) >> 7) mod 8 + 1,
        // over 8, in 64-bit wrapping arithmetic (as `unsigned long long` wraps).
        let formula = |i: u64, seed: u64| {
            ((i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 7) % 8 + 1) as f32 / 8.0
        };
        for i in (0..10_000).chain([4112 * 4112 - 1, 1 << 40, usize::MAX]) {
            for seed in [1, 2] {
                assert_eq!(
                    eighth(i, seed),
                    formula(i as u64, seed as u64),
                    "{i} {seed}"
                );
            }
        }
        let (w, in_w) = (40, 40 + FILTER - 1);
        let input = eighths(in_w * in_w, 1);
        let filter = eighths(FILTER * FILTER, 2);
        for xy in [(0, 0), (39, 0), (0, 39), (39, 39), (17, 23)] {
            assert_eq!(
                output_of(|i| eighth(i, 1), |i| eighth(i, 2), w, xy),
                output_at(&input, &filter, w, xy),
                "{xy:?}"
            );
        }
        // Every value 1/8 … 1 comes out, about equally often.
        let mut counts = [0usize; 8];
        for v in eighths(80_000, 1) {
            counts[(v * 8.0) as usize - 1] += 1;
        }
        assert!(
            counts.iter().all(|&c| c.abs_diff(10_000) < 1_000),
            "{counts:?}"
        );
    }

    #[test]
    fn the_device_s_input_maker_compiles_where_nvrtc_is_installed() {
        match FILL_EIGHTHS.compiles_for(&[], "base", &[], 90) {
            Ok(true) => {}
            Ok(false) => skipped("needs NVRTC (the CUDA toolkit), which is not loaded"),
            Err(e) => panic!("fill_eighths does not compile: {e}"),
        }
    }

    #[test]
    fn the_host_reference_sums_the_filter_window() {
        // A 1-wide output over a 17×17 input: the sum of the products, exact in eighths.
        let input = eighths(FILTER * FILTER, 1);
        let filter = eighths(FILTER * FILTER, 2);
        let want: f64 = input
            .iter()
            .zip(&filter)
            .map(|(a, b)| f64::from(a * b))
            .sum();
        assert_eq!(f64::from(output_at(&input, &filter, 1, (0, 0))), want);
        assert!(input
            .iter()
            .all(|v| (0.125..=1.0).contains(v) && (v * 8.0).fract() == 0.0));
        // Not constant: a wrong index would show.
        assert!(input.windows(2).any(|p| p[0] != p[1]));
    }
}
