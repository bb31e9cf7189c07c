//! Device-side data generators: fill a device buffer with seeded random values on the GPU.
//!
//! CUB's benchmarks (`cub/benchmarks/nvbench_helper`) fill their inputs with `gen(seed, data,
//! entropy, min, max)`: uniform values in a range, or CUB's reduced-entropy bit patterns, where
//! each element is the bitwise AND of several uniform values (an AND of `k` random words has
//! each bit set with probability `2^-k`: 1.000, 0.811, 0.544, 0.337 and 0.201 bits of entropy
//! per bit for `k` = 1 to 5), and 0.000 is one value repeated. This module does the same on the
//! device, in one launch per call, with no host-side data:
//!
//! - [`uniform`]: floats in `[lo, hi)`, integers in `[lo, hi]` (both ends included);
//! - [`normal`]: floats with a mean and a standard deviation (Box–Muller);
//! - [`entropy`]: CUB's [`Entropy`] levels, for integers and for floats (as bit patterns, kept
//!   finite).
//!
//! Every value depends only on the seed and its index, never on the grid or the device:
//! element `i` comes from Philox-4x32-10 (the counter-based generator of cuRAND and of
//! Random123, Salmon et al., SC'11) keyed by the seed, at counter `(i / per, draw, 0)`, where
//! each call yields `per` consecutive elements. [`host`] computes the same values on the CPU;
//! it is the specification the CUDA source follows, and what a test compares the device's
//! output with.
//!
//! The kernels are CUDA C++ compiled once per process and element type by NVRTC (through the
//! kernel cache of [`CudaHandles::compile`](crate::backend::cuda::CudaHandles::compile)).
//!
//! ```no_run
//! # fn main() -> Result<(), gputune_runtime::BoxError> {
//! use gputune_runtime::cudarc::driver::CudaContext;
//! use gputune_runtime::generate::{self, Entropy};
//! let stream = CudaContext::new(0)?.default_stream();
//! let mut keys = stream.alloc_zeros::<u32>(1 << 20)?;
//! generate::entropy(&stream, &mut keys, Entropy::B0_544, 42)?;
//! let mut x = stream.alloc_zeros::<f32>(1 << 20)?;
//! generate::uniform(&stream, &mut x, -1.0, 1.0, 7)?;
//! generate::normal(&stream, &mut x, 0.0, 1.0, 8)?;
//! # Ok(())
//! # }
//! ```

pub mod host;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use cudarc::driver::{
    sys, CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
};

use crate::backend::cuda::{driver_error, load_module};
use crate::error::{Error, Result};

/// The generators' CUDA C++ source, compiled with the defines of [`Element`]'s type.
const SOURCE: &str = include_str!("generate.cu");

/// Threads per block of every generator kernel.
const BLOCK: u32 = 256;

/// Blocks per SM at most: the grid-stride loop covers the rest, and a few waves of resident
/// blocks keep every SM writing until the end.
const BLOCKS_PER_SM: u32 = 32;

/// CUB's bit-entropy levels (nvbench_helper's `bit_entropy`), in bits of entropy per bit.
///
/// Level `k` of 1 to 5 is the bitwise AND of `k` independent random words, so each bit is set
/// with probability `p = 2^-k`, and its entropy `H(p) = −p·log2 p − (1−p)·log2(1−p)` is the
/// level's name. Level 0.000 is, as in CUB, one seeded random value repeated (CUB fills with one
/// random value of the range; there is no range here, so it is any word).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Entropy {
    /// 1.000: one random word, every bit pattern equally likely.
    B1_000,
    /// 0.811: the AND of 2 random words (bits set with probability 1/4).
    B0_811,
    /// 0.544: the AND of 3 random words (1/8).
    B0_544,
    /// 0.337: the AND of 4 random words (1/16).
    B0_337,
    /// 0.201: the AND of 5 random words (1/32).
    B0_201,
    /// 0.000: every element the same value (the first element's 1.000 pattern).
    B0_000,
}

impl Entropy {
    /// Every level, from the most random to constant (CUB's order).
    pub const ALL: [Entropy; 6] = [
        Entropy::B1_000,
        Entropy::B0_811,
        Entropy::B0_544,
        Entropy::B0_337,
        Entropy::B0_201,
        Entropy::B0_000,
    ];

