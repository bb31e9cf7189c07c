//! `run-bundle --devices` (and `search --devices`, which builds a bundle first): one search of
//! a bundle over the GPUs of one host, into one store. Each GPU is a lane of the search
//! (`measure::lanes`): one waiting bench process on it, base measured in that process
//! as the control of its variants, so each speedup is against base on the same physical GPU.
//! Nothing is written beside the store: a search into another store measures afresh, and one
//! into the same store resumes from what it holds, and says so.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::host::output::Output;
use crate::host::usage::Usage;
use crate::measure::bundle::{
    self, open, shard_units, Bundle, BundledBench, FromBundle, RunBundle,
};
use crate::measure::lanes::queue::{self, Item};
use crate::measure::lanes::{self, LaneSummary, Work};
use crate::measure::probed::ProbedDevice;
use crate::measure::protocol;
use crate::measure::runs::{ct_workloads, Counters, Measured, Plan, RunContext};
use crate::results::store::{SearchLock, Store};

/// The most ordinals `all` probes.
const MAX_DEVICES: u32 = 64;

/// The ordinals `spec` names: a comma-separated list, or `all`, the ordinals the bundle's
/// base binary can open (probed from 0 until one cannot be opened; a CPU bench has one).
pub fn ordinals(spec: &str, dir: &Path) -> Result<Vec<u32>> {
    let usage = |m: String| anyhow::Error::new(Usage(m));
    if spec.trim() != "all" {
        let mut list = Vec::new();
        for part in spec.split(',').map(str::trim) {
            let d: u32 = part.parse().map_err(|_| {
                usage(format!(
                    "--devices takes CUDA ordinals separated by commas (`0,1`) or `all`, not \
                     `{spec}`"
                ))
            })?;
            if list.contains(&d) {
                return Err(usage(format!("--devices names device {d} twice")));
            }
            list.push(d);
        }
        return Ok(list);
    }
    let bundle = Bundle::read(dir)?;
    let b = bundle
        .benches
        .first()
        .with_context(|| format!("the bundle in {} holds no bench", dir.display()))?;
    let base = dir.join(&b.base);
    let (_, arch) = protocol::device(&base, &b.bench, 0)?;
    if arch == "cpu" {
        return Ok(vec![0]);
    }
    let mut found = vec![0];
    for d in 1..MAX_DEVICES {
        if protocol::device(&base, &b.bench, d).is_err() {
            break;
        }
        found.push(d);
    }
    Ok(found)
}

/// Runs the bundle in `args.dir` as one search over `devices` at once, into `target`
/// (`measure::lanes`): screening spread over the GPUs, the finals chosen from all of
/// them together and spread again. Says what each GPU did; returns the exit code, 0 when the
/// search finished (a GPU that failed is a warning: the others finished its work), and an
/// error when every GPU failed.
pub fn run(args: &RunBundle, devices: &[u32], target: &Path, out: &mut Output) -> Result<i32> {
    let started = std::time::Instant::now();
    let (counters, lanes) = search(args, devices, target, out)?;
    for l in &lanes {
        out.status(&format!(
            "GPU {}: {} variant(s) screened, {} finalist(s){}",
            l.device,
            l.screened,
            l.finals,
            l.failed
                .as_ref()
                .map(|why| format!("; failed: {why}"))
                .unwrap_or_default()
        ));
    }
    out.status(&format!(
        "Done: {} GPU(s), {} run(s), {} result(s) stored in {}",
        lanes.iter().filter(|l| l.failed.is_none()).count(),
        counters.runs,
        counters.stored,
        target.display()
    ));
    if let Some(line) = counters.critical_path(started) {
        out.status(&line);
    }
    Ok(0)
}

