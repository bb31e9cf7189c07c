//! Verification: a variant's outputs against a reference, before it is timed.
//!
//! Kernel Tuner's scheme, extended: the outputs are poisoned (NaN for floating point, a byte
//! pattern for integers) so that an element a variant never writes cannot pass by accident,
//! the variant runs once, and its outputs are compared with the reference under
//! `|out − ref| ≤ atol + rtol·|ref| + floor·max|ref|`: numpy's `allclose` with an absolute
//! floor that scales with the output, a fraction of its largest reference value, so that an
//! output of small values (probabilities of 1e-9, say) is checked relative to its own size and
//! not passed by a fixed floor larger than all of it. Small values beside large ones (in an
//! output that also holds probabilities near 1) are checked only to that floor:
//! [`Tolerance::new`] has none. The reference is, by default,
//! base's outputs for the same state (see [`State::verify`](crate::State::verify)); or an
//! expected answer; or a user check.
//!
//! [`Verify`] is implemented for `Vec` of the primitive numbers and, with the `cuda` feature,
//! for `CudaSlice` of `f32`, `f64`, `i32` and `u32`, whose comparison runs on the GPU and
//! copies back a few kilobytes whatever the size of the output.

#[cfg(feature = "cuda")]
mod cuda;
mod half;
mod several;

pub use half::{Bf16, F16};
pub use several::Within;

/// The element types of device buffers that verify (`CudaSlice<T>` is [`Verify`] for these);
/// name it as a bound in code generic over the element type.
#[cfg(feature = "cuda")]
pub use cuda::DeviceElement;
// What a failed verification, or a base that could not produce its reference, returns; they
// live with the runtime's other errors, whose kinds `ErrorKind::of` tells apart.
pub use crate::error::{BaseFailed, VerificationFailed};

use serde::Serialize;

use crate::error::BoxError;

/// Tolerances: an element passes when `|out − ref| ≤ atol + rtol·|ref| + floor·peak`, where
/// `peak` is the largest finite `|ref|` of the buffer compared.
///
/// `floor` is an absolute floor relative to the output's own magnitude: where a variant adds
/// in another order, an element near zero (a sum that cancels) carries an error of the size
/// of the buffer's large values, not of its own, and a fixed `atol` would either fail it or,
/// set large enough, check nothing of a buffer whose values are all small. The element types'
/// defaults ([`Element::TOLERANCE`]) are [`Tolerance::relative`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tolerance {
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance, to the element's own reference value.
    pub rtol: f64,
    /// Absolute floor as a fraction of the buffer's largest `|reference|` (0: none).
    pub floor: f64,
}

impl Tolerance {
    /// Bit-for-bit equal values: −0 differs from +0; NaN equals NaN (of any payload).
    pub const EXACT: Tolerance = Tolerance {
        atol: 0.0,
        rtol: 0.0,
        floor: 0.0,
    };

    /// `atol` and `rtol`, with no floor relative to the output.
    pub const fn new(atol: f64, rtol: f64) -> Tolerance {
        Tolerance {
            atol,
            rtol,
            floor: 0.0,
        }
    }

    /// `rtol` relative to each element, and to the buffer's largest `|reference|` as the floor
    /// for elements near zero: `|out − ref| ≤ rtol·(|ref| + peak)`. Whatever the scale of the
    /// output, an error larger than `rtol` of its largest value fails.
    pub const fn relative(rtol: f64) -> Tolerance {
        Tolerance {
            atol: 0.0,
            rtol,
            floor: rtol,
        }
    }

    /// The largest error an element whose reference is `reference` may have, in a buffer
    /// whose largest finite `|reference|` is `peak`.
    pub fn limit(&self, reference: f64, peak: f64) -> f64 {
        self.atol + self.rtol * reference.abs() + self.floor * peak
    }
}

impl Default for Tolerance {
    /// numpy's `allclose` defaults: `atol = 1e-8`, `rtol = 1e-5`. Not the element types'
    /// defaults ([`Element::TOLERANCE`]), which
    /// [`State::exec_verified`](crate::State::exec_verified) compares with.
    fn default() -> Tolerance {
        Tolerance::new(1e-8, 1e-5)
    }
}

/// What a comparison found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Elements compared.
    pub checked: u64,
    /// Elements outside the tolerance (a length mismatch counts every missing element).
    pub mismatches: u64,
    /// Largest `|out − ref|` (infinite where one side is NaN and the other is not).
    pub max_abs_error: f64,
    /// Largest `|out − ref| / |ref|` over non-zero references.
    pub max_rel_error: f64,
    /// Index of the element with the largest absolute error, if any differs.
    pub worst_index: Option<u64>,
}

