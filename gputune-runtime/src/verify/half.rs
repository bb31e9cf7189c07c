//! Half-precision outputs as their bits: [`Bf16`] and [`F16`] are what a kernel's `__nv_bfloat16`
//! and `__half` buffers hold, verified on the device by value (not by bits, which a variant
//! that sums in another order changes in the last place) without a half-precision crate.

use super::{Element, Tolerance};

/// A bfloat16 value as its bits (`__nv_bfloat16`): a buffer of them verifies by value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct Bf16(pub u16);

/// An IEEE half value as its bits (`__half`): a buffer of them verifies by value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct F16(pub u16);

impl Bf16 {
    /// `v` rounded to the nearest bfloat16 (ties to even; NaN stays NaN).
    pub fn from_f32(v: f32) -> Bf16 {
        let bits = v.to_bits();
        if v.is_nan() {
            return Bf16(0x7FC0);
        }
        let round = 0x7FFF + ((bits >> 16) & 1);
        Bf16((bits.wrapping_add(round) >> 16) as u16)
    }

    /// The value as `f32` (exact).
    pub fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(self.0) << 16)
    }
}

impl F16 {
    /// `v` rounded to the nearest half (ties to even; overflow to infinity, NaN stays NaN).
    pub fn from_f32(v: f32) -> F16 {
        let bits = v.to_bits();
        let sign = ((bits >> 16) & 0x8000) as u16;
        if v.is_nan() {
            return F16(sign | 0x7E00);
        }
        let a = v.abs();
        if a >= 65520.0 {
            return F16(sign | 0x7C00);
        }
        if a < 6.103_515_6e-5 {
            // Subnormal: a multiple of 2^-24, rounded to even by the float unit itself.
            let q = (a * 16_777_216.0).round_ties_even() as u16;
            return F16(sign | q);
        }
        let exp = ((bits >> 23) & 0xFF) as i32 - 127 + 15;
        let mant = bits & 0x7F_FFFF;
        let half = ((exp as u32) << 10) | (mant >> 13);
        let rest = mant & 0x1FFF;
        let up = rest > 0x1000 || (rest == 0x1000 && half & 1 == 1);
        F16(sign | (half + u32::from(up)) as u16)
    }

    /// The value as `f32` (exact).
    pub fn to_f32(self) -> f32 {
        let sign = if self.0 & 0x8000 != 0 { -1.0 } else { 1.0 };
        let exp = (self.0 >> 10) & 0x1F;
        let mant = f32::from(self.0 & 0x3FF);
        sign * match exp {
            0 => mant * 2f32.powi(-24),
            31 if mant == 0.0 => f32::INFINITY,
            31 => f32::NAN,
            e => (1.0 + mant / 1024.0) * 2f32.powi(i32::from(e) - 15),
        }
    }
}

impl Element for Bf16 {
    const POISON: Bf16 = Bf16(0xFFFF);
    /// Two to three units in the last place of bfloat16's 8 bits of precision.
    const TOLERANCE: Tolerance = Tolerance::relative(1e-2);
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
}

impl Element for F16 {
    const POISON: F16 = F16(0xFFFF);
    /// About two units in the last place of half's 11 bits of precision.
    const TOLERANCE: Tolerance = Tolerance::relative(2e-3);
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_round_to_nearest() {
        for v in [
            0.0f32,
            1.0,
            -2.5,
            0.1,
            3.140625,
            65504.0,
            6.1035156e-5,
            5.96e-8,
        ] {
            let h = F16::from_f32(v);
            assert!(
                (h.to_f32() - v).abs() <= v.abs() * 1e-3 + 6e-8,
                "{v} -> {}",
                h.to_f32()
            );
            let b = Bf16::from_f32(v);
            assert!(
                (b.to_f32() - v).abs() <= v.abs() * 4e-3,
                "{v} -> {}",
                b.to_f32()
            );
        }
        assert_eq!(F16::from_f32(1.0).0, 0x3C00);
        assert_eq!(F16::from_f32(-2.0).0, 0xC000);
        assert_eq!(F16::from_f32(1e6).0, 0x7C00, "overflow is infinity");
        assert_eq!(Bf16::from_f32(1.0).0, 0x3F80);
        assert!(Bf16::POISON.to_f32().is_nan() && F16::POISON.to_f32().is_nan());
        // 1 + 2^-11 is halfway between two halves: to even (1.0).
        assert_eq!(F16::from_f32(1.0 + 2f32.powi(-11)).0, 0x3C00);
    }
}
