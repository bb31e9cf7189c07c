//! Benchmark axes: the names, kinds and values a bench is instantiated over.
//!
//! Axis names may carry CUB's marks: `{ct}` for a compile-time workload axis and `{io}` for
//! an importance-ordered axis whose later values matter more. Marks stay part of the name
//! (they appear in JSON and tables), and [`AxisName`] separates them for code that needs
//! the plain name.

use serde::Serialize;

/// An axis name split into its plain part and CUB's marks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxisName {
    /// The name without marks: `Elements` for `Elements{io}`.
    pub plain: String,
    /// `{ct}`: the axis is a compile-time workload axis.
    pub compile_time: bool,
    /// `{io}`: the axis is importance-ordered.
    pub importance_ordered: bool,
}

impl AxisName {
    /// Splits `Elements{io}` into `Elements` and its marks. Unknown `{…}` marks stay in the
    /// plain name, so that nothing a user wrote is silently dropped.
    pub fn parse(full: &str) -> AxisName {
        let mut plain = full.to_string();
        let mut compile_time = false;
        let mut importance_ordered = false;
        loop {
            if let Some(rest) = plain.strip_suffix("{ct}") {
                compile_time = true;
                plain = rest.to_string();
            } else if let Some(rest) = plain.strip_suffix("{io}") {
                importance_ordered = true;
                plain = rest.to_string();
            } else {
                break;
            }
        }
        AxisName {
            plain,
            compile_time,
            importance_ordered,
        }
    }
}

/// The kind and values of one axis.
#[derive(Debug, Clone, PartialEq)]
pub enum AxisValues {
    /// Integer values.
    Int64(Vec<i64>),
    /// Powers of two, stored as exponents: the values are `2^e`.
    Int64Pow2(Vec<u32>),
    /// Floating-point values.
    Float64(Vec<f64>),
    /// Strings.
    String(Vec<String>),
    /// Rust types a generic bench is instantiated for, by name (compile-time workloads).
    Type(Vec<String>),
}

impl AxisValues {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            AxisValues::Int64(v) => v.len(),
            AxisValues::Int64Pow2(v) => v.len(),
            AxisValues::Float64(v) => v.len(),
            AxisValues::String(v) => v.len(),
            AxisValues::Type(v) => v.len(),
        }
    }

    /// Whether the axis has no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The kind as nvbench's JSON names it.
    pub fn kind(&self) -> &'static str {
        match self {
            AxisValues::Int64(_) | AxisValues::Int64Pow2(_) => "int64",
            AxisValues::Float64(_) => "float64",
            AxisValues::String(_) => "string",
            AxisValues::Type(_) => "type",
        }
    }

    /// The value at `index`.
    pub fn value(&self, index: usize) -> Option<AxisValue> {
        Some(match self {
            AxisValues::Int64(v) => AxisValue::Int64(*v.get(index)?),
            AxisValues::Int64Pow2(v) => {
                let e = *v.get(index)?;
                AxisValue::Int64Pow2 {
                    exponent: e,
                    value: 1i64 << e,
                }
            }
            AxisValues::Float64(v) => AxisValue::Float64(*v.get(index)?),
            AxisValues::String(v) => AxisValue::String(v.get(index)?.clone()),
            AxisValues::Type(v) => AxisValue::Type(v.get(index)?.clone()),
        })
    }
}

/// A named axis of a bench.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The full name, marks included (`Elements{io}`).
    pub name: String,
    /// Its values.
    pub values: AxisValues,
}

impl Axis {
    /// The name split into plain part and marks.
    pub fn parsed_name(&self) -> AxisName {
        AxisName::parse(&self.name)
    }

    /// Whether `name` refers to this axis: the full name, or the plain name without marks.
    pub fn answers_to(&self, name: &str) -> bool {
        name_refers_to(name, &self.name)
    }
}

/// Whether `query` names the axis called `full`: its full name, or its plain name without
/// marks (`Elements` for `Elements{io}`).
pub fn name_refers_to(query: &str, full: &str) -> bool {
    full == query || AxisName::parse(full).plain == query
}

/// One value of an axis, as a state sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AxisValue {
    /// An integer.
    Int64(i64),
    /// A power of two.
    Int64Pow2 {
        /// The exponent.
        exponent: u32,
        /// `2^exponent`.
        value: i64,
    },
    /// A float.
    Float64(f64),
    /// A string.
    String(String),
    /// A type name.
    Type(String),
}

impl AxisValue {
    /// How the value is written in tables and state names: `2^20` for powers of two.
    pub fn display(&self) -> String {
        match self {
            AxisValue::Int64(v) => v.to_string(),
            AxisValue::Int64Pow2 { exponent, .. } => format!("2^{exponent}"),
            AxisValue::Float64(v) => format!("{v}"),
            AxisValue::String(s) | AxisValue::Type(s) => s.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_split_from_the_name() {
        let n = AxisName::parse("Elements{io}");
        assert_eq!(n.plain, "Elements");
        assert!(n.importance_ordered && !n.compile_time);
        let n = AxisName::parse("T{ct}");
        assert_eq!(n.plain, "T");
        assert!(n.compile_time && !n.importance_ordered);
        let n = AxisName::parse("X{ct}{io}");
        assert_eq!(n.plain, "X");
        assert!(n.compile_time && n.importance_ordered);
        let n = AxisName::parse("Weird{zz}");
        assert_eq!(n.plain, "Weird{zz}");
    }

    #[test]
    fn pow2_values_are_expanded() {
        let v = AxisValues::Int64Pow2(vec![4, 10]);
        assert_eq!(
            v.value(1),
            Some(AxisValue::Int64Pow2 {
                exponent: 10,
                value: 1024
            })
        );
        assert_eq!(v.value(1).map(|v| v.display()), Some("2^10".to_string()));
        assert_eq!(v.value(2), None);
    }

    #[test]
    fn an_axis_answers_to_its_plain_name() {
        let a = Axis {
            name: "Elements{io}".into(),
            values: AxisValues::Int64(vec![1]),
        };
        assert!(a.answers_to("Elements{io}"));
        assert!(a.answers_to("Elements"));
        assert!(!a.answers_to("Elem"));
    }
}
