//! `search`: build batches of variants, run them through the bench protocol, store every
//! result as it comes, print each variant's score as it finishes.
//!
//! Order per bench: the production build (base) first, its `--list` and `--devices`; base is
//! measured for every compile-time workload; then the strategy proposes variants, which are
//! built in batches (a failing batch is split until the variant that breaks it is found) in a
//! build thread, pipelined with the runs where the bench measures on a GPU. Each batch's
//! variants run in one bench process per compile-time workload (`crate::runs`). Keys already
//! in the store are not built or run again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use gputune_protocol::manifest::Function;
use gputune_protocol::{BenchArgs, Status};
use regex::Regex;
use serde_json::{json, Value};

use crate::bundle::{Bundle, BundledBench, BundledFailure, BundledUnit};
use crate::cargo::{self, BenchTarget, BuildOutcome, Workspace};
use crate::cli::{CargoArgs, Pipeline, SearchArgs, StrategyKind, Usage};
use crate::output::Output;
use crate::protocol::{self, BenchInfo};
use crate::runs::{ct_workloads, record_failure, Counters, Measured, Plan, MIN_BASE_BUILD};
use crate::store::Store;
use crate::strategy::{Exhaustive, Random, Strategy};

/// The production build of a target (base plus applied entries), reused across searches of
/// the same revision.
pub(crate) fn production(
    ws: &Workspace,
    args: &CargoArgs,
    target: &BenchTarget,
    revision: &str,
    counters: &mut Counters,
    out: &mut Output,
) -> Result<(PathBuf, Option<gputune_protocol::manifest::Manifest>, f64)> {
    let dir = ws.gputune_dir().join("bin").join(revision);
    let bin = dir.join(format!("{}-base", target.bench));
    let cached = dir.join(format!("{}-base.json", target.bench));
    if bin.is_file() {
        if let Ok(text) = std::fs::read_to_string(&cached) {
            if let Ok(doc) = serde_json::from_str::<Value>(&text) {
                let manifest = serde_json::from_value(doc["manifest"].clone()).ok();
                let seconds = doc["seconds"].as_f64().unwrap_or(MIN_BASE_BUILD);
                return Ok((bin, manifest, seconds));
            }
        }
    }
    out.status(&format!(
        "Building {} ({}), base",
        target.bench, target.package
    ));
    out.verbose(&format!(
        "cargo build -p {} --bench {} --profile {} (production: base and gputune.toml)",
        target.package,
        target.bench,
        args.profile()
    ));
    match cargo::build(ws, args, target, "", &bin, None)? {
        BuildOutcome::Built {
            manifest, seconds, ..
        } => {
            counters.builds += 1;
            let doc = json!({ "manifest": manifest, "seconds": seconds });
            // Whole or not at all: another search may read it at any moment.
            let tmp = cached.with_extension(format!("tmp{}", std::process::id()));
            std::fs::write(&tmp, doc.to_string())
                .and_then(|()| std::fs::rename(&tmp, &cached))
                .with_context(|| format!("cannot write {}", cached.display()))?;
            Ok((bin, manifest, seconds))
        }
        // Base must build for anything to be measured: the user's code (or its
        // gputune.toml) is what to fix.
        BuildOutcome::Failed { message, .. } => Err(anyhow::Error::new(Usage(format!(
            "the production build of `{}` (base) fails:\n{message}",
            target.bench
        )))),
        BuildOutcome::TimedOut { .. } => unreachable!("no limit on the base build"),
    }
}

/// Where a search's work goes: measured into a store, or built into a bundle for
/// `run-bundle` (`--build-only`).
pub enum Sink<'a> {
    /// Build, run and store.
    Store(&'a Store),
    /// Build only, into the bundle directory.
    Bundle(&'a Path, &'a mut Bundle),
}