    /// How many random words are ANDed (0 for the constant level).
    pub fn words(self) -> u32 {
        match self {
            Entropy::B1_000 => 1,
            Entropy::B0_811 => 2,
            Entropy::B0_544 => 3,
            Entropy::B0_337 => 4,
            Entropy::B0_201 => 5,
            Entropy::B0_000 => 0,
        }
    }

    /// The level's name as a number: bits of entropy per bit, to three decimals.
    pub fn bits(self) -> f64 {
        match self {
            Entropy::B1_000 => 1.0,
            Entropy::B0_811 => 0.811,
            Entropy::B0_544 => 0.544,
            Entropy::B0_337 => 0.337,
            Entropy::B0_201 => 0.201,
            Entropy::B0_000 => 0.0,
        }
    }

    /// The level as CUB and nvbench spell it on an axis: `"1.000"`, `"0.811"`, … `"0.000"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Entropy::B1_000 => "1.000",
            Entropy::B0_811 => "0.811",
            Entropy::B0_544 => "0.544",
            Entropy::B0_337 => "0.337",
            Entropy::B0_201 => "0.201",
            Entropy::B0_000 => "0.000",
        }
    }
}

impl fmt::Display for Entropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Entropy {
    type Err = Error;

    /// Parses CUB's spelling ([`Entropy::as_str`]), for a string axis of entropy levels.
    fn from_str(s: &str) -> Result<Entropy> {
        Entropy::ALL
            .into_iter()
            .find(|e| e.as_str() == s.trim())
            .ok_or_else(|| {
                let names: Vec<_> = Entropy::ALL.iter().map(|e| e.as_str()).collect();
                Error::Usage(format!(
                    "unknown bit entropy {s:?}: expected one of {}",
                    names.join(", ")
                ))
            })
    }
}

/// What the kernels and the host mirror need to know of an element type. Sealed: the CUDA
/// source handles exactly these six types.
mod sealed {
    pub trait Sealed: Copy + PartialOrd + std::fmt::Debug + Send + Sync + 'static {
        /// The C++ type (`GEN_T`).
        const CUDA_TYPE: &'static str;
        /// The width in bits (`GEN_BITS`): 32 or 64.
        const BITS: u32;
        /// Whether it is `float` or `double` (`GEN_FLOAT`).
        const FLOAT: bool;
        /// Whether an integer type is signed.
        const SIGNED: bool;
        /// The bit pattern, zero-extended.
        fn to_bits(self) -> u64;
        /// The value of the low `BITS` bits.
        fn from_bits(bits: u64) -> Self;
    }
}

/// An element type the generators fill: `f32`, `f64`, `i32`, `u32`, `i64` or `u64`.
pub trait Element:
    sealed::Sealed + DeviceRepr + Copy + PartialOrd + fmt::Debug + Send + Sync + 'static
{
}

/// A floating-point element type (`f32`, `f64`): what [`normal`] fills.
pub trait Float: Element {}

macro_rules! element {
    ($t:ty, $cuda:literal, $bits:literal, float, $u:ty) => {
        impl sealed::Sealed for $t {
            const CUDA_TYPE: &'static str = $cuda;
            const BITS: u32 = $bits;
            const FLOAT: bool = true;
            const SIGNED: bool = true;
            fn to_bits(self) -> u64 {
                u64::from(<$t>::to_bits(self))
            }
            fn from_bits(bits: u64) -> Self {
                <$t>::from_bits(bits as $u)
            }
        }
        impl Element for $t {}
        impl Float for $t {}
    };
    ($t:ty, $cuda:literal, $bits:literal, $signed:literal, $u:ty) => {
        impl sealed::Sealed for $t {
            const CUDA_TYPE: &'static str = $cuda;
            const BITS: u32 = $bits;
            const FLOAT: bool = false;
            const SIGNED: bool = $signed;
            fn to_bits(self) -> u64 {
                // Through the unsigned type of the same width: zero-extended, not sign-extended.
                u64::from(self as $u)
            }
            fn from_bits(bits: u64) -> Self {
                bits as $u as $t
            }
        }
        impl Element for $t {}
    };
}

