//! The generators on the CPU: the specification the CUDA source follows, value for value.
//!
//! Element `i` of a generator that yields `per` elements per Philox call comes from
//! `philox4x32_10([g as u32, (g >> 32) as u32, draw, 0], [seed as u32, (seed >> 32) as u32])`
//! with `g = i / per`: word `i % per` of it (32-bit elements), or words `2j` and `2j + 1`
//! joined low half first (64-bit ones). [`uniform`] and [`entropy`] give exactly what the
//! device writes; [`normal`] matches it to within the rounding of the device's `log`, `sqrt`
//! and `sincospi`.

use super::{check_normal, Element, Entropy, Float, Kernel, UniformRange};
use crate::error::Result;

/// Philox-4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
/// 3", SC'11), with Random123's multipliers and key schedule: 128 random bits for each
/// `(counter, key)`.
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    const M0: u64 = 0xD251_1F53;
    const M1: u64 = 0xCD9E_8D57;
    let (mut c, mut k) = (counter, key);
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(0x9E37_79B9);
            k[1] = k[1].wrapping_add(0xBB67_AE85);
        }
        let p0 = M0 * u64::from(c[0]);
        let p1 = M1 * u64::from(c[2]);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}

/// The four random words of `group`'s `draw`-th Philox call under `seed`.
fn draw(seed: u64, group: u64, draw: u32) -> [u32; 4] {
    philox4x32_10(
        [group as u32, (group >> 32) as u32, draw, 0],
        [seed as u32, (seed >> 32) as u32],
    )
}

/// Words `2j` and `2j + 1` as one 64-bit word, the first the low half.
fn join(x: [u32; 4], j: usize) -> u64 {
    u64::from(x[2 * j]) | u64::from(x[2 * j + 1]) << 32
}

/// Calls `value(group's words, j)` for element `j` of each group of `per`, as the kernels'
/// threads do.
fn fill<T>(out: &mut [T], per: usize, mut value: impl FnMut(u64, usize) -> T) {
    for (group, chunk) in out.chunks_mut(per).enumerate() {
        for (j, v) in chunk.iter_mut().enumerate() {
            *v = value(group as u64, j);
        }
    }
}

/// What [`super::uniform`] writes into a buffer of `out.len()` elements.
///
/// Errors: [`Error::Usage`](crate::Error::Usage) when `lo > hi` or a float bound is not
/// finite.
pub fn uniform<T: Element>(out: &mut [T], lo: T, hi: T, seed: u64) -> Result<()> {
    let range = UniformRange::new(lo, hi)?;
    fill(out, Kernel::Uniform.per_group::<T>(), |group, j| {
        let x = draw(seed, group, 0);
        uniform_value(&range, x, j)
    });
    Ok(())
}

/// Element `j` of a uniform group whose words are `x`.
fn uniform_value<T: Element>(range: &UniformRange<T>, x: [u32; 4], j: usize) -> T {
    match (T::FLOAT, T::BITS) {
        (true, 32) => {
            let f = |v: T| f32::from_bits(v.to_bits() as u32);
            let u = (x[j] >> 8) as f32 * f32::from_bits(0x3380_0000); // 2^-24
            let v = between32(u, f(range.lo), f(range.hi), f(range.below_hi));
            T::from_bits(u64::from(v.to_bits()))
        }
        (true, _) => {
            let f = |v: T| f64::from_bits(v.to_bits());
            let u = (join(x, j) >> 11) as f64 * f64::from_bits(0x3CA0_0000_0000_0000); // 2^-53
            let v = between64(u, f(range.lo), f(range.hi), f(range.below_hi));
            T::from_bits(v.to_bits())
        }
        (false, 32) => {
            // span <= 2^32: the high word of a 64-bit fraction times it.
            let offset = ((u128::from(join(x, j)) * u128::from(range.span)) >> 64) as u64;
            T::from_bits(range.lo.to_bits().wrapping_add(offset))
        }
        (false, _) => {
            let (r_lo, r_hi) = (join(x, 0), join(x, 1));
            let offset = if range.span == 0 {
                r_hi
            } else {
                // floor((r_hi·2^64 + r_lo)·span / 2^128), without overflowing 128 bits.
                let span = u128::from(range.span);
                let sum = u128::from(r_hi) * span + ((u128::from(r_lo) * span) >> 64);
                (sum >> 64) as u64
            };
            T::from_bits(range.lo.to_bits().wrapping_add(offset))
        }
    }
}