/// The bench flags every run of a search passes, from what the user gave after `--` and the
/// search's defaults: the entropy criterion (it stops as soon as the distribution stops
/// changing: what a search wants), no hot loop (a search scores cold times) and racing.
/// They are checked here, before anything is built; flags that the search itself sets per
/// run (`-b`, `-a`, `--variant`, `--json`, `--jsonl`, `--list`, `--devices`) are refused.
pub(crate) fn measurement_args(s: &SearchArgs) -> Result<BenchArgs> {
    let usage = |m: String| anyhow::Error::new(Usage(m));
    let mut a = BenchArgs::from_flags(&s.bench_args).map_err(|e| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default();
        usage(format!(
            "bench arguments after `--`: {}",
            first.trim_start_matches("error: ")
        ))
    })?;
    a.validate()
        .map_err(|e| usage(format!("bench arguments after `--`: {e}")))?;
    let owned = [
        (!a.benchmarks.is_empty(), "-b (use --bench or -R)"),
        (!a.axes.is_empty(), "-a (put it before `--`)"),
        (!a.variant.is_empty(), "--variant"),
        (a.json.is_some(), "--json"),
        (a.jsonl.is_some(), "--jsonl"),
        (a.list, "--list"),
        (a.devices, "--devices"),
    ];
    if let Some((_, flag)) = owned.iter().find(|(given, _)| *given) {
        return Err(usage(format!(
            "bench arguments after `--`: {flag} is set by the search itself"
        )));
    }
    if a.stopping_criterion.is_none() {
        a.stopping_criterion = Some("entropy".into());
    }
    if !s.hot {
        a.no_batch = true;
    }
    if !s.no_race && a.race.is_none() {
        if !(s.race.is_finite() && s.race >= 0.0) {
            return Err(usage(format!(
                "--race must be a fraction of zero or more (0.05 is 5 %), not {}",
                s.race
            )));
        }
        a.race = Some(s.race);
    }
    Ok(a)
}

/// The revision results are stored under: the code's revision and the measurement settings
/// (criterion, its parameters, racing, …). A rerun with other settings measures anew instead
/// of reporting numbers measured another way as its own.
pub(crate) fn measured_revision(code_revision: &str, bench_args: &BenchArgs) -> String {
    let mut h = gputune_protocol::hash::Fnv64::new();
    h.write(bench_args.measurement_settings().as_bytes());
    format!("{code_revision}.m{:08x}", h.finish() as u32)
}

/// Runs the search; returns the counters and the groups it touched.
pub fn search(
    ws: &Workspace,
    args: &CargoArgs,
    s: &SearchArgs,
    mut sink: Sink<'_>,
    out: &mut Output,
) -> Result<(Counters, Vec<(String, String)>)> {
    let regex = s
        .regex
        .as_deref()
        .map(Regex::new)
        .transpose()
        .context("-R is not a valid regular expression")?;
    if s.batch_size == 0 {
        bail!("--batch-size must be at least 1");
    }
    let started = Instant::now();
    let mut counters = Counters::default();
    let mut touched = Vec::new();
    let user_axes: Vec<String> = s
        .axes
        .iter()
        .flat_map(|a| ["-a".to_string(), a.clone()])
        .collect();
    let bench_args = measurement_args(s)?;
    let mut searched_any = false;

    for target in ws.bench_targets(args)? {
        let code_revision = cargo::revision(ws, args, &target)?;
        let (base_bin, manifest, base_build) =
            production(ws, args, &target, &code_revision, &mut counters, out)?;
        let revision = measured_revision(&code_revision, &bench_args);
        let declared = protocol::list(&base_bin, &[])?;
        let filtered = protocol::list(&base_bin, &user_axes)
            .with_context(|| format!("bench target `{}`", target.bench))?;
        for (info, declared_info) in filtered.iter().zip(&declared) {
            undeclared_values(info, declared_info)?;
            let Some(function_name) = &info.tunes else {
                continue;
            };
            if let Some(r) = &regex {
                if !r.is_match(&info.name) && !r.is_match(function_name) {
                    continue;
                }
            }
            let Some(function) = manifest.as_ref().and_then(|m| m.function(function_name)) else {
                bail!(
                    "bench `{}` tunes `{function_name}`, but package `{}` has no #[tune] function \
                     of that name generated (is gputune_runtime::build::main() in its build.rs?)",
                    info.name,
                    target.package
                );
            };
            searched_any = true;
            touched.push((target.package.clone(), info.name.clone()));
            let store = match &mut sink {
                Sink::Store(store) => *store,
                Sink::Bundle(dir, bundle) => {
                    let built = build_bench(
                        ws,
                        args,
                        s,
                        (&target, info, function),
                        (&revision, &base_bin, base_build),
                        (&user_axes, &bench_args),
                        dir,
                        started,
                        &mut counters,
                        out,
                    )?;
                    bundle.benches.push(built);
                    continue;
                }
            };
            store.put_space(
                &target.package,
                &function.name,
                function.space_size,
                &function.attribute,
            )?;
            let (device, arch) = protocol::device(&base_bin, &info.name)?;
            let work_dir = ws.work_dir(store.path());
            std::fs::create_dir_all(&work_dir)?;
            let plan = Plan {
                target: &target,
                info,
                function,
                declared: &declared_info.axes,
                revision: revision.clone(),
                device: device.clone(),
                arch,
                user_axes: user_axes.clone(),
                bench_args: bench_args.clone(),
                work_dir,
            };
            search_bench(
                ws,
                args,
                &plan,
                s,
                store,
                out,
                &base_bin,
                base_build,
                started,
                &mut counters,
            )?;
        }
    }
    if !searched_any {
        return Err(anyhow::Error::new(Usage(format!(
            "nothing to search: no bench{} tunes a #[tune] function",
            s.regex
                .as_deref()
                .map(|r| format!(" matching `{r}`"))
                .unwrap_or_default()
        ))));
    }
    Ok((counters, touched))
}

