//! Parsing `#[tune(...)]` attribute tokens into a [`TuneSpec`].

use proc_macro2::{Span, TokenStream};
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Token, UnOp};

use crate::expr::{BinaryOp, Expr, UnaryOp};
use crate::space::Value;
use crate::{Form, GrammarError, Param, SizeSpec, TuneSpec};

const FORMS: &str = "write `name = a..=b`, `name = a..b`, `name = (a..=b).step_by(s)`, `name = pow2(a..=b)` or `name = [v1, v2, …]` (integers, booleans, identifiers or strings)";
const ITEMS: &str =
    "expected `name = values`, `require(expr)`, `base(name = value, …)` or `size(Axis = expr)`";
const SIZE: &str = "size(…) names the bench's runtime axis and the expression of the function's arguments that holds its value in a call: `size(Elements = n)`, `size(Elements = x.len())`, `size(\"Elements\" = n)`, or several axes of a shape, `size(Rows = rows, Cols = cols)`";
const REQUIRE: &str = "require(…) allows integer literals, booleans, parameter names, + - * / %, comparisons, &&, ||, !, min(a, b) and max(a, b)";

/// Largest exponent `pow2` accepts: 2^62 still fits an `i64`.
const MAX_POW2: i64 = 62;
/// Largest number of values one parameter may have; a typo such as `1..=100000000` should be
/// an error, not an hour of enumeration.
const MAX_VALUES: usize = 1 << 16;
/// Largest number of combinations of the parameters' values (before `require`): fifty times
/// the largest space of the community's benchmark data (CLBlast's GEMM, 82,944), and small
/// enough that enumerating it stays within a build's memory.
const MAX_POINTS: usize = 1 << 22;

enum Item {
    Param(syn::Ident, syn::Expr),
    Require(Span, syn::Expr),
    Base(Span, Punctuated<syn::MetaNameValue, Token![,]>),
    Size(Span, Vec<SizeSpec>),
}

fn parse_item(input: ParseStream<'_>) -> syn::Result<Item> {
    let ident: syn::Ident = input
        .parse()
        .map_err(|e| syn::Error::new(e.span(), ITEMS))?;
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        let value: syn::Expr = input.parse()?;
        return Ok(Item::Param(ident, value));
    }
    if input.peek(syn::token::Paren) && (ident == "require" || ident == "base" || ident == "size") {
        let content;
        syn::parenthesized!(content in input);
        if ident == "size" {
            return Ok(Item::Size(ident.span(), parse_sizes(&content)?));
        }
        return if ident == "require" {
            Ok(Item::Require(ident.span(), content.parse()?))
        } else {
            Ok(Item::Base(
                ident.span(),
                Punctuated::parse_terminated(&content)?,
            ))
        };
    }
    Err(syn::Error::new(ident.span(), ITEMS))
}

/// The inside of `size(…)`: one or more `Axis = expr`, separated by commas, each axis once.
fn parse_sizes(input: ParseStream<'_>) -> syn::Result<Vec<SizeSpec>> {
    let mut out: Vec<SizeSpec> = Vec::new();
    loop {
        let span = input.span();
        let s = parse_size(input)?;
        if out.iter().any(|o| o.axis == s.axis) {
            return Err(syn::Error::new(
                span,
                format!("size axis `{}` is given twice", s.axis),
            ));
        }
        out.push(s);
        if input.is_empty() {
            return Ok(out);
        }
        input.parse::<Token![,]>()?;
        if input.is_empty() {
            return Ok(out);
        }
    }
}