element!(f32, "float", 32, float, u32);
element!(f64, "double", 64, float, u64);
element!(i32, "int", 32, true, u32);
element!(u32, "unsigned int", 32, false, u32);
element!(i64, "long long", 64, true, u64);
element!(u64, "unsigned long long", 64, false, u64);

/// The defines [`SOURCE`] is compiled with for `T` (distinctive names: they reach NVRTC's own
/// headers too).
fn defines<T: Element>() -> Vec<(&'static str, String)> {
    vec![
        ("GEN_T", T::CUDA_TYPE.to_string()),
        ("GEN_BITS", T::BITS.to_string()),
        ("GEN_FLOAT", u32::from(T::FLOAT).to_string()),
    ]
}

/// The three generator kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kernel {
    Uniform,
    Normal,
    Entropy,
}

impl Kernel {
    /// The `extern "C"` name in [`SOURCE`].
    fn name(self) -> &'static str {
        match self {
            Kernel::Uniform => "gen_uniform",
            Kernel::Normal => "gen_normal",
            Kernel::Entropy => "gen_entropy",
        }
    }

    /// How many consecutive elements of `T` one Philox call (128 random bits) gives: each
    /// thread writes one such group per step of its loop.
    fn per_group<T: Element>(self) -> usize {
        match (self, T::FLOAT, T::BITS) {
            // A float takes 24 (53) bits of one 32-bit (64-bit) word, a normal pair two words.
            (Kernel::Uniform | Kernel::Normal, true, 32) => 4,
            (Kernel::Uniform | Kernel::Normal, true, _) => 2,
            // An integer takes a fraction twice its width, so that no value is favoured.
            (Kernel::Uniform, false, 32) => 2,
            (Kernel::Uniform, false, _) => 1,
            (Kernel::Normal, false, _) => 0,
            (Kernel::Entropy, _, bits) => (128 / bits) as usize,
        }
    }
}

/// A checked uniform range, in the form the kernel and the host mirror take it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UniformRange<T> {
    pub lo: T,
    pub hi: T,
    /// Floats: the largest value below `hi` (`hi` when `lo == hi`), where a rounded-up value
    /// goes, so that `hi` itself never comes out.
    pub below_hi: T,
    /// Integers: `hi − lo + 1` modulo 2^64 (0 is the full 64-bit range).
    pub span: u64,
}

impl<T: Element> UniformRange<T> {
    /// Checks `lo` and `hi`: finite floats, `lo <= hi`.
    pub fn new(lo: T, hi: T) -> Result<UniformRange<T>> {
        if T::FLOAT {
            let (l, h) = (float_value(lo), float_value(hi));
            if !l.is_finite() || !h.is_finite() {
                return Err(Error::Usage(format!(
                    "generate::uniform: the range [{lo:?}, {hi:?}) must be finite"
                )));
            }
            if l > h {
                return Err(Error::Usage(format!(
                    "generate::uniform: lo ({lo:?}) is greater than hi ({hi:?})"
                )));
            }
            let below_hi = if l == h { hi } else { below(hi) };
            return Ok(UniformRange {
                lo,
                hi,
                below_hi,
                span: 0,
            });
        }
        let (l, h) = (int_value(lo), int_value(hi));
        if l > h {
            return Err(Error::Usage(format!(
                "generate::uniform: lo ({lo:?}) is greater than hi ({hi:?})"
            )));
        }
        Ok(UniformRange {
            lo,
            hi,
            below_hi: hi,
            // 2^64 (the whole u64 or i64 range) wraps to 0.
            span: (h - l + 1) as u64,
        })
    }
}

/// Checks a normal distribution's parameters: finite, `stdev >= 0`.
pub(crate) fn check_normal<F: Float>(mean: F, stdev: F) -> Result<()> {
    let (m, s) = (float_value(mean), float_value(stdev));
    if !m.is_finite() || !s.is_finite() || s < 0.0 {
        return Err(Error::Usage(format!(
            "generate::normal: the mean ({mean:?}) must be finite and the standard deviation \
             ({stdev:?}) finite and not negative"
        )));
    }
    Ok(())
}

