//! Per-size winners: where a search measured several runtime workloads, the best variant of each
//! size (or each workload) against the group's single winner, and whether it beats that winner by
//! more than noise and the significance rule ([`crate::results::score`]). `apply --per-size` writes
//! the sizes' winners as ranges; `report --per-size` shows what one winner costs.
//!
//! Variants of a deciding search are measured in different bench processes, whose drift is
//! larger than the noise within one; so two variants are compared through their times
//! relative to base measured in their own process (the control), as their scores are.

pub mod report;

use gputune_protocol::Status;

use crate::results::score::{self, Pair};
use crate::results::store::Measurement;
use crate::results::{self, median, Group};

/// Some runtime workloads taken together: one size of the size axis, or one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    /// How reports name it: `Elements=2^20`, or the workload's key.
    pub label: String,
    /// Its value on the size axis, when it is one size.
    pub size: Option<u64>,
    /// Its value on each size axis, when it is one shape of several axes (empty otherwise).
    pub shape: Vec<(String, u64)>,
    /// The runtime workload keys in it.
    pub workloads: Vec<String>,
}

/// What one bucket's best variant is worth against the single winner.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The bucket.
    pub bucket: Bucket,
    /// The best variant there (highest score against base over the bucket's workloads).
    pub best: String,
    /// What runs there: `best` when it beats the single winner beyond noise, else the single
    /// winner.
    pub chosen: String,
    /// The single winner's time over `best`'s there (each relative to its own control), when
    /// both measured it: what choosing per size gains (1.0: nothing).
    pub speedup: Option<f64>,
    /// Whether `best` differs from the single winner there beyond noise and significance.
    pub significant: bool,
    /// The single winner's median time there (the median of its workloads' medians).
    pub single_time: Option<f64>,
    /// `best`'s median time there.
    pub best_time: Option<f64>,
}

/// A group's per-size analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// The single winner (`Group::winner`), `base` when there is none.
    pub single: String,
    /// One choice per bucket, in the buckets' order.
    pub choices: Vec<Choice>,
}

impl Analysis {
    /// Whether some bucket runs something other than the single winner.
    pub fn differs(&self) -> bool {
        self.choices.iter().any(|c| c.chosen != self.single)
    }

    /// The distinct points that run, in first-use order.
    pub fn distinct(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for c in &self.choices {
            if !out.contains(&c.chosen.as_str()) {
                out.push(&c.chosen);
            }
        }
        out
    }

    /// The size ranges of the chosen winners: `(from, below, label)`, neighbours merged, the
    /// first from 0 and the last unbounded, the boundary between two measured sizes their
    /// geometric midpoint ([`boundary`]). Buckets without a size are left out.
    pub fn ranges(&self) -> Vec<(Option<u64>, Option<u64>, String)> {
        let mut sized: Vec<(u64, &str)> = self
            .choices
            .iter()
            .filter_map(|c| Some((c.bucket.size?, c.chosen.as_str())))
            .collect();
        sized.sort_by_key(|(s, _)| *s);
        let mut out: Vec<(Option<u64>, Option<u64>, String)> = Vec::new();
        let mut previous: Option<u64> = None;
        for (size, label) in sized {
            match out.last_mut() {
                Some(last) if last.2 == label => {}
                Some(last) => {
                    let b = boundary(previous.unwrap_or(0), size);
                    last.1 = Some(b);
                    out.push((Some(b), None, label.to_string()));
                }
                None => out.push((None, None, label.to_string())),
            }
            previous = Some(size);
        }
        out
    }
}

/// The boundary between measured sizes `a < b`: their geometric midpoint, rounded up, within
/// `a + 1 ..= b`. Sizes grow geometrically in practice (powers of two, `{io}` axes): on a log
/// scale each measured size owns half the way to its neighbour. With `a = 0`, the arithmetic
/// midpoint.
pub fn boundary(a: u64, b: u64) -> u64 {
    let mid = if a == 0 {
        b / 2 + b % 2
    } else {
        ((a as f64) * (b as f64)).sqrt().ceil() as u64
    };
    mid.clamp(a.saturating_add(1), b.max(a.saturating_add(1)))
}

