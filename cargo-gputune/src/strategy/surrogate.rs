//! Model-guided search: a k-nearest-neighbour surrogate over the parameters' value indices
//! predicts each unevaluated point's score and its uncertainty, and the batch takes the
//! points of highest expected improvement over the best score so far (Bayesian optimisation
//! without a Gaussian process: kNN is cheap, needs no fitting, and copes with the categorical
//! and power-of-two axes that make a GP's kernel a guess).

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use statrs::distribution::{Continuous, ContinuousCDF, Normal};

use super::space::{Batch, Params, Walk};
use super::Strategy;

/// Scored points before the model is trusted; until then the batch is random.
const INITIAL: usize = 6;
/// Neighbours the prediction averages.
const K: usize = 4;
/// Candidates scored per batch at most (a random subset of a larger space).
const CANDIDATES: usize = 4096;
/// Picks of a batch after each of which the model takes the pick's prediction as observed
/// ("kriging believer"), so that one batch spreads instead of crowding one optimum; the
/// rest of a large batch follows the last ranking, to keep the cost bounded.
const BELIEVED: usize = 8;

/// The surrogate strategy.
pub struct Surrogate {
    walk: Walk,
}

impl Surrogate {
    /// Over `params`, with `seed`.
    pub fn new(params: Params, seed: u64) -> Surrogate {
        Surrogate {
            walk: Walk::new(params, seed),
        }
    }
}

/// The predicted mean and standard deviation at `x` from `observed` (point, score).
fn predict(x: &[f64], observed: &[(Vec<f64>, f64)], spread: f64) -> (f64, f64) {
    let mut near: Vec<(f64, f64)> = observed
        .iter()
        .map(|(p, s)| {
            let d2: f64 = p.iter().zip(x).map(|(a, b)| (a - b) * (a - b)).sum();
            (d2.sqrt(), *s)
        })
        .collect();
    // The K nearest without sorting them all: this runs for every candidate, on spaces of
    // thousands of points.
    if near.len() > K {
        near.select_nth_unstable_by(K - 1, |a, b| a.0.total_cmp(&b.0));
        near.truncate(K);
    }
    let weights: Vec<f64> = near.iter().map(|(d, _)| 1.0 / (d + 1e-6)).collect();
    let total: f64 = weights.iter().sum();
    let mean = near
        .iter()
        .zip(&weights)
        .map(|((_, s), w)| s * w)
        .sum::<f64>()
        / total;
    let var = near
        .iter()
        .zip(&weights)
        .map(|((_, s), w)| w * (s - mean) * (s - mean))
        .sum::<f64>()
        / total;
    // Far from everything observed, the neighbours say little: the uncertainty grows with
    // the distance to them, on the scale of the scores seen.
    let dist = near.iter().map(|(d, _)| d).sum::<f64>() / near.len().max(1) as f64;
    (mean, var.sqrt() + spread * dist)
}

/// Expected improvement over `best` of a normal prediction.
fn expected_improvement(mean: f64, sd: f64, best: f64, normal: &Normal) -> f64 {
    if sd <= 0.0 {
        return (mean - best).max(0.0);
    }
    let z = (mean - best) / sd;
    (mean - best) * normal.cdf(z) + sd * normal.pdf(z)
}

impl Strategy for Surrogate {
    fn name(&self) -> &'static str {
        "surrogate"
    }

    fn next(
        &mut self,
        space: &[String],
        scored: &BTreeMap<String, Option<f64>>,
        count: usize,
    ) -> Vec<String> {
        let (ix, rng, evaluated) = self.walk.view(space, scored);
        // A failure counts as a score of 0 (infinitely slow): failures cluster (too many
        // registers, too much shared memory), and the model should learn to avoid them.
        let mut observed: Vec<(Vec<f64>, f64)> = evaluated
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((ix.unit(i)?, (*s)?.unwrap_or(0.0))))
            .collect();
        let good: Vec<f64> = evaluated.iter().filter_map(|s| (*s)?).collect();
        let mut batch = Batch::new(&evaluated, count);
        let normal = Normal::standard();
        if good.len() >= INITIAL {
            let best = good.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mean = good.iter().sum::<f64>() / good.len() as f64;
            let spread = (good.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>()
                / good.len() as f64)
                .sqrt()
                .max(1e-3 * best.abs());
            let mut candidates: Vec<(usize, Vec<f64>)> = (0..ix.labels.len())
                .filter(|&i| evaluated[i].is_none())
                .filter_map(|i| Some((i, ix.unit(i)?)))
                .collect();
            // Shuffled first, so that equal expected improvements are broken by the seed.
            candidates.shuffle(rng);
            candidates.truncate(CANDIDATES);
            let mut ranked: Vec<(usize, f64, f64)> = Vec::new();
            for pick in 0..count.min(candidates.len()) {
                if pick < BELIEVED || ranked.is_empty() {
                    ranked = candidates
                        .iter()
                        .filter(|(i, _)| !batch.points.contains(i))
                        .map(|(i, x)| {
                            let (m, sd) = predict(x, &observed, spread);
                            (*i, expected_improvement(m, sd, best, &normal), m)
                        })
                        .collect();
                    // Best last, for `pop`; the sort is stable, so ties keep the seeded order.
                    ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
                }
                let Some((i, _, m)) = ranked.pop() else {
                    break;
                };
                batch.push(i);
                if let Some(x) = ix.unit(i) {
                    observed.push((x, m));
                }
            }
        }
        batch.fill_random(rng);
        batch.labels(ix)
    }
}