/// The kernel's `gen_between` for `f32`: `(1 − u)·lo + u·hi` by two fused multiply-adds,
/// kept in `[lo, hi)`.
fn between32(u: f32, lo: f32, hi: f32, below_hi: f32) -> f32 {
    let mut v = u.mul_add(hi, (-u).mul_add(lo, lo));
    if v >= hi {
        v = below_hi;
    }
    if v < lo {
        v = lo;
    }
    v
}

/// [`between32`] for `f64`.
fn between64(u: f64, lo: f64, hi: f64, below_hi: f64) -> f64 {
    let mut v = u.mul_add(hi, (-u).mul_add(lo, lo));
    if v >= hi {
        v = below_hi;
    }
    if v < lo {
        v = lo;
    }
    v
}

/// What [`super::normal`] writes into a buffer of `out.len()` elements, to within the
/// rounding of the device's `log`, `sqrt` and `sincospi` (computed here in `f64` and rounded,
/// in the kernel's order of operations).
///
/// Errors: [`Error::Usage`](crate::Error::Usage) when `mean` or `stdev` is not finite or
/// `stdev < 0`.
pub fn normal<F: Float>(out: &mut [F], mean: F, stdev: F, seed: u64) -> Result<()> {
    check_normal(mean, stdev)?;
    let per = Kernel::Normal.per_group::<F>();
    fill(out, per, |group, j| {
        let x = draw(seed, group, 0);
        if F::BITS == 32 {
            let f = |v: F| f32::from_bits(v.to_bits() as u32);
            let pair = j & !1;
            let u1 = f64::from(((x[pair] >> 8) + 1) as f32 * f32::from_bits(0x3380_0000));
            let u2 = f64::from((x[pair + 1] >> 8) as f32 * f32::from_bits(0x3380_0000));
            // logf rounded to f32, then an IEEE sqrtf, as the kernel does.
            let r = (-2.0 * (u1.ln() as f32)).sqrt();
            let (s, c) = (std::f64::consts::PI * (2.0 * u2)).sin_cos();
            let trig = if j % 2 == 0 { c as f32 } else { s as f32 };
            let v = f(stdev).mul_add(r * trig, f(mean));
            F::from_bits(u64::from(v.to_bits()))
        } else {
            let f = |v: F| f64::from_bits(v.to_bits());
            let two_53 = f64::from_bits(0x3CA0_0000_0000_0000);
            let u1 = ((join(x, 0) >> 11) + 1) as f64 * two_53;
            let u2 = (join(x, 1) >> 11) as f64 * two_53;
            let r = (-2.0 * u1.ln()).sqrt();
            let (s, c) = (std::f64::consts::PI * (2.0 * u2)).sin_cos();
            let trig = if j == 0 { c } else { s };
            F::from_bits(f(stdev).mul_add(r * trig, f(mean)).to_bits())
        }
    });
    Ok(())
}

/// What [`super::entropy`] writes into a buffer of `out.len()` elements.
pub fn entropy<T: Element>(out: &mut [T], bits: Entropy, seed: u64) {
    let words = bits.words();
    let word = |x: [u32; 4], j: usize| {
        let w = if T::BITS == 32 {
            u64::from(x[j])
        } else {
            join(x, j)
        };
        T::from_bits(finite::<T>(w))
    };
    if words == 0 {
        let constant = word(draw(seed, 0, 0), 0);
        out.fill(constant);
        return;
    }
    fill(out, Kernel::Entropy.per_group::<T>(), |group, j| {
        let mut x = draw(seed, group, 0);
        for d in 1..words {
            let y = draw(seed, group, d);
            for (a, b) in x.iter_mut().zip(y) {
                *a &= b;
            }
        }
        word(x, j)
    });
}

/// A float bit pattern with an all-ones exponent loses that exponent's lowest bit (finite
/// values only); integers unchanged.
pub(super) fn finite<T: Element>(w: u64) -> u64 {
    let (exponent, lowest) = match (T::FLOAT, T::BITS) {
        (false, _) => return w,
        (true, 32) => (0x7F80_0000, 0x0080_0000),
        (true, _) => (0x7FF0_0000_0000_0000, 0x0010_0000_0000_0000),
    };
    if w & exponent == exponent {
        w & !lowest
    } else {
        w
    }
}
