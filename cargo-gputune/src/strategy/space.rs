//! The parameter structure that the guided strategies search over: labels parsed into value
//! indices, and neighbourhoods in which one parameter moves to an adjacent value.
//!
//! A space's labels are exactly its valid points after `require`, so a strategy that only
//! ever proposes labels of the space is require-aware without evaluating `require` itself.

use std::collections::{BTreeMap, HashMap, HashSet};

use gputune_grammar::TuneSpec;
use gputune_protocol::manifest::Function;
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Parameter names and their values as labels spell them, in declaration order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params(pub Vec<(String, Vec<String>)>);

impl Params {
    /// From a manifest's function (what `search` has).
    pub fn from_function(f: &Function) -> Params {
        Params(
            f.params
                .iter()
                .map(|p| {
                    // Labels spell strings without their quotes (`ldg`, not `"ldg"`).
                    let values = p
                        .values
                        .iter()
                        .map(|v| match v {
                            serde_json::Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect();
                    (p.name.clone(), values)
                })
                .collect(),
        )
    }

    /// From a parsed `#[tune]` attribute (what a store keeps, for `replay`).
    pub fn from_spec(spec: &TuneSpec) -> Params {
        Params(
            spec.params
                .iter()
                .map(|p| {
                    (
                        p.name.clone(),
                        p.values.iter().map(ToString::to_string).collect(),
                    )
                })
                .collect(),
        )
    }

    /// The value indices of `label` (`name_value` joined by `.`), or `None` when it is not
    /// a point of these parameters. Values may themselves hold `.` or `_`, so each
    /// parameter's value is matched against its value list rather than split blindly.
    pub fn parse(&self, label: &str) -> Option<Vec<usize>> {
        fn go(params: &[(String, Vec<String>)], rest: &str, out: &mut Vec<usize>) -> bool {
            let Some(((name, values), tail)) = params.split_first() else {
                return rest.is_empty();
            };
            let Some(after) = rest
                .strip_prefix(name.as_str())
                .and_then(|r| r.strip_prefix('_'))
            else {
                return false;
            };
            for (i, v) in values.iter().enumerate() {
                let Some(r) = after.strip_prefix(v.as_str()) else {
                    continue;
                };
                let r = if tail.is_empty() {
                    Some(r)
                } else {
                    r.strip_prefix('.')
                };
                if let Some(r) = r {
                    out.push(i);
                    if go(tail, r, out) {
                        return true;
                    }
                    out.pop();
                }
            }
            false
        }
        let mut out = Vec::with_capacity(self.0.len());
        go(&self.0, label, &mut out).then_some(out)
    }
}

/// A space indexed for the guided strategies: every label with its value indices.
#[derive(Debug, Clone)]
pub struct Indexed {
    /// The labels, in the order the space was given.
    pub labels: Vec<String>,
    /// Each label's value indices; `None` when a label does not parse (it is then still
    /// proposed, by the random fill, but has no neighbours).
    pub coords: Vec<Option<Vec<usize>>>,
    /// Values per parameter.
    pub sizes: Vec<usize>,
    by_coords: HashMap<Vec<usize>, usize>,
    by_label: HashMap<String, usize>,
}

impl Indexed {
    /// Point `i`'s chance under draws whose every parameter puts `edges` of its mass on its
    /// first and last value and the rest uniformly, relative to a uniform draw (1 for a
    /// label that does not parse, and for parameters of one or two values, all ends).
    pub fn edge_weight(&self, i: usize, edges: f64) -> f64 {
        let Some(c) = &self.coords[i] else {
            return 1.0;
        };
        c.iter()
            .zip(&self.sizes)
            .filter(|(_, &n)| n > 2)
            .map(|(&v, &n)| {
                let end = if v == 0 || v + 1 == n {
                    edges / 2.0
                } else {
                    0.0
                };
                n as f64 * ((1.0 - edges) / n as f64 + end)
            })
            .product()
    }

    /// Indexes `space` over `params`.
    pub fn new(params: &Params, space: &[String]) -> Indexed {
        let coords: Vec<Option<Vec<usize>>> = space.iter().map(|l| params.parse(l)).collect();
        let by_coords = coords
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((c.clone()?, i)))
            .collect();
        let by_label = space
            .iter()
            .enumerate()
            .map(|(i, l)| (l.clone(), i))
            .collect();
        Indexed {
            labels: space.to_vec(),
            coords,
            sizes: params.0.iter().map(|(_, v)| v.len()).collect(),
            by_coords,
            by_label,
        }
    }

    /// The point at `coords`, if it is in the space.
    pub fn at(&self, coords: &[usize]) -> Option<usize> {
        self.by_coords.get(coords).copied()
    }

    /// The index of `label`.
    pub fn index(&self, label: &str) -> Option<usize> {
        self.by_label.get(label).copied()
    }

    /// The neighbours of point `i`: one parameter moved up or down to the nearest value that
    /// gives a point of the space. Skipping over values that `require` excludes keeps the
    /// neighbourhood connected where a constraint cuts a parameter's range.
    pub fn neighbours(&self, i: usize) -> Vec<usize> {
        let Some(c) = &self.coords[i] else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in 0..c.len() {
            for up in [false, true] {
                let mut q = c.clone();
                loop {
                    match (up, q[p]) {
                        (false, 0) => break,
                        (false, v) => q[p] = v - 1,
                        (true, v) if v + 1 >= self.sizes[p] => break,
                        (true, v) => q[p] = v + 1,
                    }
                    if let Some(j) = self.at(&q) {
                        out.push(j);
                        break;
                    }
                }
            }
        }
        out
    }

    /// The points that differ from point `i` in one parameter, by any value.
    pub fn hamming_neighbours(&self, i: usize) -> Vec<usize> {
        let Some(c) = &self.coords[i] else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut q = c.clone();
        for p in 0..c.len() {
            for v in 0..self.sizes[p] {
                if v == c[p] {
                    continue;
                }
                q[p] = v;
                if let Some(j) = self.at(&q) {
                    out.push(j);
                }
            }
            q[p] = c[p];
        }
        out
    }

    /// The points that differ from point `i` in exactly two parameters, each moved to an
    /// adjacent value (one up or down its list), whether or not the point between them (one
    /// of the two moves alone) is in the space: where a constraint couples two parameters,
    /// it is not.
    pub fn two_adjacent(&self, i: usize) -> Vec<usize> {
        let Some(c) = &self.coords[i] else {
            return Vec::new();
        };
        let moved = |v: usize, up: bool, n: usize| match up {
            true => (v + 1 < n).then_some(v + 1),
            false => v.checked_sub(1),
        };
        let mut out = Vec::new();
        let mut q = c.clone();
        for p in 0..c.len() {
            for r in p + 1..c.len() {
                for up_p in [false, true] {
                    let Some(vp) = moved(c[p], up_p, self.sizes[p]) else {
                        continue;
                    };
                    for up_r in [false, true] {
                        let Some(vr) = moved(c[r], up_r, self.sizes[r]) else {
                            continue;
                        };
                        q[p] = vp;
                        q[r] = vr;
                        if let Some(j) = self.at(&q) {
                            out.push(j);
                        }
                        q[p] = c[p];
                        q[r] = c[r];
                    }
                }
            }
        }
        out
    }

    /// Of `points`, those that differ from point `i` in at most `radius` parameters.
    pub fn within(
        &self,
        i: usize,
        radius: usize,
        points: impl Iterator<Item = usize>,
    ) -> HashSet<usize> {
        let Some(c) = &self.coords[i] else {
            return HashSet::new();
        };
        points
            .filter(|&j| {
                self.coords[j]
                    .as_ref()
                    .is_some_and(|d| d.iter().zip(c).filter(|(a, b)| a != b).count() <= radius)
            })
            .collect()
    }

    /// Each point's coordinates scaled to [0, 1] per parameter, for distances.
    pub fn unit(&self, i: usize) -> Option<Vec<f64>> {
        let c = self.coords[i].as_ref()?;
        Some(
            c.iter()
                .zip(&self.sizes)
                .map(|(&v, &n)| {
                    if n > 1 {
                        v as f64 / (n - 1) as f64
                    } else {
                        0.0
                    }
                })
                .collect(),
        )
    }
}

/// What the strategies read from `scored`: each evaluated point's score, a failure (or a
/// point still in flight) as `None`.
pub fn scores(ix: &Indexed, scored: &BTreeMap<String, Option<f64>>) -> Vec<Option<Option<f64>>> {
    let mut out = vec![None; ix.labels.len()];
    for (l, s) in scored {
        if let Some(i) = ix.index(l) {
            out[i] = Some(*s);
        }
    }
    out
}

/// What the guided strategies share: the parameter structure, the seeded generator, and the
/// space indexed once, on the first call.
pub struct Walk {
    params: Params,
    rng: ChaCha8Rng,
    index: Option<Indexed>,
}

impl Walk {
    /// Over `params`, with `seed`.
    pub fn new(params: Params, seed: u64) -> Walk {
        Walk {
            params,
            rng: rand::SeedableRng::seed_from_u64(seed),
            index: None,
        }
    }