impl Comparison {
    /// Whether every element passed.
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }
}

/// Outputs that can be verified: poisoned, copied as a reference, and compared.
pub trait Verify: Sized {
    /// Overwrites every element with a value a correct variant replaces.
    fn poison(&mut self) -> Result<(), BoxError>;
    /// A copy to keep as the reference.
    fn snapshot(&self) -> Result<Self, BoxError>;
    /// Compares `self` (the outputs) with `reference`.
    fn compare(&self, reference: &Self, tolerance: Tolerance) -> Result<Comparison, BoxError>;
    /// Compares with each part's own default tolerance: what
    /// [`State::exec_verified`](crate::State::exec_verified) does. Outputs of one element type
    /// compare with [`Verify::default_tolerance`]; a tuple compares each part with its own.
    fn compare_defaults(&self, reference: &Self) -> Result<Comparison, BoxError> {
        self.compare(reference, Self::default_tolerance())
    }
    /// The tolerance [`State::exec_verified`](crate::State::exec_verified) compares with:
    /// the element type's [`Element::TOLERANCE`].
    fn default_tolerance() -> Tolerance;
}

/// A primitive number that outputs are made of.
pub trait Element: Copy + PartialEq + Send + Sync + 'static {
    /// The poison value.
    const POISON: Self;
    /// As `f64`, for errors.
    fn to_f64(self) -> f64;
    /// How close a variant's outputs must be to base's by default: exact for integers; for
    /// floats [`Tolerance::relative`] `1e-5` (`f32`) or `1e-12` (`f64`): relative to each
    /// element, with a floor near zero of the same fraction of the buffer's largest value
    /// (room for a variant that adds in another order, whatever the scale of the output). A
    /// bench that needs another passes its own to [`State::verify`](crate::State::verify).
    const TOLERANCE: Tolerance;
}

