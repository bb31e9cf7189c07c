//! Values, points and the enumeration of a space.

use crate::TuneSpec;

/// A parameter value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// An identifier, for choices such as load modifiers (`[ldg, ldca]`).
    Ident(String),
    /// A string literal.
    Str(String),
}

impl Value {
    /// The integer, if it is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The boolean, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(v) => Some(*v),
            _ => None,
        }
    }

    /// Whether two values are of the same kind (a parameter's values all are).
    pub fn same_kind(&self, other: &Value) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }

    /// The value as a C preprocessor define sees it: `8`, `-3`, `1`/`0` for booleans, and the
    /// text of identifiers and strings (`ldg`), so that a kernel's source can use every
    /// parameter of a variant as a macro.
    pub fn define_text(&self) -> String {
        match self {
            Value::Int(v) => v.to_string(),
            Value::Bool(v) => u8::from(*v).to_string(),
            Value::Ident(s) | Value::Str(s) => s.clone(),
        }
    }

    /// The value as a Rust literal: `8`, `-3`, `true`, `"ldg"` (identifiers become strings).
    pub fn rust_literal(&self) -> String {
        match self {
            Value::Int(v) => v.to_string(),
            Value::Bool(v) => v.to_string(),
            Value::Ident(s) | Value::Str(s) => format!("{s:?}"),
        }
    }

    /// The kind's name, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Int(_) => "integer",
            Value::Bool(_) => "boolean",
            Value::Ident(_) => "identifier",
            Value::Str(_) => "string",
        }
    }
}

impl std::fmt::Display for Value {
    /// How the value appears in labels: `8`, `true`, `ldg`, and a string's contents.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Ident(s) | Value::Str(s) => f.write_str(s),
        }
    }
}

/// One point of a space: a value for every parameter, in declaration order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Point {
    /// `(parameter name, value)` in declaration order.
    pub values: Vec<(String, Value)>,
}

impl Point {
    /// `ipt_8.tpb_128`: `name_value` pairs joined by `.` in declaration order. Stable across
    /// runs and machines because it depends only on the attribute.
    pub fn label(&self) -> String {
        self.values
            .iter()
            .map(|(n, v)| format!("{n}_{v}"))
            .collect::<Vec<_>>()
            .join(".")
    }

    /// The value of parameter `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

impl TuneSpec {
    /// Whether `values` (one per parameter, in declaration order) satisfies every `require`.
    pub fn admits(&self, values: &[(String, Value)]) -> bool {
        let lookup = |name: &str| {
            values
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        self.requires
            .iter()
            .all(|r| r.eval(&lookup) == Some(Value::Bool(true)))
    }

    /// Every point of the space in declaration order (the first parameter varies slowest),
    /// without the points `require` rejects.
    pub fn space(&self) -> Vec<Point> {
        let mut points: Vec<Vec<(String, Value)>> = vec![Vec::new()];
        for p in &self.params {
            points = points
                .into_iter()
                .flat_map(|prefix| {
                    p.values.iter().map(move |v| {
                        let mut q = prefix.clone();
                        q.push((p.name.clone(), v.clone()));
                        q
                    })
                })
                .collect();
        }
        points
            .into_iter()
            .filter(|values| self.admits(values))
            .map(|values| Point { values })
            .collect()
    }

    /// The base as a point.
    pub fn base_point(&self) -> Point {
        Point {
            values: self
                .params
                .iter()
                .zip(&self.base)
                .map(|(p, v)| (p.name.clone(), v.clone()))
                .collect(),
        }
    }
}
