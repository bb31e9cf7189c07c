//! The grammar's enumeration against a brute-force evaluation of `require`.

use gputune_grammar::Value;
use gputune_tests::fuzz::{self, Rng};

/// A `require` expression as generated here, with its own evaluator.
#[derive(Debug, Clone)]
enum Gen {
    Int(i64),
    Bool(bool),
    Param(usize),
    Not(Box<Gen>),
    Neg(Box<Gen>),
    Bin(&'static str, Box<Gen>, Box<Gen>),
    Call(&'static str, Box<Gen>, Box<Gen>),
}

/// The documented semantics of `require` (DESIGN's grammar and `Expr::eval`'s contract):
/// integer arithmetic that fails on overflow and division by zero, comparisons, `==`/`!=` on
/// any two values, `&&`/`||` short-circuiting on booleans, `!` on booleans, `min`/`max` on
/// integers. `None`: the point is not in the space.
fn eval(e: &Gen, point: &[Value]) -> Option<Value> {
    let int = |v: Value| match v {
        Value::Int(i) => Some(i),
        _ => None,
    };
    let boolean = |v: Value| match v {
        Value::Bool(b) => Some(b),
        _ => None,
    };
    Some(match e {
        Gen::Int(i) => Value::Int(*i),
        Gen::Bool(b) => Value::Bool(*b),
        Gen::Param(i) => point[*i].clone(),
        Gen::Not(a) => Value::Bool(!boolean(eval(a, point)?)?),
        Gen::Neg(a) => Value::Int(int(eval(a, point)?)?.checked_neg()?),
        Gen::Call(f, a, b) => {
            let (x, y) = (int(eval(a, point)?)?, int(eval(b, point)?)?);
            Value::Int(if *f == "min" { x.min(y) } else { x.max(y) })
        }
        Gen::Bin(op, a, b) => match *op {
            "&&" => Value::Bool(boolean(eval(a, point)?)? && boolean(eval(b, point)?)?),
            "||" => Value::Bool(boolean(eval(a, point)?)? || boolean(eval(b, point)?)?),
            "==" => Value::Bool(eval(a, point)? == eval(b, point)?),
            "!=" => Value::Bool(eval(a, point)? != eval(b, point)?),
            _ => {
                let (x, y) = (int(eval(a, point)?)?, int(eval(b, point)?)?);
                match *op {
                    "+" => Value::Int(x.checked_add(y)?),
                    "-" => Value::Int(x.checked_sub(y)?),
                    "*" => Value::Int(x.checked_mul(y)?),
                    "/" => Value::Int(x.checked_div(y)?),
                    "%" => Value::Int(x.checked_rem(y)?),
                    "<" => Value::Bool(x < y),
                    "<=" => Value::Bool(x <= y),
                    ">" => Value::Bool(x > y),
                    ">=" => Value::Bool(x >= y),
                    _ => unreachable!("generated operators only"),
                }
            }
        },
    })
}

/// Binding strength as Rust has it, weakest first: `||`, `&&`, comparisons, `+ -`, `* / %`,
/// then unary operators and atoms.
fn level(e: &Gen) -> u8 {
    match e {
        Gen::Bin(op, ..) => match *op {
            "||" => 1,
            "&&" => 2,
            "==" | "!=" | "<" | "<=" | ">" | ">=" => 3,
            "+" | "-" => 4,
            _ => 5,
        },
        Gen::Not(_) | Gen::Neg(_) => 6,
        _ => 7,
    }
}

/// Source text with only the parentheses precedence needs (and some more, at random), so the
/// parser's precedence and associativity are what is tested.
fn render(e: &Gen, names: &[String], rng: &mut Rng) -> String {
    let wrap = |s: String, need: bool, rng: &mut Rng| {
        if need || rng.one_in(6) {
            format!("({s})")
        } else {
            s
        }
    };
    match e {
        // A negative literal is `-n`, which is unary minus on `n`: parenthesised like one.
        Gen::Int(i) => i.to_string(),
        Gen::Bool(b) => b.to_string(),
        Gen::Param(i) => names[*i].clone(),
        Gen::Not(a) | Gen::Neg(a) => {
            let op = if matches!(e, Gen::Not(_)) { "!" } else { "-" };
            let inner = render(a, names, rng);
            let need = level(a) < 6 || matches!(**a, Gen::Int(i) if i < 0);
            format!("{op}{}", wrap(inner, need, rng))
        }
        Gen::Call(f, a, b) => format!("{f}({}, {})", render(a, names, rng), render(b, names, rng)),
        Gen::Bin(op, a, b) => {
            let l = level(e);
            let comparison = l == 3;
            let left = render(a, names, rng);
            let right = render(b, names, rng);
            // Left-associative: the right operand at the same level needs parentheses;
            // comparisons do not chain in Rust at all.
            let need_left = level(a) < l || (comparison && level(a) == 3);
            let need_right = level(b) <= l;
            let left_neg = matches!(**a, Gen::Int(i) if i < 0) && l >= 5;
            let right_neg = matches!(**b, Gen::Int(i) if i < 0);
            format!(
                "{} {op} {}",
                wrap(left, need_left || left_neg, rng),
                wrap(right, need_right || right_neg, rng)
            )
        }
    }
}

/// An expression of `depth` levels over `params` parameters (integers only, `bools` marks
/// the boolean ones), of boolean type when `boolean`.
fn gen_expr(rng: &mut Rng, depth: usize, boolean: bool, ints: &[usize], bools: &[usize]) -> Gen {
    let leaf = depth == 0 || rng.one_in(4);
    if boolean {
        if leaf {
            return match rng.below(3) {
                0 if !bools.is_empty() => Gen::Param(*rng.pick(bools)),
                1 => Gen::Bool(rng.one_in(2)),
                _ => {
                    let op = *rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
                    Gen::Bin(
                        op,
                        Box::new(gen_expr(rng, 0, false, ints, bools)),
                        Box::new(gen_expr(rng, 0, false, ints, bools)),
                    )
                }
            };
        }
        let sub = |rng: &mut Rng, b: bool| Box::new(gen_expr(rng, depth - 1, b, ints, bools));
        return match rng.below(5) {
            0 => Gen::Not(sub(rng, true)),
            1 => Gen::Bin(rng.choose(&["&&", "||"]), sub(rng, true), sub(rng, true)),
            2 => Gen::Bin(rng.choose(&["==", "!="]), sub(rng, true), sub(rng, true)),
            _ => Gen::Bin(
                rng.choose(&["<", "<=", ">", ">=", "==", "!="]),
                sub(rng, false),
                sub(rng, false),
            ),
        };
    }
    if leaf {
        return if !ints.is_empty() && rng.below(3) > 0 {
            Gen::Param(*rng.pick(ints))
        } else {
            Gen::Int(rng.range(-9, 40))
        };
    }
    let sub = |rng: &mut Rng| Box::new(gen_expr(rng, depth - 1, false, ints, bools));
    match rng.below(8) {
        0 => Gen::Neg(sub(rng)),
        1 => Gen::Call(rng.choose(&["min", "max"]), sub(rng), sub(rng)),
        _ => Gen::Bin(rng.choose(&["+", "-", "*", "/", "%"]), sub(rng), sub(rng)),
    }
}

/// One parameter: its source and its values, computed here from the form.
fn gen_param(rng: &mut Rng) -> (String, Vec<Value>) {
    match rng.below(6) {
        0 => {
            let (a, n) = (rng.range(-5, 20), rng.range(1, 6));
            (
                format!("{a}..={}", a + n - 1),
                (a..a + n).map(Value::Int).collect(),
            )
        }
        1 => {
            let (a, n) = (rng.range(0, 20), rng.range(1, 6));
            (
                format!("{a}..{}", a + n),
                (a..a + n).map(Value::Int).collect(),
            )
        }
        2 => {
            let (a, s, n) = (rng.range(0, 16), rng.range(1, 8), rng.range(1, 5));
            let end = a + s * (n - 1) + rng.range(0, s - 1);
            let values = (0..n).map(|i| Value::Int(a + s * i)).collect();
            (format!("({a}..={end}).step_by({s})"), values)
        }
        3 => {
            let (a, n) = (rng.range(0, 10), rng.range(1, 5));
            let values = (a..a + n).map(|e| Value::Int(1 << e)).collect();
            (format!("pow2({a}..={})", a + n - 1), values)
        }
        4 => {
            let mut values: Vec<i64> = Vec::new();
            for _ in 0..rng.range(1, 5) {
                let v = rng.range(-20, 64);
                if !values.contains(&v) {
                    values.push(v);
                }
            }
            let text: Vec<String> = values.iter().map(i64::to_string).collect();
            (
                format!("[{}]", text.join(", ")),
                values.into_iter().map(Value::Int).collect(),
            )
        }
        _ => {
            let values = if rng.one_in(2) {
                vec![true, false]
            } else {
                vec![false]
            };
            let text: Vec<String> = values.iter().map(bool::to_string).collect();
            (
                format!("[{}]", text.join(", ")),
                values.into_iter().map(Value::Bool).collect(),
            )
        }
    }
}

#[test]
fn grammar_space_equals_brute_force_require() {
    // The input is the generator's state: a kept regression regenerates the same spec.
    let spec_of = |input: &[u8]| {
        let mut seed = [0u8; 8];
        for (i, b) in input.iter().take(8).enumerate() {
            seed[i] = *b;
        }
        let mut rng = Rng(u64::from_le_bytes(seed));
        let count = rng.range(1, 3) as usize;
        let names: Vec<String> = (0..count).map(|i| format!("p{i}")).collect();
        let params: Vec<(String, Vec<Value>)> = (0..count).map(|_| gen_param(&mut rng)).collect();
        let ints: Vec<usize> = (0..count)
            .filter(|&i| matches!(params[i].1[0], Value::Int(_)))
            .collect();
        let bools: Vec<usize> = (0..count)
            .filter(|&i| matches!(params[i].1[0], Value::Bool(_)))
            .collect();
        let requires: Vec<Gen> = (0..rng.below(3))
            .map(|_| {
                let depth = rng.below(4);
                gen_expr(&mut rng, depth, true, &ints, &bools)
            })
            .collect();
        let mut text: Vec<String> = names
            .iter()
            .zip(&params)
            .map(|(n, (src, _))| format!("{n} = {src}"))
            .collect();
        for r in &requires {
            text.push(format!("require({})", render(r, &names, &mut rng)));
        }
        let base: Vec<String> = names
            .iter()
            .zip(&params)
            .map(|(n, (_, values))| format!("{n} = {}", values[0]))
            .collect();
        text.push(format!("base({})", base.join(", ")));
        (text.join(", "), params, requires)
    };
    fuzz::run(
        "grammar-space",
        |rng| rng.next_u64().to_le_bytes().to_vec(),
        |input| {
            let (source, params, requires) = spec_of(input);
            // Brute force: every combination, declaration order, first parameter slowest.
            let mut points: Vec<Vec<Value>> = vec![Vec::new()];
            for (_, values) in &params {
                points = points
                    .into_iter()
                    .flat_map(|p| {
                        values.iter().map(move |v| {
                            let mut q = p.clone();
                            q.push(v.clone());
                            q
                        })
                    })
                    .collect();
            }
            let expected: Vec<Vec<Value>> = points
                .into_iter()
                .filter(|p| {
                    requires
                        .iter()
                        .all(|r| eval(r, p) == Some(Value::Bool(true)))
                })
                .collect();
            let parsed = gputune_grammar::parse_str(&source);
            let spec = match parsed {
                Ok(spec) => spec,
                // The grammar refuses a `require` that leaves nothing; so must the oracle.
                Err(e) if expected.is_empty() && !requires.is_empty() => {
                    return if e.message.contains("leave the space empty") {
                        Ok(())
                    } else {
                        Err(format!("`{source}`: {}", e.message))
                    };
                }
                Err(e) => return Err(format!("`{source}` does not parse: {}", e.message)),
            };
            for (p, (_, values)) in spec.params.iter().zip(&params) {
                if &p.values != values {
                    return Err(format!("`{source}`: {} has values {:?}", p.name, p.values));
                }
            }
            let got: Vec<Vec<Value>> = spec
                .space()
                .into_iter()
                .map(|p| p.values.into_iter().map(|(_, v)| v).collect())
                .collect();
            if got != expected {
                return Err(format!(
                    "`{source}`: the space has {} points, brute force {}",
                    got.len(),
                    expected.len()
                ));
            }
            Ok(())
        },
    );
}