/// What the build stage hands the run stage for one batch.
#[derive(Debug, Default)]
struct BuiltBatch {
    /// Binaries, each holding some of the batch's variants, with their build times.
    units: Vec<(PathBuf, Vec<String>, f64)>,
    /// Variants that would not build: label, status, message, seconds.
    failures: Vec<(String, Status, String, f64)>,
    /// Cargo invocations it took.
    builds: usize,
}

/// The build stage's inputs: everything a batch build needs, shareable with its thread.
struct BuildStage<'a> {
    ws: &'a Workspace,
    args: &'a CargoArgs,
    target: &'a BenchTarget,
    function: &'a str,
    bench: &'a str,
    work_dir: &'a Path,
    /// Seconds a build of up to eight variants may take before it is killed.
    limit: f64,
}

impl BuildStage<'_> {
    /// Builds `batch`; a failing batch is split until the variants that break it are found,
    /// and the rest build.
    fn build(&self, batch: Vec<String>, index: &mut usize) -> Result<BuiltBatch> {
        let mut built = BuiltBatch::default();
        let mut pending = vec![batch];
        while let Some(group) = pending.pop() {
            *index += 1;
            let selection: Vec<String> = group
                .iter()
                .map(|l| format!("{}::{}.{l}", self.target.package, self.function))
                .collect();
            let bin = self.work_dir.join(format!("{}-batch-{index}", self.bench));
            let limit = self.limit * (group.len() as f64 / 8.0).max(1.0);
            let outcome = cargo::build(
                self.ws,
                self.args,
                self.target,
                &selection.join(","),
                &bin,
                Some(Duration::from_secs_f64(limit)),
            )?;
            built.builds += 1;
            match outcome {
                BuildOutcome::Built {
                    executable,
                    seconds,
                    ..
                } => built.units.push((executable, group, seconds)),
                BuildOutcome::Failed { .. } | BuildOutcome::TimedOut { .. } if group.len() > 1 => {
                    let (a, b) = group.split_at(group.len() / 2);
                    pending.push(b.to_vec());
                    pending.push(a.to_vec());
                }
                BuildOutcome::Failed { message, seconds } => {
                    built
                        .failures
                        .push((group[0].clone(), Status::BuildFailed, message, seconds));
                }
                BuildOutcome::TimedOut { seconds } => {
                    let message = format!("build killed after {seconds:.1} s (the build limit)");
                    built
                        .failures
                        .push((group[0].clone(), Status::BuildTimeout, message, seconds));
                }
            }
        }
        Ok(built)
    }
}

/// Asks the strategy for the next batch, honouring `--max-evals` and `--time-limit`.
struct Proposer<'a> {
    s: &'a SearchArgs,
    started: Instant,
    strategy: Box<dyn Strategy>,
    space: Vec<String>,
    scored: BTreeMap<String, Option<f64>>,
    evaluated: usize,
    stopped: bool,
}

impl Proposer<'_> {
    fn next(&mut self, out: &mut Output) -> Option<Vec<String>> {
        if self.stopped {
            return None;
        }
        if self
            .s
            .time_limit
            .is_some_and(|t| self.started.elapsed().as_secs_f64() > t)
        {
            out.status("Time limit reached; stopping");
            self.stopped = true;
            return None;
        }
        let mut want = self.s.batch_size;
        if let Some(m) = self.s.max_evals {
            want = want.min(m.saturating_sub(self.evaluated));
        }
        if want == 0 {
            return None;
        }
        let batch = self.strategy.next(&self.space, &self.scored, want);
        if batch.is_empty() {
            return None;
        }
        self.evaluated += batch.len();
        for l in &batch {
            self.scored.insert(l.clone(), None);
        }
        Some(batch)
    }
}

