//! A device-wide sum in two passes, tuned by gputune: [`sum`] enqueues `partial_sums` (one
//! partial sum per block, over a grid sized to the device) and `final_sum` (one block adds
//! the partials), both compiled by NVRTC from `reduce.cu` with the variant's parameters as
//! `-D` defines.
//!
//! Compilation goes through the runtime's kernel cache, like `gputune-example-scale-cuda`;
//! [`precompile`] starts compiling every variant a bench process will run in the background.
//! [`input`] makes test data whose sum is exact in `f32` whatever the order of the additions
//! (see [`input_value`]), so that every variant can be verified exactly.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gputune_macros::tune;
use gputune_runtime::backend::cuda::{check_launch, CudaHandles, Precompile};
use gputune_runtime::cudarc::driver::sys::CUdevice_attribute;
use gputune_runtime::cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};
use gputune_runtime::tuned::{self, Variant};
use gputune_runtime::verify::DeviceElement;
use gputune_runtime::BoxError;

/// The kernels' CUDA C++ source.
pub const SOURCE: &str = include_str!("reduce.cu");

/// An element type the kernels are compiled for (and whose outputs verify on the GPU).
pub trait Element:
    DeviceRepr + DeviceElement + ValidAsZeroBits + Copy + Default + Send + Sync + 'static
{
    /// The CUDA C++ type name.
    const CUDA_TYPE: &'static str;
    /// Converts a small integer (an input value), exactly.
    fn from_small(v: i8) -> Self;
    /// Converts to `f64` (for checking).
    fn to_f64(self) -> f64;
}