macro_rules! float_element {
    ($($t:ty: $tol:expr),*) => {$(
        impl Element for $t {
            const POISON: $t = <$t>::NAN;
            const TOLERANCE: Tolerance = Tolerance::relative($tol);
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}
// 0xA5 in every byte: an unusual value that a variant which skips an element leaves behind.
macro_rules! int_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const POISON: $t = <$t>::from_ne_bytes([0xA5; std::mem::size_of::<$t>()]);
            const TOLERANCE: Tolerance = Tolerance::EXACT;
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}
float_element!(f32: 1e-5, f64: 1e-12);
int_element!(i8, i16, i32, i64, u8, u16, u32, u64, isize, usize);

/// One element's absolute error: zero for equal values (NaN equals NaN: the reference wrote
/// NaN too), infinite where exactly one side is NaN.
fn abs_error(out: f64, reference: f64) -> f64 {
    if out == reference || (out.is_nan() && reference.is_nan()) {
        0.0
    } else {
        let e = (out - reference).abs();
        if e.is_nan() {
            f64::INFINITY
        } else {
            e
        }
    }
}

/// Compares two slices element by element (the CPU path; the CUDA path does the same on the
/// GPU).
pub fn compare_slices<T: Element>(out: &[T], reference: &[T], tolerance: Tolerance) -> Comparison {
    let mut c = Comparison {
        checked: out.len().min(reference.len()) as u64,
        mismatches: out.len().abs_diff(reference.len()) as u64,
        max_abs_error: 0.0,
        max_rel_error: 0.0,
        worst_index: None,
    };
    let peak = if tolerance.floor > 0.0 {
        peak(reference.iter().map(|r| r.to_f64()))
    } else {
        0.0
    };
    let bits = tolerance == Tolerance::EXACT;
    for (i, (&o, &r)) in out.iter().zip(reference).enumerate() {
        if o == r {
            // Equal values, but under EXACT the bits: −0 is not +0 (a variant that rounds a
            // negative result to zero differs from base in its sign).
            if bits && o.to_f64().is_sign_negative() != r.to_f64().is_sign_negative() {
                c.mismatches += 1;
                c.worst_index.get_or_insert(i as u64);
            }
            continue;
        }
        let (o, r) = (o.to_f64(), r.to_f64());
        let err = abs_error(o, r);
        if err == 0.0 {
            continue;
        }
        let limit = tolerance.limit(r, peak);
        if err > limit || limit.is_nan() {
            c.mismatches += 1;
        }
        if err > c.max_abs_error {
            c.max_abs_error = err;
            c.worst_index = Some(i as u64);
        }
        if r != 0.0 {
            c.max_rel_error = c.max_rel_error.max(err / r.abs());
        }
    }
    if c.mismatches > 0 && c.worst_index.is_none() {
        // Only the lengths differ.
        c.max_abs_error = f64::INFINITY;
        c.worst_index = Some(c.checked);
    }
    c
}

/// The largest finite `|value|` (0 for none): an infinite or NaN reference would make every
/// element pass.
pub(crate) fn peak(values: impl Iterator<Item = f64>) -> f64 {
    values
        .filter(|v| v.is_finite())
        .fold(0.0, |m, v| m.max(v.abs()))
}

impl<T: Element> Verify for Vec<T> {
    fn poison(&mut self) -> Result<(), BoxError> {
        self.fill(T::POISON);
        Ok(())
    }

    fn snapshot(&self) -> Result<Self, BoxError> {
        Ok(self.clone())
    }

    fn compare(&self, reference: &Self, tolerance: Tolerance) -> Result<Comparison, BoxError> {
        Ok(compare_slices(self, reference, tolerance))
    }

    fn default_tolerance() -> Tolerance {
        T::TOLERANCE
    }
}

/// How a state's outputs were verified, for the JSON (`verification`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    /// `base` (base's outputs), `expected` (an answer the bench gave) or `check` (a user
    /// function).
    pub against: &'static str,
    /// Whether the outputs passed.
    pub passed: bool,
    /// The tolerances used (absent for a user check).
    pub tolerance: Option<Tolerance>,
    /// The comparison (absent for a user check, and for base against itself).
    pub comparison: Option<Comparison>,
    /// What a failed user check said.
    pub message: Option<String>,
}

impl Verification {
    /// One line saying why verification failed, for the state's error.
    pub fn failure(&self) -> Option<String> {
        if self.passed {
            return None;
        }
        Some(match (&self.comparison, &self.message) {
            (_, Some(m)) => format!("verification failed: {m}"),
            (Some(c), None) => format!(
                "verification failed against {}: {} of {} elements outside the tolerance, \
                 largest error {:.6e} at index {}",
                self.against,
                c.mismatches,
                c.checked,
                c.max_abs_error,
                c.worst_index.map_or("?".into(), |i| i.to_string())
            ),
            (None, None) => format!("verification failed against {}", self.against),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_outputs_pass_and_nan_equals_nan() {
        let a = vec![1.0f32, f32::NAN, 3.0];
        let c = compare_slices(&a, &a.clone(), Tolerance::EXACT);
        assert!(c.passed());
        assert_eq!(c.max_abs_error, 0.0);
        assert_eq!(c.worst_index, None);
    }

    #[test]
    fn exact_tells_the_signs_of_zero_apart() {
        let c = compare_slices(&[1.0f32, -0.0, 0.0], &[1.0, 0.0, 0.0], Tolerance::EXACT);
        assert_eq!((c.mismatches, c.worst_index), (1, Some(1)));
        // Any tolerance above exact compares values.
        assert!(compare_slices(&[-0.0f64], &[0.0], Tolerance::new(0.0, 1e-12)).passed());
    }

    #[test]
    fn the_largest_error_and_its_index_are_reported() {
        let reference = vec![1.0f64, 2.0, 3.0, 4.0];
        let out = vec![1.0f64, 2.5, 3.0, 4.000001];
        let c = compare_slices(&out, &reference, Tolerance::new(0.0, 1e-3));
        assert_eq!(c.mismatches, 1);
        assert_eq!(c.max_abs_error, 0.5);
        assert_eq!(c.worst_index, Some(1));
        assert!((c.max_rel_error - 0.25).abs() < 1e-12);
        // Within atol + rtol·|ref| passes.
        assert!(compare_slices(&out, &reference, Tolerance::new(0.6, 0.0)).passed());
    }

    #[test]
    fn poison_left_behind_fails_with_an_infinite_error() {
        let reference = vec![1.0f32; 4];
        let mut out = reference.clone();
        out.poison().expect("poison");
        out[0] = 1.0;
        let c = out
            .compare(&reference, Tolerance::default())
            .expect("compare");
        assert_eq!(c.mismatches, 3);
        assert_eq!(c.max_abs_error, f64::INFINITY);
        assert_eq!(c.worst_index, Some(1));
    }

    #[test]
    fn integers_are_poisoned_with_a_pattern_and_compared_exactly() {
        let reference: Vec<u32> = (0..8).collect();
        let mut out = reference.clone();
        out.poison().expect("poison");
        assert!(out.iter().all(|&v| v == 0xA5A5_A5A5));
        let c = out.compare(&reference, Tolerance::EXACT).expect("compare");
        assert_eq!(c.mismatches, 8);
        let c = reference
            .compare(&reference, Tolerance::EXACT)
            .expect("compare");
        assert!(c.passed());
    }

    #[test]
    fn a_length_mismatch_fails() {
        let c = compare_slices(&[1i32, 2], &[1, 2, 3], Tolerance::EXACT);
        assert_eq!(c.mismatches, 1);
        assert_eq!(c.worst_index, Some(2));
        assert!(!c.passed());
    }

    /// Softmax probabilities over a 32k vocabulary, 1e-9 to 5e-5 (llm.c's sizes).
    fn probabilities() -> Vec<f32> {
        (0..32_768)
            .map(|i| 1e-9 * 5e4f32.powf(i as f32 / 32_767.0))
            .collect()
    }

    #[test]
    fn the_default_checks_small_outputs_relative_to_their_own_size() {
        let reference = probabilities();
        // A wrong variant: every probability under 1e-6 lost, every other one 20 % high.
        let wrong: Vec<f32> = reference
            .iter()
            .map(|&p| if p < 1e-6 { 0.0 } else { p * 1.2 })
            .collect();
        // The old default (1e-5 relative, 1e-5 absolute) passed it: its floor is larger
        // than every value of the output.
        assert!(compare_slices(&wrong, &reference, Tolerance::new(1e-5, 1e-5)).passed());
        let c = compare_slices(&wrong, &reference, <f32 as Element>::TOLERANCE);
        assert_eq!(
            c.mismatches,
            reference.len() as u64,
            "every element is wrong"
        );
        // One probability of 1e-7 off by 1 %, the rest right: found too. The floor is 1e-5
        // of the largest value (5e-10 here), so the smallest values, 2e-5 of the largest,
        // are checked to that floor, not to their own 1e-5.
        let mut one = reference.clone();
        one[13_947] *= 1.01;
        let c = compare_slices(&one, &reference, <f32 as Element>::TOLERANCE);
        assert_eq!((c.mismatches, c.worst_index), (1, Some(13_947)));
        let mut smallest = reference.clone();
        smallest[0] *= 1.01;
        assert!(compare_slices(&smallest, &reference, <f32 as Element>::TOLERANCE).passed());
        // Summed in another order: a few units in the last place each, which passes.
        let reordered: Vec<f32> = reference
            .iter()
            .enumerate()
            .map(|(i, &p)| f32::from_bits(p.to_bits() + (i % 9) as u32))
            .collect();
        assert!(compare_slices(&reordered, &reference, <f32 as Element>::TOLERANCE).passed());
    }

    #[test]
    fn the_floor_follows_the_output_s_largest_value_for_sums_that_cancel() {
        // A sum that cancels to near zero carries an error of the size of the large sums
        // beside it (1e-6 of 100 here), not of its own: it passes under the floor, as it did
        // under the old fixed one; an error of 1e-3 of the largest value does not.
        let reference = vec![100.0f32, -73.5, 1e-6, 42.0];
        let mut out = reference.clone();
        out[2] += 1e-4;
        assert!(compare_slices(&out, &reference, <f32 as Element>::TOLERANCE).passed());
        out[2] = 0.1;
        assert!(!compare_slices(&out, &reference, <f32 as Element>::TOLERANCE).passed());
        // Infinite or NaN references set no floor (they would let anything pass).
        let with_inf = vec![f32::INFINITY, f32::NAN, 1.0, 1e-3];
        let mut out = with_inf.clone();
        out[3] = 2e-3;
        let c = compare_slices(&out, &with_inf, <f32 as Element>::TOLERANCE);
        assert_eq!((c.mismatches, c.worst_index), (1, Some(3)));
        // An all-zero reference is matched exactly (either sign of zero).
        assert!(compare_slices(&[0.0f64, -0.0], &[0.0, 0.0], <f64 as Element>::TOLERANCE).passed());
        assert!(!compare_slices(&[1e-300f64], &[0.0], <f64 as Element>::TOLERANCE).passed());
        // f64 and the half types take the same shape of default.
        assert_eq!(<f64 as Element>::TOLERANCE, Tolerance::relative(1e-12));
        assert_eq!(
            <Bf16 as Element>::TOLERANCE.floor,
            <Bf16 as Element>::TOLERANCE.rtol
        );
    }

    #[test]
    fn failures_read_as_one_line() {
        let v = Verification {
            against: "base",
            passed: false,
            tolerance: Some(Tolerance::default()),
            comparison: Some(compare_slices(
                &[0.0f32, 5.0],
                &[0.0, 1.0],
                Tolerance::default(),
            )),
            message: None,
        };
        let line = v.failure().expect("failed");
        assert!(line.starts_with("verification failed against base: 1 of 2 elements"));
        assert!(
            line.contains("largest error 4.000000e0 at index 1"),
            "{line}"
        );
    }
}
