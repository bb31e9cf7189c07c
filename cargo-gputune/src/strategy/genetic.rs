//! A genetic algorithm: the best scored points are the population; children come from
//! tournament-selected parents by uniform crossover and a mutation to an adjacent value
//! (Kernel Tuner's `genetic_algorithm`, with the population taken from everything scored so
//! far, so that a resumed or pipelined search loses nothing).

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::space::{Batch, Params, Walk};
use super::Strategy;

/// Scored points needed before breeding; until then the batch is random.
const FOUNDERS: usize = 4;
/// Attempts per wanted child before the batch is filled at random (a converged population
/// breeds mostly points already evaluated).
const TRIES: usize = 20;

/// The genetic algorithm.
pub struct Genetic {
    walk: Walk,
    /// Individuals that breed.
    population: usize,
}

impl Genetic {
    /// Over `params`, with `seed` and a population of 16.
    pub fn new(params: Params, seed: u64) -> Genetic {
        Genetic::with(params, seed, 16)
    }

    /// Over `params`, with `seed` and `population` individuals that breed.
    pub fn with(params: Params, seed: u64, population: usize) -> Genetic {
        Genetic {
            walk: Walk::new(params, seed),
            population: population.max(2),
        }
    }
}

impl Strategy for Genetic {
    fn name(&self) -> &'static str {
        "genetic"
    }

    fn next(
        &mut self,
        space: &[String],
        scored: &BTreeMap<String, Option<f64>>,
        count: usize,
    ) -> Vec<String> {
        let keep = self.population;
        let (ix, rng, evaluated) = self.walk.view(space, scored);
        let mut population: Vec<(usize, f64)> = evaluated
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i, (*s)??)))
            .filter(|&(i, _)| ix.coords[i].is_some())
            .collect();
        // Best first; ties by index, so that the order does not depend on the map's.
        population.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        population.truncate(keep);
        let mut batch = Batch::new(&evaluated, count);
        if population.len() >= FOUNDERS {
            // A tournament of two: the better of two random individuals (the population
            // is sorted, so the smaller index).
            let pick = |rng: &mut ChaCha8Rng| {
                let a = rng.random_range(0..population.len());
                let b = rng.random_range(0..population.len());
                population[a.min(b)].0
            };
            let n_params = ix.sizes.len().max(1);
            for _ in 0..count.saturating_mul(TRIES) {
                if batch.full() {
                    break;
                }
                let (pa, pb) = (pick(rng), pick(rng));
                let (Some(a), Some(b)) = (&ix.coords[pa], &ix.coords[pb]) else {
                    continue;
                };
                let mut child: Vec<usize> = a
                    .iter()
                    .zip(b)
                    .map(|(&x, &y)| if rng.random_bool(0.5) { x } else { y })
                    .collect();
                // Mutation: each parameter with probability 1/n moves to an adjacent value,
                // so that a child usually differs from its parents in about one place.
                for (p, v) in child.iter_mut().enumerate() {
                    if rng.random_bool(1.0 / n_params as f64) {
                        let up = rng.random_bool(0.5) && *v + 1 < ix.sizes[p];
                        *v = if up { *v + 1 } else { v.saturating_sub(1) };
                    }
                }
                match ix.at(&child) {
                    Some(i) => {
                        batch.push(i);
                    }
                    // Outside the space (`require`): a neighbour of it that is inside keeps
                    // most of the genes.
                    None => {
                        let mut near: Vec<usize> =
                            [pa, pb].iter().flat_map(|&p| ix.neighbours(p)).collect();
                        near.shuffle(rng);
                        if let Some(&i) = near.first() {
                            batch.push(i);
                        }
                    }
                }
            }
        }
        batch.fill_random(rng);
        batch.labels(ix)
    }
}