impl Element for f32 {
    const CUDA_TYPE: &'static str = "float";
    fn from_small(v: i8) -> Self {
        f32::from(v)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Element for f64 {
    const CUDA_TYPE: &'static str = "double";
    fn from_small(v: i8) -> Self {
        f64::from(v)
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// `out[0] = x[0] + … + x[n-1]`, enqueued on `stream` as two launches; `partials` holds
/// the per-block sums in between and must have at least [`max_partials`] elements (or the
/// variant's grid, [`Reduce::grid`]). No host synchronisation, no allocation.
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
    let params = Params {
        tpb: TPB as u32,
        ipt: IPT as u32,
        vec: VEC as u32,
        unroll: UNROLL as u32,
    };
    Reduce::get::<T>(stream, params)?.launch(stream, x, partials, out)
}

/// One point of the space of [`sum`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Params {
    /// Threads per block (of both kernels).
    pub tpb: u32,
    /// Vector loads per thread per tile.
    pub ipt: u32,
    /// Elements per vector load.
    pub vec: u32,
    /// Tiles a block takes per loop trip, their loads all issued before the adds.
    pub unroll: u32,
}

impl Params {
    /// The point a variant label names (`base`, or `tpb_….ipt_….vec_….unroll_…`).
    pub fn of_label(label: &str) -> Result<Params, gputune_runtime::Error> {
        let v = Variant::parse(label, SUM_PARAMS)?;
        Ok(Params {
            tpb: v.get("tpb")?,
            ipt: v.get("ipt")?,
            vec: v.get("vec")?,
            unroll: v.get("unroll")?,
        })
    }

    /// Elements of one tile: `tpb × ipt × vec`.
    pub fn tile(&self) -> u64 {
        u64::from(self.tpb) * u64::from(self.ipt) * u64::from(self.vec)
    }

    /// The defines that compile the kernels for `T` at this point: the one place that spells
    /// them, so that [`precompile`] fills exactly the cache entries [`sum`] reads.
    pub fn defines<T: Element>(&self) -> Vec<(&'static str, String)> {
        vec![
            ("VALUE_T", T::CUDA_TYPE.to_string()),
            ("TPB", self.tpb.to_string()),
            ("IPT", self.ipt.to_string()),
            ("VEC", self.vec.to_string()),
            ("UNROLL", self.unroll.to_string()),
        ]
    }
}

/// Starts compiling, in the background, the kernels for `T` of every variant of [`sum`]
/// this process was asked to run (`--variant`), base first (verification runs it in every
/// state), then in the order they run. `None` when no variant was requested: the production
/// choice is one module, compiled on first use.
pub fn precompile<T: Element>(cuda: &CudaHandles) -> Result<Option<Precompile>, BoxError> {
    let labels = tuned::to_prepare("sum");
    if labels.is_empty() {
        return Ok(None);
    }
    let sets = labels
        .iter()
        .map(|label| Ok(Params::of_label(label)?.defines::<T>()))
        .collect::<Result<Vec<_>, gputune_runtime::Error>>()?;
    Ok(Some(cuda.precompile(SOURCE, &sets)?))
}

/// The most partial sums any variant of [`sum`] writes on `context`'s device: its SM count
/// times the most blocks an SM can hold. Allocate `partials` this large once for all variants.
pub fn max_partials(context: &CudaContext) -> Result<usize, BoxError> {
    let sms = context.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let per_sm =
        context.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?;
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

/// Both kernels compiled for one element type and one parameter point, with the number of
/// blocks of `partial_sums` the device holds at once.
#[derive(Debug, Clone)]
pub struct Reduce {
    partial_sums: CudaFunction,
    final_sum: CudaFunction,
    params: Params,
    resident: u32,
}

impl Reduce {
    /// Compiles the kernels for `T` at `params` and reads how many blocks of `partial_sums`
    /// fit on the device. A point the kernels cannot be launched at is
    /// `gputune_runtime::Error::InvalidLaunch`, which a search records as `invalid`.
    pub fn compile<T: Element>(cuda: &CudaHandles, params: Params) -> Result<Reduce, BoxError> {
        let Params {
            tpb,
            ipt,
            vec,
            unroll,
        } = params;
        if tpb == 0 || ipt == 0 || vec == 0 || unroll == 0 {
            return Err(format!("every parameter must be positive: {params:?}").into());
        }
        let module = cuda.compile(SOURCE, &params.defines::<T>())?;
        let partial_sums = module.load_function("partial_sums")?;
        let final_sum = module.load_function("final_sum")?;
        let one_block = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (tpb, 1, 1),
            shared_mem_bytes: 0,
        };
        check_launch(&partial_sums, &one_block)?;
        check_launch(&final_sum, &one_block)?;
        // The occupancy calculator, not a fixed blocks-per-SM guess: it accounts for this
        // variant's registers and static shared memory, which vary over the space.
        cuda.context.bind_to_thread()?;
        let per_sm = partial_sums.occupancy_max_active_blocks_per_multiprocessor(tpb, 0, None)?;
        let sms = cuda
            .context
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let resident = per_sm.saturating_mul(u32::try_from(sms)?);
        if resident == 0 {
            return Err(gputune_runtime::Error::InvalidLaunch(format!(
                "no block of {tpb} threads of partial_sums fits on an SM at {params:?}"
            ))
            .into());
        }
        Ok(Reduce {
            partial_sums,
            final_sum,
            params,
            resident,
        })
    }

    /// [`Reduce::compile`] on `stream`'s context, once per context, type and point per
    /// process: `sum` runs inside timed loops, where even a cache lookup by source text
    /// would cost more than a launch on a small input.
    pub fn get<T: Element>(stream: &Arc<CudaStream>, params: Params) -> Result<Reduce, BoxError> {
        type Compiled = HashMap<(usize, &'static str, Params), Reduce>;
        static COMPILED: Mutex<Option<Compiled>> = Mutex::new(None);
        let key = (stream.context().cu_ctx() as usize, T::CUDA_TYPE, params);
        // A poisoned lock only means a thread panicked while inserting; the map is whole.
        let lock = || COMPILED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = lock().get_or_insert_with(HashMap::new).get(&key) {
            return Ok(r.clone());
        }
        let cuda = CudaHandles {
            context: stream.context().clone(),
            stream: stream.clone(),
        };
        let compiled = Reduce::compile::<T>(&cuda, params)?;
        lock()
            .get_or_insert_with(HashMap::new)
            .insert(key, compiled.clone());
        Ok(compiled)
    }

    /// Blocks of the first pass for `n` elements (see [`grid`]): also the number of partials.
    pub fn grid(&self, n: usize) -> u32 {
        grid(n as u64, self.params.tile(), self.resident)
    }

    /// Enqueues both passes on `stream`: `out[0]` becomes the sum of `x`.
    pub fn launch<T: Element>(
        &self,
        stream: &Arc<CudaStream>,
        x: &CudaSlice<T>,
        partials: &mut CudaSlice<T>,
        out: &mut CudaSlice<T>,
    ) -> Result<(), BoxError> {
        let n = x.len();
        let blocks = self.grid(n);
        if partials.len() < blocks as usize {
            return Err(format!(
                "partials holds {} elements and this variant writes {blocks}: allocate \
                 max_partials() of them",
                partials.len()
            )
            .into());
        }
        if out.is_empty() {
            return Err("out has no element to write the sum to".into());
        }
        let block = (self.params.tpb, 1, 1);
        let n64 = n as u64;
        let mut first = stream.launch_builder(&self.partial_sums);
        first.arg(x).arg(&mut *partials).arg(&n64);
        // SAFETY: the arguments match `partial_sums(const VALUE_T*, VALUE_T*, unsigned long
        // long)` in reduce.cu; it reads x[0..n) and writes partials[0..blocks), which
        // `partials` holds (checked above).
        unsafe {
            first.launch(LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: block,
                shared_mem_bytes: 0,
            })
        }?;
        let mut second = stream.launch_builder(&self.final_sum);
        second.arg(&*partials).arg(out).arg(&blocks);
        // SAFETY: the arguments match `final_sum(const VALUE_T*, VALUE_T*, unsigned)`; it
        // reads partials[0..blocks), written by the first pass on the same stream, and
        // writes out[0], which exists (checked above).
        unsafe {
            second.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: block,
                shared_mem_bytes: 0,
            })
        }?;
        Ok(())
    }
}

