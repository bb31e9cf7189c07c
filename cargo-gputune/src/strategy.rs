//! Search strategies behind one narrow interface: given the space and what has been scored,
//! propose the next variants. Exhaustive and random are here; smarter ones plug in the same
//! way (Kernel Tuner's strategies take the same inputs).

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A search strategy.
pub trait Strategy {
    /// Its name, for output.
    fn name(&self) -> &'static str;
    /// Up to `count` variants to evaluate next, none of them in `scored` (label → score, or
    /// `None` for a variant that failed); empty when the strategy is done.
    fn next(
        &mut self,
        space: &[String],
        scored: &BTreeMap<String, Option<f64>>,
        count: usize,
    ) -> Vec<String>;
}

/// Every point, in an order shuffled by a seeded ChaCha8 (the same seed gives the same
/// order on every machine).
pub struct Exhaustive {
    order: Option<Vec<String>>,
    seed: u64,
}

impl Exhaustive {
    /// With `seed`.
    pub fn new(seed: u64) -> Exhaustive {
        Exhaustive { order: None, seed }
    }
}

fn shuffled(space: &[String], seed: u64) -> Vec<String> {
    let mut order = space.to_vec();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    order
}

impl Strategy for Exhaustive {
    fn name(&self) -> &'static str {
        "exhaustive"
    }

    fn next(
        &mut self,
        space: &[String],
        scored: &BTreeMap<String, Option<f64>>,
        count: usize,
    ) -> Vec<String> {
        let seed = self.seed;
        let order = self.order.get_or_insert_with(|| shuffled(space, seed));
        order
            .iter()
            .filter(|l| !scored.contains_key(*l))
            .take(count)
            .cloned()
            .collect()
    }
}

/// A seeded random sample of at most `max_evals` points.
pub struct Random {
    inner: Exhaustive,
    max_evals: usize,
}

impl Random {
    /// With `seed`, evaluating at most `max_evals` variants.
    pub fn new(seed: u64, max_evals: usize) -> Random {
        Random {
            inner: Exhaustive::new(seed),
            max_evals,
        }
    }
}

impl Strategy for Random {
    fn name(&self) -> &'static str {
        "random"
    }

    fn next(
        &mut self,
        space: &[String],
        scored: &BTreeMap<String, Option<f64>>,
        count: usize,
    ) -> Vec<String> {
        // The sample is the first `max_evals` of the seeded order, so a resumed search
        // continues the same sample instead of drawing a new one.
        let sample: Vec<String> = {
            let order = self
                .inner
                .order
                .get_or_insert_with(|| shuffled(space, self.inner.seed));
            order.iter().take(self.max_evals).cloned().collect()
        };
        sample
            .into_iter()
            .filter(|l| !scored.contains_key(l))
            .take(count)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> Vec<String> {
        (0..20).map(|i| format!("x_{i}")).collect()
    }

    #[test]
    fn exhaustive_visits_everything_once_in_a_seeded_order() {
        let mut a = Exhaustive::new(7);
        let mut scored = BTreeMap::new();
        let mut seen = Vec::new();
        loop {
            let next = a.next(&space(), &scored, 6);
            if next.is_empty() {
                break;
            }
            for l in next {
                scored.insert(l.clone(), Some(1.0));
                seen.push(l);
            }
        }
        let mut sorted = seen.clone();
        sorted.sort();
        let mut all = space();
        all.sort();
        assert_eq!(sorted, all);
        assert_ne!(seen, space(), "shuffled");
        let again = Exhaustive::new(7).next(&space(), &BTreeMap::new(), 20);
        assert_eq!(again, seen, "same seed, same order");
        assert_ne!(
            Exhaustive::new(8).next(&space(), &BTreeMap::new(), 20),
            seen
        );
    }

    #[test]
    fn random_stops_at_max_evals_and_resumes_the_same_sample() {
        let mut r = Random::new(1, 5);
        let first = r.next(&space(), &BTreeMap::new(), 3);
        assert_eq!(first.len(), 3);
        let scored: BTreeMap<String, Option<f64>> =
            first.iter().map(|l| (l.clone(), None)).collect();
        let rest = Random::new(1, 5).next(&space(), &scored, 10);
        assert_eq!(rest.len(), 2);
        assert!(rest.iter().all(|l| !first.contains(l)));
    }
}
