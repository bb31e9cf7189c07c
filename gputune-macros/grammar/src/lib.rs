//! The `#[tune]` grammar and the enumeration of its space, written once.
//!
//! The macro (`gputune-macros`), the build-script helper and `cargo gputune` all parse
//! attributes and enumerate spaces through this crate, so the three can never disagree on
//! what a space holds or how a variant is labelled. It lives under `gputune-macros/` to keep
//! the workspace's top-level layout, and depends on neither the runtime nor the macro crate,
//! so there is no dependency cycle.
//!
//! ```
//! let spec = gputune_grammar::parse_str(
//!     "ipt = 1..=4, tpb = pow2(5..=6), require(ipt * tpb <= 128), base(ipt = 2, tpb = 32)",
//! ).expect("valid");
//! let labels: Vec<String> = spec.space().iter().map(|p| p.label()).collect();
//! assert_eq!(labels, ["ipt_1.tpb_32", "ipt_1.tpb_64", "ipt_2.tpb_32", "ipt_2.tpb_64", "ipt_3.tpb_32", "ipt_4.tpb_32"]);
//! ```

mod expr;
mod parse;
mod space;

pub use expr::{BinaryOp, Expr, UnaryOp};
pub use parse::{parse_str, parse_tokens};
pub use space::{Point, Value};

/// What separates a variant's values in its `TUNED` (`\u{1f}`, the unit separator, which no
/// define text holds).
pub const VALUE_SEPARATOR: &str = "\u{1f}";

/// Where the build helper writes the table of what nvcc made of a crate's CUDA file, relative
/// to `OUT_DIR`, and where `nvcc_kernel!` (`kind` `nvcc`) and `launchers!` (`launchers`) read
/// it: `gputune/nvcc/src_scale_cu.rs` for `src/scale.cu`.
pub fn cuda_table_file(kind: &str, path: &str) -> String {
    let stem: String = path
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("gputune/{kind}/{stem}.rs")
}

/// A parsed `#[tune(...)]` attribute.
#[derive(Debug, Clone, PartialEq)]
pub struct TuneSpec {
    /// Parameters in declaration order.
    pub params: Vec<Param>,
    /// `require(...)` predicates; a point is in the space when all hold.
    pub requires: Vec<Expr>,
    /// The production default, one value per parameter, in declaration order.
    pub base: Vec<Value>,
    /// `size(Axis = expr, …)`: each runtime axis a call's workload has, and the expression of
    /// its value. Production builds dispatch per-size winners on the first ([`TuneSpec::size`]);
    /// capture records them all (a shape: 4096 × 1 is not 1 × 4096).
    pub sizes: Vec<SizeSpec>,
}

/// `size(Elements = n)`: the value of the bench's runtime axis `Elements` that a call of the
/// function handles, as an expression of its arguments (`n`, `x.len()`). Production builds
/// evaluate it on every call and run the `gputune.toml` winner of the size range it falls in
/// (docs/gputune-toml.md). Any integer type; a negative value counts as 0.
#[derive(Debug, Clone)]
pub struct SizeSpec {
    /// The runtime axis, without marks (`Elements`, not `Elements{io}`).
    pub axis: String,
    /// The expression as source text (what the build helper and `cargo gputune` record).
    pub expr: String,
    /// The expression's tokens, with their spans: the macro evaluates these, so that a
    /// mistake in them is reported where it was written.
    pub tokens: proc_macro2::TokenStream,
}

impl PartialEq for SizeSpec {
    /// Tokens carry spans, which never compare equal across parses; the text does.
    fn eq(&self, other: &SizeSpec) -> bool {
        self.axis == other.axis && self.expr == other.expr
    }
}

/// One tuned parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Its name as written (`ipt`); the body sees the upper-case const (`IPT`).
    pub name: String,
    /// How the values were written, for listings.
    pub form: Form,
    /// Its values, in order.
    pub values: Vec<Value>,
}

impl Param {
    /// The name of the const the body sees: the parameter name in upper case.
    pub fn const_name(&self) -> String {
        self.name.to_uppercase()
    }
}