/// [`run`]'s search: what the bench processes ran and what each GPU did.
fn search(
    args: &RunBundle,
    devices: &[u32],
    target: &Path,
    out: &mut Output,
) -> Result<(Counters, Vec<LaneSummary>)> {
    if args.shard.is_some() {
        return Err(anyhow::Error::new(Usage(
            "--devices spreads the whole bundle over the GPUs; it does not take --shard".into(),
        )));
    }
    if args.batch_size == 0 {
        return Err(anyhow::Error::new(Usage(
            "--batch-size must be at least 1".into(),
        )));
    }
    let dir = args.dir.as_path();
    let bundle = Bundle::for_run(args, out)?;
    let _lock = SearchLock::acquire(target)?;
    let store = Store::open(target)?;
    out.status(&format!(
        "Running {} on {} GPU(s) at once: {}",
        dir.display(),
        devices.len(),
        devices
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let mut counters = Counters::default();
    let mut summaries: Vec<LaneSummary> = Vec::new();
    for b in &bundle.benches {
        let lanes = bench(args, b, devices, (&store, target), &mut counters, out)?;
        if summaries.is_empty() {
            summaries = lanes;
        } else {
            for (s, l) in summaries.iter_mut().zip(lanes) {
                s.screened += l.screened;
                s.finals += l.finals;
                if s.failed.is_none() {
                    s.failed = l.failed;
                }
            }
        }
    }
    Ok((counters, summaries))
}

/// One bench of the bundle over `devices`, into `store` (at `target`).
fn bench(
    args: &RunBundle,
    b: &BundledBench,
    devices: &[u32],
    (store, target): (&Store, &Path),
    counters: &mut Counters,
    out: &mut Output,
) -> Result<Vec<LaneSummary>> {
    let dir = args.dir.as_path();
    let base_bin = dir.join(&b.base);
    // Every GPU's probe waits until its lane's first bench process has opened the device,
    // so that each open costs what one alone costs; the search's device is the first one
    // found, in the order given.
    let probes: Vec<ProbedDevice> = devices
        .iter()
        .map(|&d| ProbedDevice::deferred(base_bin.clone(), b.bench.clone(), d))
        .collect();
    let opened = open(dir, b, args.no_race, store)?;
    let plan = |device: ProbedDevice, ordinal: u32, work_dir: PathBuf| -> Result<Plan<'_>> {
        std::fs::create_dir_all(&work_dir)
            .with_context(|| format!("cannot create {}", work_dir.display()))?;
        let mut bench_args = opened.bench_args.clone();
        bench_args.device = ordinal;
        Ok(Plan {
            target: &opened.target,
            info: &opened.info,
            function: &b.function,
            declared: &opened.declared.axes,
            revision: opened.revision.clone(),
            device,
            user_axes: b.user_axes.clone(),
            bench_args,
            work_dir,
            energy: Default::default(),
        })
    };
    let work = dir.join("work");
    let search = plan(
        ProbedDevice::first_of(probes.clone()),
        devices.first().copied().unwrap_or_default(),
        work.clone(),
    )?;
    let mut lanes = Vec::new();
    for (probe, &d) in probes.into_iter().zip(devices) {
        lanes.push(plan(probe, d, work.join(format!("device-{d}")))?);
    }
    let cts = ct_workloads(&opened.info.axes);
    let ctx = RunContext {
        plan: &search,
        cts: &cts,
        store,
    };
    let mut measured = Measured::load(&search, store)?;
    // Every variant's binary, for the finals: those of a resumed search's finalists too.
    for u in &b.units {
        for l in &u.labels {
            measured.bins.insert(l.clone(), dir.join(&u.bin));
        }
    }
    let units = shard_units(&b.units, None);
    let built: usize = units.iter().map(|u| u.labels.len()).sum();
    out.status(&format!(
        "Running {}.{} from the bundle ({} binaries, {} variants) on {} GPU(s): screening \
         spread over them, the finals chosen from all of them together",
        b.bench,
        b.function.name,
        units.len() + 1,
        built + b.failures.len(),
        devices.len()
    ));
    let kept = measured.done.iter().filter(|(_, v)| v != "base").count();
    if kept > 0 {
        out.status(&format!(
            "Resuming the search into {}: {kept} result(s) of {}.{} kept from it, not measured \
             again",
            target.display(),
            b.bench,
            b.function.name
        ));
    }
    // Without deciding, base runs in a process of its own first (it defines the run limits).
    measured.measure_base(&ctx, (&base_bin, b.base_build_seconds), counters, out)?;
    let failures: Vec<_> = b.failures.iter().map(|f| f.failure()).collect();
    let mut proposer;
    let from = FromBundle::new(dir, b);
    let work = match args.strategy {
        Some(kind) => {
            // A batch of at least one variant per GPU, spread over them.
            let batch = args.batch_size.max(devices.len());
            proposer = bundle::proposer(args, kind, b, &measured, &cts, batch);
            out.status(&format!(
                "Searching with the {} strategy (at most {} variants, batches of {batch} over \
                 the GPUs)",
                proposer.strategy_name(),
                proposer.to_go()
            ));
            out.start_progress((proposer.to_go() * cts.len()) as u64, "Running");
            Work::Strategy {
                proposer: &mut proposer,
                from: &from,
            }
        }
        None => {
            let items: Vec<Item> = units
                .iter()
                .flat_map(|u| {
                    let per = u.build_seconds / u.labels.len().max(1) as f64;
                    let bin = dir.join(&u.bin);
                    let measured = &measured;
                    cts.iter().enumerate().map(move |(ct, w)| Item {
                        bin: bin.clone(),
                        ct,
                        labels: queue::interleaved(&u.labels)
                            .into_iter()
                            .filter(|l| !measured.done.contains(&(w.key.clone(), l.clone())))
                            .collect(),
                        build_seconds: per,
                        avoid: None,
                    })
                })
                .collect();
            let to_go: usize = items.iter().map(|i| i.labels.len()).sum();
            out.start_progress(to_go as u64, "Running");
            Work::Items(items, &failures)
        }
    };
    let result = lanes::run(
        &ctx,
        lanes,
        devices,
        work,
        (&mut measured, b.run_limit),
        counters,
        out,
    );
    out.finish_progress();
    result
}