/// A float element's value, exactly.
fn float_value<T: Element>(x: T) -> f64 {
    if T::BITS == 32 {
        f64::from(f32::from_bits(x.to_bits() as u32))
    } else {
        f64::from_bits(x.to_bits())
    }
}

/// An integer element's value, exactly.
fn int_value<T: Element>(x: T) -> i128 {
    let bits = x.to_bits();
    match (T::SIGNED, T::BITS) {
        (true, 32) => i128::from(bits as u32 as i32),
        (true, _) => i128::from(bits as i64),
        (false, _) => i128::from(bits),
    }
}

/// The largest float below the finite float `x` (what C's `nextafter(x, -inf)` gives).
fn below<T: Element>(x: T) -> T {
    let bits = x.to_bits();
    let sign = 1u64 << (T::BITS - 1);
    if bits & !sign == 0 {
        // ±0: the negative subnormal nearest zero.
        T::from_bits(sign | 1)
    } else if bits & sign == 0 {
        T::from_bits(bits - 1)
    } else {
        T::from_bits(bits + 1)
    }
}

/// Fills `out` with uniform random values: floats in `[lo, hi)`, integers in `[lo, hi]` (both
/// ends included), on `stream`, in one launch.
///
/// Floats are `lo + u·(hi − lo)` for `u` a multiple of 2^-24 (`f32`) or 2^-53 (`f64`) in
/// `[0, 1)`, computed so that any finite range works (`[f32::MIN, f32::MAX)` too); `lo == hi`
/// fills with `lo`. Integers take a random fraction of twice their width times the range's
/// size, so no value is more likely than another by more than 2^-32 of its probability.
/// The values depend only on `seed` and their index ([`host::uniform`] computes them).
///
/// Errors: [`Error::Usage`] when `lo > hi` or a float bound is not finite; otherwise what
/// compiling the kernel (NVRTC) or launching it returns.
pub fn uniform<T: Element>(
    stream: &Arc<CudaStream>,
    out: &mut CudaSlice<T>,
    lo: T,
    hi: T,
    seed: u64,
) -> Result<()> {
    let range = UniformRange::new(lo, hi)?;
    let n = out.len() as u64;
    let Some((function, config)) = prepare::<T>(stream, Kernel::Uniform, out.len())? else {
        return Ok(());
    };
    let mut builder = stream.launch_builder(&function);
    builder
        .arg(out)
        .arg(&n)
        .arg(&range.lo)
        .arg(&range.hi)
        .arg(&range.below_hi)
        .arg(&range.span)
        .arg(&seed);
    // SAFETY: the arguments match `gen_uniform(GEN_T*, u64, GEN_T, GEN_T, GEN_T, u64, u64)`,
    // compiled for T, and the kernel writes only the first n elements, which `out` holds.
    unsafe { builder.launch(config) }
        .map_err(|e| driver_error("launching generate::uniform", e))?;
    Ok(())
}

/// Fills `out` with normal random values of mean `mean` and standard deviation `stdev`, on
/// `stream`, in one launch.
///
/// Box–Muller on pairs of uniforms `u1` in `(0, 1]` and `u2` in `[0, 1)`:
/// `sqrt(−2·ln u1)·(cos, sin)(2π·u2)`. With 24-bit (`f32`) and 53-bit (`f64`) uniforms the
/// tails end at 5.8 and 8.6 standard deviations. [`host::normal`] computes the same values to
/// within the rounding of the device's `log` and `sincospi`.
///
/// Errors: [`Error::Usage`] when `mean` or `stdev` is not finite or `stdev < 0`; otherwise
/// what compiling or launching the kernel returns.
pub fn normal<F: Float>(
    stream: &Arc<CudaStream>,
    out: &mut CudaSlice<F>,
    mean: F,
    stdev: F,
    seed: u64,
) -> Result<()> {
    check_normal(mean, stdev)?;
    let n = out.len() as u64;
    let Some((function, config)) = prepare::<F>(stream, Kernel::Normal, out.len())? else {
        return Ok(());
    };
    let mut builder = stream.launch_builder(&function);
    builder.arg(out).arg(&n).arg(&mean).arg(&stdev).arg(&seed);
    // SAFETY: the arguments match `gen_normal(GEN_T*, u64, GEN_T, GEN_T, u64)`, compiled for
    // F, and the kernel writes only the first n elements, which `out` holds.
    unsafe { builder.launch(config) }.map_err(|e| driver_error("launching generate::normal", e))?;
    Ok(())
}

