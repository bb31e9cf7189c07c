//! The bench binary's command line, following nvbench's.

use crate::axis::{Axis, AxisValues};
use crate::error::{Error, Result};

/// Command line of a bench binary: the protocol's flags, one definition for the bench and
/// for `cargo gputune`.
pub use gputune_protocol::BenchArgs as Cli;

impl From<gputune_protocol::flags::FlagError> for Error {
    fn from(e: gputune_protocol::flags::FlagError) -> Error {
        Error::Usage(e.0)
    }
}

/// One `-a` override, parsed by the protocol's grammar.
pub use gputune_protocol::axis_spec::{AxisOverride, RawValues};

/// The most values one `-a` range may give an axis: every value is a state to run, so a
/// typo such as `[1:1000000000:1]` should be an error, not a run that never ends (the
/// grammar's limit per tuned parameter too).
pub const MAX_AXIS_VALUES: usize = 1 << 16;

/// Applies an `-a` override to a bench's axis.
pub trait ApplyOverride {
    /// The new values of `axis` under this override.
    fn apply(&self, axis: &Axis) -> Result<AxisValues>;
}

impl ApplyOverride for AxisOverride {
    fn apply(&self, axis: &Axis) -> Result<AxisValues> {
        let bad = |why: String| Error::Usage(format!("axis `{}`: {why}", axis.name));
        let ints = |what: &str| -> Result<Vec<i64>> {
            match &self.values {
                RawValues::List(items) => items
                    .iter()
                    .map(|s| {
                        s.parse::<i64>()
                            .map_err(|_| bad(format!("`{s}` is not {what}")))
                    })
                    .collect(),
                RawValues::Range { start, stop, step } => {
                    let p = |s: &String| {
                        s.parse::<i64>()
                            .map_err(|_| bad(format!("`{s}` is not {what}")))
                    };
                    let (a, b, s) = (p(start)?, p(stop)?, p(step)?);
                    if s <= 0 {
                        return Err(bad(format!("range step must be positive, not {s}")));
                    }
                    if b < a {
                        return Err(bad(format!("range [{a}:{b}] is empty")));
                    }
                    let count = (i128::from(b) - i128::from(a)) / i128::from(s) + 1;
                    if count > MAX_AXIS_VALUES as i128 {
                        return Err(bad(format!(
                            "range [{a}:{b}:{s}] has {count} values; at most {MAX_AXIS_VALUES} \
                             are allowed"
                        )));
                    }
                    Ok((a..=b).step_by(s as usize).collect())
                }
            }
        };
        match &axis.values {
            AxisValues::Int64(_) | AxisValues::Int64Pow2(_) => {
                let is_pow2_axis = matches!(axis.values, AxisValues::Int64Pow2(_));
                if is_pow2_axis && !self.pow2 {
                    return Err(bad(format!(
                        "it is a power-of-two axis: write `{}[pow2]=…` with exponents",
                        axis.name
                    )));
                }
                if self.pow2 {
                    let exps = ints("an exponent")?;
                    let exps = exps
                        .into_iter()
                        .map(|e| {
                            u32::try_from(e)
                                .ok()
                                .filter(|e| *e <= 62)
                                .ok_or_else(|| bad(format!("exponent {e} is outside 0..=62")))
                        })
                        .collect::<Result<Vec<u32>>>()?;
                    Ok(AxisValues::Int64Pow2(exps))
                } else {
                    Ok(AxisValues::Int64(ints("an integer")?))
                }
            }
            _ if self.pow2 => Err(bad("[pow2] applies only to integer axes".into())),
            AxisValues::Float64(_) => {
                let p = |s: &String| {
                    s.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| bad(format!("`{s}` is not a number")))
                };
                match &self.values {
                    RawValues::List(items) => Ok(AxisValues::Float64(
                        items.iter().map(p).collect::<Result<_>>()?,
                    )),
                    RawValues::Range { start, stop, step } => {
                        let (a, b, s) = (p(start)?, p(stop)?, p(step)?);
                        if s <= 0.0 || b < a {
                            return Err(bad(format!(
                                "range [{a}:{b}:{s}] is empty or its step is not positive"
                            )));
                        }
                        // Count steps rather than accumulate, so 0:1:0.1 ends at 1.0 exactly once.
                        let steps = ((b - a) / s + 1e-9).floor();
                        if steps.is_nan() || steps >= MAX_AXIS_VALUES as f64 {
                            return Err(bad(format!(
                                "range [{a}:{b}:{s}] has more than {MAX_AXIS_VALUES} values"
                            )));
                        }
                        let n = steps as usize;
                        Ok(AxisValues::Float64(
                            (0..=n).map(|i| a + i as f64 * s).collect(),
                        ))
                    }
                }
            }
            AxisValues::String(_) => match &self.values {
                RawValues::List(items) => Ok(AxisValues::String(items.clone())),
                RawValues::Range { .. } => {
                    Err(bad("a string axis takes a list, not a range".into()))
                }
            },
            AxisValues::Type(declared) => match &self.values {
                RawValues::List(items) => {
                    for t in items {
                        if !declared.contains(t) {
                            return Err(bad(format!(
                                "type `{t}` is not declared; declared: {}",
                                declared.join(", ")
                            )));
                        }
                    }
                    Ok(AxisValues::Type(items.clone()))
                }
                RawValues::Range { .. } => Err(bad("a type axis takes a list, not a range".into())),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(name: &str, values: AxisValues) -> Axis {
        Axis {
            name: name.into(),
            values,
        }
    }

    #[test]
    fn overrides_parse() {
        let o = AxisOverride::parse("Elements{io}[pow2]=[16:28:4]").expect("valid");
        assert_eq!(o.name, "Elements{io}");
        assert!(o.pow2);
        let a = axis("Elements{io}", AxisValues::Int64Pow2(vec![10]));
        assert_eq!(
            o.apply(&a).expect("valid"),
            AxisValues::Int64Pow2(vec![16, 20, 24, 28])
        );

        let o = AxisOverride::parse("N=[1, 2,3]").expect("valid");
        let a = axis("N", AxisValues::Int64(vec![0]));
        assert_eq!(
            o.apply(&a).expect("valid"),
            AxisValues::Int64(vec![1, 2, 3])
        );
        let o = AxisOverride::parse("N=7").expect("valid");
        assert_eq!(o.apply(&a).expect("valid"), AxisValues::Int64(vec![7]));
        let o = AxisOverride::parse("N[pow2]=3").expect("valid");
        assert_eq!(o.apply(&a).expect("valid"), AxisValues::Int64Pow2(vec![3]));

        let f = axis("Alpha", AxisValues::Float64(vec![0.5]));
        let o = AxisOverride::parse("Alpha=[0:1:0.25]").expect("valid");
        assert_eq!(
            o.apply(&f).expect("valid"),
            AxisValues::Float64(vec![0.0, 0.25, 0.5, 0.75, 1.0])
        );
    }

    #[test]
    fn a_range_with_too_many_values_is_refused_not_allocated() {
        // Found by the generated inputs (tests/fuzz/regressions/axis-override): a range of
        // 3e18 values was collected, a capacity overflow.
        let n = axis("N", AxisValues::Int64(vec![0]));
        let o = AxisOverride::parse("N=[1:9223372036854775807:3]").expect("parses");
        let err = o.apply(&n).expect_err("too many").to_string();
        assert!(err.contains("at most 65536"), "{err}");
        let o =
            AxisOverride::parse("N=[-9223372036854775808:9223372036854775807:1]").expect("parses");
        assert!(o.apply(&n).is_err());
        let o = AxisOverride::parse("N=[1:65536:1]").expect("parses");
        assert_eq!(o.apply(&n).map(|v| v.len()).ok(), Some(65536));
        let f = axis("Alpha", AxisValues::Float64(vec![0.5]));
        for spec in ["Alpha=[0:1e300:1e-300]", "Alpha=[0:1e9:1]"] {
            let o = AxisOverride::parse(spec).expect("parses");
            assert!(o.apply(&f).is_err(), "{spec}");
        }
    }

    #[test]
    fn bad_overrides_say_what_is_allowed() {
        for spec in [
            "Elements",
            "=3",
            "N=[1,2",
            "N=[1::2:3]",
            "N[log]=3",
            "N=[1,,2]",
        ] {
            let err = AxisOverride::parse(spec).expect_err(spec).to_string();
            assert!(err.contains("write Name=v"), "{spec}: {err}");
        }
        let pow2 = axis("Elements{io}", AxisValues::Int64Pow2(vec![10]));
        let err = AxisOverride::parse("Elements{io}=1024")
            .map_err(Error::from)
            .and_then(|o| o.apply(&pow2));
        assert!(err
            .expect_err("needs [pow2]")
            .to_string()
            .contains("[pow2]"));
        let ints = axis("N", AxisValues::Int64(vec![0]));
        let err = AxisOverride::parse("N=abc")
            .map_err(Error::from)
            .and_then(|o| o.apply(&ints));
        assert!(err
            .expect_err("not an int")
            .to_string()
            .contains("`abc` is not an integer"));
        let err = AxisOverride::parse("N=[5:1]")
            .map_err(Error::from)
            .and_then(|o| o.apply(&ints));
        assert!(err.expect_err("empty").to_string().contains("empty"));
        let types = axis("T{ct}", AxisValues::Type(vec!["f32".into(), "f64".into()]));
        let err = AxisOverride::parse("T{ct}=i8")
            .map_err(Error::from)
            .and_then(|o| o.apply(&types));
        assert!(err
            .expect_err("undeclared")
            .to_string()
            .contains("declared: f32, f64"));
    }
}
