//! A device-wide sum in two passes, tuned by gputune on the kernel handle
//! (`gputune_runtime::kernel`): [`sum`] enqueues `partial_sums` (one partial sum per block,
//! over a grid sized to the device) and `final_sum` (one block adds the partials), both from
//! `reduce.cu`, compiled by NVRTC with the element type and the variant's parameters as `-D`
//! defines; every variant of a bench process compiles in the background from the first call
//! on.
//!
//! [`input`] makes test data whose sum is exact in `f32` whatever the order of the additions
//! (see [`input_value`]), so that every variant can be verified exactly.

use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::cudarc::driver::sys::CUdevice_attribute::{
    CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR as BLOCKS_PER_SM,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT as SMS,
};
use gputune_runtime::cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use gputune_runtime::kernel::{CudaType, Kernel};
use gputune_runtime::verify::DeviceElement;
use gputune_runtime::BoxError;

/// The kernels' CUDA C++ source.
pub const SOURCE: &str = include_str!("reduce.cu");

/// Both kernels of `reduce.cu`: each handle compiles the source with both names, so the two
/// share one module (one compilation per variant).
const KERNELS: &[&str] = &["partial_sums", "final_sum"];
static PARTIAL_SUMS: Kernel = Kernel::new(SOURCE, "partial_sums").module_names(KERNELS);
static FINAL_SUM: Kernel = Kernel::new(SOURCE, "final_sum").module_names(KERNELS);
/// The input maker of `input.cu`: not tuned, compiled once per element type.
static FILL_INPUT: Kernel = Kernel::new(include_str!("input.cu"), "fill_input");

/// Threads per block of the input maker.
const FILL_TPB: u32 = 256;

/// An element type the kernels are compiled for (`f32`, `f64`): one that holds the test
/// data's small integers exactly and whose outputs verify on the GPU.
pub trait Element:
    CudaType + DeviceElement + ValidAsZeroBits + Default + From<i8> + Into<f64>
{
}

impl<T: CudaType + DeviceElement + ValidAsZeroBits + Default + From<i8> + Into<f64>> Element for T {}