    /// The indexed space, the generator, and each point's score ([`scores`]).
    pub fn view(
        &mut self,
        space: &[String],
        scored: &BTreeMap<String, Option<f64>>,
    ) -> (&Indexed, &mut ChaCha8Rng, Vec<Option<Option<f64>>>) {
        let params = &self.params;
        let ix = self
            .index
            .get_or_insert_with(|| Indexed::new(params, space));
        let evaluated = scores(ix, scored);
        (ix, &mut self.rng, evaluated)
    }
}

/// A batch being assembled: distinct points, none of them evaluated.
pub struct Batch<'a> {
    evaluated: &'a [Option<Option<f64>>],
    taken: Vec<bool>,
    /// The points, in proposal order.
    pub points: Vec<usize>,
    count: usize,
}

impl<'a> Batch<'a> {
    /// An empty batch of at most `count` points.
    pub fn new(evaluated: &'a [Option<Option<f64>>], count: usize) -> Batch<'a> {
        Batch {
            evaluated,
            taken: vec![false; evaluated.len()],
            points: Vec::new(),
            count,
        }
    }

    /// Whether the batch is full.
    pub fn full(&self) -> bool {
        self.points.len() >= self.count
    }

    /// Adds `i` unless it was evaluated, is in the batch already or the batch is full.
    pub fn push(&mut self, i: usize) -> bool {
        if self.full() || self.taken[i] || self.evaluated[i].is_some() {
            return false;
        }
        self.taken[i] = true;
        self.points.push(i);
        true
    }

    /// Fills the rest with unevaluated points at random, so that every strategy finishes
    /// the space when nothing bounds it and never returns an empty batch before then.
    pub fn fill_random(&mut self, rng: &mut ChaCha8Rng) {
        if self.full() {
            return;
        }
        let mut left: Vec<usize> = (0..self.evaluated.len())
            .filter(|&i| self.evaluated[i].is_none() && !self.taken[i])
            .collect();
        left.shuffle(rng);
        for i in left {
            if !self.push(i) {
                break;
            }
        }
    }

    /// Fills the rest with unevaluated points drawn with `weight` (each point's relative
    /// chance, positive), without replacement: each point races an exponential clock of rate
    /// `weight` and the first to ring are taken (Efraimidis and Spirakis), so that the draw is
    /// one pass and the same seed draws the same points.
    pub fn fill_weighted(&mut self, rng: &mut ChaCha8Rng, weight: impl Fn(usize) -> f64) {
        if self.full() {
            return;
        }
        let mut keyed: Vec<(f64, usize)> = (0..self.evaluated.len())
            .filter(|&i| self.evaluated[i].is_none() && !self.taken[i])
            .map(|i| {
                let u: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
                (-u.ln() / weight(i).max(f64::MIN_POSITIVE), i)
            })
            .collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (_, i) in keyed {
            if !self.push(i) {
                break;
            }
        }
    }

    /// The labels of the batch.
    pub fn labels(&self, ix: &Indexed) -> Vec<String> {
        self.points.iter().map(|&i| ix.labels[i].clone()).collect()
    }
}

/// A random unevaluated point not in `batch`, if any.
pub fn random_unevaluated(batch: &Batch<'_>, rng: &mut ChaCha8Rng) -> Option<usize> {
    let left: Vec<usize> = (0..batch.evaluated.len())
        .filter(|&i| batch.evaluated[i].is_none() && !batch.taken[i])
        .collect();
    (!left.is_empty()).then(|| left[rng.random_range(0..left.len())])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params(vec![
            ("a".into(), vec!["1".into(), "2".into(), "4".into()]),
            ("b_c".into(), vec!["x.y".into(), "x".into()]),
        ])
    }

