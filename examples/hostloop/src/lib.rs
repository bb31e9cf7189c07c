//! Two kernels tuned the way people first write a tuned crate: inputs filled on the host by
//! plain `for` loops, copied to the device, verified, then measured.
//!
//! - [`sgemm`]: a 4096×4096 `f32` register-tiled matrix product (`sgemm.cu`), 64 points;
//! - [`partial_sums`]: the first pass of a device-wide sum over 2^28 `f32` (`reduce.cu`'s
//!   `partial_sums`), 128 points.
//!
//! Kernels, spaces and problems are those of Kernel Tuner's `sgemm` and `reduce` problems in
//! `scripts/kt/kt_problems.py`, so that `kt_tune.py` is the peer of this crate's search
//! (`scripts/gpu/gpu-vs-kt.sh hostloop`). The inputs come from [`eighths`] and
//! [`small_integers`]: host loops over a seeded pseudo-random sequence ([`SplitMix64`]).

use std::sync::Arc;

use gputune_macros::{kernel, tune};
use gputune_runtime::cudarc::driver::sys::CUdevice_attribute::{
    CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR as BLOCKS_PER_SM,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT as SMS,
};
use gputune_runtime::cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use gputune_runtime::kernel::Kernel;
use gputune_runtime::BoxError;

/// `sgemm.cu`'s kernel: `sgemm(const float* a, const float* b, float* c, int n)`.
pub static SGEMM: Kernel = kernel!("src/sgemm.cu", "sgemm");

/// `reduce.cu`'s first pass: `partial_sums(const VALUE_T* x, VALUE_T* partials, unsigned
/// long long n)`, one partial sum per block.
pub static PARTIAL_SUMS: Kernel = kernel!("src/reduce.cu", "partial_sums");

/// The element type define `reduce.cu` needs.
pub const VALUE_T: (&str, &str) = ("VALUE_T", "float");

