//! Finals shared by the GPUs: when a workload's finals are too few to spread (one finalist, or
//! a leader and one it races, as most short searches end), each GPU measures base and the
//! finalists side by side to its share of the stopping criterion (`--min-time` / GPUs, or
//! `--target-samples` / GPUs), and the parts are pooled into one row per runtime workload.
//!
//! Why pooling is sound: every part measures base and the finalist in the same process on one
//! GPU, to the same share of the criterion, so each GPU gives about the same fraction of the
//! finalist's samples as of base's (its control). A GPU a fraction d slower than another moves
//! both pooled medians alike; what is left is d times the difference of those fractions, a few
//! hundredths of d for two parts of one criterion. A difference between the GPUs widens both
//! pools, so the significance test is, if anything, more cautious. The store keys rows by the
//! GPU's identity, which two GPUs of a model share: one row per finalist and workload, its
//! samples in the order of the GPUs, and its message says how many came from which GPU.

use gputune_protocol::{BenchArgs, Status, StopReason};

use crate::results;
use crate::results::score;
use crate::results::store::Measurement;

/// Whether finals measured to `args` can be shared by GPUs: the criterion stops at a time or a
/// count that parts can split (stdrel, its entropy-or-stdrel variant, sample-count). Energy
/// needs base's energy beside each finalist's in one pass: not shared.
pub(crate) fn shareable(args: &BenchArgs) -> bool {
    let a = args.effective();
    !a.energy
        && matches!(
            a.criterion(),
            "stdrel" | "entropy-or-stdrel" | "sample-count"
        )
}

/// The flags of one of `share` GPUs' parts of a measurement to `args`' criterion: its share
/// of the minimum time, of the sample count and of the hot loop's time. Every part keeps
/// `--min-samples`.
pub(crate) fn part_args(args: &BenchArgs, share: u32) -> BenchArgs {
    let mut a = args.clone();
    if share > 1 {
        let n = f64::from(share);
        a.min_time /= n;
        a.batch_target_time /= n;
        a.target_samples = a.target_samples.div_ceil(u64::from(share)).max(1);
    }
    a
}

/// One variant's rows on one compile-time workload, pooled from the parts of the GPUs that
/// shared its finals: `parts` is each GPU's ordinal and rows, in the order of the GPUs. A
/// workload that failed on any GPU is that failure (the GPU named); one that is ok on all
/// pools their samples and controls.
pub(crate) fn pool(parts: &[(u32, Vec<Measurement>)]) -> Vec<Measurement> {
    let Some((_, first)) = parts.first() else {
        return Vec::new();
    };
    if parts.len() == 1 {
        return first.clone();
    }
    first
        .iter()
        .map(|row| {
            let same: Vec<(u32, &Measurement)> = parts
                .iter()
                .filter_map(|(d, rows)| {
                    let r = rows.iter().find(|r| r.rt_workload == row.rt_workload)?;
                    Some((*d, r))
                })
                .collect();
            if let Some((d, bad)) = same.iter().find(|(_, r)| r.status != Status::Ok) {
                let mut bad = (*bad).clone();
                bad.message = Some(format!(
                    "on GPU {d}: {}",
                    bad.message.as_deref().unwrap_or("failed")
                ));
                return bad;
            }
            pooled(&same)
        })
        .collect()
}