/// One `Axis = expr` of `size(…)`: an axis (identifier or string, marks dropped), `=`, an
/// expression (up to a comma outside brackets).
fn parse_size(input: ParseStream<'_>) -> syn::Result<SizeSpec> {
    // Not `input.error`: at the end of the parentheses it would start "unexpected end of input".
    let bad = || syn::Error::new(input.span(), SIZE);
    let axis = if input.peek(syn::LitStr) {
        input.parse::<syn::LitStr>()?.value()
    } else if input.peek(syn::Ident) {
        input.parse::<syn::Ident>()?.to_string()
    } else {
        return Err(bad());
    };
    // `Elements{io}` as a string: the marks are the bench's business, not the size's.
    let axis = axis
        .split('{')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    if axis.is_empty() {
        return Err(bad());
    }
    if !input.peek(Token![=]) {
        return Err(bad());
    }
    input.parse::<Token![=]>()?;
    if input.is_empty() || input.peek(Token![,]) {
        return Err(bad());
    }
    let expr: syn::Expr = input
        .parse()
        .map_err(|e| syn::Error::new(e.span(), format!("{e}; {SIZE}")))?;
    let tokens: TokenStream = quote::ToTokens::to_token_stream(&expr);
    Ok(SizeSpec {
        axis,
        expr: tokens.to_string(),
        tokens,
    })
}

fn from_syn(e: syn::Error) -> GrammarError {
    GrammarError::new(e.span(), e.to_string())
}

/// Parses a `#[tune(...)]` attribute from source text (what the build helper and the CLI
/// read out of files).
pub fn parse_str(text: &str) -> Result<TuneSpec, GrammarError> {
    let tokens: TokenStream = text.parse().map_err(|e: proc_macro2::LexError| {
        GrammarError::new(e.span(), format!("not Rust tokens: {e}"))
    })?;
    parse_tokens(tokens)
}

