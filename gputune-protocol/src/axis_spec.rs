//! The `-a` axis-override grammar: `Name=v`, `Name=[a,b,c]`, `Name=[start:stop:step]`,
//! `Name[pow2]=…`. Parsed here, by both sides: `cargo gputune` checks what the user wrote before
//! anything is built, and the bench applies it to its axes.

use crate::flags::FlagError;

/// The values part of an `-a` override, not yet typed.
#[derive(Debug, Clone, PartialEq)]
pub enum RawValues {
    /// `v` or `[a,b,c]`.
    List(Vec<String>),
    /// `[start:stop:step]`, inclusive of `stop`; step defaults to 1.
    Range {
        /// First value.
        start: String,
        /// Last value (inclusive).
        stop: String,
        /// Step.
        step: String,
    },
}

/// One `-a` override.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisOverride {
    /// The axis name as written (marks allowed or omitted).
    pub name: String,
    /// Whether `[pow2]` was written: the values are exponents.
    pub pow2: bool,
    /// The values.
    pub values: RawValues,
}

impl AxisOverride {
    /// Parses `Name=v`, `Name=[a,b]`, `Name=[start:stop:step]`, `Name[pow2]=…`.
    pub fn parse(spec: &str) -> Result<AxisOverride, FlagError> {
        let usage = |why: &str| {
            FlagError(format!(
                "bad axis override `{spec}`: {why}; write Name=v, Name=[a,b,c], Name=[start:stop:step] or Name[pow2]=…"
            ))
        };
        let (lhs, rhs) = spec.split_once('=').ok_or_else(|| usage("no `=`"))?;
        let lhs = lhs.trim();
        let (name, pow2) = match lhs.strip_suffix("[pow2]") {
            Some(n) => (n.trim(), true),
            None => (lhs, false),
        };
        if name.is_empty() {
            return Err(usage("no axis name"));
        }
        if name.contains('[') {
            return Err(usage("the only flag is [pow2]"));
        }
        let rhs = rhs.trim();
        let values = if let Some(inner) = rhs.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| usage("`[` without `]`"))?;
            if inner.contains(':') {
                let parts: Vec<&str> = inner.split(':').map(str::trim).collect();
                match parts.as_slice() {
                    [start, stop] => RawValues::Range {
                        start: start.to_string(),
                        stop: stop.to_string(),
                        step: "1".into(),
                    },
                    [start, stop, step] => RawValues::Range {
                        start: start.to_string(),
                        stop: stop.to_string(),
                        step: step.to_string(),
                    },
                    _ => return Err(usage("a range is [start:stop] or [start:stop:step]")),
                }
            } else {
                let items: Vec<String> = inner.split(',').map(|s| s.trim().to_string()).collect();
                if items.iter().any(String::is_empty) {
                    return Err(usage("empty value in list"));
                }
                RawValues::List(items)
            }
        } else {
            if rhs.is_empty() {
                return Err(usage("no value"));
            }
            RawValues::List(vec![rhs.to_string()])
        };
        Ok(AxisOverride {
            name: name.to_string(),
            pow2,
            values,
        })
    }
}
