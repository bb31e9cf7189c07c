//! An ensemble of extremely randomised regression trees (Geurts, Ernst and Wehenkel, 2006):
//! the surrogate's model. Each tree splits on a random threshold of each parameter and keeps
//! the split that explains most variance; the trees' spread at a point is the uncertainty.
//!
//! Trees rather than a Gaussian process because auto-tuning spaces are axis-aligned and
//! discontinuous (a tile that no longer fits, a vector width that divides or does not), which
//! a tree follows and a stationary kernel smooths over; and because fitting a few hundred
//! points and predicting twenty thousand takes milliseconds, with no hyperparameters to fit.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A node: a split (`feature`, `threshold`, children) or, with `feature == LEAF`, a leaf.
#[derive(Debug, Clone)]
struct Node {
    feature: usize,
    threshold: f64,
    left: usize,
    right: usize,
    value: f64,
}

const LEAF: usize = usize::MAX;

/// One tree, its nodes in an arena (the root first).
#[derive(Debug, Clone)]
struct Tree {
    nodes: Vec<Node>,
}

impl Tree {
    fn predict(&self, x: &[f64]) -> f64 {
        let mut n = &self.nodes[0];
        while n.feature != LEAF {
            n = &self.nodes[if x[n.feature] <= n.threshold {
                n.left
            } else {
                n.right
            }];
        }
        n.value
    }
}

/// The fitted ensemble.
#[derive(Debug, Clone)]
pub struct Forest {
    trees: Vec<Tree>,
}

/// How the trees grow.
#[derive(Debug, Clone, Copy)]
pub struct Growth {
    /// Trees in the ensemble.
    pub trees: usize,
    /// Fewest points in a leaf.
    pub min_leaf: usize,
}

impl Forest {
    /// Fits `trees` trees to the points `x` (each a vector of the same length) and their
    /// values `y`; an empty `x` gives a forest that predicts 0.
    pub fn fit(x: &[Vec<f64>], y: &[f64], growth: Growth, rng: &mut ChaCha8Rng) -> Forest {
        let trees = (0..growth.trees.max(1))
            .map(|_| {
                let mut nodes = Vec::new();
                let mut rows: Vec<usize> = (0..x.len()).collect();
                grow(x, y, &mut rows, growth.min_leaf.max(1), rng, &mut nodes);
                Tree { nodes }
            })
            .collect();
        Forest { trees }
    }

    /// The mean and standard deviation of the trees' predictions at `x`.
    pub fn predict(&self, x: &[f64]) -> (f64, f64) {
        let n = self.trees.len() as f64;
        let (mut sum, mut sq) = (0.0, 0.0);
        for t in &self.trees {
            let p = t.predict(x);
            sum += p;
            sq += p * p;
        }
        let mean = sum / n;
        (mean, (sq / n - mean * mean).max(0.0).sqrt())
    }
}

/// Grows the subtree of `rows` into `nodes`, returning its index.
fn grow(
    x: &[Vec<f64>],
    y: &[f64],
    rows: &mut [usize],
    min_leaf: usize,
    rng: &mut ChaCha8Rng,
    nodes: &mut Vec<Node>,
) -> usize {
    let at = nodes.len();
    let mean = if rows.is_empty() {
        0.0
    } else {
        rows.iter().map(|&r| y[r]).sum::<f64>() / rows.len() as f64
    };
    nodes.push(Node {
        feature: LEAF,
        threshold: 0.0,
        left: 0,
        right: 0,
        value: mean,
    });
    if rows.len() < 2 * min_leaf {
        return at;
    }
    let features = x[rows[0]].len();
    // Of one random threshold per parameter, the split that leaves the least squared error.
    let mut best: Option<(f64, usize, f64)> = None;
    // `f` is a column of every row, not an index of `x` itself.
    #[allow(clippy::needless_range_loop)]
    for f in 0..features {
        let (lo, hi) = rows
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &r| {
                (l.min(x[r][f]), h.max(x[r][f]))
            });
        if hi <= lo {
            continue;
        }
        let t = rng.random_range(lo..hi);
        let (mut nl, mut sl, mut ql, mut nr, mut sr, mut qr) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        for &r in rows.iter() {
            let v = y[r];
            if x[r][f] <= t {
                nl += 1.0;
                sl += v;
                ql += v * v;
            } else {
                nr += 1.0;
                sr += v;
                qr += v * v;
            }
        }
        if nl < min_leaf as f64 || nr < min_leaf as f64 {
            continue;
        }
        let err = (ql - sl * sl / nl) + (qr - sr * sr / nr);
        if best.map_or(true, |(e, _, _)| err < e) {
            best = Some((err, f, t));
        }
    }
    let Some((_, f, t)) = best else {
        return at;
    };
    let total: f64 = rows.iter().map(|&r| (y[r] - mean) * (y[r] - mean)).sum();
    if total <= 1e-12 {
        return at;
    }
    // Partition in place: the left rows first.
    let mut split = 0;
    for i in 0..rows.len() {
        if x[rows[i]][f] <= t {
            rows.swap(i, split);
            split += 1;
        }
    }
    let (l, r) = rows.split_at_mut(split);
    let left = grow(x, y, l, min_leaf, rng, nodes);
    let right = grow(x, y, r, min_leaf, rng, nodes);
    nodes[at] = Node {
        feature: f,
        threshold: t,
        left,
        right,
        value: mean,
    };
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_forest_follows_a_step_and_is_unsure_where_it_saw_nothing() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // y is 1 below x0 = 0.5 and 3 above; nothing was seen of x1 > 0.5.
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..40 {
            let a = i as f64 / 39.0;
            let b = (i % 5) as f64 / 10.0;
            x.push(vec![a, b]);
            y.push(if a < 0.5 { 1.0 } else { 3.0 });
        }
        let growth = Growth {
            trees: 30,
            min_leaf: 1,
        };
        let forest = Forest::fit(&x, &y, growth, &mut rng);
        let (low, _) = forest.predict(&[0.1, 0.2]);
        let (high, _) = forest.predict(&[0.9, 0.2]);
        assert!(
            (low - 1.0).abs() < 0.2 && (high - 3.0).abs() < 0.2,
            "{low} {high}"
        );
        let (_, sure) = forest.predict(&[0.1, 0.2]);
        let (_, unsure) = forest.predict(&[0.5, 0.2]);
        assert!(unsure > sure, "at the step: {unsure} vs {sure}");
        let empty = Forest::fit(&[], &[], growth, &mut rng);
        assert_eq!(empty.predict(&[0.3]), (0.0, 0.0));
    }
}