    #[test]
    fn labels_parse_into_value_indices_even_with_dots_and_underscores() {
        assert_eq!(params().parse("a_4.b_c_x.y"), Some(vec![2, 0]));
        assert_eq!(params().parse("a_1.b_c_x"), Some(vec![0, 1]));
        assert_eq!(params().parse("a_3.b_c_x"), None);
        assert_eq!(params().parse("a_1"), None);
        assert_eq!(params().parse("base"), None);
    }

    #[test]
    fn edge_weights_favour_a_ranges_ends_and_leave_two_valued_parameters_alone() {
        let space: Vec<String> = ["a_1.b_c_x", "a_2.b_c_x", "a_4.b_c_x.y", "base"]
            .map(String::from)
            .to_vec();
        let ix = Indexed::new(&params(), &space);
        // a has three values: its ends get 3·(0.2/3 + 0.4), its middle 3·0.2/3; b has two.
        assert!((ix.edge_weight(0, 0.8) - 1.4).abs() < 1e-12);
        assert!((ix.edge_weight(1, 0.8) - 0.2).abs() < 1e-12);
        assert!((ix.edge_weight(2, 0.8) - 1.4).abs() < 1e-12);
        assert_eq!(ix.edge_weight(3, 0.8), 1.0);
        for i in 0..3 {
            assert!((ix.edge_weight(i, 0.0) - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn a_weighted_fill_takes_heavy_points_first_skips_evaluated_ones_and_repeats_by_seed() {
        let evaluated: Vec<Option<Option<f64>>> = vec![None, Some(Some(1.0)), None, None, None];
        let weight = |i: usize| if i == 3 { 1e12 } else { 1.0 };
        let draw = |seed: u64, count: usize| {
            let mut rng: ChaCha8Rng = rand::SeedableRng::seed_from_u64(seed);
            let mut batch = Batch::new(&evaluated, count);
            batch.fill_weighted(&mut rng, weight);
            batch.points
        };
        assert_eq!(draw(7, 1), vec![3]);
        let all = draw(7, 10);
        assert_eq!(all.len(), 4);
        assert!(!all.contains(&1));
        assert_eq!(all[0], 3);
        assert_eq!(draw(9, 10), draw(9, 10));
    }

    #[test]
    fn neighbours_skip_points_that_require_excludes() {
        // a_2 is excluded with b_c_x: from a_1 the next point up is a_4.
        let space: Vec<String> = ["a_1.b_c_x", "a_4.b_c_x", "a_1.b_c_x.y", "a_2.b_c_x.y"]
            .map(String::from)
            .to_vec();
        let ix = Indexed::new(&params(), &space);
        let mut n = ix.neighbours(0);
        n.sort();
        assert_eq!(n, vec![1, 2]);
        assert_eq!(ix.neighbours(3), vec![2]);
    }

    #[test]
    fn within_keeps_the_points_at_most_radius_parameters_away() {
        let (params, space) = (
            params(),
            ["a_1.b_c_x", "a_4.b_c_x", "a_1.b_c_x.y", "a_2.b_c_x.y"],
        );
        let space: Vec<String> = space.map(String::from).to_vec();
        let ix = Indexed::new(&params, &space);
        let all = || 0..space.len();
        assert_eq!(ix.within(0, 0, all()), HashSet::from([0]));
        assert_eq!(ix.within(0, 1, all()), HashSet::from([0, 1, 2]));
        assert_eq!(ix.within(0, 2, all()).len(), 4);
        assert_eq!(ix.within(0, 2, [3].into_iter()), HashSet::from([3]));
    }

    #[test]
    fn two_adjacent_moves_two_parameters_one_value_each_even_across_a_hole() {
        let params = Params(vec![
            ("a".into(), vec!["1".into(), "2".into(), "4".into()]),
            ("b".into(), vec!["x".into(), "y".into()]),
            ("c".into(), vec!["0".into(), "1".into()]),
        ]);
        // Every point but a_2.b_x.c_0 and a_1.b_y.c_1 (the points between a_1.b_x.c_0 and
        // a_2.b_y.c_0, a_1.b_y.c_1 and a_2.b_x.c_1 are partly missing).
        let mut space = Vec::new();
        for a in ["1", "2", "4"] {
            for b in ["x", "y"] {
                for c in ["0", "1"] {
                    if (a, b, c) != ("2", "x", "0") && (a, b, c) != ("1", "y", "1") {
                        space.push(format!("a_{a}.b_{b}.c_{c}"));
                    }
                }
            }
        }
        let ix = Indexed::new(&params, &space);
        let from = ix.index("a_1.b_x.c_0").expect("in the space");
        let mut two: Vec<&str> = ix
            .two_adjacent(from)
            .into_iter()
            .map(|j| ix.labels[j].as_str())
            .collect();
        two.sort();
        // a_4 is two values from a_1: not adjacent; a_1.b_y.c_1 is not in the space.
        assert_eq!(two, ["a_2.b_x.c_1", "a_2.b_y.c_0"]);
    }
}