/// `out[0] = x[0] + … + x[n-1]`, enqueued on `stream` as two launches; `partials` holds
/// the per-block sums in between and must have at least [`max_partials`] elements (or the
/// variant's [`grid`]). No host synchronisation, no allocation.
///
/// Tuned over block size `tpb`, vector loads per thread per tile `ipt`, vector width in
/// elements `vec`, and tiles per loop trip `unroll` (see `reduce.cu`): a thread issues
/// `ipt × unroll` loads of `vec` elements per loop trip before adding them. `require` keeps
/// the points that load `ipt × vec × unroll ≤ 32` elements per thread per trip: 32 `f32`
/// are 128 bytes, and with 2048 resident threads an SM then has up to 256 KiB of loads in
/// flight, several times what hides the latency of HBM at full bandwidth (about 40 KiB per
/// SM on an H200: 4.8 TB/s × ~1 µs / 132 SMs); more would only cost registers and
/// occupancy. That keeps 32 of the 36 (ipt, vec, unroll) points for each of 4 block sizes:
/// 128 variants. Base is 256 threads, 4 loads of 4 elements (16 bytes for `f32`), 1 tile per
/// trip.
#[tune(
    tpb = pow2(7..=10),
    ipt = [1, 2, 4, 8],
    vec = [1, 2, 4],
    unroll = [1, 2, 4],
    require(ipt * vec * unroll <= 32),
    base(tpb = 256, ipt = 4, vec = 4, unroll = 1)
)]
pub fn sum<T: Element>(
    stream: &Arc<CudaStream>,
    x: &CudaSlice<T>,
    partials: &mut CudaSlice<T>,
    out: &mut CudaSlice<T>,
) -> Result<(), BoxError> {
    let value_t = [("VALUE_T", T::CUDA_NAME)];
    let (first, second) = (
        PARTIAL_SUMS.get(TUNED, stream, &value_t)?,
        FINAL_SUM.get(TUNED, stream, &value_t)?,
    );
    let block = |blocks| LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (TPB as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    // Both kernels' limits before either launches: a block they cannot take is `invalid`.
    first.check(block(1))?;
    let last = second.check(block(1))?;
    // The blocks the device holds at once, from the occupancy calculator rather than a fixed
    // guess per SM: it accounts for this variant's registers, which vary over the space.
    stream.context().bind_to_thread()?;
    let function = first.function();
    let per_sm = function.occupancy_max_active_blocks_per_multiprocessor(TPB as u32, 0, None)?;
    let resident = per_sm.saturating_mul(u32::try_from(stream.context().attribute(SMS)?)?);
    let blocks = grid(x.len() as u64, (TPB * IPT * VEC) as u64, resident);
    if partials.len() < blocks as usize || out.is_empty() {
        let have = (partials.len(), out.len());
        return Err(format!("{have:?} elements for {blocks} partials and the sum").into());
    }
    let n = x.len() as u64;
    let mut launch = stream.launch_builder(first.function());
    launch.arg(x).arg(&mut *partials).arg(&n);
    // SAFETY: the arguments match `partial_sums(const VALUE_T*, VALUE_T*, unsigned long
    // long)` in reduce.cu; it reads x[0..n) and writes partials[0..blocks), which `partials`
    // holds (checked above).
    unsafe { launch.launch(block(blocks)) }?;
    let mut launch = stream.launch_builder(second.function());
    launch.arg(&*partials).arg(out).arg(&blocks);
    // SAFETY: the arguments match `final_sum(const VALUE_T*, VALUE_T*, unsigned)`; it reads
    // partials[0..blocks), written by the first pass on the same stream, and writes out[0],
    // which exists (checked above).
    unsafe { launch.launch(last) }?;
    Ok(())
}

/// The most partial sums any variant of [`sum`] writes on `context`'s device: its SM count
/// times the most blocks an SM can hold. Allocate `partials` this large once for all variants.
pub fn max_partials(context: &CudaContext) -> Result<usize, BoxError> {
    let (sms, per_sm) = (context.attribute(SMS)?, context.attribute(BLOCKS_PER_SM)?);
    Ok(usize::try_from(sms)? * usize::try_from(per_sm)?)
}

/// Blocks of the first pass for `n` elements: one per tile of `tile` elements (at least one),
/// but no more than `resident` (the blocks the device holds at once). A grid sized to the
/// device rather than to `n` keeps every block busy over many tiles, with a fixed, small
/// number of partials for the second pass.
pub fn grid(n: u64, tile: u64, resident: u32) -> u32 {
    let tiles = n.div_ceil(tile.max(1)).max(1);
    u32::try_from(tiles)
        .unwrap_or(u32::MAX)
        .min(resident.max(1))
}

/// Input element `i`: one of ±1, ±2, ±3, ±4 (never 0), picked by the top three bits of
/// splitmix64's output for `i` (a bijection of `u64` whose every output bit depends on every
/// input bit, so the values it picks look independent of any pattern of indices).
///
/// Why every variant's sum is exact in `f32`, in any order it adds: every value is an
/// integer, so each partial sum a reduction forms is the exact integer sum of the elements it
/// covers unless some intermediate exceeds 2^24 in magnitude, past which `f32` no longer holds
/// every integer. The sets of indices a reduction sums (a thread's strided loads, a warp's,
/// a block's, all of them) are fixed by the launch shape, independently of the values; over
/// such a set of m elements the hashed values are a random walk of independent steps of mean
/// 0 and magnitude at most 4, so by Hoeffding P(|sum| ≥ 2^24) ≤ 2·exp(−2^48 / (32 m)), which
/// for m ≤ 2^28 is exp(−32768): no sum of any variant comes near 2^24 (a typical one is
/// 2.7·√m ≈ 45 000 at m = 2^28). In `f64` the bound is trivial: |sum| ≤ 4 m < 2^53. So all
/// variants compute the same exact integer, the host's `i64` sum, and verification can
/// demand equality.
pub fn input_value(i: u64) -> i8 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    let h = z ^ (z >> 31);
    // Magnitude from bits 63–62, sign from bit 61.
    ((h >> 62) as i8 + 1) * (1 - 2 * ((h >> 61) & 1) as i8)
}

