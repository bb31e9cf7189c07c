//! A tiled SGEMM, `C = A·B`, tuned by gputune: written from scratch on the kernel handle
//! (`gputune_runtime::kernel`), as a newcomer would.
//!
//! The bench's matrices are made on the device: integers 1 to 8 from
//! `gputune_runtime::generate::uniform`, turned into eighths by [`eighths`] (one launch each,
//! instead of a host loop and a copy); [`exact_at`] gives an element of their exact product on
//! the host, from the integers.

use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::Kernel;
use gputune_runtime::BoxError;

/// The CUDA C++ source of the kernel.
pub const SOURCE: &str = include_str!("sgemm.cu");

static SGEMM: Kernel = Kernel::new(SOURCE, "sgemm");

/// The input maker of `eighths.cu`: not tuned, compiled once per process.
pub static EIGHTHS: Kernel = Kernel::new(include_str!("eighths.cu"), "eighths");

/// Threads per block of [`eighths`].
const EIGHTHS_TPB: u32 = 256;

/// `c = a·b` for row-major `n`×`n` matrices (`n` a multiple of 128), enqueued on `stream`.
///
/// Tuned over the block tile (`bm`×`bn`), the slab depth `bk` and each thread's register tile
/// (`tm`×`tn`): 64 points. A point whose shared memory is over what a block may use without
/// opting in (48 KiB) is `invalid` on the GPU, as is one whose registers do not fit its block.
#[tune(
    bm = [64, 128], bn = [64, 128], bk = [8, 16, 32, 64], tm = [4, 8], tn = [4, 8],
    require((bm / tm) * (bn / tn) <= 1024),
    require((bm + bn) * bk * 4 <= 98304),
    base(bm = 64, bn = 64, bk = 16, tm = 4, tn = 4)
)]
pub fn sgemm(
    stream: &Arc<CudaStream>,
    (a, b): (&CudaSlice<f32>, &CudaSlice<f32>),
    c: &mut CudaSlice<f32>,
    n: usize,
) -> Result<(), BoxError> {
    if n % 128 != 0 || a.len() < n * n || b.len() < n * n || c.len() < n * n {
        return Err(
            format!("sgemm needs n×n matrices with n a multiple of 128, not n = {n}").into(),
        );
    }
    let kernel = SGEMM.get(TUNED, stream, &[])?;
    let config = kernel.check(LaunchConfig {
        grid_dim: ((n / BN) as u32, (n / BM) as u32, 1),
        block_dim: ((BM / TM * (BN / TN)) as u32, 1, 1),
        shared_mem_bytes: ((BM + BN) * BK * 4) as u32,
    })?;
    let n = i32::try_from(n)?;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(a).arg(b).arg(c).arg(&n);
    // SAFETY: the arguments match sgemm(const float*, const float*, float*, int), and every
    // index the kernel touches is below n·n, which all three slices hold (checked above).
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// `out[i] = ints[i] / 8` for every element of `ints`, on the device, enqueued on `stream`:
/// integers 1 to 8 (from `generate::uniform`) become the eighths 1/8 to 1. Every product of
/// two is a multiple of 1/64 up to 1, so every partial sum of a row-by-column product is a
/// multiple of 1/64 up to n (19 significant bits at n = 4096), exact in `f32` whatever the
/// order of the additions: every correct variant computes the same bits.
pub fn eighths(
    stream: &Arc<CudaStream>,
    ints: &CudaSlice<u32>,
    out: &mut CudaSlice<f32>,
) -> Result<(), BoxError> {
    let n = ints.len();
    if out.len() < n {
        return Err(format!(
            "eighths of {n} integers need {n} outputs, not {}",
            out.len()
        )
        .into());
    }
    if n == 0 {
        return Ok(());
    }
    let kernel = EIGHTHS.fixed(stream, &[])?;
    let config = kernel.grid_stride(n, EIGHTHS_TPB)?;
    let n = n as u64;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(ints).arg(out).arg(&n);
    // SAFETY: the arguments match eighths(const unsigned*, float*, unsigned long long); it
    // reads ints[0..n) and writes out[0..n), which both slices hold (checked above).
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// The rows (and the columns) of C that a bench checks: every `n / 61`-th, the last one
/// included (63 of each for n = 4096; every one below n = 122).
pub fn checked_lines(n: usize) -> Vec<usize> {
    let step = (n / 61).max(1);
    let mut lines: Vec<usize> = (0..n).step_by(step).chain(n.checked_sub(1)).collect();
    lines.dedup();
    lines
}

/// Element `(row, col)` of `C = A·B`, exactly, for `A` and `B` the eighths of integer
/// matrices whose row `row` of A is `a_row` and whose column `col` of B is `b_col`: the
/// integers' sum of products over 64 (exact in `u64`, and, for n ≤ 2^18, in `f32` once divided
/// by 64).
pub fn exact_at(a_row: &[u32], b_col: &[u32]) -> f32 {
    let sum: u64 = a_row
        .iter()
        .zip(b_col)
        .map(|(&p, &q)| u64::from(p) * u64::from(q))
        .sum();
    (sum as f64 / 64.0) as f32
}

/// Column `col` of the row-major `n`×`n` matrix `m`.
pub fn column(m: &[u32], n: usize, col: usize) -> Vec<u32> {
    (0..n).map(|k| m[k * n + col]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use gputune_runtime::skipped;

    /// The host's product of the eighths of `a` and `b`, in `f32`, in the kernel's order of
    /// the additions (along k): what `exact_at` must equal when the sums are exact.
    fn host_product(a: &[u32], b: &[u32], n: usize) -> Vec<f32> {
        let mut c = vec![0.0f32; n * n];
        for i in 0..n {
            for k in 0..n {
                let x = a[i * n + k] as f32 / 8.0;
                for j in 0..n {
                    c[i * n + j] += x * (b[k * n + j] as f32 / 8.0);
                }
            }
        }
        c
    }

    #[test]
    fn the_checked_elements_are_the_exact_product_of_the_generated_eighths() {
        use gputune_runtime::generate::host;
        // The bench's integers, as the device makes them (`generate::host` is the device's
        // specification), at a smaller n.
        let n = 256;
        let (mut a, mut b) = (vec![0u32; n * n], vec![0u32; n * n]);
        host::uniform(&mut a, 1, 8, 1).expect("a");
        host::uniform(&mut b, 1, 8, 2).expect("b");
        assert!(a.iter().chain(&b).all(|v| (1..=8).contains(v)));
        assert!(a != b, "different seeds, different matrices");
        // Not a pattern along rows or columns: rows of C differ.
        let c = host_product(&a, &b, n);
        assert!(c[..n] != c[n..2 * n]);
        let lines = checked_lines(n);
        assert_eq!((lines[0], lines[lines.len() - 1]), (0, n - 1));
        for &row in &lines {
            for &col in &lines {
                let want = exact_at(&a[row * n..(row + 1) * n], &column(&b, n, col));
                assert_eq!(c[row * n + col], want, "C[{row}][{col}]");
            }
        }
        assert_eq!(column(&[1, 2, 3, 4, 5, 6, 7, 8, 9], 3, 1), [2, 5, 8]);
        // The bench's n: 63 lines each way, both ends in; small n: every line.
        let lines = checked_lines(4096);
        assert_eq!((lines.len(), lines[0], lines[62]), (63, 0, 4095));
        assert_eq!(checked_lines(3), [0, 1, 2]);
    }

    #[test]
    fn the_input_maker_compiles_where_nvrtc_is_installed() {
        match EIGHTHS.compiles_for(&[], "base", &[], 90) {
            Ok(true) => {}
            Ok(false) => skipped("needs NVRTC (the CUDA toolkit), which is not installed"),
            Err(e) => panic!("eighths does not compile: {e}"),
        }
    }

    /// On a GPU (skipped without one): the generated integers become their eighths, and
    /// base's product of them is exact at the checked elements.
    #[test]
    fn on_a_gpu_the_device_s_eighths_multiply_exactly() {
        use gputune_runtime::cudarc::driver::{sys, CudaContext};
        use gputune_runtime::generate;
        // SAFETY: only tries to dlopen the driver library; nothing is called.
        if !unsafe { sys::is_culib_present() } {
            return skipped("needs a CUDA driver, which is not installed");
        }
        let stream = match CudaContext::new(0) {
            Ok(context) => context.default_stream(),
            Err(e) => return skipped(&format!("no usable device: {e}")),
        };
        let n = 256;
        let make = |seed| {
            let mut ints = stream.alloc_zeros::<u32>(n * n).expect("ints");
            generate::uniform::<u32>(&stream, &mut ints, 1, 8, seed).expect("generate");
            let mut x = stream.alloc_zeros::<f32>(n * n).expect("x");
            eighths(&stream, &ints, &mut x).expect("eighths");
            let (ints, got) = (
                stream.clone_dtoh(&ints).expect("ints back"),
                stream.clone_dtoh(&x).expect("x back"),
            );
            assert!(ints.iter().all(|v| (1..=8).contains(v)));
            assert!(ints.iter().zip(&got).all(|(&i, &v)| v == i as f32 / 8.0));
            (ints, x)
        };
        let ((a_ints, a), (b_ints, b)) = (make(1), make(2));
        let mut c = stream.alloc_zeros::<f32>(n * n).expect("c");
        sgemm(&stream, (&a, &b), &mut c, n).expect("base launches");
        let got = stream.clone_dtoh(&c).expect("copy back");
        for col in checked_lines(n) {
            let b_col = column(&b_ints, n, col);
            for row in 0..n {
                let want = exact_at(&a_ints[row * n..(row + 1) * n], &b_col);
                assert_eq!(got[row * n + col], want, "C[{row}][{col}]");
            }
        }
        let mut short = stream.alloc_zeros::<f32>(10).expect("short");
        assert!(eighths(
            &stream,
            &stream.alloc_zeros::<u32>(11).expect("ints"),
            &mut short
        )
        .is_err());
    }

    /// Every label of the space, from the build script's manifest.
    fn labels() -> Vec<String> {
        let path = concat!(env!("OUT_DIR"), "/gputune/manifest.json");
        let text = std::fs::read_to_string(path).expect("the build script's manifest");
        let m: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        m["functions"][0]["labels"]
            .as_array()
            .expect("labels")
            .iter()
            .filter_map(|l| l.as_str().map(str::to_string))
            .collect()
    }

    #[test]
    fn the_space_has_64_points_and_each_compiles() {
        let labels = labels();
        assert_eq!(labels.len(), 64);
        for label in labels {
            let defines = SGEMM
                .label_defines(SGEMM_PARAMS, &label, &[])
                .expect("a label");
            let defines: Vec<(&str, String)> = defines
                .iter()
                .map(|(n, v)| (n.as_str(), v.clone()))
                .collect();
            match gputune_runtime::backend::cuda::compiles_for(SOURCE, &defines, 90) {
                Ok(true) => {}
                Ok(false) => {
                    return skipped("needs NVRTC (the CUDA toolkit), which is not installed")
                }
                Err(e) => panic!("{label} {defines:?} does not compile: {e}"),
            }
        }
    }
}