/// `c = a·b` for row-major `n`×`n` matrices (`n` a multiple of 128), enqueued on `stream`.
///
/// Tuned over the block tile (`bm`×`bn`), the slab depth `bk` and each thread's register tile
/// (`tm`×`tn`): 64 points, Kernel Tuner's `sgemm` space.
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
    if n == 0 || n % 128 != 0 {
        return Err(format!("sgemm takes n a multiple of 128, not {n}").into());
    }
    if a.len() < n * n || b.len() < n * n || c.len() < n * n {
        return Err(format!("sgemm of n = {n} needs {} elements per matrix", n * n).into());
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
    // SAFETY: the arguments match sgemm(const float*, const float*, float*, int), and the
    // kernel touches elements below n·n of each, which every slice holds (checked above).
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// The first pass of `x[0] + … + x[n-1]`, enqueued on `stream`: one partial sum per block into
/// `partials[0..blocks)`, where `blocks`, which it returns, is one block per tile of
/// `TPB × IPT × VEC` elements but no more than the device holds at once (the occupancy of this
/// variant times the SMs). `partials` needs [`max_partials`] elements.
///
/// Tuned over block size `tpb`, vector loads per thread per tile `ipt`, vector width `vec`
/// and tiles per loop trip `unroll`, with `ipt × vec × unroll ≤ 32`: 128 points, Kernel
/// Tuner's `reduce` space (whose grid, too, is capped at the resident blocks).
#[tune(
    tpb = pow2(7..=10),
    ipt = [1, 2, 4, 8],
    vec = [1, 2, 4],
    unroll = [1, 2, 4],
    require(ipt * vec * unroll <= 32),
    base(tpb = 256, ipt = 4, vec = 4, unroll = 1)
)]
pub fn partial_sums(
    stream: &Arc<CudaStream>,
    x: &CudaSlice<f32>,
    partials: &mut CudaSlice<f32>,
) -> Result<u32, BoxError> {
    let kernel = PARTIAL_SUMS.get(TUNED, stream, &[VALUE_T])?;
    let block = |blocks: u32| LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (TPB as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    // A block this variant cannot take is `invalid`, before the occupancy is asked.
    kernel.check(block(1))?;
    // The occupancy calculator is a driver call: it needs the stream's context current here.
    let context = stream.context();
    context.bind_to_thread()?;
    let per_sm = kernel
        .function()
        .occupancy_max_active_blocks_per_multiprocessor(TPB as u32, 0, None)?;
    let resident = per_sm.saturating_mul(u32::try_from(context.attribute(SMS)?)?);
    let n = x.len() as u64;
    let tiles = n.div_ceil((TPB * IPT * VEC) as u64);
    let blocks = u32::try_from(tiles)
        .unwrap_or(u32::MAX)
        .min(resident)
        .max(1);
    if partials.len() < blocks as usize {
        return Err(format!(
            "{} partials for {blocks} blocks (allocate max_partials)",
            partials.len()
        )
        .into());
    }
    let config = kernel.check(block(blocks))?;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(x).arg(&mut *partials).arg(&n);
    // SAFETY: the arguments match partial_sums(const float*, float*, unsigned long long) with
    // VALUE_T = float; it reads x[0..n) and writes partials[0..blocks), which `partials`
    // holds (checked above).
    unsafe { launch.launch(config) }?;
    Ok(blocks)
}

/// The most partial sums any variant of [`partial_sums`] writes on `context`'s device: its SMs
/// times the most blocks an SM holds.
pub fn max_partials(context: &CudaContext) -> Result<usize, BoxError> {
    let sms = usize::try_from(context.attribute(SMS)?)?;
    let per_sm = usize::try_from(context.attribute(BLOCKS_PER_SM)?)?;
    Ok(sms * per_sm)
}

/// A seeded pseudo-random sequence (splitmix64): deterministic, so the inputs are the same in
/// every run and every process.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// The sequence from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `n` random eighths, 1/8 to 1, from `seed`. Every product of two is a multiple of 1/64 and
/// every sum of `n ≤ 2^18` of them a multiple of 1/64 below 2^18: exact in `f32` in any order
/// of the additions, so every correct SGEMM variant computes the same bits.
pub fn eighths(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(((rng.next_u64() >> 61) + 1) as f32 / 8.0);
    }
    out
}

/// `n` random integers from −4 to 4, as `f32`, from `seed`, and their exact sum.
///
/// Every partial sum any reduction forms is an integer, exact in `f32` while it stays under
/// 2^24 in magnitude; the values have mean 0, so a sum of `m` of them is typically about
/// 2.6·√m (about 42 000 for all of 2^28) and far from 2^24: every correct variant's partial
/// sums add up exactly to the returned sum.
pub fn small_integers(n: usize, seed: u64) -> (Vec<f32>, i64) {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(n);
    let mut sum = 0i64;
    for _ in 0..n {
        let v = ((rng.next_u64() >> 32) % 9) as i64 - 4;
        out.push(v as f32);
        sum += v;
    }
    (out, sum)
}