/// Fills `x` with the input ([`input_value`] of every index, as `T`) on the device, enqueued
/// on `stream`: a gigabyte in about a millisecond, where the host's cores take a large part of
/// a search's setup to make and copy it. [`input_sum`] is its exact sum.
pub fn fill_input<T: Element>(
    stream: &Arc<CudaStream>,
    x: &mut CudaSlice<T>,
) -> Result<(), BoxError> {
    if x.is_empty() {
        return Ok(());
    }
    let kernel = FILL_INPUT.fixed(stream, &[("VALUE_T", T::CUDA_NAME)])?;
    let config = kernel.grid_stride(x.len(), FILL_TPB)?;
    let n = x.len() as u64;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(x).arg(&n);
    // SAFETY: the arguments match fill_input(VALUE_T*, unsigned long long) with VALUE_T the
    // CUDA name of T; it writes x[0..n), which the slice holds.
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// The exact sum of the first `n` input elements ([`input_value`]), on all cores, without
/// making them.
pub fn input_sum(n: usize) -> i64 {
    let cores = std::thread::available_parallelism().map_or(1, |t| t.get()) as u64;
    let n = n as u64;
    let chunk = n.div_ceil(cores).max(1);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..n)
            .step_by(usize::try_from(chunk).unwrap_or(usize::MAX))
            .map(|start| {
                s.spawn(move || {
                    (start..(start + chunk).min(n))
                        .map(|i| i64::from(input_value(i)))
                        .sum::<i64>()
                })
            })
            .collect();
        // A worker adds integers: it cannot panic, and if it somehow did, re-raising is the
        // honest answer.
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .sum()
    })
}

