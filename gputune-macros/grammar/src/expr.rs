//! `require(...)` expressions: integer arithmetic, comparisons and logic over parameters.

use crate::space::Value;

/// A unary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    /// `!`
    Not,
    /// `-`
    Neg,
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (integer division; division by zero makes the point invalid)
    Div,
    /// `%`
    Rem,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
}

/// A `require` expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A literal.
    Lit(Value),
    /// A parameter, by name.
    Param(String),
    /// A unary operation.
    Unary(UnaryOp, Box<Expr>),
    /// A binary operation (`min`/`max` calls included).
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// Evaluates the expression with `lookup` giving each parameter's value. `None` when the
    /// expression cannot be evaluated at this point (division by zero, overflow, arithmetic
    /// on a non-integer): such a point is not part of the space.
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<Value>) -> Option<Value> {
        Some(match self {
            Expr::Lit(v) => v.clone(),
            Expr::Param(name) => lookup(name)?,
            Expr::Unary(UnaryOp::Not, e) => Value::Bool(!e.eval(lookup)?.as_bool()?),
            Expr::Unary(UnaryOp::Neg, e) => Value::Int(e.eval(lookup)?.as_int()?.checked_neg()?),
            Expr::Binary(op, a, b) => {
                // && and || short-circuit, as in Rust.
                match op {
                    BinaryOp::And => {
                        return Some(Value::Bool(
                            a.eval(lookup)?.as_bool()? && b.eval(lookup)?.as_bool()?,
                        ))
                    }
                    BinaryOp::Or => {
                        return Some(Value::Bool(
                            a.eval(lookup)?.as_bool()? || b.eval(lookup)?.as_bool()?,
                        ))
                    }
                    _ => {}
                }
                let (x, y) = (a.eval(lookup)?, b.eval(lookup)?);
                match op {
                    BinaryOp::Eq => Value::Bool(x == y),
                    BinaryOp::Ne => Value::Bool(x != y),
                    _ => {
                        let (x, y) = (x.as_int()?, y.as_int()?);
                        match op {
                            BinaryOp::Add => Value::Int(x.checked_add(y)?),
                            BinaryOp::Sub => Value::Int(x.checked_sub(y)?),
                            BinaryOp::Mul => Value::Int(x.checked_mul(y)?),
                            BinaryOp::Div => Value::Int(x.checked_div(y)?),
                            BinaryOp::Rem => Value::Int(x.checked_rem(y)?),
                            BinaryOp::Lt => Value::Bool(x < y),
                            BinaryOp::Le => Value::Bool(x <= y),
                            BinaryOp::Gt => Value::Bool(x > y),
                            BinaryOp::Ge => Value::Bool(x >= y),
                            BinaryOp::Min => Value::Int(x.min(y)),
                            BinaryOp::Max => Value::Int(x.max(y)),
                            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::And | BinaryOp::Or => {
                                return None
                            }
                        }
                    }
                }
            }
        })
    }

    /// Every parameter name the expression mentions.
    pub fn params(&self) -> Vec<&str> {
        match self {
            Expr::Lit(_) => Vec::new(),
            Expr::Param(p) => vec![p.as_str()],
            Expr::Unary(_, e) => e.params(),
            Expr::Binary(_, a, b) => {
                let mut v = a.params();
                v.extend(b.params());
                v
            }
        }
    }
}
