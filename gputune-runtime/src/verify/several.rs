//! Several outputs verified together: a tuple of outputs is [`Verify`], each part compared
//! with its own default tolerance under `exec_verified`, and [`Within`] gives one part a
//! tolerance of its own (`Within::exact(mean)` for bits). A layer norm that writes its output,
//! the mean and the inverse standard deviation is verified as `(out, mean, rstd)`.

use super::{Comparison, Tolerance, Verify};
use crate::error::BoxError;

/// Outputs compared with `tolerance` whatever tolerance the whole is compared with.
#[derive(Debug, Clone)]
pub struct Within<T> {
    /// The outputs.
    pub outputs: T,
    /// Their tolerance.
    pub tolerance: Tolerance,
}

impl<T> Within<T> {
    /// `outputs` compared with `tolerance`.
    pub fn new(outputs: T, tolerance: Tolerance) -> Within<T> {
        Within { outputs, tolerance }
    }

    /// `outputs` compared bit for bit (NaN equals NaN).
    pub fn exact(outputs: T) -> Within<T> {
        Within::new(outputs, Tolerance::EXACT)
    }
}

impl<T: Verify> Verify for Within<T> {
    fn poison(&mut self) -> Result<(), BoxError> {
        self.outputs.poison()
    }

    fn snapshot(&self) -> Result<Self, BoxError> {
        Ok(Within::new(self.outputs.snapshot()?, self.tolerance))
    }

    fn compare(&self, reference: &Self, _: Tolerance) -> Result<Comparison, BoxError> {
        self.outputs.compare(&reference.outputs, self.tolerance)
    }

    fn compare_defaults(&self, reference: &Self) -> Result<Comparison, BoxError> {
        self.outputs.compare(&reference.outputs, self.tolerance)
    }

    fn default_tolerance() -> Tolerance {
        T::default_tolerance()
    }
}

/// The comparison of several outputs as one: every element counted, the largest errors over
/// all (the index is within the output that holds the largest absolute error).
pub fn combine(parts: impl IntoIterator<Item = Comparison>) -> Comparison {
    let mut out = Comparison {
        checked: 0,
        mismatches: 0,
        max_abs_error: 0.0,
        max_rel_error: 0.0,
        worst_index: None,
    };
    for c in parts {
        out.checked += c.checked;
        out.mismatches += c.mismatches;
        if c.max_abs_error > out.max_abs_error
            || (out.worst_index.is_none() && c.worst_index.is_some())
        {
            out.max_abs_error = out.max_abs_error.max(c.max_abs_error);
            out.worst_index = c.worst_index;
        }
        out.max_rel_error = out.max_rel_error.max(c.max_rel_error);
    }
    out
}

/// The stricter of two tolerances in each term: what a tuple records as its own.
fn stricter(a: Tolerance, b: Tolerance) -> Tolerance {
    Tolerance {
        atol: a.atol.min(b.atol),
        rtol: a.rtol.min(b.rtol),
        floor: a.floor.min(b.floor),
    }
}

macro_rules! tuple_verify {
    ($($t:ident $i:tt),+) => {
        impl<$($t: Verify),+> Verify for ($($t,)+) {
            fn poison(&mut self) -> Result<(), BoxError> {
                $(self.$i.poison()?;)+
                Ok(())
            }

            fn snapshot(&self) -> Result<Self, BoxError> {
                Ok(($(self.$i.snapshot()?,)+))
            }

            fn compare(&self, reference: &Self, tolerance: Tolerance) -> Result<Comparison, BoxError> {
                Ok(combine([$(self.$i.compare(&reference.$i, tolerance)?),+]))
            }

            fn compare_defaults(&self, reference: &Self) -> Result<Comparison, BoxError> {
                Ok(combine([$(self.$i.compare_defaults(&reference.$i)?),+]))
            }

            fn default_tolerance() -> Tolerance {
                let all = [$($t::default_tolerance()),+];
                all.into_iter().fold(all[0], stricter)
            }
        }
    };
}

tuple_verify!(A 0, B 1);
tuple_verify!(A 0, B 1, C 2);
tuple_verify!(A 0, B 1, C 2, D 3);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_output_is_compared_with_its_own_tolerance() {
        // f32 output, u32 indices: the f32 part may differ in the last place, the u32 not.
        let outs = (vec![1.0f32, 2.000_001], vec![3u32, 4]);
        let reference = (vec![1.0f32, 2.0], vec![3u32, 4]);
        assert!(outs
            .compare_defaults(&reference)
            .expect("compares")
            .passed());
        let off_by_one = (vec![1.0f32, 2.0], vec![3u32, 5]);
        let c = off_by_one.compare_defaults(&reference).expect("compares");
        assert_eq!((c.checked, c.mismatches), (4, 1));
        // Within: bits for one part, whatever the whole is compared with.
        let bits = (vec![1.0f32, 2.000_001], Within::exact(vec![0.5f32]));
        let bits_ref = (vec![1.0f32, 2.0], Within::exact(vec![0.500_000_1f32]));
        let c = bits
            .compare(&bits_ref, Tolerance::new(1e-3, 1e-3))
            .expect("compares");
        assert_eq!(
            c.mismatches, 1,
            "the exact part fails, the loose part passes"
        );
        assert_eq!(
            <(Vec<f32>, Vec<u32>)>::default_tolerance(),
            Tolerance::EXACT,
            "a tuple records its strictest"
        );
    }

    #[test]
    fn poison_and_snapshot_reach_every_part() {
        let mut outs = (vec![1.0f32], vec![7u32], Within::exact(vec![2.0f64]));
        let copy = outs.snapshot().expect("copies");
        outs.poison().expect("poisons");
        assert!(outs.0[0].is_nan() && outs.1[0] != 7 && outs.2.outputs[0].is_nan());
        assert!(!outs.compare_defaults(&copy).expect("compares").passed());
    }
}
