//! Verification: a variant's outputs against a reference, before it is timed.
//!
//! Kernel Tuner's scheme, extended: the outputs are poisoned (NaN for floating point, a byte
//! pattern for integers) so that an element a variant never writes cannot pass by accident,
//! the variant runs once, and its outputs are compared with the reference under
//! `|out − ref| ≤ atol + rtol·|ref|` (numpy's `allclose`). The reference is, by default,
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

/// Tolerances: an element passes when `|out − ref| ≤ atol + rtol·|ref|`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tolerance {
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
}

impl Tolerance {
    /// Bit-for-bit equal values (NaN equals NaN).
    pub const EXACT: Tolerance = Tolerance {
        atol: 0.0,
        rtol: 0.0,
    };

    /// `atol` and `rtol`.
    pub fn new(atol: f64, rtol: f64) -> Tolerance {
        Tolerance { atol, rtol }
    }
}

impl Default for Tolerance {
    /// numpy's `allclose` defaults: `atol = 1e-8`, `rtol = 1e-5`.
    fn default() -> Tolerance {
        Tolerance {
            atol: 1e-8,
            rtol: 1e-5,
        }
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
    /// floats a relative `1e-5` (`f32`) or `1e-12` (`f64`) with an absolute floor of the same
    /// size near zero, room for a variant that adds in another order. A bench that needs
    /// another passes its own to [`State::verify`](crate::State::verify).
    const TOLERANCE: Tolerance;
}

macro_rules! float_element {
    ($($t:ty: $tol:expr),*) => {$(
        impl Element for $t {
            const POISON: $t = <$t>::NAN;
            const TOLERANCE: Tolerance = Tolerance { atol: $tol, rtol: $tol };
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
    for (i, (&o, &r)) in out.iter().zip(reference).enumerate() {
        if o == r {
            continue;
        }
        let (o, r) = (o.to_f64(), r.to_f64());
        let err = abs_error(o, r);
        if err == 0.0 {
            continue;
        }
        let limit = tolerance.atol + tolerance.rtol * r.abs();
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
