//! The work a search on several GPUs hands its lanes: screening in chunks that shrink as the
//! work runs out (guided self-scheduling: a free lane takes its share of what is left), so that
//! every lane finishes at about the same time whatever its speed, in few passes (each measures
//! base first); and the finalists, on as many lanes as shortens the finals.

use std::collections::VecDeque;
use std::path::PathBuf;

/// The smallest chunk a lane takes while there is as much: each pass measures base first (its
/// control, and the first reference of `--decide`'s early look), about what three variants
/// dropped by the early look cost.
pub(crate) const MIN_CHUNK: usize = 4;

/// Variants of one binary to run on one compile-time workload: a chunk of screening work.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item {
    /// The binary that holds them.
    pub(crate) bin: PathBuf,
    /// The compile-time workload, an index into the search's.
    pub(crate) ct: usize,
    /// Their labels.
    pub(crate) labels: Vec<String>,
    /// The build time charged to each of them.
    pub(crate) build_seconds: f64,
    /// A lane that is not to take it while another can: one whose process died measuring it
    /// (the GPU may be what failed; another GPU tells).
    pub(crate) avoid: Option<usize>,
}

/// The screening work not handed out yet, in order.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    items: VecDeque<Item>,
}

impl Queue {
    /// A queue of `items`, in their order (empty ones dropped).
    pub(crate) fn new(items: impl IntoIterator<Item = Item>) -> Queue {
        Queue {
            items: items.into_iter().filter(|i| !i.labels.is_empty()).collect(),
        }
    }

    /// Variants not handed out yet.
    pub(crate) fn remaining(&self) -> usize {
        self.items.iter().map(|i| i.labels.len()).sum()
    }

    /// The binary and workload of the first work left.
    pub(crate) fn first(&self) -> Option<(PathBuf, usize)> {
        self.items.front().map(|i| (i.bin.clone(), i.ct))
    }

    /// Whether nothing is left.
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The next chunk for free lane `lane` while `lanes` lanes are alive: its share of what is
    /// left (at least [`MIN_CHUNK`] while there is as much), from the
    /// item `serving` names (the binary and workload its waiting process serves) if any of it
    /// is left, else from the first item no other lane is on (`busy`), else from the first;
    /// never from an item it is to avoid while another lane is alive.
    pub(crate) fn take(
        &mut self,
        (lane, lanes): (usize, usize),
        serving: Option<(&std::path::Path, usize)>,
        busy: &[(PathBuf, usize)],
    ) -> Option<Item> {
        let lanes = lanes.max(1);
        let left = self.remaining();
        if left == 0 {
            return None;
        }
        let size = left.div_ceil(lanes).max(MIN_CHUNK.min(left));
        let allowed = |i: &Item| lanes == 1 || i.avoid != Some(lane);
        let at =
            |pred: &dyn Fn(&Item) -> bool| self.items.iter().position(|i| allowed(i) && pred(i));
        let index = serving
            .and_then(|(bin, ct)| at(&|i| i.bin == bin && i.ct == ct))
            .or_else(|| at(&|i| !busy.iter().any(|(b, c)| *b == i.bin && *c == i.ct)))
            .or_else(|| at(&|_| true))?;
        let item = &mut self.items[index];
        let size = size.min(item.labels.len());
        let labels: Vec<String> = item.labels.drain(..size).collect();
        let chunk = Item {
            labels,
            ..item.clone()
        };
        if item.labels.is_empty() {
            self.items.remove(index);
        }
        Some(chunk)
    }

    /// Puts `item` back at the front: the part of a chunk a lane that failed did not finish.
    pub(crate) fn give_back(&mut self, item: Item) {
        if !item.labels.is_empty() {
            self.items.push_front(item);
        }
    }
}

/// `labels` in the order a search on several GPUs cuts its chunks from: a fixed interleaving
/// (a stride of about 0.618 of their number, prime to it), so that every contiguous chunk is
/// a fair sample of the space where a space declared in order keeps its slow corner together.
pub(crate) fn interleaved(labels: &[String]) -> Vec<String> {
    let n = labels.len();
    if n < 3 {
        return labels.to_vec();
    }
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let mut stride = ((n as f64 * 0.618).round() as usize).clamp(1, n - 1);
    while gcd(stride, n) != 1 {
        stride += 1;
    }
    (0..n).map(|i| labels[i * stride % n].clone()).collect()
}