/// The value of axis `axis` (no marks: `Elements`) in a runtime workload key
/// (`Elements{io}=2^20 Mode=b`): an integer or `2^k`.
pub fn size_of(rt_workload: &str, axis: &str) -> Option<u64> {
    rt_workload.split_whitespace().find_map(|part| {
        let (name, value) = part.split_once('=')?;
        if name.split('{').next()? != axis {
            return None;
        }
        match value.strip_prefix("2^") {
            Some(exp) => 1u64.checked_shl(exp.parse().ok()?),
            None => value.parse().ok(),
        }
    })
}

/// One bucket per value of `axis` among `g`'s runtime workloads, smallest first; `None` when
/// some workload has no value on it.
pub fn size_buckets(g: &Group, axis: &str) -> Option<Vec<Bucket>> {
    let mut buckets: Vec<Bucket> = Vec::new();
    for rt in workloads(g) {
        let size = size_of(&rt, axis)?;
        match buckets.iter_mut().find(|b| b.size == Some(size)) {
            Some(b) => b.workloads.push(rt),
            None => buckets.push(Bucket {
                label: format!("{axis}={size}"),
                size: Some(size),
                shape: Vec::new(),
                workloads: vec![rt],
            }),
        }
    }
    buckets.sort_by_key(|b| b.size);
    Some(buckets)
}

/// One bucket per runtime workload of `g`.
pub fn workload_buckets(g: &Group) -> Vec<Bucket> {
    workloads(g)
        .into_iter()
        .map(|rt| Bucket {
            label: rt.clone(),
            size: None,
            shape: Vec::new(),
            workloads: vec![rt],
        })
        .collect()
}

