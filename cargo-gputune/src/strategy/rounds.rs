//! The cost of a proposal round of the default guided strategy on large spaces: a test that
//! a round's work is bounded whatever the space's size, and a benchmark (ignored; run it with
//! `scripts/kt/round-times.sh`) that prints the slowest and the median round at 20,000 points.

use std::collections::BTreeMap;
use std::time::Instant;

use super::space::Params;
use super::surrogate::{BELIEVED, CANDIDATES};
use super::{Settings, Strategy, Surrogate};

/// A space of every combination of `sizes` values, as `p0_v.p1_v…` labels.
fn grid(sizes: &[usize]) -> (Params, Vec<String>) {
    let params = Params(
        sizes
            .iter()
            .enumerate()
            .map(|(p, &n)| (format!("p{p}"), (0..n).map(|v| v.to_string()).collect()))
            .collect(),
    );
    let mut space = vec![String::new()];
    for (p, &n) in sizes.iter().enumerate() {
        space = space
            .iter()
            .flat_map(|l| {
                (0..n).map(move |v| {
                    let sep = if l.is_empty() { "" } else { "." };
                    format!("{l}{sep}p{p}_{v}")
                })
            })
            .collect();
    }
    (params, space)
}

/// A trap and a needle: a broad cluster of good points around the first parameter's top
/// value, the best point far from it, failures on a tenth of the space; so that a run stalls
/// and its niche rounds are exercised.
fn score(params: &Params, label: &str) -> Option<f64> {
    let c = params.parse(label).expect("a label of the grid");
    if c.iter().sum::<usize>() % 10 == 3 {
        return None;
    }
    if c.iter().all(|&v| v == 0) {
        return Some(10.0);
    }
    let top = params.0[0].1.len() - 1;
    let near: usize = c.iter().skip(1).map(|&v| v.min(3)).sum();
    Some(if c[0] == top { 5.0 } else { 1.0 } + 0.01 * near as f64)
}

/// Proposes `rounds` batches of `count` with `settings` over `sizes`, calling `each` with
/// the strategy after each round.
fn run(
    sizes: &[usize],
    settings: Settings,
    count: usize,
    rounds: usize,
    mut each: impl FnMut(&Surrogate),
) {
    let (params, space) = grid(sizes);
    let mut s = Surrogate::with(params.clone(), 7, settings);
    let mut scored = BTreeMap::new();
    for _ in 0..rounds {
        let picks = s.next(&space, &scored, count);
        assert!(!picks.is_empty());
        each(&s);
        for l in picks {
            let v = score(&params, &l);
            scored.insert(l, v);
        }
    }
}

#[test]
fn a_round_scores_a_bounded_number_of_candidates_whatever_the_space_size() {
    // 30,000 points, more than a round scores; stalled early, so that niche rounds come too.
    // Uniform random picks: the needle sits at a corner, which `edges` would find at the
    // start, and a run that has found it stalls into random rounds, which predict nothing.
    let sizes = [10, 10, 10, 6, 5];
    let settings =
        Settings::parse("initial=4,stall=4,niche=1,niche_rounds=2,edges=0").expect("valid");
    let mut most = 0;
    run(&sizes, settings, 1, 14, |s| {
        assert!(s.predictions <= CANDIDATES, "{}", s.predictions);
        most = most.max(s.predictions);
    });
    assert_eq!(
        most, CANDIDATES,
        "a global round scores the bound, not the space"
    );
    // A batch refits and reranks for its first picks only.
    run(&sizes, settings, 16, 2, |s| {
        assert!(s.predictions <= BELIEVED * CANDIDATES, "{}", s.predictions)
    });
}

/// Not a test of behaviour: the time of each round at 20,000 points (400 evaluations, one
/// point a round) for the default settings, with uniform random picks (`edges=0`, the default
/// before issue 49's fourth session) and with the niche rounds, printed.
#[test]
#[ignore = "a benchmark: scripts/kt/round-times.sh"]
fn round_times_at_20000_points() {
    let sizes = [20, 10, 10, 5, 2];
    for text in ["", "edges=0", "niche=1,niche_rounds=5"] {
        let settings = Settings::parse(text).expect("valid");
        let mut times = Vec::new();
        let mut last = Instant::now();
        run(&sizes, settings, 1, 400, |_| {
            times.push(last.elapsed().as_secs_f64());
            last = Instant::now();
        });
        times.sort_by(f64::total_cmp);
        println!(
            "surrogate [{}] at 20,000 points, 400 rounds of one point: median {:.1} ms, slowest {:.1} ms",
            if text.is_empty() { "defaults" } else { text },
            1e3 * times[times.len() / 2],
            1e3 * times[times.len() - 1],
        );
    }
}
