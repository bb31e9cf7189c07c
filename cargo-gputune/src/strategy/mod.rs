//! Search strategies behind one narrow interface: given the space and what has been scored,
//! propose the next variants. Exhaustive and random are here; the guided ones, which also
//! need the parameter structure ([`Params`]) for their neighbourhoods and models, have a file
//! each. All are seeded (ChaCha8: the same seed and the same scores give the same proposals
//! on every machine), propose only labels of the space, never one already in `scored`, and
//! return nothing only once every point was evaluated or their own bound is reached.

mod annealing;
mod forest;
mod genetic;
mod knn;
#[cfg(test)]
mod rounds;
mod settings;
pub mod space;
mod surrogate;

use std::collections::BTreeMap;

pub use annealing::Annealing;
pub use genetic::Genetic;
pub use settings::{Settings, SettingsError};
pub use space::Params;
pub use surrogate::Surrogate;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The search strategies (`--strategy`), as `build` makes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrategyKind {
    /// Every point, in a seeded random order.
    Exhaustive,
    /// A seeded random sample (`--max-evals`, `--time-limit`).
    Random,
    /// A genetic algorithm: crossover and mutation of the best points so far.
    Genetic,
    /// Simulated annealing over neighbouring points (one parameter one value away), with
    /// restarts.
    Annealing,
    /// Model-guided, the default guided strategy: a tree ensemble and k nearest neighbours
    /// taking turns as the surrogate, expected improvement, most rounds among the best point's
    /// one-parameter neighbours (then its two-parameter moves), some within four parameters of
    /// it.
    Surrogate,
}

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

/// The strategy `kind` with `seed`; `max_evals` bounds the random sample (the others are
/// bounded by the search).
pub fn build(
    kind: StrategyKind,
    seed: u64,
    max_evals: Option<usize>,
    params: Params,
    space_size: usize,
) -> Box<dyn Strategy> {
    build_with(
        kind,
        seed,
        max_evals,
        params,
        space_size,
        Settings::default(),
    )
}

/// As [`build`], with `settings` for the guided strategies (`replay --settings`).
pub fn build_with(
    kind: StrategyKind,
    seed: u64,
    max_evals: Option<usize>,
    params: Params,
    space_size: usize,
    settings: Settings,
) -> Box<dyn Strategy> {
    use StrategyKind as K;
    match kind {
        K::Exhaustive => Box::new(Exhaustive::new(seed)),
        K::Random => Box::new(Random::new(seed, max_evals.unwrap_or(space_size))),
        K::Genetic => Box::new(Genetic::with(params, seed, settings.population)),
        K::Annealing => Box::new(Annealing::with(params, seed, settings.t0, settings.alpha)),
        K::Surrogate => Box::new(Surrogate::with(params, seed, settings)),
    }
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

    /// A space of three parameters with holes cut by a `require`, scores that peak at one
    /// point, and failures along one edge.
    fn structured() -> (Params, Vec<String>, impl Fn(&str) -> Option<f64>) {
        let spec = gputune_grammar::parse_str(
            "a = 0..=5, b = pow2(0..=4), c = [x, y], require(a + b != 5), base(a = 0, b = 1, c = x)",
        )
        .expect("valid");
        let labels: Vec<String> = spec.space().iter().map(|p| p.label()).collect();
        let params = Params::from_spec(&spec);
        let p = params.clone();
        let score = move |label: &str| {
            let c = p.parse(label)?;
            if c[0] == 0 {
                return None;
            }
            let d = (c[0] as f64 - 4.0).abs() + (c[1] as f64 - 1.0).abs() + c[2] as f64;
            Some(2.0 / (1.0 + d))
        };
        (params, labels, score)
    }

    const KINDS: [StrategyKind; 5] = [
        StrategyKind::Exhaustive,
        StrategyKind::Random,
        StrategyKind::Genetic,
        StrategyKind::Annealing,
        StrategyKind::Surrogate,
    ];

    /// Every proposal of `kind` until it stops, checking the contract on the way.
    fn proposals(kind: StrategyKind, seed: u64, batch: usize) -> Vec<String> {
        let (params, space, score) = structured();
        let mut s = build(kind, seed, None, params, space.len());
        let mut scored = BTreeMap::new();
        let mut all = Vec::new();
        loop {
            let next = s.next(&space, &scored, batch);
            if next.is_empty() {
                break;
            }
            assert!(next.len() <= batch, "{kind:?}: {} > {batch}", next.len());
            for l in next {
                assert!(
                    space.contains(&l),
                    "{kind:?} proposed {l}, not in the space"
                );
                assert!(!scored.contains_key(&l), "{kind:?} proposed {l} again");
                scored.insert(l.clone(), score(&l));
                all.push(l);
            }
        }
        all
    }

    #[test]
    fn every_strategy_keeps_the_contract_finishes_the_space_and_repeats_by_seed() {
        let (_, space, _) = structured();
        assert!(space.len() < 6 * 5 * 2, "the require cuts holes");
        for kind in KINDS {
            for batch in [1, 3, 8] {
                let a = proposals(kind, 5, batch);
                assert_eq!(a.len(), space.len(), "{kind:?} finishes the space");
                assert_eq!(
                    a,
                    proposals(kind, 5, batch),
                    "{kind:?}: same seed, same run"
                );
                assert_ne!(a, proposals(kind, 6, batch), "{kind:?}: another seed");
            }
        }
    }

    #[test]
    fn every_strategy_takes_a_failed_point_as_evaluated() {
        let (params, space, _) = structured();
        for kind in KINDS {
            let mut s = build(kind, 1, None, params.clone(), space.len());
            // Everything failed but two points: only those two are left to propose.
            let scored: BTreeMap<String, Option<f64>> =
                space[2..].iter().map(|l| (l.clone(), None)).collect();
            let mut next = s.next(&space, &scored, 10);
            next.sort();
            assert_eq!(next, space[..2].to_vec(), "{kind:?}");
        }
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
