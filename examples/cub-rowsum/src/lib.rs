//! Per-row sums of a row-major matrix with CUB's block-level primitives (`cub::BlockLoad`
//! and `cub::BlockReduce`), tuned by gputune over the block size, the items each thread
//! loads per tile, and CUB's load and reduction algorithms: a kernel on CUB's headers, which
//! NVRTC finds without any include path, written as a newcomer would.
//!
//! [`eighths`] makes inputs on the device whose row sums are exact in `f32`, so that every
//! variant can be verified bit for bit.

use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::Kernel;
use gputune_runtime::BoxError;

/// The tuned kernel: `rowsum` of `rowsum.cu`, compiled with the variant's `TPB`, `IPT`,
/// `LOAD` and `REDUCE` as defines.
pub static ROWSUM: Kernel = gputune_macros::kernel!("src/rowsum.cu", "rowsum");

/// The input maker: `eighths` of the same file, compiled without tuning defines (the file
/// then leaves out `rowsum` and CUB's headers), once per process.
pub static EIGHTHS: Kernel = gputune_macros::kernel!("src/rowsum.cu", "eighths");

/// Threads per block of [`eighths`].
const EIGHTHS_TPB: u32 = 256;

/// `out[r]` = the sum of row `r` of the row-major `rows`×`cols` matrix `x`, for `r < rows`,
/// enqueued on `stream`; one block per row. `cols` must be a multiple of `tpb × ipt`, the
/// tile a block loads at once: a multiple of 8192 suits every point of the space.
///
/// Tuned over threads per block `tpb`, items each thread loads per tile `ipt`, CUB's load
/// algorithm `load` (direct, vectorised, or through shared memory with a warp-striped
/// transpose) and its block reduction `reduce` (raking, or per-warp reductions): 3 × 3 × 3 ×
/// 2 = 54 points. Base is CUB's usual 256 threads of 4 items, loaded directly, reduced by
/// warps.
#[tune(
    tpb = [128, 256, 512],
    ipt = [4, 8, 16],
    load = [BLOCK_LOAD_DIRECT, BLOCK_LOAD_VECTORIZE, BLOCK_LOAD_WARP_TRANSPOSE],
    reduce = [BLOCK_REDUCE_RAKING, BLOCK_REDUCE_WARP_REDUCTIONS],
    base(tpb = 256, ipt = 4, load = BLOCK_LOAD_DIRECT, reduce = BLOCK_REDUCE_WARP_REDUCTIONS)
)]
pub fn rowsum(
    stream: &Arc<CudaStream>,
    x: &CudaSlice<f32>,
    out: &mut CudaSlice<f32>,
    (rows, cols): (usize, usize),
) -> Result<(), BoxError> {
    let tile = TPB * IPT;
    if cols % tile != 0 {
        return Err(format!(
            "rowsum's variant of {TPB} threads × {IPT} items needs cols a multiple of {tile}, \
             not {cols}"
        )
        .into());
    }
    let elements = rows
        .checked_mul(cols)
        .ok_or_else(|| format!("a {rows}×{cols} matrix has more elements than memory"))?;
    if x.len() < elements || out.len() < rows {
        return Err(format!(
            "a {rows}×{cols} row sum needs {elements} inputs and {rows} outputs, not {} and {}",
            x.len(),
            out.len()
        )
        .into());
    }
    if rows == 0 {
        return Ok(());
    }
    let kernel = ROWSUM.get(TUNED, stream, &[])?;
    let config = kernel.check(LaunchConfig {
        grid_dim: (u32::try_from(rows)?, 1, 1),
        block_dim: (TPB as u32, 1, 1),
        shared_mem_bytes: 0,
    })?;
    let cols = i32::try_from(cols)?;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(x).arg(out).arg(&cols);
    // SAFETY: the arguments match rowsum(const float*, float*, int); block r reads only row r
    // of x (x[r·cols .. (r+1)·cols), with the offset in 64 bits) and writes only out[r], for
    // r < rows, which the slices hold (checked above).
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// `out[i] = bits[i] / 8` for every element of `bits`, enqueued on `stream`: integers 1 to 8
/// (say from `generate::uniform`) become the eighths 1/8 to 1, whose sums of up to 2^21 terms
/// are exact in `f32` in any order of addition. Not tuned.
pub fn eighths(
    stream: &Arc<CudaStream>,
    bits: &CudaSlice<u32>,
    out: &mut CudaSlice<f32>,
) -> Result<(), BoxError> {
    let n = bits.len();
    if out.len() < n {
        return Err(format!("eighths of {n} values needs {n} outputs, not {}", out.len()).into());
    }
    if n == 0 {
        return Ok(());
    }
    let kernel = EIGHTHS.fixed(stream, &[])?;
    // Grid-stride: any grid is correct; one thread per element up to the largest grid.
    let blocks = u32::try_from(n.div_ceil(EIGHTHS_TPB as usize)).unwrap_or(u32::MAX);
    let limit = kernel.limits().max_grid_dim[0];
    let config = kernel.check(LaunchConfig {
        grid_dim: (blocks.min(limit), 1, 1),
        block_dim: (EIGHTHS_TPB, 1, 1),
        shared_mem_bytes: 0,
    })?;
    let n = i64::try_from(n)?;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(bits).arg(out).arg(&n);
    // SAFETY: the arguments match eighths(const unsigned*, float*, long long); it reads
    // bits[0..n) and writes out[0..n), which both slices hold (checked above).
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// The sum of `row` on the host, exact for eighths (added in `f64`, then rounded once): the
/// reference a bench checks base against.
pub fn host_row_sum(row: &[f32]) -> f32 {
    row.iter().map(|&v| f64::from(v)).sum::<f64>() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    use gputune_runtime::skipped;

    /// Every label of the space, from the build script's manifest.
    fn labels() -> Vec<String> {
        // Built in, so that the test binary runs where the build directory is not.
        let text = include_str!(concat!(env!("OUT_DIR"), "/gputune/manifest.json"));
        let m: serde_json::Value = serde_json::from_str(text).expect("JSON");
        m["functions"][0]["labels"]
            .as_array()
            .expect("labels")
            .iter()
            .filter_map(|l| l.as_str().map(str::to_string))
            .collect()
    }

    #[test]
    fn the_space_has_54_points_whose_choices_are_cub_s_identifiers() {
        let labels = labels();
        assert_eq!(labels.len(), 54);
        let first = "tpb_128.ipt_4.load_BLOCK_LOAD_DIRECT.reduce_BLOCK_REDUCE_RAKING";
        assert_eq!(labels[0], first);
        let defines = ROWSUM
            .label_defines(ROWSUM_PARAMS, first, &[])
            .expect("a label");
        let want = [
            ("TPB", "128"),
            ("IPT", "4"),
            ("LOAD", "BLOCK_LOAD_DIRECT"),
            ("REDUCE", "BLOCK_REDUCE_RAKING"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(defines, want);
    }

    /// Compiles base, the first and last points of the space (direct and warp-transposed
    /// loads, raking and warp reductions) and a vectorised point: every load and reduction
    /// algorithm at least once, and every block size. Not all 54: each compile of CUB's
    /// headers takes NVRTC seconds, and the bench compiles every point it runs anyway.
    #[test]
    fn a_point_of_each_algorithm_compiles_for_sm_90() {
        let labels = labels();
        let vectorized = "tpb_256.ipt_8.load_BLOCK_LOAD_VECTORIZE.reduce_BLOCK_REDUCE_RAKING";
        assert!(
            labels.iter().any(|l| l == vectorized),
            "{vectorized} is a point"
        );
        let some = ["base", &labels[0], vectorized, &labels[labels.len() - 1]];
        for label in some {
            match ROWSUM.compiles_for(ROWSUM_PARAMS, label, &[], 90) {
                Ok(true) => {}
                Ok(false) => return skipped("needs NVRTC (the CUDA toolkit), which is not loaded"),
                Err(e) => panic!("{label} does not compile: {e}"),
            }
        }
    }

    #[test]
    fn the_input_maker_compiles_without_tuning_defines() {
        match EIGHTHS.compiles_for(&[], "base", &[], 90) {
            Ok(true) => {}
            Ok(false) => skipped("needs NVRTC (the CUDA toolkit), which is not loaded"),
            Err(e) => panic!("eighths does not compile on its own: {e}"),
        }
    }

    #[test]
    fn the_host_reference_is_exact_for_eighths() {
        // 2^21 eighths of 1: the largest exact sum, 2^21, and one eighth more than 2^21 − 1.
        let row = vec![1.0f32; 1 << 21];
        assert_eq!(host_row_sum(&row), (1u32 << 21) as f32);
        let mut row = vec![0.125f32; 8];
        row.push(1.0);
        assert_eq!(host_row_sum(&row), 2.0);
    }
}
