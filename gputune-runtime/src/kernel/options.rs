//! Tuning parameters that are compiler options: how a parameter's value becomes an NVRTC
//! option ([`OptionRule`]), declared once per kernel with [`Kernel::option_params`].
//!
//! [`Kernel::option_params`]: super::Kernel::option_params

use crate::error::{Error, Result};

/// How a tuning parameter's value becomes a compiler option. The parameter stays a define
/// too, so the source may read it (`#if FAST_MATH`).
///
/// ```
/// use gputune_runtime::kernel::OptionRule;
///
/// assert_eq!(OptionRule::MaxRegisters.option("64").unwrap().as_deref(), Some("--maxrregcount=64"));
/// assert_eq!(OptionRule::MaxRegisters.option("0").unwrap(), None);
/// assert_eq!(OptionRule::Flag("--use_fast_math").option("true").unwrap().as_deref(), Some("--use_fast_math"));
/// assert_eq!(OptionRule::Flag("--use_fast_math").option("false").unwrap(), None);
/// assert_eq!(OptionRule::Template("--fmad={}").option("false").unwrap().as_deref(), Some("--fmad=false"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionRule {
    /// `--maxrregcount=V`: at most V registers a thread; `0` sets no limit (no option).
    MaxRegisters,
    /// The option when the value is true (`true` or a non-zero integer), nothing when it is
    /// false (`false` or `0`): `Flag("--use_fast_math")`, `Flag("-lineinfo")`.
    Flag(&'static str),
    /// The option with `{}` replaced by the value: `Template("--fmad={}")`.
    Template(&'static str),
}

impl OptionRule {
    /// The option for `value` (as a label writes it: `64`, `true`), `None` for no option;
    /// [`Error::Compile`] for a value the rule cannot take (the variant does not build).
    pub fn option(&self, value: &str) -> Result<Option<String>> {
        match self {
            OptionRule::MaxRegisters => match value.parse::<u32>() {
                Ok(0) => Ok(None),
                Ok(n) => Ok(Some(format!("--maxrregcount={n}"))),
                Err(_) => Err(Error::Compile(format!(
                    "a register limit must be a non-negative integer (0 for none), not {value:?}"
                ))),
            },
            OptionRule::Flag(flag) => match value {
                "true" | "1" => Ok(Some((*flag).to_string())),
                "false" | "0" => Ok(None),
                other => match other.parse::<i64>() {
                    Ok(n) => Ok((n != 0).then(|| (*flag).to_string())),
                    Err(_) => Err(Error::Compile(format!(
                        "the flag {flag} takes true/false or an integer, not {value:?}"
                    ))),
                },
            },
            OptionRule::Template(template) => Ok(Some(template.replace("{}", value))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_are_compile_errors_that_name_the_rule() {
        let e = OptionRule::MaxRegisters
            .option("lots")
            .expect_err("not a number");
        assert!(
            matches!(&e, Error::Compile(m) if m.contains("\"lots\"")),
            "{e}"
        );
        let e = OptionRule::Flag("--use_fast_math")
            .option("maybe")
            .expect_err("not a boolean");
        assert!(
            matches!(&e, Error::Compile(m) if m.contains("--use_fast_math")),
            "{e}"
        );
        assert_eq!(
            OptionRule::Flag("-lineinfo")
                .option("2")
                .expect("an integer"),
            Some("-lineinfo".to_string())
        );
    }
}
