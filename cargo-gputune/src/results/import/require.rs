//! The `require(…)` predicate that admits exactly the configurations a file holds.
//!
//! Kernel Tuner's restrictions are Python, which `#[tune]` cannot hold, and a cache file does
//! not even carry them: what it holds is the configurations inside them. So the space is
//! written back as a predicate over the parameters that is true on exactly those points: a
//! decision tree on one parameter at a time, in which values whose subtrees are alike share
//! one branch and a subtree holding every point is `true`. Of a few parameter orders the
//! shortest text is kept (the 17,956 points of CLBlast's GEMM out of 82,944 take ~30 kB).

use std::collections::HashMap;

use gputune_grammar::Value;

/// The predicate over `names` (with `values` each) that admits exactly `points` (value
/// indices, in declaration order, without duplicates); `None` when they are the whole
/// product and no predicate is needed.
pub(super) fn require(
    names: &[String],
    values: &[Vec<Value>],
    points: &[Vec<usize>],
) -> Option<String> {
    let full: u128 = values.iter().map(|v| v.len() as u128).product();
    if points.len() as u128 == full {
        return None;
    }
    let n = names.len();
    let declared: Vec<usize> = (0..n).collect();
    let mut by_size_up = declared.clone();
    by_size_up.sort_by_key(|&i| values[i].len());
    let mut by_size_down = declared.clone();
    by_size_down.sort_by_key(|&i| std::cmp::Reverse(values[i].len()));
    let reversed: Vec<usize> = declared.iter().rev().copied().collect();
    let refs: Vec<&[usize]> = points.iter().map(Vec::as_slice).collect();
    [declared, reversed, by_size_up, by_size_down]
        .iter()
        .map(|order| {
            Tree {
                names,
                values,
                order,
            }
            .node(&refs, 0)
        })
        .min_by_key(String::len)
}

struct Tree<'a> {
    names: &'a [String],
    values: &'a [Vec<Value>],
    order: &'a [usize],
}

impl Tree<'_> {
    /// The predicate on the parameters `order[depth..]` that admits exactly `points`.
    fn node(&self, points: &[&[usize]], depth: usize) -> String {
        let full: u128 = self.order[depth..]
            .iter()
            .map(|&p| self.values[p].len() as u128)
            .product();
        if points.len() as u128 == full {
            return "true".into();
        }
        let param = self.order[depth];
        let mut by_value: Vec<Vec<&[usize]>> = vec![Vec::new(); self.values[param].len()];
        for p in points {
            by_value[p[param]].push(p);
        }
        // Values whose subtrees read alike share a branch, in the order of their first value.
        let mut branches: Vec<(String, Vec<usize>)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for (v, sub) in by_value.iter().enumerate() {
            if sub.is_empty() {
                continue;
            }
            let child = self.node(sub, depth + 1);
            match index.get(&child) {
                Some(&i) => branches[i].1.push(v),
                None => {
                    index.insert(child.clone(), branches.len());
                    branches.push((child, vec![v]));
                }
            }
        }
        if let [(child, vs)] = branches.as_slice() {
            if vs.len() == self.values[param].len() {
                return child.clone();
            }
        }
        branches
            .iter()
            .map(|(child, vs)| {
                let cond = self.one_of(param, vs);
                if child == "true" {
                    format!("({cond})")
                } else {
                    format!("(({cond}) && ({child}))")
                }
            })
            .collect::<Vec<_>>()
            .join(" || ")
    }

    /// `param` takes one of the values at `chosen` (ascending indices, not all of them).
    fn one_of(&self, param: usize, chosen: &[usize]) -> String {
        let name = &self.names[param];
        let values = &self.values[param];
        let ints: Option<Vec<i64>> = values.iter().map(Value::as_int).collect();
        let ascending = ints
            .as_ref()
            .is_some_and(|v| v.windows(2).all(|w| w[0] < w[1]));
        let contiguous = chosen.windows(2).all(|w| w[1] == w[0] + 1);
        if let (true, true, Some(ints), Some(&lo), Some(&hi)) =
            (ascending, contiguous, &ints, chosen.first(), chosen.last())
        {
            let mut bounds = Vec::new();
            if lo > 0 {
                bounds.push(format!("{name} >= {}", ints[lo]));
            }
            if hi + 1 < values.len() {
                bounds.push(format!("{name} <= {}", ints[hi]));
            }
            return bounds.join(" && ");
        }
        if chosen.len() * 2 > values.len() {
            return (0..values.len())
                .filter(|i| !chosen.contains(i))
                .map(|i| format!("{name} != {}", values[i].rust_literal()))
                .collect::<Vec<_>>()
                .join(" && ");
        }
        chosen
            .iter()
            .map(|&i| format!("{name} == {}", values[i].rust_literal()))
            .collect::<Vec<_>>()
            .join(" || ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_of(names: &[String], values: &[Vec<Value>], require: Option<&str>) -> Vec<String> {
        let mut text: Vec<String> = names
            .iter()
            .zip(values)
            .map(|(n, vs)| {
                let list: Vec<String> = vs.iter().map(Value::rust_literal).collect();
                format!("{n} = [{}]", list.join(", "))
            })
            .collect();
        if let Some(r) = require {
            text.push(format!("require({r})"));
        }
        let base: Vec<String> = names
            .iter()
            .zip(values)
            .map(|(n, vs)| format!("{n} = {}", vs[0].rust_literal()))
            .collect();
        text.push(format!("base({})", base.join(", ")));
        let spec = gputune_grammar::parse_str(&text.join(", ")).expect("parses");
        spec.space().iter().map(|p| p.label()).collect()
    }

    #[test]
    fn the_predicate_admits_exactly_the_points() {
        let names: Vec<String> = ["a", "b", "s"].map(String::from).to_vec();
        let values = vec![
            vec![Value::Int(1), Value::Int(2), Value::Int(4), Value::Int(8)],
            vec![Value::Bool(false), Value::Bool(true)],
            vec![
                Value::Str("x".into()),
                Value::Str("0.5".into()),
                Value::Str("z".into()),
            ],
        ];
        let all: Vec<Vec<usize>> = (0..4)
            .flat_map(|a| (0..2).flat_map(move |b| (0..3).map(move |s| vec![a, b, s])))
            .collect();
        assert_eq!(require(&names, &values, &all), None);
        // Every subset of a seeded pseudo-random choice, and a few structured ones.
        let mut state = 7u64;
        for round in 0..40 {
            let kept: Vec<Vec<usize>> = all
                .iter()
                .filter(|p| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    match round {
                        0 => p[0] >= 2,
                        1 => p[0] * 2 + p[2] < 5,
                        _ => (state >> 33) % 3 != 0,
                    }
                })
                .cloned()
                .collect();
            if kept.is_empty() {
                continue;
            }
            let r = require(&names, &values, &kept);
            let labels = spec_of(&names, &values, r.as_deref());
            let want: Vec<String> = kept
                .iter()
                .map(|p| {
                    format!(
                        "a_{}.b_{}.s_{}",
                        values[0][p[0]], values[1][p[1]], values[2][p[2]]
                    )
                })
                .collect();
            assert_eq!(labels, want, "round {round}: {r:?}");
        }
    }
}
