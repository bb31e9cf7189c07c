//! A memory-bound CUDA kernel, `y = a·x`, tuned by gputune on the kernel handle
//! (`gputune_runtime::kernel`): [`scale`] is compiled by NVRTC with its tuning parameters
//! (items per thread, threads per block) and the element type as `-D` defines, every variant
//! of a bench process compiling in the background from the first call on.
//!
//! [`fill_input`] makes the bench's input and its answer on the device (a 2^28-element `f64`
//! input is 2 GiB, which the host's cores took seconds to fill and copy over); [`input_value`]
//! is their specification on the host, chosen so that `a·x` is exact in both precisions.

use std::fmt::Debug;
use std::ops::Range;
use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::cudarc::driver::{
    CudaSlice, CudaStream, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use gputune_runtime::kernel::{CudaType, Kernel};
use gputune_runtime::verify::DeviceElement;
use gputune_runtime::BoxError;

/// The kernel's CUDA C++ source.
pub const SOURCE: &str = include_str!("scale.cu");

static SCALE: Kernel = Kernel::new(SOURCE, "scale");
/// The input maker of `input.cu`: not tuned, compiled once per element type.
static FILL_INPUT: Kernel = Kernel::new(include_str!("input.cu"), "fill_input");

/// Threads per block of the input maker.
const FILL_TPB: u32 = 256;

/// The factor of the bench's `y = A·x`: with it every `A·x` of the input is exact.
pub const A: f32 = 3.0;

/// An element type the kernel is compiled for (`f32`, `f64`): one whose outputs verify on
/// the GPU and that holds the test data (halves of small integers) exactly.
pub trait Element:
    CudaType + DeviceElement + ValidAsZeroBits + Default + From<f32> + Into<f64> + PartialEq + Debug
{
}

impl<T> Element for T where
    T: CudaType
        + DeviceElement
        + ValidAsZeroBits
        + Default
        + From<f32>
        + Into<f64>
        + PartialEq
        + Debug
{
}

/// `y[i] = a·x[i]` for the first `min(x.len(), y.len())` elements, enqueued on `stream`.
///
/// Tuned: 5 items-per-thread values × 31 block sizes (64 to 1024 in steps of 32) = 155
/// variants; base is 4 items per thread in blocks of 256 threads. The bench's `Elements` axis
/// is the number of elements a call scales (`size(…)`), so `cargo gputune apply --per-size`
/// can give each size range its own winner: a grid that fills the GPU at 2^16 elements is not
/// the one that streams 2^28 from HBM best.
#[tune(
    ipt = [1, 2, 4, 8, 16],
    tpb = (64..=1024).step_by(32),
    base(ipt = 4, tpb = 256),
    size(Elements = x.len().min(y.len()))
)]
pub fn scale<T: Element>(
    stream: &Arc<CudaStream>,
    x: &CudaSlice<T>,
    y: &mut CudaSlice<T>,
    a: T,
) -> Result<(), BoxError> {
    let n = x.len().min(y.len());
    let kernel = SCALE.get(TUNED, stream, &[("VALUE_T", T::CUDA_NAME)])?;
    let config = kernel.check(LaunchConfig {
        grid_dim: (u32::try_from(n.div_ceil(IPT * TPB).max(1))?, 1, 1),
        block_dim: (TPB as u32, 1, 1),
        shared_mem_bytes: 0,
    })?;
    let n = n as u64;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(x).arg(y).arg(&a).arg(&n);
    // SAFETY: the arguments match `scale(const T*, T*, T, unsigned long long)` in scale.cu,
    // and the kernel touches only indices below n, which both slices hold.
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// Input element `i`: non-zero and index-dependent (never time or verify on zeros), and a
/// half of an integer up to 1021, so that `A · x` (and any factor up to 2^13) is exact in
/// `f32` and `f64`. `input.cu` computes the same values on the device.
pub fn input_value(i: u64) -> f32 {
    ((i % 1021) as f32 + 1.0) * 0.5
}

/// Element `i` of what [`fill_input`] writes with `factor`: `factor · input_value(i)`, rounded
/// once to `f32` (exact for the factors 1 and [`A`]), as `T`.
pub fn input_at<T: Element>(i: u64, factor: f32) -> T {
    T::from(factor * input_value(i))
}

/// Fills `x` with `factor · input_value(i)` for every index `i` ([`input_at`]) on the device,
/// enqueued on `stream`: a gigabyte in about a millisecond. `factor` 1 makes the input,
/// `factor` [`A`] the exact answer of `scale` with `A`; the device computes the product in
/// `T`, so the values are the host's only where it is exact in `f32` (factors that are small
/// integers, as these two are).
pub fn fill_input<T: Element>(
    stream: &Arc<CudaStream>,
    x: &mut CudaSlice<T>,
    factor: f32,
) -> Result<(), BoxError> {
    if x.is_empty() {
        return Ok(());
    }
    let kernel = FILL_INPUT.fixed(stream, &[("VALUE_T", T::CUDA_NAME)])?;
    let config = kernel.grid_stride(x.len(), FILL_TPB)?;
    let (n, factor) = (x.len() as u64, T::from(factor));
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(x).arg(&n).arg(&factor);
    // SAFETY: the arguments match fill_input(VALUE_T*, unsigned long long, VALUE_T) with
    // VALUE_T the CUDA name of T; it writes x[0..n), which the slice holds.
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// Elements per chunk [`check_input`] copies back: one period of [`input_value`].
const CHECK_CHUNK: usize = 1021;

/// Chunks [`check_input`] copies back, spread evenly from the first element to the last.
const CHECK_CHUNKS: usize = 64;

/// The ranges of `n` elements that [`check_input`] compares: `CHECK_CHUNKS` chunks of
/// `CHECK_CHUNK` elements (fewer where `n` is small), the first at 0 and the last ending at
/// `n`, spread evenly in between, none overlapping: about 65,000 elements whatever `n`.
pub fn check_ranges(n: usize) -> Vec<Range<usize>> {
    if n <= CHECK_CHUNK * CHECK_CHUNKS {
        return if n == 0 {
            Vec::new()
        } else {
            vec![Range { start: 0, end: n }]
        };
    }
    let last = n - CHECK_CHUNK;
    (0..CHECK_CHUNKS)
        .map(|k| {
            let start = last / (CHECK_CHUNKS - 1) * k;
            let start = if k == CHECK_CHUNKS - 1 { last } else { start };
            start..start + CHECK_CHUNK
        })
        .collect()
}

/// Whether the device's `x` holds what [`fill_input`] with `factor` writes, at the elements of
/// [`check_ranges`] (copied back): a check that the device made the host's values, so that an
/// answer made on the device is still the host's specification (and never, say, the zeros of
/// a maker that did not run). `Err` names the first wrong element.
pub fn check_input<T: Element>(x: &CudaSlice<T>, factor: f32) -> Result<(), String> {
    for range in check_ranges(x.len()) {
        let got = x
            .stream()
            .clone_dtoh(&x.slice(range.clone()))
            .map_err(|e| e.to_string())?;
        for (i, v) in range.zip(got) {
            let want = input_at::<T>(i as u64, factor);
            if v != want {
                return Err(format!(
                    "element {i} is {v:?}, not {want:?} (factor {factor})"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use gputune_runtime::skipped;

    #[test]
    fn the_input_and_the_answer_are_exact_halves_of_small_integers() {
        for i in (0..5000u64).chain([1 << 28, (1 << 28) - 1, u64::MAX]) {
            let x = input_value(i);
            // The formula: ((i mod 1021) + 1) / 2, never 0.
            assert_eq!(f64::from(x), ((i % 1021) + 1) as f64 / 2.0, "{i}");
            // A·x is exact in f32, so the f32 answer is the f64 one.
            let exact = 3.0 * f64::from(x);
            assert_eq!(f64::from(input_at::<f32>(i, A)), exact, "{i}");
            assert_eq!(input_at::<f64>(i, A), exact, "{i}");
            assert_eq!(input_at::<f64>(i, 1.0), f64::from(x), "{i}");
        }
    }

    #[test]
    fn the_checked_chunks_span_the_input_without_overlapping() {
        assert!(check_ranges(0).is_empty());
        assert_eq!(check_ranges(1), vec![Range { start: 0, end: 1 }]);
        assert_eq!(
            check_ranges(65_000),
            vec![Range {
                start: 0,
                end: 65_000
            }]
        );
        for n in [
            CHECK_CHUNK * CHECK_CHUNKS + 1,
            1 << 16,
            1 << 20,
            1 << 24,
            1 << 26,
            1 << 28,
        ] {
            let ranges = check_ranges(n);
            assert_eq!(ranges.len(), CHECK_CHUNKS, "{n}");
            assert_eq!(ranges[0].start, 0);
            assert_eq!(ranges[CHECK_CHUNKS - 1].end, n);
            assert!(ranges.iter().all(|r| r.len() == CHECK_CHUNK));
            assert!(ranges.windows(2).all(|w| w[0].end <= w[1].start), "{n}");
            // Spread over the whole input: no gap much wider than an even share.
            let widest = ranges.windows(2).map(|w| w[1].start - w[0].start).max();
            assert!(widest <= Some(n / (CHECK_CHUNKS - 1) + CHECK_CHUNK), "{n}");
        }
    }

    #[test]
    fn the_device_s_input_maker_compiles_for_both_types_where_nvrtc_is_installed() {
        for value_t in ["float", "double"] {
            match FILL_INPUT.compiles_for(&[], "base", &[("VALUE_T", value_t)], 90) {
                Ok(true) => {}
                Ok(false) => return skipped("needs NVRTC (the CUDA toolkit), which is not loaded"),
                Err(e) => panic!("fill_input does not compile for {value_t}: {e}"),
            }
        }
    }

    /// On a GPU (skipped without one): the device's input and answer are the host's, at every
    /// element of lengths that are not multiples of a block or of the period, and at the
    /// sampled chunks of a large one.
    #[test]
    fn on_a_gpu_the_device_makes_the_host_s_values() {
        use gputune_runtime::cudarc::driver::{sys, CudaContext};
        // SAFETY: only tries to dlopen the driver library; nothing is called.
        if !unsafe { sys::is_culib_present() } {
            return skipped("needs a CUDA driver, which is not installed");
        }
        let stream = match CudaContext::new(0) {
            Ok(context) => context.default_stream(),
            Err(e) => return skipped(&format!("no usable device: {e}")),
        };
        fn every<T: Element>(stream: &Arc<CudaStream>) {
            for n in [1, 255, 1021, 100_003] {
                for factor in [1.0, A] {
                    let mut x = stream.alloc_zeros::<T>(n).expect("alloc");
                    fill_input(stream, &mut x, factor).expect("fill_input");
                    let got = stream.clone_dtoh(&x).expect("copy back");
                    let want: Vec<T> = (0..n as u64).map(|i| input_at(i, factor)).collect();
                    assert!(got == want, "n = {n}, factor {factor}");
                    assert_eq!(check_input(&x, factor), Ok(()));
                }
            }
            let mut x = stream.alloc_zeros::<T>((1 << 24) + 3).expect("alloc");
            fill_input(stream, &mut x, A).expect("fill_input");
            assert_eq!(check_input(&x, A), Ok(()));
            assert!(check_input(&x, 1.0).is_err(), "the wrong factor is caught");
            let zeros = stream.alloc_zeros::<T>(1 << 20).expect("alloc");
            assert!(check_input(&zeros, 1.0).is_err(), "zeros are caught");
        }
        every::<f32>(&stream);
        every::<f64>(&stream);
    }

    #[test]
    fn the_parameters_are_the_issue_s_space_and_base_and_become_defines() {
        assert_eq!(SCALE_PARAMS, [("ipt", "4"), ("tpb", "256")]);
        let defines = SCALE
            .label_defines(SCALE_PARAMS, "ipt_16.tpb_1024", &[("VALUE_T", "double")])
            .expect("a label of the space");
        let pairs: Vec<(&str, &str)> = defines
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [("VALUE_T", "double"), ("IPT", "16"), ("TPB", "1024")]
        );
        assert!(SOURCE.contains("extern \"C\" __global__"));
    }
}