#[allow(clippy::too_many_arguments)]
fn search_bench(
    ws: &Workspace,
    args: &CargoArgs,
    plan: &Plan<'_>,
    s: &SearchArgs,
    store: &Store,
    out: &mut Output,
    base_bin: &Path,
    base_build: f64,
    started: Instant,
    counters: &mut Counters,
) -> Result<()> {
    let cts = ct_workloads(&plan.info.axes);
    let f = plan.function;
    let mut measured = Measured::load(plan, store)?;
    measured.measure_base(plan, &cts, base_bin, base_build, store, counters, out)?;

    let strategy = strategy(s, f);
    let pipelined = match s.pipeline {
        Pipeline::Always => true,
        Pipeline::Never => false,
        Pipeline::Auto => plan.arch != "cpu",
    };
    out.status(&format!(
        "Searching {}.{} ({} variants, {} compile-time workload(s), {} strategy{})",
        plan.info.name,
        f.name,
        f.space_size,
        cts.len(),
        strategy.name(),
        if pipelined {
            ", builds pipelined with runs"
        } else {
            ""
        }
    ));
    let mut proposer = Proposer {
        s,
        started,
        strategy,
        space: f.labels.clone(),
        scored: BTreeMap::new(),
        evaluated: 0,
        stopped: false,
    };
    for label in &f.labels {
        if measured.complete(&cts, label) {
            proposer.scored.insert(label.clone(), None);
        }
    }
    proposer.evaluated = proposer.scored.len();
    let to_go = s
        .max_evals
        .unwrap_or(f.labels.len())
        .min(f.labels.len())
        .saturating_sub(proposer.evaluated);
    out.start_progress((to_go * cts.len()) as u64, "Searching");

    let stage = BuildStage {
        ws,
        args,
        target: plan.target,
        function: &f.name,
        bench: &plan.info.name,
        work_dir: &plan.work_dir,
        limit: s.build_limit * base_build.max(MIN_BASE_BUILD),
    };
    let result = std::thread::scope(|scope| -> Result<()> {
        // The build stage runs in its own thread and the runs in this one; with the pipeline
        // off, at most one batch is in flight, so building and running alternate.
        let (jobs, job_rx) = mpsc::channel::<Vec<String>>();
        let (built_tx, built_rx) = mpsc::channel::<Result<BuiltBatch>>();
        let stage = &stage;
        let builder = scope.spawn(move || {
            let mut index = 0usize;
            for batch in job_rx {
                let r = stage.build(batch, &mut index);
                let failed = r.is_err();
                if built_tx.send(r).is_err() || failed {
                    break;
                }
            }
        });
        let mut in_flight = 0usize;
        let send = |out: &mut Output, proposer: &mut Proposer<'_>, in_flight: &mut usize| {
            if let Some(batch) = proposer.next(out) {
                out.progress_message(&format!("building {} variant(s)", batch.len()));
                out.verbose(&format!(
                    "cargo build -p {} --bench {} --profile {} with GPUTUNE_VARIANTS={} \
                     variant(s) of {}",
                    plan.target.package,
                    plan.target.bench,
                    args.profile(),
                    batch.len(),
                    f.name
                ));
                // The builder only stops receiving after an error, which recv reports.
                if jobs.send(batch).is_ok() {
                    *in_flight += 1;
                }
            }
        };
        send(out, &mut proposer, &mut in_flight);
        while in_flight > 0 {
            let built = built_rx
                .recv()
                .context("the build stage ended unexpectedly")??;
            in_flight -= 1;
            counters.builds += built.builds;
            if pipelined {
                send(out, &mut proposer, &mut in_flight);
            }
            for (label, status, message, seconds) in &built.failures {
                record_failure(
                    plan, store, &cts, label, *status, message, *seconds, counters, out,
                )?;
                proposer.scored.insert(label.clone(), None);
            }
            for (bin, group, build_seconds) in &built.units {
                measured.measure_unit(
                    plan,
                    &cts,
                    (bin, group, *build_seconds),
                    s.run_limit,
                    store,
                    counters,
                    &mut proposer.scored,
                    out,
                )?;
                let _ = std::fs::remove_file(bin);
            }
            if !pipelined {
                send(out, &mut proposer, &mut in_flight);
            }
        }
        drop(jobs);
        builder
            .join()
            .map_err(|_| anyhow::anyhow!("the build stage panicked"))?;
        Ok(())
    });
    out.finish_progress();
    result
}