/// One bucket per shape over `axes` (a function's `size(A = …, B = …)`) among `g`'s runtime
/// workloads, in the order they were measured, leaving out workloads every variant skipped;
/// `None` when some workload has no value on an axis.
pub fn shape_buckets(g: &Group, axes: &[&str]) -> Option<Vec<Bucket>> {
    let mut buckets: Vec<Bucket> = Vec::new();
    for rt in workloads(g) {
        let shape = axes
            .iter()
            .map(|axis| Some((axis.to_string(), size_of(&rt, axis)?)))
            .collect::<Option<Vec<_>>>()?;
        match buckets.iter_mut().find(|b| b.shape == shape) {
            Some(b) => b.workloads.push(rt),
            None => buckets.push(Bucket {
                label: shape
                    .iter()
                    .map(|(a, v)| format!("{a}={v}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                size: None,
                shape,
                workloads: vec![rt],
            }),
        }
    }
    Some(buckets)
}

/// The runtime workloads measured in `g`: base's first, in the order it measured them (the
/// bench's declared order), then any only a variant measured; not those every variant skipped
/// (a shape the bench does not cover is no size to choose a winner for).
fn workloads(g: &Group) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in g.base().iter().chain(g.variants.values().flatten()) {
        if !out.contains(&m.rt_workload) {
            out.push(m.rt_workload.clone());
        }
    }
    let skipped_by_all = |rt: &String| {
        g.variants
            .values()
            .flatten()
            .filter(|m| &m.rt_workload == rt)
            .all(|m| m.status == Status::Skipped)
    };
    out.retain(|rt| !skipped_by_all(rt));
    out
}

/// `ms` restricted to the workloads of `bucket`.
fn within(ms: &[Measurement], bucket: &Bucket) -> Vec<Measurement> {
    ms.iter()
        .filter(|m| bucket.workloads.contains(&m.rt_workload))
        .cloned()
        .collect()
}

/// A variant's samples on one workload, relative to base, and the workload's weight.
type Relative = (Vec<f64>, f64);

/// A variant's samples on workload `rt`, relative to base in its own process (its control),
/// else to base's row; with the workload's weight.
fn relative(g: &Group, variant: &str, rt: &str) -> Option<Relative> {
    let m = g
        .variants
        .get(variant)?
        .iter()
        .find(|m| m.rt_workload == rt && m.status == Status::Ok)?;
    let reference = match median(m.control.clone()) {
        Some(c) if m.control.len() >= 2 && c > 0.0 => c,
        _ => g
            .base()
            .iter()
            .find(|b| b.rt_workload == rt && b.status == Status::Ok)?
            .center
            .filter(|c| *c > 0.0)?,
    };
    let samples: Vec<f64> = m.samples.iter().map(|s| s / reference).collect();
    (!samples.is_empty()).then_some((samples, m.rt_weight))
}

/// The median of the centres of `variant`'s ok measurements in `bucket`.
fn time_in(g: &Group, variant: &str, bucket: &Bucket) -> Option<f64> {
    let ms = g.variants.get(variant)?;
    median(
        within(ms, bucket)
            .iter()
            .filter(|m| m.status == Status::Ok)
            .filter_map(|m| m.center)
            .collect(),
    )
}

/// `challenger` against `incumbent` over `bucket`: the incumbent plays base in CUB's score
/// (speedup = its time over the challenger's), with the significance rule of [`score`].
fn against(g: &Group, incumbent: &str, challenger: &str, bucket: &Bucket) -> Option<score::Score> {
    let sides: Vec<(Relative, Relative)> = bucket
        .workloads
        .iter()
        .filter_map(|rt| Some((relative(g, incumbent, rt)?, relative(g, challenger, rt)?)))
        .collect();
    let pairs: Vec<Pair<'_>> = sides
        .iter()
        .filter_map(|((inc, weight), (cha, _))| {
            Some(Pair {
                weight: *weight,
                base_center: median(inc.clone())?,
                center: median(cha.clone())?,
                base_samples: inc,
                samples: cha,
            })
        })
        .collect();
    score::score(&pairs)
}

/// The per-bucket choices of `g`.
pub fn analyse(g: &Group, buckets: Vec<Bucket>) -> Analysis {
    let single = g.winner().map_or_else(|| "base".to_string(), |w| w.variant);
    let base = g.base();
    let choices = buckets
        .into_iter()
        .map(|bucket| {
            // Every variant measured ok on all of the bucket's workloads, scored on them.
            let mut best: (f64, &str) = (1.0, "base");
            for (label, ms) in &g.variants {
                // A variant that computed a wrong answer anywhere is no winner anywhere: its
                // right answers elsewhere may be luck of the inputs.
                if ms.iter().any(|m| m.status == Status::VerifyFailed) {
                    continue;
                }
                let mine = within(ms, &bucket);
                let ok = mine.iter().filter(|m| m.status == Status::Ok).count();
                if label == "base" || ok < bucket.workloads.len() || ok == 0 {
                    continue;
                }
                let Some(s) = results::score_of(&within(base, &bucket), &mine) else {
                    continue;
                };
                // Only a significant gain over base can be a size's winner, as in `winner`.
                let better = s.significant && s.score > 1.0 && s.score > best.0
                    || (s.significant && s.score == best.0 && *label == single);
                if better {
                    best = (s.score, label);
                }
            }
            let best = best.1.to_string();
            let verdict = against(g, &single, &best, &bucket);
            let significant = best != single
                && verdict
                    .as_ref()
                    .is_some_and(|s| s.significant && s.score > 1.0);
            Choice {
                chosen: if significant {
                    best.clone()
                } else {
                    single.clone()
                },
                speedup: verdict.as_ref().map(|s| s.score),
                single_time: time_in(g, &single, &bucket),
                best_time: time_in(g, &best, &bucket),
                significant,
                best,
                bucket,
            }
        })
        .collect();
    Analysis { single, choices }
}

#[cfg(test)]
mod tests;