/// The rows of one runtime workload (all ok), pooled.
fn pooled(same: &[(u32, &Measurement)]) -> Measurement {
    let mut out = same[0].1.clone();
    out.samples = same.iter().flat_map(|(_, r)| r.samples.clone()).collect();
    out.control = same.iter().flat_map(|(_, r)| r.control.clone()).collect();
    out.sm_clocks = same.iter().flat_map(|(_, r)| r.sm_clocks.clone()).collect();
    let first_center = out.center;
    out.center = results::median(out.samples.clone()).or(first_center);
    out.noise = score::relative_stdev(&out.samples).or(out.noise);
    // Bytes over time: the same bytes over the pooled median.
    out.bandwidth = match (out.bandwidth, first_center, out.center) {
        (Some(bw), Some(c0), Some(c)) if c > 0.0 => Some(bw * c0 / c),
        (bw, ..) => bw,
    };
    out.run_seconds = same
        .iter()
        .filter_map(|(_, r)| r.run_seconds)
        .reduce(f64::max);
    // Resolved behind the leader (or tied with it) on any GPU is resolved.
    if let Some(s) = same
        .iter()
        .filter_map(|(_, r)| r.stop)
        .find(|s| matches!(s, StopReason::Raced | StopReason::Tied))
    {
        out.stop = Some(s);
    }
    let mut said: Vec<String> = Vec::new();
    for (_, r) in same {
        if let Some(m) = &r.message {
            if !said.contains(m) {
                said.push(m.clone());
            }
        }
    }
    let counts: Vec<String> = same
        .iter()
        .map(|(d, r)| format!("{} on GPU {d}", r.samples.len()))
        .collect();
    let beside = if out.control.is_empty() {
        ""
    } else {
        ", each beside base on its own GPU"
    };
    said.push(format!(
        "shared by {} GPUs{beside}: samples {}",
        same.len(),
        counts.join(", ")
    ));
    out.message = Some(said.join("; "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(rt: &str, samples: Vec<f64>, control: Vec<f64>) -> Measurement {
        Measurement {
            revision: "r".into(),
            device: "d".into(),
            arch: "sm_90".into(),
            package: "p".into(),
            bench: "b".into(),
            function: "f".into(),
            ct_workload: "*".into(),
            variant: "v".into(),
            rt_workload: rt.into(),
            rt_weight: 1.0,
            status: Status::Ok,
            message: None,
            center: results::median(samples.clone()),
            noise: None,
            bandwidth: Some(100.0),
            samples,
            build_seconds: None,
            run_seconds: Some(1.0),
            stop: Some(StopReason::Criterion),
            control,
            kernels: Vec::new(),
            provenance: None,
            sm_clocks: Vec::new(),
        }
    }

    #[test]
    fn parts_split_the_criterion_and_keep_the_minimum_samples() {
        let full = BenchArgs::default();
        let half = part_args(&full, 2);
        assert_eq!(half.min_time, full.min_time / 2.0);
        assert_eq!(half.min_samples, full.min_samples);
        assert_eq!(half.target_samples, full.target_samples.div_ceil(2));
        assert_eq!(part_args(&full, 1).min_time, full.min_time);
        let mut entropy = full.clone();
        entropy.stopping_criterion = Some("entropy".into());
        assert!(!shareable(&entropy), "entropy does not stop at a time");
        let mut either = full.clone();
        either.stopping_criterion = Some("entropy-or-stdrel".into());
        assert!(shareable(&either));
        either.energy = true;
        assert!(!shareable(&either));
    }

    #[test]
    fn parts_pool_into_one_row_whose_score_pairs_each_gpu_with_its_own_base() {
        // GPU 1 runs everything 2 % slower; the finalist is 0.8 of base on both.
        let gpu0 = vec![row("*", vec![0.8; 20], vec![1.0; 20])];
        let gpu1 = vec![row("*", vec![0.816; 20], vec![1.02; 20])];
        let pooled = pool(&[(0, gpu0.clone()), (1, gpu1)]);
        assert_eq!(pooled.len(), 1);
        let p = &pooled[0];
        assert_eq!(p.samples.len(), 40);
        assert_eq!(p.control.len(), 40);
        let ratio =
            results::median(p.control.clone()).expect("control") / p.center.expect("center");
        assert!((ratio - 1.25).abs() < 0.01, "{ratio}");
        let message = p.message.as_deref().unwrap_or_default();
        assert!(message.contains("20 on GPU 0, 20 on GPU 1"), "{message}");
        // One part is itself; a failure on one GPU is the row's, naming the GPU.
        assert_eq!(pool(&[(0, gpu0.clone())]), gpu0);
        let mut bad = row("*", Vec::new(), Vec::new());
        bad.status = Status::VerifyFailed;
        bad.message = Some("wrong output".into());
        let failed = pool(&[(0, gpu0), (1, vec![bad])]);
        assert_eq!(failed[0].status, Status::VerifyFailed);
        assert_eq!(failed[0].message.as_deref(), Some("on GPU 1: wrong output"));
    }
}
