//! A variant's label turned into its parameter values.

use crate::error::Error;

/// One variant of a tuned function: its label and the value of each parameter.
///
/// `#[tune]` declares, next to each function `name`, a constant `NAME_PARAMS: &[(&str, &str)]`
/// (same visibility as the function): each parameter's name and base value, in declaration
/// order. With it, a label turns into values:
///
/// ```
/// use gputune_runtime::tuned::Variant;
///
/// // What #[tune(ipt = [1, 2, 4, 8], tpb = …, base(ipt = 4, tpb = 256))] fn scale declares:
/// const SCALE_PARAMS: &[(&str, &str)] = &[("ipt", "4"), ("tpb", "256")];
///
/// let v = Variant::parse("ipt_8.tpb_128", SCALE_PARAMS)?;
/// assert_eq!(v.get::<u32>("ipt")?, 8);
/// assert_eq!(v.get::<u32>("tpb")?, 128);
/// let base = Variant::parse("base", SCALE_PARAMS)?;
/// assert_eq!(base.get::<u32>("ipt")?, 4);
/// # Ok::<(), gputune_runtime::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The label (`ipt_8.tpb_128`, or `base`).
    pub label: String,
    /// Each parameter's name and value as the label writes it, in declaration order.
    pub values: Vec<(&'static str, String)>,
}

impl Variant {
    /// Parses `label` (with or without the function's name in front: `scale.ipt_8.tpb_128`
    /// is read as `ipt_8.tpb_128` when the first parameter is not called `scale`) against
    /// `params`, the function's `NAME_PARAMS`. `base` gives the base values.
    ///
    /// Labels are `name_value` pairs joined by `.` in declaration order, so knowing the
    /// names makes them unambiguous even when names or values contain `_` or `.`.
    pub fn parse(label: &str, params: &[(&'static str, &'static str)]) -> Result<Variant, Error> {
        let bad = |why: &str| {
            let names: Vec<&str> = params.iter().map(|(n, _)| *n).collect();
            Error::Usage(format!(
                "`{label}` is not a variant label of parameters ({}): {why}",
                names.join(", ")
            ))
        };
        if label == "base" {
            return Ok(Variant {
                label: label.to_string(),
                values: params.iter().map(|(n, v)| (*n, (*v).to_string())).collect(),
            });
        }
        let mut rest = label;
        if let Some((first, _)) = params.first() {
            // `function.label`: drop a leading segment that cannot start the first pair.
            if !rest.starts_with(&format!("{first}_")) {
                if let Some((_, after)) = rest.split_once('.') {
                    if after == "base" {
                        return Variant::parse("base", params).map(|v| Variant {
                            label: label.to_string(),
                            ..v
                        });
                    }
                    rest = after;
                }
            }
        }
        let mut values = Vec::with_capacity(params.len());
        for (i, (name, _)) in params.iter().enumerate() {
            let pair = rest
                .strip_prefix(&format!("{name}_"))
                .ok_or_else(|| bad(&format!("expected `{name}_…` at `{rest}`")))?;
            let end = match params.get(i + 1) {
                Some((next, _)) => pair
                    .find(&format!(".{next}_"))
                    .ok_or_else(|| bad(&format!("no `{next}_…` after `{name}`")))?,
                None => pair.len(),
            };
            values.push((*name, pair[..end].to_string()));
            rest = pair[end..].strip_prefix('.').unwrap_or(&pair[end..]);
        }
        Ok(Variant {
            label: label.to_string(),
            values,
        })
    }

    /// The value of parameter `name`, parsed as `T` (`usize`, `u32`, `bool`, `String`, …).
    pub fn get<T: std::str::FromStr>(&self, name: &str) -> Result<T, Error> {
        let (_, text) = self
            .values
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "variant `{}` has no parameter `{name}`",
                    self.label
                ))
            })?;
        text.parse().map_err(|_| {
            Error::Usage(format!(
                "parameter `{name}` of variant `{}` is `{text}`, not a {}",
                self.label,
                std::any::type_name::<T>()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: &[(&str, &str)] = &[("ipt", "4"), ("tpb", "256")];

    #[test]
    fn labels_parse_into_values_and_base_into_the_base_values() {
        let v = Variant::parse("ipt_16.tpb_1024", PARAMS).expect("valid");
        assert_eq!(
            v.values,
            [("ipt", "16".to_string()), ("tpb", "1024".to_string())]
        );
        assert_eq!(v.get::<usize>("tpb").expect("int"), 1024);
        let prefixed = Variant::parse("scale.ipt_16.tpb_1024", PARAMS).expect("valid");
        assert_eq!(prefixed.values, v.values);
        for base in ["base", "scale.base"] {
            let b = Variant::parse(base, PARAMS).expect("base");
            assert_eq!(b.get::<u32>("ipt").expect("int"), 4);
            assert_eq!(b.get::<u32>("tpb").expect("int"), 256);
            assert_eq!(b.label, base);
        }
    }

    #[test]
    fn names_and_values_with_underscores_and_dots_parse() {
        const P: &[(&str, &str)] = &[("items_per", "1"), ("load", "ld_global"), ("fast", "true")];
        let v = Variant::parse("items_per_2.load_ld_ca.v2.fast_false", P).expect("valid");
        assert_eq!(
            v.values,
            [
                ("items_per", "2".to_string()),
                ("load", "ld_ca.v2".to_string()),
                ("fast", "false".to_string())
            ]
        );
        assert!(!v.get::<bool>("fast").expect("bool"));
        assert_eq!(v.get::<String>("load").expect("text"), "ld_ca.v2");
    }

    #[test]
    fn malformed_labels_and_wrong_types_are_usage_errors() {
        for label in ["ipt_8", "tpb_128.ipt_8", "ipt8.tpb_128", "", "x.y"] {
            match Variant::parse(label, PARAMS) {
                Err(Error::Usage(msg)) => assert!(msg.contains("ipt, tpb"), "{msg}"),
                other => panic!("{label}: {other:?}"),
            }
        }
        let v = Variant::parse("ipt_8.tpb_128", PARAMS).expect("valid");
        assert!(matches!(v.get::<u32>("wpt"), Err(Error::Usage(_))));
        assert!(matches!(v.get::<bool>("ipt"), Err(Error::Usage(_))));
    }
}