/// Fills `out` with CUB's reduced-entropy bit patterns ([`Entropy`]), on `stream`, in one
/// launch: each element's bits are the AND of [`Entropy::words`] random words of its width,
/// or, for [`Entropy::B0_000`], one seeded word repeated.
///
/// Floats are filled with bit patterns too (as CUB fills sort keys), except that a pattern
/// with an all-ones exponent (an infinity or a NaN) has that exponent's lowest bit cleared:
/// every value is finite. The values depend only on `seed` and their index
/// ([`host::entropy`] computes them).
///
/// Errors: what compiling or launching the kernel returns.
pub fn entropy<T: Element>(
    stream: &Arc<CudaStream>,
    out: &mut CudaSlice<T>,
    bits: Entropy,
    seed: u64,
) -> Result<()> {
    let n = out.len() as u64;
    let words = bits.words();
    let Some((function, config)) = prepare::<T>(stream, Kernel::Entropy, out.len())? else {
        return Ok(());
    };
    let mut builder = stream.launch_builder(&function);
    builder.arg(out).arg(&n).arg(&words).arg(&seed);
    // SAFETY: the arguments match `gen_entropy(gen_word*, u64, unsigned, u64)`, compiled for
    // T (gen_word is the unsigned type of T's width: the same pointer), and the kernel writes
    // only the first n elements, which `out` holds.
    unsafe { builder.launch(config) }
        .map_err(|e| driver_error("launching generate::entropy", e))?;
    Ok(())
}

/// The kernel for `T` on `stream`'s context and the launch shape for `n` elements; `None`
/// when there is nothing to fill.
fn prepare<T: Element>(
    stream: &Arc<CudaStream>,
    kernel: Kernel,
    n: usize,
) -> Result<Option<(CudaFunction, LaunchConfig)>> {
    if n == 0 {
        return Ok(None);
    }
    let (function, sms) = function::<T>(stream, kernel)?;
    let groups = n.div_ceil(kernel.per_group::<T>()) as u64;
    let blocks = groups
        .div_ceil(u64::from(BLOCK))
        .min(u64::from(sms.max(1)) * u64::from(BLOCKS_PER_SM));
    let config = LaunchConfig {
        // At most SMs × BLOCKS_PER_SM, far below the grid's limit of 2^31 − 1.
        grid_dim: (u32::try_from(blocks).unwrap_or(u32::MAX), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    Ok(Some((function, config)))
}

/// The compiled kernel for `T` on `stream`'s context and the device's SM count, once per
/// context, type and kernel per process: the generators run inside timed loops, where even
/// the kernel cache's lookup by source text would cost more than the launch.
fn function<T: Element>(stream: &Arc<CudaStream>, kernel: Kernel) -> Result<(CudaFunction, u32)> {
    type Loaded = HashMap<(usize, &'static str, Kernel), (CudaFunction, u32)>;
    static LOADED: Mutex<Option<Loaded>> = Mutex::new(None);
    let context = stream.context();
    let key = (context.cu_ctx() as usize, T::CUDA_TYPE, kernel);
    // A poisoned lock only means a thread panicked while inserting; the map is whole.
    let lock = || LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = lock().get_or_insert_with(HashMap::new).get(&key) {
        return Ok(found.clone());
    }
    let (module, _) = load_module(context, &SOURCE.into(), &defines::<T>(), &[])?;
    let function = module
        .load_function(kernel.name())
        .map_err(|e| driver_error("loading a generate kernel", e))?;
    let sms = context
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(|e| driver_error("reading the device's SM count", e))?;
    let loaded = (function, u32::try_from(sms).unwrap_or(1));
    lock()
        .get_or_insert_with(HashMap::new)
        .insert(key, loaded.clone());
    Ok(loaded)
}
