//! The problem size a call of a tuned function handles: the value of its `size(Axis = expr)`,
//! which the generated dispatch reads on every call to pick a per-size winner.

/// A value that `size(Axis = expr)` may name: any primitive integer, or a reference to one.
/// Negative values count as 0, values above `u64::MAX` as `u64::MAX`: sizes are counts.
pub trait SizeValue {
    /// The size as an unsigned count.
    fn size_value(&self) -> u64;
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl SizeValue for $t {
            #[inline(always)]
            fn size_value(&self) -> u64 {
                u64::try_from(*self).unwrap_or(u64::MAX)
            }
        }
    )*};
}

macro_rules! signed {
    ($($t:ty),*) => {$(
        impl SizeValue for $t {
            #[inline(always)]
            fn size_value(&self) -> u64 {
                if *self < 0 {
                    0
                } else {
                    u64::try_from(*self).unwrap_or(u64::MAX)
                }
            }
        }
    )*};
}

unsigned!(u8, u16, u32, u64, u128, usize);
signed!(i8, i16, i32, i64, i128, isize);

impl<T: SizeValue + ?Sized> SizeValue for &T {
    #[inline(always)]
    fn size_value(&self) -> u64 {
        (**self).size_value()
    }
}

impl<T: SizeValue + ?Sized> SizeValue for &mut T {
    #[inline(always)]
    fn size_value(&self) -> u64 {
        (**self).size_value()
    }
}

/// The size of `value`, as the generated dispatch reads it (`size(Elements = x.len())` becomes
/// `size_value(&(x.len()))`).
///
/// ```
/// use gputune_runtime::tuned::size_value;
///
/// assert_eq!(size_value(&1024usize), 1024);
/// assert_eq!(size_value(&-5i32), 0);
/// assert_eq!(size_value(&&7u8), 7);
/// ```
#[inline(always)]
pub fn size_value<T: SizeValue + ?Sized>(value: &T) -> u64 {
    value.size_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_integer_is_a_count() {
        assert_eq!(size_value(&u64::MAX), u64::MAX);
        assert_eq!(size_value(&u128::MAX), u64::MAX);
        assert_eq!(size_value(&i128::MIN), 0);
        assert_eq!(size_value(&i64::MAX), i64::MAX as u64);
        assert_eq!(size_value(&-1isize), 0);
        let mut n = 3u16;
        assert_eq!(size_value(&&mut n), 3);
    }
}