/// Parses the tokens inside `#[tune(...)]`.
pub fn parse_tokens(tokens: TokenStream) -> Result<TuneSpec, GrammarError> {
    let items = (|input: ParseStream<'_>| {
        Punctuated::<Item, Token![,]>::parse_terminated_with(input, parse_item)
    })
    .parse2(tokens)
    .map_err(from_syn)?;
    let mut params: Vec<Param> = Vec::new();
    let mut requires: Vec<(Span, syn::Expr)> = Vec::new();
    let mut base: Option<(Span, Punctuated<syn::MetaNameValue, Token![,]>)> = None;
    let mut sizes: Vec<SizeSpec> = Vec::new();
    for item in items {
        match item {
            Item::Param(name, expr) => {
                let n = name.to_string();
                if n == "require" || n == "base" {
                    return Err(GrammarError::new(
                        name.span(),
                        format!("`{n}` is reserved: write `{n}(…)`"),
                    ));
                }
                if params.iter().any(|p| p.name == n) {
                    return Err(GrammarError::new(
                        name.span(),
                        format!("duplicate parameter `{n}`: each parameter is declared once"),
                    ));
                }
                let (form, values) = values_of(&expr).map_err(|mut e| {
                    // `size = n` reads like the size declaration, which is `size(Axis = n)`.
                    if n == "size" && e.message.starts_with("unknown form") {
                        e.message
                            .push_str(&format!("; to dispatch on a problem size, {SIZE}"));
                    }
                    e
                })?;
                params.push(Param {
                    name: n,
                    form,
                    values,
                });
            }
            Item::Require(span, e) => requires.push((span, e)),
            Item::Base(span, list) => {
                if base.is_some() {
                    return Err(GrammarError::new(span, "`base(…)` is given twice"));
                }
                base = Some((span, list));
            }
            Item::Size(span, s) => {
                if !sizes.is_empty() {
                    return Err(GrammarError::new(span, "`size(…)` is given twice"));
                }
                sizes = s;
            }
        }
    }
    if params.is_empty() {
        return Err(GrammarError::new(
            Span::call_site(),
            format!("#[tune] needs at least one parameter: {FORMS}"),
        ));
    }
    // Enumeration builds every combination before `require` filters them: a product of a
    // few large ranges (each within MAX_VALUES) would take the build's memory and time.
    let points = params
        .iter()
        .try_fold(1usize, |n, p| n.checked_mul(p.values.len()))
        .filter(|n| *n <= MAX_POINTS);
    if points.is_none() {
        let counts: Vec<String> = params
            .iter()
            .map(|p| format!("{} {}", p.name, p.values.len()))
            .collect();
        return Err(GrammarError::new(
            Span::call_site(),
            format!(
                "the space has more than {MAX_POINTS} points before `require` (values per \
                 parameter: {}): narrow a range, or split the function",
                counts.join(", ")
            ),
        ));
    }
    let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    let known = names.join(", ");
    let require_exprs = requires
        .iter()
        .map(|(_, e)| convert_require(e, &names, &known))
        .collect::<Result<Vec<Expr>, GrammarError>>()?;

    let Some((base_span, base_list)) = base else {
        return Err(GrammarError::new(
            Span::call_site(),
            format!(
                "#[tune] needs `base(…)`, the production default: base({})",
                params
                    .iter()
                    .map(|p| format!("{} = …", p.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    };
    let mut base_values: Vec<Option<Value>> = vec![None; params.len()];
    for nv in &base_list {
        let name = nv
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        let Some(i) = params.iter().position(|p| p.name == name) else {
            return Err(GrammarError::new(
                nv.path.span(),
                format!(
                    "base names `{}`, which is not a parameter; parameters: {known}",
                    quote_path(&nv.path)
                ),
            ));
        };
        if base_values[i].is_some() {
            return Err(GrammarError::new(
                nv.path.span(),
                format!("base gives `{name}` twice"),
            ));
        }
        let v = literal(&nv.value).ok_or_else(|| {
            GrammarError::new(
                nv.value.span(),
                format!("base value of `{name}` must be a literal"),
            )
        })?;
        let expected = &params[i].values[0];
        if !v.same_kind(expected) {
            return Err(GrammarError::new(
                nv.value.span(),
                format!(
                    "base value of `{name}` is {} {} (`{v}`), but `{name}` takes {} values",
                    article(v.kind()),
                    v.kind(),
                    expected.kind()
                ),
            ));
        }
        base_values[i] = Some(v);
    }
    let missing: Vec<&str> = params
        .iter()
        .zip(&base_values)
        .filter(|(_, v)| v.is_none())
        .map(|(p, _)| p.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(GrammarError::new(
            base_span,
            format!(
                "base is missing {}: it must give every parameter a value",
                missing
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let spec = TuneSpec {
        params,
        requires: require_exprs,
        base: base_values.into_iter().flatten().collect(),
        sizes,
    };
    if let Some((span, _)) = requires.first() {
        if spec.space().is_empty() {
            return Err(GrammarError::new(
                *span,
                "the `require` predicates leave the space empty: no point satisfies all of them",
            ));
        }
    }
    Ok(spec)
}

fn article(kind: &str) -> &'static str {
    if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn quote_path(p: &syn::Path) -> String {
    p.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// An integer, boolean, identifier or string literal (negative integers included).
fn literal(e: &syn::Expr) -> Option<Value> {
    match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => i.base10_parse::<i64>().ok().map(Value::Int),
            syn::Lit::Bool(b) => Some(Value::Bool(b.value)),
            syn::Lit::Str(s) => Some(Value::Str(s.value())),
            _ => None,
        },
        syn::Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match literal(&u.expr)? {
            Value::Int(i) => i.checked_neg().map(Value::Int),
            _ => None,
        },
        syn::Expr::Path(p) if p.qself.is_none() => {
            p.path.get_ident().map(|i| Value::Ident(i.to_string()))
        }
        syn::Expr::Group(g) => literal(&g.expr),
        _ => None,
    }
}

fn int(e: &syn::Expr) -> Result<i64, GrammarError> {
    match literal(e) {
        Some(Value::Int(i)) => Ok(i),
        _ => Err(GrammarError::new(e.span(), "expected an integer literal")),
    }
}

fn range_bounds(r: &syn::ExprRange) -> Result<(i64, i64), GrammarError> {
    let (Some(start), Some(end)) = (&r.start, &r.end) else {
        return Err(GrammarError::new(
            r.span(),
            format!("a range needs both ends: {FORMS}"),
        ));
    };
    let (a, b) = (int(start)?, int(end)?);
    let last = match r.limits {
        syn::RangeLimits::Closed(_) => b,
        syn::RangeLimits::HalfOpen(_) => b
            .checked_sub(1)
            .ok_or_else(|| GrammarError::new(r.span(), "range end out of bounds"))?,
    };
    if last < a {
        return Err(GrammarError::new(
            r.span(),
            format!("empty range: it holds no value (start {a}, end {b})"),
        ));
    }
    Ok((a, last))
}

fn unparen(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => unparen(&p.expr),
        syn::Expr::Group(g) => unparen(&g.expr),
        other => other,
    }
}

fn stepped(r: &syn::ExprRange, step: i64) -> Result<Vec<Value>, GrammarError> {
    let (a, last) = range_bounds(r)?;
    let count = ((last - a) / step + 1) as u64;
    if count > MAX_VALUES as u64 {
        return Err(GrammarError::new(
            r.span(),
            format!("the range has {count} values; at most {MAX_VALUES} are allowed per parameter"),
        ));
    }
    Ok((a..=last).step_by(step as usize).map(Value::Int).collect())
}

fn values_of(e: &syn::Expr) -> Result<(Form, Vec<Value>), GrammarError> {
    match unparen(e) {
        syn::Expr::Range(r) => Ok((Form::Range, stepped(r, 1)?)),
        syn::Expr::MethodCall(m) if m.method == "step_by" => {
            let syn::Expr::Range(r) = unparen(&m.receiver) else {
                return Err(GrammarError::new(
                    m.receiver.span(),
                    format!("step_by applies to a range: {FORMS}"),
                ));
            };
            if m.args.len() != 1 {
                return Err(GrammarError::new(
                    m.args.span(),
                    "step_by takes one positive integer",
                ));
            }
            let step = int(&m.args[0])?;
            if step <= 0 {
                return Err(GrammarError::new(
                    m.args[0].span(),
                    format!("step must be a positive integer, not {step}"),
                ));
            }
            Ok((Form::Range, stepped(r, step)?))
        }
        syn::Expr::Call(c) if matches!(unparen(&c.func), syn::Expr::Path(p) if p.path.is_ident("pow2")) =>
        {
            let arg = match c.args.first().map(unparen) {
                Some(syn::Expr::Range(r)) if c.args.len() == 1 => r,
                _ => {
                    return Err(GrammarError::new(
                        c.args.span(),
                        "pow2 takes one range of exponents: pow2(a..=b)",
                    ))
                }
            };
            let (a, last) = range_bounds(arg)?;
            if a < 0 || last > MAX_POW2 {
                return Err(GrammarError::new(
                    arg.span(),
                    format!("pow2 exponents must lie within 0..={MAX_POW2}"),
                ));
            }
            Ok((
                Form::Pow2,
                (a..=last).map(|e| Value::Int(1i64 << e)).collect(),
            ))
        }
        syn::Expr::Array(a) => {
            if a.elems.is_empty() {
                return Err(GrammarError::new(
                    a.span(),
                    "empty list: give at least one value",
                ));
            }
            let mut values: Vec<Value> = Vec::new();
            for el in &a.elems {
                let v = literal(el).ok_or_else(|| {
                    GrammarError::new(
                        el.span(),
                        "a list holds integer, boolean, identifier or string literals",
                    )
                })?;
                if let Some(first) = values.first() {
                    if !v.same_kind(first) {
                        return Err(GrammarError::new(el.span(), format!("a list holds values of one kind: this is {} {}, the first is {} {}", article(v.kind()), v.kind(), article(first.kind()), first.kind())));
                    }
                }
                if values.contains(&v) {
                    return Err(GrammarError::new(
                        el.span(),
                        format!("`{v}` is listed twice"),
                    ));
                }
                values.push(v);
            }
            Ok((Form::List, values))
        }
        other => Err(GrammarError::new(
            other.span(),
            format!("unknown form: {FORMS}"),
        )),
    }
}

fn convert_require(e: &syn::Expr, names: &[&str], known: &str) -> Result<Expr, GrammarError> {
    let conv = |x: &syn::Expr| convert_require(x, names, known);
    match e {
        syn::Expr::Paren(p) => conv(&p.expr),
        syn::Expr::Group(g) => conv(&g.expr),
        syn::Expr::Lit(_) => match literal(e) {
            Some(v @ (Value::Int(_) | Value::Bool(_) | Value::Str(_))) => Ok(Expr::Lit(v)),
            _ => Err(GrammarError::new(e.span(), REQUIRE)),
        },
        syn::Expr::Path(p) => {
            let Some(id) = p.path.get_ident() else {
                return Err(GrammarError::new(e.span(), REQUIRE));
            };
            let n = id.to_string();
            if names.contains(&n.as_str()) {
                Ok(Expr::Param(n))
            } else {
                Err(GrammarError::new(
                    id.span(),
                    format!(
                        "require mentions `{n}`, which is not a parameter; parameters: {known}"
                    ),
                ))
            }
        }
        syn::Expr::Unary(u) => {
            let op = match u.op {
                UnOp::Not(_) => UnaryOp::Not,
                UnOp::Neg(_) => UnaryOp::Neg,
                _ => return Err(GrammarError::new(e.span(), REQUIRE)),
            };
            Ok(Expr::Unary(op, Box::new(conv(&u.expr)?)))
        }
        syn::Expr::Binary(b) => {
            use syn::BinOp as B;
            let op = match b.op {
                B::Add(_) => BinaryOp::Add,
                B::Sub(_) => BinaryOp::Sub,
                B::Mul(_) => BinaryOp::Mul,
                B::Div(_) => BinaryOp::Div,
                B::Rem(_) => BinaryOp::Rem,
                B::Eq(_) => BinaryOp::Eq,
                B::Ne(_) => BinaryOp::Ne,
                B::Lt(_) => BinaryOp::Lt,
                B::Le(_) => BinaryOp::Le,
                B::Gt(_) => BinaryOp::Gt,
                B::Ge(_) => BinaryOp::Ge,
                B::And(_) => BinaryOp::And,
                B::Or(_) => BinaryOp::Or,
                _ => return Err(GrammarError::new(b.op.span(), REQUIRE)),
            };
            Ok(Expr::Binary(
                op,
                Box::new(conv(&b.left)?),
                Box::new(conv(&b.right)?),
            ))
        }
        syn::Expr::Call(c) => {
            let op = match unparen(&c.func) {
                syn::Expr::Path(p) if p.path.is_ident("min") => BinaryOp::Min,
                syn::Expr::Path(p) if p.path.is_ident("max") => BinaryOp::Max,
                _ => return Err(GrammarError::new(c.func.span(), REQUIRE)),
            };
            if c.args.len() != 2 {
                return Err(GrammarError::new(
                    c.args.span(),
                    "min and max take two arguments",
                ));
            }
            Ok(Expr::Binary(
                op,
                Box::new(conv(&c.args[0])?),
                Box::new(conv(&c.args[1])?),
            ))
        }
        _ => Err(GrammarError::new(e.span(), REQUIRE)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(spec: &TuneSpec) -> Vec<String> {
        spec.space().iter().map(|p| p.label()).collect()
    }

    fn err(text: &str) -> String {
        parse_str(text).expect_err(text).message
    }

    #[test]
    fn a_space_too_large_to_enumerate_is_an_error_not_a_hang() {
        // Two ranges within the per-parameter limit, 2^32 combinations together.
        let e = err("a = 0..65536, b = 0..65536, require(a == b), base(a = 0, b = 0)");
        assert!(e.contains("more than 4194304 points"), "{e}");
        assert!(e.contains("a 65536, b 65536"), "{e}");
        // At the limit it is a space.
        let s = parse_str("a = 0..2048, b = 0..2048, base(a = 0, b = 0)").expect("2^22 points");
        assert_eq!(s.params[0].values.len() * s.params[1].values.len(), 1 << 22);
    }

    #[test]
    fn every_form_enumerates() {
        let s = parse_str("a = 1..=3, b = 0..2, c = (10..=20).step_by(5), d = pow2(3..=5), e = [x, y], f = [true, false], g = [\"ld\", \"ldg\"], h = [-1, 7], base(a = 1, b = 0, c = 10, d = 8, e = x, f = true, g = \"ld\", h = -1)")
            .expect("valid");
        let vals = |i: usize| {
            s.params[i]
                .values
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        assert_eq!(vals(0), "1,2,3");
        assert_eq!(vals(1), "0,1");
        assert_eq!(vals(2), "10,15,20");
        assert_eq!(vals(3), "8,16,32");
        assert_eq!(vals(4), "x,y");
        assert_eq!(vals(5), "true,false");
        assert_eq!(vals(6), "ld,ldg");
        assert_eq!(vals(7), "-1,7");
        assert_eq!(s.params[3].form, Form::Pow2);
        assert_eq!(s.space().len(), 3 * 2 * 3 * 3 * 2 * 2 * 2 * 2);
        assert_eq!(
            s.base_point().label(),
            "a_1.b_0.c_10.d_8.e_x.f_true.g_ld.h_-1"
        );
    }

    #[test]
    fn a_three_parameter_space_with_require_enumerates_exactly() {
        let s = parse_str("ipt = [1, 2, 4], tpb = pow2(6..=8), unroll = [false, true], require(ipt * tpb <= 512 && (unroll || ipt == 1)), base(ipt = 2, tpb = 128, unroll = false)")
            .expect("valid");
        assert_eq!(
            labels(&s),
            [
                "ipt_1.tpb_64.unroll_false",
                "ipt_1.tpb_64.unroll_true",
                "ipt_1.tpb_128.unroll_false",
                "ipt_1.tpb_128.unroll_true",
                "ipt_1.tpb_256.unroll_false",
                "ipt_1.tpb_256.unroll_true",
                "ipt_2.tpb_64.unroll_true",
                "ipt_2.tpb_128.unroll_true",
                "ipt_2.tpb_256.unroll_true",
                "ipt_4.tpb_64.unroll_true",
                "ipt_4.tpb_128.unroll_true",
            ]
        );
        // The base need not be a point of the space.
        assert!(!s.admits(&s.base_point().values));
    }

    #[test]
    fn require_arithmetic() {
        let s = parse_str("a = 1..=12, b = 1..=4, require(a % b == 0), require(min(a, 8) > max(b, 2) - 1), require(!(a / b > 4)), base(a = 1, b = 1)").expect("valid");
        for p in s.space() {
            let (a, b) = (
                p.get("a").and_then(Value::as_int).unwrap_or(0),
                p.get("b").and_then(Value::as_int).unwrap_or(0),
            );
            assert!(
                a % b == 0 && a.min(8) > b.max(2) - 1 && a / b <= 4,
                "{}",
                p.label()
            );
        }
        // Counted by hand (a, b): (2,1) (2,2) (3,1) (3,3) (4,1) (4,2) (4,4) (6,2) (6,3) (8,2)
        // (8,4) (9,3) (12,3) (12,4); a = 1 fails min(a, 8) > max(b, 2) − 1.
        let pairs: Vec<(i64, i64)> = s
            .space()
            .iter()
            .map(|p| {
                (
                    p.get("a").and_then(Value::as_int).unwrap_or(0),
                    p.get("b").and_then(Value::as_int).unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(
            pairs,
            [
                (2, 1),
                (2, 2),
                (3, 1),
                (3, 3),
                (4, 1),
                (4, 2),
                (4, 4),
                (6, 2),
                (6, 3),
                (8, 2),
                (8, 4),
                (9, 3),
                (12, 3),
                (12, 4)
            ]
        );
    }

    #[test]
    fn malformed_attributes_say_what_is_allowed() {
        assert!(err("ipt = 1..=4, tpb = foo(1), base(ipt = 1, tpb = 1)")
            .starts_with("unknown form: write `name = a..=b`"));
        assert!(err("ipt = 4..=1, base(ipt = 1)").starts_with("empty range"));
        assert!(err("ipt = 1..1, base(ipt = 1)").starts_with("empty range"));
        assert!(err("ipt = (1..=8).step_by(0), base(ipt = 1)")
            .starts_with("step must be a positive integer, not 0"));
        assert!(
            err("ipt = 1..=2, ipt = 3..=4, base(ipt = 1)").starts_with("duplicate parameter `ipt`")
        );
        assert!(err("ipt = 1..=2, tpb = [32], base(ipt = 1)").starts_with("base is missing `tpb`"));
        assert!(err("ipt = 1..=2").starts_with("#[tune] needs `base(…)`"));
        assert!(err("ipt = 1..=2, base(ipt = true)")
            .contains("base value of `ipt` is a boolean (`true`), but `ipt` takes integer values"));
        assert!(err("ipt = 1..=2, base(ipt = 1, tpb = 2)")
            .contains("`tpb`, which is not a parameter; parameters: ipt"));
        assert!(err("ipt = 1..=2, require(tpb > 1), base(ipt = 1)")
            .contains("require mentions `tpb`, which is not a parameter; parameters: ipt"));
        assert!(err("ipt = 1..=2, require(ipt > 2), base(ipt = 1)")
            .starts_with("the `require` predicates leave the space empty"));
        assert!(err("ipt = [1, true], base(ipt = 1)").contains("values of one kind"));
        assert!(err("ipt = [], base(ipt = 1)").starts_with("empty list"));
        assert!(err("ipt = pow2(1..=63), base(ipt = 2)").contains("within 0..=62"));
        assert!(err("ipt 1..=2").starts_with("expected `name = values`"));
        assert!(err("ipt = 1..=2, require(ipt << 1 > 2), base(ipt = 1)")
            .starts_with("require(…) allows"));
    }

    #[test]
    fn size_names_an_axis_and_an_expression() {
        let s = parse_str("ipt = [1, 2], size(Elements = x.len().min(y.len())), base(ipt = 1)")
            .expect("valid");
        let size = s.size().expect("declared");
        assert_eq!(size.axis, "Elements");
        assert_eq!(size.expr, "x . len () . min (y . len ())");
        // A string names an axis that is not an identifier; marks are dropped.
        let s =
            parse_str("size(\"Elements{io}\" = n), ipt = [1, 2], base(ipt = 1)").expect("valid");
        assert_eq!(s.size().map(|z| z.axis.as_str()), Some("Elements"));
        assert_eq!(s.space().len(), 2, "size adds no parameter");
        assert!(parse_str("ipt = [1], base(ipt = 1)")
            .expect("valid")
            .size()
            .is_none());
        // A parameter may still be called `size`.
        let s = parse_str("size = [1, 2], base(size = 1)").expect("valid");
        assert_eq!(s.params[0].name, "size");
        assert!(s.size().is_none());
    }

    #[test]
    fn a_shape_is_several_size_axes_in_order() {
        let s = parse_str(
            "ipt = [1, 2], size(Rows = shape.0, Cols = x.len().max(y.len())), base(ipt = 1)",
        )
        .expect("valid");
        let axes: Vec<&str> = s.sizes.iter().map(|z| z.axis.as_str()).collect();
        assert_eq!(axes, ["Rows", "Cols"]);
        assert_eq!(s.sizes[1].expr, "x . len () . max (y . len ())");
        assert_eq!(
            s.size().map(|z| z.axis.as_str()),
            Some("Rows"),
            "dispatch on the first"
        );
        assert!(err("ipt = [1], size(Rows = r, Rows = c), base(ipt = 1)").contains("twice"));
        assert!(err("ipt = [1], size(Rows = r,, Cols = c), base(ipt = 1)").starts_with("size(…)"));
    }

    #[test]
    fn malformed_sizes_say_what_is_allowed() {
        assert!(err("ipt = [1], size(n), base(ipt = 1)").starts_with("size(…) names the bench's"));
        assert!(err("ipt = [1], size(Elements =), base(ipt = 1)").starts_with("size(…)"));
        assert!(err("ipt = [1], size(3 = n), base(ipt = 1)").starts_with("size(…)"));
        assert!(err("ipt = [1], size(\"\" = n), base(ipt = 1)").starts_with("size(…)"));
        assert!(err("ipt = [1], size(A = n), size(B = m), base(ipt = 1)")
            .starts_with("`size(…)` is given twice"));
        let e = err("ipt = [1], size = n, base(ipt = 1)");
        assert!(
            e.starts_with("unknown form") && e.contains("size(Elements = n)"),
            "{e}"
        );
    }

    #[test]
    fn labels_are_stable_and_use_values() {
        let s = parse_str("tpb = pow2(7..=8), ipt = [8], base(tpb = 128, ipt = 8)").expect("valid");
        assert_eq!(labels(&s), ["tpb_128.ipt_8", "tpb_256.ipt_8"]);
        assert_eq!(s.params[0].const_name(), "TPB");
    }
}
