//! Simulated annealing with restarts: a walk that proposes the unevaluated neighbours of
//! its current point, moves to a better one, and to a worse one with a probability that
//! falls as the temperature cools; when the current point has no unevaluated neighbour left
//! (a local optimum, fully explored) it restarts from a random point.

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::Rng;

use super::space::{random_unevaluated, Batch, Params, Walk};
use super::Strategy;

/// Simulated annealing.
pub struct Annealing {
    walk: Walk,
    /// The walk's current point and its score.
    current: Option<(usize, f64)>,
    /// Points proposed and not yet seen scored, in proposal order.
    pending: Vec<usize>,
    /// Evaluations seen, for the temperature.
    seen: usize,
    /// The starting temperature, relative to the current score.
    t0: f64,
    /// The cooling per evaluation.
    alpha: f64,
}

impl Annealing {
    /// Over `params`, with `seed`, starting at a temperature of 0.2 (a move 10 % worse is
    /// at first taken with probability e^(-0.1/0.2) ≈ 0.6) that cools by 0.95 an evaluation.
    pub fn new(params: Params, seed: u64) -> Annealing {
        Annealing::with(params, seed, 0.2, 0.95)
    }

    /// Over `params`, with `seed`, the starting temperature `t0` and the cooling `alpha`.
    pub fn with(params: Params, seed: u64, t0: f64, alpha: f64) -> Annealing {
        Annealing {
            walk: Walk::new(params, seed),
            current: None,
            pending: Vec::new(),
            seen: 0,
            t0,
            alpha,
        }
    }
}

impl Strategy for Annealing {
    fn name(&self) -> &'static str {
        "annealing"
    }

    fn next(
        &mut self,
        space: &[String],
        scored: &BTreeMap<String, Option<f64>>,
        count: usize,
    ) -> Vec<String> {
        let (t0, alpha) = (self.t0, self.alpha);
        let (ix, rng, evaluated) = self.walk.view(space, scored);
        // Consider the moves whose scores came back, in the order they were proposed. A
        // `None` is a failure, or, in a pipelined search, a point still running: the walk
        // moves to neither (a good point still running is lost to the walk, not to the
        // search, which stores it).
        let mut still = Vec::new();
        for &i in &self.pending {
            match evaluated[i] {
                Some(Some(s)) => {
                    self.seen += 1;
                    let take = match self.current {
                        None => true,
                        Some((_, c)) if s >= c => true,
                        Some((_, c)) => {
                            let t = t0 * alpha.powi(self.seen as i32);
                            let worse = (c - s) / c.abs().max(f64::MIN_POSITIVE);
                            rng.random_bool((-worse / t.max(1e-12)).exp().clamp(0.0, 1.0))
                        }
                    };
                    if take {
                        self.current = Some((i, s));
                    }
                }
                Some(None) => self.seen += 1,
                None => still.push(i),
            }
        }
        self.pending = still;
        let mut batch = Batch::new(&evaluated, count);
        if let Some((c, _)) = self.current {
            let mut near = ix.neighbours(c);
            near.shuffle(rng);
            for i in near {
                batch.push(i);
            }
        }
        if batch.points.is_empty() {
            // No current point yet, or its neighbourhood is exhausted: restart at random
            // (the walk moves there once it is scored, whatever its score).
            self.current = None;
            if let Some(i) = random_unevaluated(&batch, rng) {
                batch.push(i);
            }
        }
        batch.fill_random(rng);
        self.pending.extend(&batch.points);
        batch.labels(ix)
    }
}