/// splitmix64's output for `i`: a bijection of `u64` whose every output bit depends on every
/// input bit, so the values it picks look independent of any pattern of indices.
pub fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Input element `i`: one of ±1, ±2, ±3, ±4 (never 0), picked by the top three bits of
/// [`mix`]`(i)`.
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
    let h = mix(i);
    let magnitude = (h >> 62) as i8 + 1;
    if (h >> 61) & 1 == 1 {
        -magnitude
    } else {
        magnitude
    }
}

/// The `n` input elements ([`input_value`]) and their exact sum, made on all cores.
pub fn input<T: Element>(n: usize) -> (Vec<T>, i64) {
    let mut x = vec![T::default(); n];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = n.div_ceil(threads).max(1);
    let total = std::thread::scope(|s| {
        let workers: Vec<_> = x
            .chunks_mut(chunk)
            .enumerate()
            .map(|(c, part)| {
                s.spawn(move || {
                    let start = (c * chunk) as u64;
                    let mut sum = 0i64;
                    for (i, v) in (start..).zip(part.iter_mut()) {
                        let value = input_value(i);
                        *v = T::from_small(value);
                        sum += i64::from(value);
                    }
                    sum
                })
            })
            .collect();
        workers
            .into_iter()
            // A worker only writes its own chunk and adds integers: it cannot panic, and if
            // it somehow did, re-raising is the honest answer.
            .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .sum()
    });
    (x, total)
}

#[cfg(test)]
mod tests {
    /// Says on stderr, past libtest's capture (so it shows without `--nocapture` too), that the
    /// running test checked nothing on this machine: a pass that returned early must not read as
    /// a check that passed.
    fn skipped(why: &str) {
        use std::io::Write;
        let test = std::thread::current().name().unwrap_or("test").to_owned();
        let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
    }
    use super::*;

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

    #[test]
    fn the_space_is_128_points_that_keep_32_elements_in_flight_at_most() {
        assert_eq!(
            SUM_PARAMS,
            [("tpb", "256"), ("ipt", "4"), ("vec", "4"), ("unroll", "1")]
        );
        let base = Params::of_label("base").expect("base");
        assert_eq!(
            base,
            Params {
                tpb: 256,
                ipt: 4,
                vec: 4,
                unroll: 1
            }
        );
        let labels = labels();
        assert_eq!(labels.len(), 128);
        assert_eq!(manifest()["functions"][0]["space_size"], 128);
        let points: Vec<Params> = labels
            .iter()
            .map(|l| Params::of_label(l).expect("a label of the space"))
            .collect();
        assert!(points.contains(&base), "base is a point of the space");
        // Exactly the points of the full 4 × 4 × 3 × 3 grid that `require` keeps.
        let mut expected = 0;
        for tpb in [128, 256, 512, 1024] {
            for ipt in [1, 2, 4, 8] {
                for vec in [1, 2, 4] {
                    for unroll in [1, 2, 4] {
                        let p = Params {
                            tpb,
                            ipt,
                            vec,
                            unroll,
                        };
                        let kept = ipt * vec * unroll <= 32;
                        assert_eq!(points.contains(&p), kept, "{p:?}");
                        expected += usize::from(kept);
                    }
                }
            }
        }
        assert_eq!(expected, 128);
        let p = Params::of_label("tpb_1024.ipt_8.vec_4.unroll_1").expect("a label");
        assert_eq!((p.tpb, p.ipt, p.vec, p.unroll), (1024, 8, 4, 1));
        assert!(Params::of_label("tpb_1024.ipt_8").is_err());
    }

    #[test]
    fn the_defines_spell_every_parameter_and_never_t() {
        let p = Params {
            tpb: 512,
            ipt: 2,
            vec: 4,
            unroll: 2,
        };
        let d = p.defines::<f64>();
        assert_eq!(
            d,
            [
                ("VALUE_T", "double".to_string()),
                ("TPB", "512".to_string()),
                ("IPT", "2".to_string()),
                ("VEC", "4".to_string()),
                ("UNROLL", "2".to_string()),
            ]
        );
        assert_eq!(p.defines::<f32>()[0], ("VALUE_T", "float".to_string()));
        // A define named T would rewrite NVRTC's built-in headers.
        assert!(d.iter().all(|(name, _)| *name != "T"));
        for (name, _) in &d {
            assert!(SOURCE.contains(&format!("defined({name})")), "{name}");
        }
        assert_eq!(p.tile(), 512 * 2 * 4);
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
            let p = Params::of_label(&label).expect("a label of the space");
            for defines in [p.defines::<f32>(), p.defines::<f64>()] {
                match gputune_runtime::backend::cuda::compiles_for(SOURCE, &defines, 90) {
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
        let ptx = |p: Params, f64: bool| {
            let defines = if f64 {
                p.defines::<f64>()
            } else {
                p.defines::<f32>()
            };
            let options = defines
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
        let at = |vec, unroll| Params {
            tpb: 256,
            ipt: 4,
            vec,
            unroll,
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
                let text = ptx(at(vec, unroll), f64);
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