/// The strategy `s` asks for, over `f`'s space.
fn strategy(s: &SearchArgs, f: &Function) -> Box<dyn Strategy> {
    match s.strategy {
        StrategyKind::Exhaustive => Box::new(Exhaustive::new(s.seed)),
        StrategyKind::Random => Box::new(Random::new(s.seed, s.max_evals.unwrap_or(f.space_size))),
    }
}

/// `--build-only`: builds the variants the strategy proposes (without scores, so all of
/// them for exhaustive, `--max-evals` for random) into `dir/bin`, with the production binary,
/// and returns the bundle's entry for the bench.
#[allow(clippy::too_many_arguments)]
fn build_bench(
    ws: &Workspace,
    args: &CargoArgs,
    s: &SearchArgs,
    (target, info, function): (&BenchTarget, &BenchInfo, &Function),
    (revision, base_bin, base_build): (&str, &Path, f64),
    (user_axes, bench_args): (&[String], &BenchArgs),
    dir: &Path,
    started: Instant,
    counters: &mut Counters,
    out: &mut Output,
) -> Result<BundledBench> {
    let bin_dir = dir.join("bin");
    std::fs::create_dir_all(&bin_dir)
        .with_context(|| format!("cannot create {}", bin_dir.display()))?;
    let base = format!("bin/{}-base", target.bench);
    std::fs::copy(base_bin, dir.join(&base))
        .with_context(|| format!("cannot copy {} into the bundle", base_bin.display()))?;
    let stage = BuildStage {
        ws,
        args,
        target,
        function: &function.name,
        bench: &info.name,
        work_dir: &bin_dir,
        limit: s.build_limit * base_build.max(MIN_BASE_BUILD),
    };
    let mut proposer = Proposer {
        s,
        started,
        strategy: strategy(s, function),
        space: function.labels.clone(),
        scored: BTreeMap::new(),
        evaluated: 0,
        stopped: false,
    };
    let relative = |p: &Path| -> Result<String> {
        let name = p.file_name().context("a binary without a file name")?;
        Ok(format!("bin/{}", name.to_string_lossy()))
    };
    let mut bench = BundledBench {
        package: target.package.clone(),
        target: target.bench.clone(),
        bench: info.name.clone(),
        function: function.clone(),
        revision: revision.to_string(),
        user_axes: user_axes.to_vec(),
        bench_args: bench_args.to_args(),
        base,
        base_build_seconds: base_build,
        units: Vec::new(),
        failures: Vec::new(),
        run_limit: s.run_limit,
    };
    let mut index = 0;
    while let Some(batch) = proposer.next(out) {
        out.status(&format!(
            "Building {} variant(s) of {} into the bundle",
            batch.len(),
            function.name
        ));
        let built = stage.build(batch, &mut index)?;
        counters.builds += built.builds;
        for (bin, labels, build_seconds) in built.units {
            bench.units.push(BundledUnit {
                bin: relative(&bin)?,
                labels,
                build_seconds,
            });
        }
        for (label, status, message, seconds) in built.failures {
            out.line(&format!(
                "  {}.{label}  {status:<8} {}",
                function.name,
                message.lines().last().unwrap_or_default()
            ));
            bench.failures.push(BundledFailure {
                label,
                status,
                message,
                seconds,
            });
        }
    }
    Ok(bench)
}

/// `-a` may narrow an axis but not add values: `{io}` weights come from the declared order,
/// and a value the bench author never declared has no place in it.
fn undeclared_values(filtered: &BenchInfo, declared: &BenchInfo) -> Result<()> {
    for axis in &filtered.axes {
        let Some(d) = declared.axes.iter().find(|d| d.name == axis.name) else {
            continue;
        };
        if let Some(v) = axis
            .values
            .iter()
            .map(|v| &v.input_string)
            .find(|v| !d.values.iter().any(|dv| &&dv.input_string == v))
        {
            return Err(anyhow::Error::new(Usage(format!(
                "-a gives `{}` the value {v}, which bench `{}` does not declare; declared: {}",
                axis.name,
                filtered.name,
                d.input_strings().join(", ")
            ))));
        }
    }
    Ok(())
}