/// The Rust type of a parameter's `const`.
///
/// Integers are `usize`, or `isize` when any value (or the base) is negative; booleans are
/// `bool`; identifiers and strings are `&'static str`. The macro and the build helper both
/// ask this, so a variant's constants have the same types as the base's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstType {
    /// `usize`.
    Usize,
    /// `isize`.
    Isize,
    /// `bool`.
    Bool,
    /// `&str` (a `const` of it is `'static`).
    Str,
}

impl ConstType {
    /// The type as Rust source.
    pub fn rust(self) -> &'static str {
        match self {
            ConstType::Usize => "usize",
            ConstType::Isize => "isize",
            ConstType::Bool => "bool",
            ConstType::Str => "&str",
        }
    }
}

impl TuneSpec {
    /// The size axis per-size winners dispatch on: the first of `size(…)`, if declared.
    pub fn size(&self) -> Option<&SizeSpec> {
        self.sizes.first()
    }

    /// The `TUNED` item every variant's body sees ([`TuneSpec::tuned_item_with`]), with the
    /// function's table of parameters written inline: for a build with one variant (base
    /// alone, or the macro without a build script).
    pub fn tuned_item(&self, function: &str, values: &[&Value]) -> String {
        self.tuned_item_with(function, values, &self.params_table())
    }

    /// The `TUNED` item of the variant whose values are `values`, with `table` the path of
    /// (or the expression for) the function's table of parameters ([`TuneSpec::params_table`]):
    /// `Tuned { function: "scale", params: TABLE, values: "8\u{1f}128" }`. The table (each
    /// parameter's declared name, `const` name and base value as a define writes it) is the
    /// same for every variant of a function, so a dispatch of many variants declares it once
    /// and each variant adds only its values, one string; from these a kernel handle makes
    /// the `-D` options of this variant and of every other one it prepares. Written here once
    /// for the macro and the build helper.
    pub fn tuned_item_with(&self, function: &str, values: &[&Value], table: &str) -> String {
        let values: Vec<String> = values.iter().map(|v| v.define_text()).collect();
        format!(
            "#[allow(dead_code)] const TUNED: ::gputune_runtime::tuned::Tuned = \
             ::gputune_runtime::tuned::Tuned::new({function:?}, {table}, {:?});",
            values.join(VALUE_SEPARATOR)
        )
    }

    /// The function's table of parameters, as a Rust expression of type
    /// `&'static [(&str, &str, &str)]`: per parameter, its declared name, its `const` name and
    /// its base value as a define writes it (`&[("ipt", "IPT", "4"), …]`).
    pub fn params_table(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .zip(&self.base)
            .map(|(p, b)| {
                format!(
                    "({:?}, {:?}, {:?})",
                    p.name,
                    p.const_name(),
                    b.define_text()
                )
            })
            .collect();
        format!("&[{}]", params.join(", "))
    }

    /// The type of the `const` of parameter `index` (declaration order).
    pub fn const_type(&self, index: usize) -> ConstType {
        let base = self.base.get(index);
        match base {
            Some(Value::Bool(_)) => ConstType::Bool,
            Some(Value::Ident(_) | Value::Str(_)) => ConstType::Str,
            _ => {
                let negative = self.params[index]
                    .values
                    .iter()
                    .chain(base)
                    .any(|v| v.as_int().is_some_and(|i| i < 0));
                if negative {
                    ConstType::Isize
                } else {
                    ConstType::Usize
                }
            }
        }
    }
}

/// How a parameter's values were written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// `a..=b`, `a..b` or `(a..=b).step_by(s)`.
    Range,
    /// `pow2(a..=b)`: the values are `2^a … 2^b`.
    Pow2,
    /// `[v1, v2, …]`.
    List,
}

/// Why an attribute is malformed. The span points at the offending tokens.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct GrammarError {
    /// What is wrong and what is allowed.
    pub message: String,
    /// Where.
    pub span: proc_macro2::Span,
}

impl GrammarError {
    pub(crate) fn new(span: proc_macro2::Span, message: impl Into<String>) -> GrammarError {
        GrammarError {
            message: message.into(),
            span,
        }
    }

    /// As a `syn::Error`, for `compile_error!` output.
    pub fn to_syn(&self) -> syn::Error {
        syn::Error::new(self.span, &self.message)
    }
}