/// What a finalist after the leader costs in a process where the leader was measured in full
/// before it, against one measured in full: it stops once it is resolved to be slower than the
/// leader (`raced`) or within the tie margin of it (`tied`). A guess, on the side of caution.
pub(crate) const RACED: f64 = 0.3;

/// Which lanes measure `count` finalists (best first): per lane, the indices of those it
/// measures, in order. A lane that measures any measures the leader (finalist 0) first, in full,
/// so that the others race it in its process as they would on one GPU; the others go to as
/// many lanes as makes the finals shortest, each to the lane with the least work, the first such
/// lane on a tie. `loads` is each lane's work already, in full measurements (1 for base in full
/// where the lane has none yet; `None` for a lane that failed). `None` when no lane is alive.
pub(crate) fn spread(count: usize, loads: &[Option<f64>]) -> Option<Vec<Vec<usize>>> {
    let mut alive: Vec<(usize, f64)> = loads
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.map(|l| (i, l)))
        .collect();
    if alive.is_empty() {
        return None;
    }
    let mut out = vec![Vec::new(); loads.len()];
    if count == 0 {
        return Some(out);
    }
    alive.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    // The assignment on the `n` least loaded lanes, and how long its longest lane takes.
    let on = |n: usize| -> (f64, Vec<(usize, Vec<usize>)>) {
        let mut lanes: Vec<(usize, f64, Vec<usize>)> = alive[..n]
            .iter()
            .map(|&(i, load)| (i, load + 1.0, vec![0]))
            .collect();
        for f in 1..count {
            let least = lanes
                .iter_mut()
                .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            if let Some(lane) = least {
                lane.1 += RACED;
                lane.2.push(f);
            }
        }
        let longest = lanes.iter().map(|l| l.1).fold(0.0, f64::max);
        (longest, lanes.into_iter().map(|(i, _, f)| (i, f)).collect())
    };
    let mut best = on(1);
    for n in 2..=alive.len().min(count) {
        let next = on(n);
        if next.0 < best.0 {
            best = next;
        }
    }
    for (lane, finalists) in best.1 {
        out[lane] = finalists;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(bin: &str, ct: usize, n: usize) -> Item {
        Item {
            bin: bin.into(),
            ct,
            labels: (0..n).map(|i| format!("{bin}{ct}_{i}")).collect(),
            build_seconds: 1.0,
            avoid: None,
        }
    }

    #[test]
    fn chunks_shrink_as_the_work_runs_out_and_hand_out_everything_once() {
        let mut q = Queue::new([item("a", 0, 64)]);
        let mut sizes = Vec::new();
        let mut seen = Vec::new();
        while let Some(chunk) = q.take((0, 2), None, &[]) {
            sizes.push(chunk.labels.len());
            seen.extend(chunk.labels);
        }
        assert_eq!(sizes, [32, 16, 8, 4, 4]);
        assert_eq!(seen.len(), 64);
        seen.dedup();
        assert_eq!(seen.len(), 64, "each once, in order");
        assert!(q.is_empty());
        // Under a chunk's worth is one chunk: another pass would cost more than it saves.
        let mut small = Queue::new([item("a", 0, 4)]);
        let first = small.take((0, 2), None, &[]);
        assert_eq!(first.map(|c| c.labels.len()), Some(4));
        let mut nine = Queue::new([item("a", 0, 9)]);
        let sizes: Vec<usize> = std::iter::from_fn(|| nine.take((0, 2), None, &[]))
            .map(|c| c.labels.len())
            .collect();
        assert_eq!(sizes, [5, 4]);
        // A large space ends in chunks of a few variants: the last lane to finish waits for
        // little.
        let mut large = Queue::new([item("a", 0, 16_020)]);
        let sizes: Vec<usize> = std::iter::from_fn(|| large.take((0, 2), None, &[]))
            .map(|c| c.labels.len())
            .collect();
        assert_eq!(sizes.first(), Some(&8010));
        assert!(
            sizes.iter().rev().take(2).all(|&s| s <= MIN_CHUNK),
            "{sizes:?}"
        );
        assert!(sizes.len() < 20, "{} passes: {sizes:?}", sizes.len());
    }

    #[test]
    fn a_lane_keeps_to_the_item_its_process_serves_and_others_spread_out() {
        let mut q = Queue::new([item("a", 0, 30), item("a", 1, 10), item("b", 0, 0)]);
        assert_eq!(q.remaining(), 40, "an empty item is dropped");
        let first = q.take((0, 2), None, &[]).expect("work");
        assert_eq!((first.bin.to_str(), first.ct), (Some("a"), 0));
        // The second lane goes to the item nobody is on.
        let busy = [(PathBuf::from("a"), 0)];
        let second = q.take((1, 2), None, &busy).expect("work");
        assert_eq!(second.ct, 1);
        // A lane whose process serves workload 0 stays on it.
        let again = q
            .take((0, 2), Some((std::path::Path::new("a"), 0)), &[])
            .expect("work");
        assert_eq!(again.ct, 0);
        // What a failed lane did not finish comes first again.
        let back = Item {
            labels: vec!["x".into()],
            ..second
        };
        q.give_back(back);
        assert_eq!(
            q.take((0, 2), None, &[]).map(|c| c.labels),
            Some(vec!["x".to_string()])
        );
        // A variant whose process died on lane 1 goes to another lane while one is alive.
        let avoided = || {
            Queue::new([Item {
                avoid: Some(1),
                ..item("a", 0, 1)
            }])
        };
        assert_eq!(avoided().take((1, 2), None, &[]), None);
        assert!(avoided().take((0, 2), None, &[]).is_some());
        let last = avoided().take((1, 1), None, &[]);
        assert!(last.is_some(), "the last lane alive takes it");
    }

    #[test]
    fn interleaving_keeps_every_label_once_and_spreads_neighbours() {
        let labels: Vec<String> = (0..64).map(|i| i.to_string()).collect();
        let mixed = interleaved(&labels);
        let mut sorted = mixed.clone();
        sorted.sort_by_key(|l| l.parse::<usize>().unwrap_or_default());
        assert_eq!(sorted, labels, "a permutation");
        // The first half holds labels of both halves of the declared order, about equally.
        let low = mixed[..32]
            .iter()
            .filter(|l| l.parse::<usize>().unwrap_or_default() < 32)
            .count();
        assert!((12..=20).contains(&low), "{low} of 32: {mixed:?}");
        assert_eq!(interleaved(&labels[..2]), labels[..2]);
    }

    #[test]
    fn finalists_stay_with_their_leader_unless_more_lanes_shorten_the_finals() {
        // Lane 0 has base in full measured, lane 1 has not, lane 2 failed.
        let loads = [Some(0.0), Some(1.0), None];
        // One finalist, or two (the second races the first in its process, as on one GPU):
        // the lane with base in full takes them.
        assert_eq!(spread(1, &loads), Some(vec![vec![0], vec![], vec![]]));
        assert_eq!(spread(2, &loads), Some(vec![vec![0, 1], vec![], vec![]]));
        // Many: both lanes, each measuring the leader first.
        let many = spread(12, &loads).expect("lanes");
        assert_eq!(many[0][0], 0);
        assert_eq!(many[1][0], 0);
        assert_eq!(
            many[0].len() + many[1].len(),
            13,
            "the leader twice: {many:?}"
        );
        assert!(many[0].len() > many[1].len(), "{many:?}");
        assert!(many[2].is_empty());
        // Two lanes with base in full: two finalists stay together, six spread.
        let even = [Some(0.0), Some(0.0)];
        assert_eq!(spread(2, &even), Some(vec![vec![0, 1], vec![]]));
        let six = spread(6, &even).expect("lanes");
        assert_eq!(six, vec![vec![0, 1, 3, 5], vec![0, 2, 4]]);
        assert_eq!(spread(0, &[Some(0.0)]), Some(vec![vec![]]));
        assert_eq!(spread(1, &[None, None]), None);
    }
}