/// The `n` input elements ([`input_value`]) and their exact sum, made on all cores.
pub fn input<T: Element>(n: usize) -> (Vec<T>, i64) {
    let mut x = vec![T::default(); n];
    let cores = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = n.div_ceil(cores).max(1);
    let total = std::thread::scope(|s| {
        let workers: Vec<_> = (0u64..)
            .step_by(chunk)
            .zip(x.chunks_mut(chunk))
            .map(|(start, part)| {
                s.spawn(move || {
                    let mut sum = 0i64;
                    for (v, i) in part.iter_mut().zip(start..) {
                        let value = input_value(i);
                        *v = T::from(value);
                        sum += i64::from(value);
                    }
                    sum
                })
            })
            .collect();
        // A worker only writes its own chunk and adds integers: it cannot panic, and if it
        // somehow did, re-raising is the honest answer.
        let join = |w: std::thread::ScopedJoinHandle<'_, i64>| w.join();
        let sums = workers.into_iter().map(join);
        sums.map(|r| r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .sum()
    });
    (x, total)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_sum_without_the_input_is_the_input_s_sum() {
        for n in [0, 1, 7, 1000, 123_457] {
            assert_eq!(input_sum(n), input::<f64>(n).1, "n = {n}");
        }
    }

    #[test]
    fn the_device_s_input_maker_compiles_for_both_types_where_nvrtc_is_installed() {
        for value_t in ["float", "double"] {
            match FILL_INPUT.compiles_for(&[], "base", &[("VALUE_T", value_t)], 90) {
                Ok(true) => {}
                Ok(false) => {
                    eprintln!("skipped: needs NVRTC (the CUDA toolkit), which is not loaded");
                    return;
                }
                Err(e) => panic!("fill_input does not compile for {value_t}: {e}"),
            }
        }
    }

    use super::*;
    use gputune_runtime::skipped;
    use gputune_runtime::tuned::Variant;

    /// The build script's manifest of this crate's tuned functions.
    fn manifest() -> serde_json::Value {
        serde_json::from_str(include_str!(concat!(
            env!("OUT_DIR"),
            "/gputune/manifest.json"
        )))
        .expect("the manifest is JSON")
    }

    /// Every label of the space of `sum`, as the build script enumerated it.
    fn labels() -> Vec<String> {
        let m = manifest();
        let f = &m["functions"][0];
        assert_eq!(f["name"], "sum");
        f["labels"]
            .as_array()
            .expect("labels")
            .iter()
            .map(|l| l.as_str().expect("a label").to_string())
            .collect()
    }

    /// `(tpb, ipt, vec, unroll)` of a label.
    fn point(label: &str) -> Result<[u32; 4], gputune_runtime::Error> {
        let v = Variant::parse(label, SUM_PARAMS)?;
        Ok([
            v.get("tpb")?,
            v.get("ipt")?,
            v.get("vec")?,
            v.get("unroll")?,
        ])
    }

    /// The defines of `label` for the CUDA type `value_t`, as `Kernel::get` passes them.
    fn defines(label: &str, value_t: &str) -> Vec<(String, String)> {
        PARTIAL_SUMS
            .label_defines(SUM_PARAMS, label, &[("VALUE_T", value_t)])
            .expect("a label of the space")
    }

    /// `defines` in the form NVRTC's helpers take.
    fn borrowed(defines: &[(String, String)]) -> Vec<(&str, String)> {
        defines
            .iter()
            .map(|(n, v)| (n.as_str(), v.clone()))
            .collect()
    }

    #[test]
    fn the_space_is_128_points_that_keep_32_elements_in_flight_at_most() {
        assert_eq!(
            SUM_PARAMS,
            [("tpb", "256"), ("ipt", "4"), ("vec", "4"), ("unroll", "1")]
        );
        let base = point("base").expect("base");
        assert_eq!(base, [256, 4, 4, 1]);
        let labels = labels();
        assert_eq!(labels.len(), 128);
        assert_eq!(manifest()["functions"][0]["space_size"], 128);
        let points: Vec<[u32; 4]> = labels
            .iter()
            .map(|l| point(l).expect("a label of the space"))
            .collect();
        assert!(points.contains(&base), "base is a point of the space");
        // Exactly the points of the full 4 × 4 × 3 × 3 grid that `require` keeps.
        let mut expected = 0;
        for tpb in [128, 256, 512, 1024] {
            for ipt in [1, 2, 4, 8] {
                for vec in [1, 2, 4] {
                    for unroll in [1, 2, 4] {
                        let p = [tpb, ipt, vec, unroll];
                        let kept = ipt * vec * unroll <= 32;
                        assert_eq!(points.contains(&p), kept, "{p:?}");
                        expected += usize::from(kept);
                    }
                }
            }
        }
        assert_eq!(expected, 128);
        assert_eq!(
            point("tpb_1024.ipt_8.vec_4.unroll_1").expect("a label"),
            [1024, 8, 4, 1]
        );
        assert!(point("tpb_1024.ipt_8").is_err());
    }

    #[test]
    fn the_defines_spell_every_parameter_and_never_t() {
        let d = defines("tpb_512.ipt_2.vec_4.unroll_2", "double");
        let pairs: Vec<(&str, &str)> = d.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        // The order of the defines before the kernel handle: the kernel cache's keys stay.
        assert_eq!(
            pairs,
            [
                ("VALUE_T", "double"),
                ("TPB", "512"),
                ("IPT", "2"),
                ("VEC", "4"),
                ("UNROLL", "2"),
            ]
        );
        // Both kernels come from one module: the same defines, so one compilation.
        let final_sum = FINAL_SUM.label_defines(
            SUM_PARAMS,
            "tpb_512.ipt_2.vec_4.unroll_2",
            &[("VALUE_T", "double")],
        );
        assert_eq!(final_sum.ok().as_ref(), Some(&d));
        // A define named T would rewrite NVRTC's built-in headers.
        assert!(d.iter().all(|(name, _)| name != "T"));
        for (name, _) in &d {
            assert!(SOURCE.contains(&format!("defined({name})")), "{name}");
        }
    }

    #[test]
    fn the_grid_is_sized_to_the_device_not_to_n() {
        // Needs no device: only the arithmetic of the launch shape.
        let resident = 132 * 8;
        // Small inputs: one block per tile, at least one.
        assert_eq!(grid(0, 4096, resident), 1);
        assert_eq!(grid(1, 4096, resident), 1);
        assert_eq!(grid(4096, 4096, resident), 1);
        assert_eq!(grid(4097, 4096, resident), 2);
        assert_eq!(grid(1 << 16, 4096, resident), 16);
        // Large inputs: as many blocks as fit on the device, each looping over many tiles.
        assert_eq!(grid(1 << 28, 4096, resident), resident);
        assert_eq!(grid(u64::MAX, 1, resident), resident);
        assert_eq!(grid(1 << 20, 128, 0), 1);
    }

    #[test]
    fn the_input_is_small_nonzero_balanced_and_its_sum_exact() {
        let n = 1 << 20;
        let (x, total) = input::<f32>(n);
        assert_eq!(x.len(), n);
        let mut direct = 0i64;
        let mut counts = [0usize; 9];
        let (mut prefix, mut max_prefix) = (0i64, 0i64);
        for (i, &v) in x.iter().enumerate() {
            let value = input_value(i as u64);
            assert!(value != 0 && (-4..=4).contains(&value), "x[{i}] = {value}");
            assert_eq!(v, f32::from(value), "x[{i}]");
            counts[(value + 4) as usize] += 1;
            direct += i64::from(value);
            prefix += i64::from(value);
            max_prefix = max_prefix.max(prefix.abs());
        }
        assert_eq!(total, direct);
        // Each of the 8 values about n/8 times (±3 %), 0 never.
        assert_eq!(counts[4], 0);
        for (c, &count) in counts.iter().enumerate().filter(|(c, _)| *c != 4) {
            assert!(
                count.abs_diff(n / 8) < n / 8 * 3 / 100,
                "{} {count}",
                c as i64 - 4
            );
        }
        // Prefix sums (a sequential sum's intermediates) stay a random walk: far below 2^24.
        assert!(max_prefix < 1 << 16, "max |prefix| = {max_prefix}");
        // So do strided sums, the shape of one thread's share of a grid-stride loop.
        for stride in [32usize, 4096, 132 * 256] {
            for r in [0, 1, stride - 1] {
                let s: i64 = (r..n)
                    .step_by(stride)
                    .map(|i| i64::from(input_value(i as u64)))
                    .sum();
                assert!(s.abs() < 1 << 14, "stride {stride} offset {r}: {s}");
            }
        }
        // The f64 input is the same values, and chunking does not change the sum.
        let (y, total64) = input::<f64>(n);
        assert_eq!(total64, total);
        assert!(x.iter().zip(&y).all(|(&a, &b)| f64::from(a) == b));
        for small in [0, 1, 7, 1000] {
            let (_, t) = input::<f32>(small);
            let direct: i64 = (0..small as u64).map(|i| i64::from(input_value(i))).sum();
            assert_eq!(t, direct, "n = {small}");
        }
    }

    #[test]
    fn every_point_compiles_for_sm_90_in_both_precisions() {
        // NVRTC needs no GPU, but it is part of the CUDA toolkit: compiles_for says
        // Ok(false) where it is missing, and the test checks nothing more there.
        let mut compiled = 0;
        for label in labels() {
            for defines in [defines(&label, "float"), defines(&label, "double")] {
                match gputune_runtime::backend::cuda::compiles_for(SOURCE, &borrowed(&defines), 90)
                {
                    Ok(true) => compiled += 1,
                    Ok(false) => {
                        return skipped("needs NVRTC (the CUDA toolkit), which is not installed")
                    }
                    Err(e) => panic!("{label} {defines:?} does not compile: {e}"),
                }
            }
        }
        assert_eq!(compiled, 256);
    }

    #[test]
    fn the_loads_are_vectors_and_the_block_reduction_shuffles() {
        use gputune_runtime::cudarc::nvrtc::{self, CompileOptions};
        // SAFETY: only tries to dlopen the candidate library names; nothing is called.
        if !unsafe { nvrtc::sys::is_culib_present() } {
            return skipped("needs NVRTC (the CUDA toolkit), which could not be loaded");
        }
        let ptx = |vec: u32, unroll: u32, f64: bool| {
            let label = format!("tpb_256.ipt_4.vec_{vec}.unroll_{unroll}");
            let options = defines(&label, if f64 { "double" } else { "float" })
                .iter()
                .map(|(name, value)| format!("-D{name}={value}"))
                .collect();
            nvrtc::compile_ptx_with_opts(
                SOURCE,
                CompileOptions {
                    arch: Some("compute_90"),
                    options,
                    ..Default::default()
                },
            )
            .expect("compiles")
            .to_src()
        };
        // (vec, precision, the widest load of the tile loop): 4 doubles are two 16-byte loads.
        for (vec, f64, load) in [
            (4, false, "ld.global.nc.v4.f32"),
            (2, false, "ld.global.nc.v2.f32"),
            (1, false, "ld.global.nc.f32"),
            (4, true, "ld.global.nc.v2.f64"),
            (2, true, "ld.global.nc.v2.f64"),
            (1, true, "ld.global.nc.f64"),
        ] {
            for unroll in [1, 4] {
                let text = ptx(vec, unroll, f64);
                // The tile loop's loads: ipt × unroll of them, plus the remainder loop's ipt.
                let loads = text.matches(load).count() as u32;
                let per_vector = if vec == 4 && f64 { 2 } else { 1 };
                let expected = 4 * per_vector * (unroll + u32::from(unroll > 1));
                assert!(loads >= expected, "{vec} {f64} {unroll}: {loads} × {load}");
                assert!(text.contains("shfl.sync.down"), "{vec} {f64}");
                assert!(text.contains(".maxntid 256, 1, 1"));
            }
        }
    }
}