/// Whether the first `blocks` partial sums add up to `exact`: each must be finite (a partial
/// left poisoned is not) and an integer, and their sum, taken in `f64` (exact for integers
/// under 2^53), must equal `exact`.
pub fn check_partials(partials: &[f32], blocks: u32, exact: i64) -> Result<(), String> {
    let Some(written) = partials.get(..blocks as usize) else {
        return Err(format!(
            "{blocks} partials, but only {} held",
            partials.len()
        ));
    };
    if let Some(i) = written
        .iter()
        .position(|p| !p.is_finite() || p.fract() != 0.0)
    {
        return Err(format!("partial {i} of {blocks} is {}", written[i]));
    }
    let total: f64 = written.iter().map(|&p| f64::from(p)).sum();
    if total == exact as f64 {
        Ok(())
    } else {
        Err(format!(
            "the {blocks} partials sum to {total}, the exact sum is {exact}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use gputune_runtime::skipped;

    /// Every label of `sgemm`'s space: Kernel Tuner's restrictions over the cross product, in
    /// the order of the attribute's parameters (Kernel Tuner's labels too).
    fn sgemm_labels() -> Vec<String> {
        let mut out = Vec::new();
        for bm in [64, 128] {
            for bn in [64, 128] {
                for bk in [8, 16, 32, 64] {
                    for tm in [4, 8] {
                        for tn in [4, 8] {
                            if (bm / tm) * (bn / tn) <= 1024 && (bm + bn) * bk * 4 <= 98304 {
                                out.push(format!("bm_{bm}.bn_{bn}.bk_{bk}.tm_{tm}.tn_{tn}"));
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// Every label of `partial_sums`'s space, as above.
    fn reduce_labels() -> Vec<String> {
        let mut out = Vec::new();
        for tpb in [128, 256, 512, 1024] {
            for ipt in [1, 2, 4, 8] {
                for vec in [1, 2, 4] {
                    for unroll in [1, 2, 4] {
                        if ipt * vec * unroll <= 32 {
                            out.push(format!("tpb_{tpb}.ipt_{ipt}.vec_{vec}.unroll_{unroll}"));
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn the_spaces_are_kernel_tuner_s() {
        assert_eq!(sgemm_labels().len(), 64);
        assert_eq!(reduce_labels().len(), 128);
        assert_eq!(
            SGEMM_PARAMS,
            [
                ("bm", "64"),
                ("bn", "64"),
                ("bk", "16"),
                ("tm", "4"),
                ("tn", "4")
            ]
        );
        assert_eq!(
            PARTIAL_SUMS_PARAMS,
            [("tpb", "256"), ("ipt", "4"), ("vec", "4"), ("unroll", "1")]
        );
    }

    /// Whether every label of `labels`, and base, compiles (skipped without NVRTC).
    fn compiles(
        kernel: &Kernel,
        params: &'static [(&'static str, &'static str)],
        labels: Vec<String>,
        extra: &[(&str, &str)],
    ) {
        for label in std::iter::once("base".to_string()).chain(labels) {
            match kernel.compiles_for(params, &label, extra, 90) {
                Ok(true) => {}
                Ok(false) => return skipped("NVRTC is not installed"),
                Err(e) => panic!("{label}: {e}"),
            }
        }
    }

    #[test]
    fn the_kernels_are_the_ones_kernel_tuner_compiles() {
        // kt_tune.py compiles the examples' files (build-gpu.sh's kt part copies them).
        let sgemm = include_str!("../../sgemm-cuda/src/sgemm.cu");
        let reduce = include_str!("../../reduce-cuda/src/reduce.cu");
        assert_eq!(include_str!("sgemm.cu"), sgemm);
        assert_eq!(include_str!("reduce.cu"), reduce);
    }

    #[test]
    fn every_sgemm_variant_compiles() {
        compiles(&SGEMM, SGEMM_PARAMS, sgemm_labels(), &[]);
    }

    #[test]
    fn every_partial_sums_variant_compiles() {
        compiles(
            &PARTIAL_SUMS,
            PARTIAL_SUMS_PARAMS,
            reduce_labels(),
            &[VALUE_T],
        );
    }

    #[test]
    fn the_inputs_are_deterministic_and_in_range() {
        let a = eighths(1 << 12, 1);
        assert_eq!(a, eighths(1 << 12, 1));
        assert_ne!(a, eighths(1 << 12, 2));
        assert!(a
            .iter()
            .all(|&v| (0.125..=1.0).contains(&v) && (v * 8.0).fract() == 0.0));
        // Each of the eight values turns up.
        for k in 1..=8 {
            assert!(a.contains(&(k as f32 / 8.0)), "{k}/8");
        }
        let (x, sum) = small_integers(1 << 16, 3);
        assert!(x
            .iter()
            .all(|&v| (-4.0..=4.0).contains(&v) && v.fract() == 0.0));
        assert_eq!(sum, x.iter().map(|&v| v as i64).sum::<i64>());
        assert_eq!(small_integers(1 << 16, 3), (x, sum));
        assert_eq!(small_integers(0, 3), (Vec::new(), 0));
    }

    /// The host's product of `a` and `b` in `f32`, in the kernel's order along k.
    fn host_product(a: &[f32], b: &[f32], n: usize) -> Vec<f32> {
        let mut c = vec![0.0f32; n * n];
        for i in 0..n {
            for k in 0..n {
                let x = a[i * n + k];
                for j in 0..n {
                    c[i * n + j] += x * b[k * n + j];
                }
            }
        }
        c
    }

    #[test]
    fn products_of_eighths_are_exact_in_any_order() {
        let n = 128;
        let (a, b) = (eighths(n * n, 1), eighths(n * n, 2));
        let c = host_product(&a, &b, n);
        for i in (0..n).step_by(7) {
            for j in (0..n).step_by(5) {
                // The reverse order along k, in f64: the same value.
                let exact: f64 = (0..n)
                    .rev()
                    .map(|k| f64::from(a[i * n + k]) * f64::from(b[k * n + j]))
                    .sum();
                assert_eq!(f64::from(c[i * n + j]), exact, "C[{i}][{j}]");
            }
        }
    }

    #[test]
    fn the_partials_check_finds_what_is_wrong() {
        assert_eq!(check_partials(&[3.0, -1.0, 2.0, f32::NAN], 3, 4), Ok(()));
        assert!(check_partials(&[3.0, -1.0, 2.0], 3, 5).is_err());
        assert!(check_partials(&[3.0, f32::NAN, 2.0], 3, 4).is_err());
        assert!(check_partials(&[3.0, 0.5, 2.0], 3, 4).is_err());
        assert!(check_partials(&[3.0], 2, 3).is_err());
        // Partials past `blocks` are not read.
        assert_eq!(check_partials(&[7.0, f32::NAN], 1, 7), Ok(()));
    }

    /// On a GPU (skipped without one): base's product is the host's, and base's partial sums
    /// add up to the exact sum.
    #[test]
    fn on_a_gpu_base_is_right() {
        use gputune_runtime::cudarc::driver::{sys, CudaContext};
        // SAFETY: only tries to load the driver library; nothing is called.
        if !unsafe { sys::is_culib_present() } {
            return skipped("needs a CUDA driver, which is not installed");
        }
        let context = match CudaContext::new(0) {
            Ok(context) => context,
            Err(e) => return skipped(&format!("no usable device: {e}")),
        };
        let stream = context.default_stream();
        let n = 256;
        let (a, b) = (eighths(n * n, 1), eighths(n * n, 2));
        let (da, db) = (
            stream.clone_htod(&a).expect("a"),
            stream.clone_htod(&b).expect("b"),
        );
        let mut dc = stream.alloc_zeros::<f32>(n * n).expect("c");
        sgemm(&stream, (&da, &db), &mut dc, n).expect("sgemm");
        assert_eq!(
            stream.clone_dtoh(&dc).expect("c back"),
            host_product(&a, &b, n)
        );
        assert!(sgemm(&stream, (&da, &db), &mut dc, 100).is_err());

        let (x, exact) = small_integers((1 << 20) + 3, 4);
        let dx = stream.clone_htod(&x).expect("x");
        let mut partials = stream
            .alloc_zeros::<f32>(max_partials(&context).expect("max partials"))
            .expect("partials");
        let blocks = partial_sums(&stream, &dx, &mut partials).expect("partial sums");
        let got = stream.clone_dtoh(&partials).expect("partials back");
        assert_eq!(check_partials(&got, blocks, exact), Ok(()));
        let mut short = stream.alloc_zeros::<f32>(1).expect("short");
        assert!(partial_sums(&stream, &dx, &mut short).is_err());
    }
}
