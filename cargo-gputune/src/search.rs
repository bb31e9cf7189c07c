//! `search`: build batches of variants, run them through the bench protocol, store every
//! result as it comes, print each variant's score as it finishes.
//!
//! Order per bench: the production build (base) first, its `--list` and `--devices`; base is
//! measured for every compile-time workload; then the strategy proposes variants, which are
//! built in batches (a failing batch is split until the variant that breaks it is found) and
//! run one process per variant and compile-time workload. Keys already in the store are not
//! built or run again.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use gputune_runtime::build::manifest::Function;
use regex::Regex;
use serde_json::{json, Value};

use crate::cargo::{self, BenchTarget, BuildOutcome, Workspace};
use crate::cli::{CargoArgs, Pipeline, SearchArgs, StrategyKind, Usage};
use crate::output::Output;
use crate::process::{self, Exit};
use crate::protocol::{self, Axis, BenchInfo};
use crate::results;
use crate::score;
use crate::store::{Measurement, Store};
use crate::strategy::{Exhaustive, Random, Strategy};

/// Smallest base build time the build limit is computed from: a build that was already fresh
/// takes a fraction of a second, and ten times that would kill every real build.
const MIN_BASE_BUILD: f64 = 5.0;
/// Smallest base run time the run limit is computed from.
const MIN_BASE_RUN: f64 = 2.0;

/// What a search did, for `--json` and the tests.
#[derive(Debug, Default)]
pub struct Counters {
    /// Builds that compiled variants (the production build of base is not counted when it
    /// was reused from an earlier search).
    pub builds: usize,
    /// Bench processes that measured something.
    pub runs: usize,
    /// Rows written to the store.
    pub stored: usize,
}

/// One compile-time workload: its key and the `-a` arguments that select it.
#[derive(Debug, Clone)]
struct CtWorkload {
    key: String,
    args: Vec<String>,
}

fn ct_workloads(axes: &[Axis]) -> Vec<CtWorkload> {
    let mut out = vec![CtWorkload {
        key: String::new(),
        args: Vec::new(),
    }];
    for a in axes.iter().filter(|a| a.compile_time) {
        out = out
            .into_iter()
            .flat_map(|w| {
                a.values.iter().map(move |v| {
                    let mut w = w.clone();
                    if !w.key.is_empty() {
                        w.key.push(',');
                    }
                    w.key.push_str(&format!("{}={v}", a.short));
                    w.args.push("-a".into());
                    w.args.push(format!("{}={v}", a.name));
                    w
                })
            })
            .collect();
    }
    for w in &mut out {
        if w.key.is_empty() {
            w.key = "*".into();
        }
    }
    out
}

/// The runtime workload key of a state (`Elements{io}=2^20`) and its `{io}` weight.
fn rt_workload(state: &Value, declared: &[Axis]) -> (String, f64) {
    let name = state["name"].as_str().unwrap_or_default();
    let mut parts = Vec::new();
    let mut weight = 1.0;
    for token in name.split(' ') {
        let Some((axis, value)) = token.split_once('=') else {
            continue;
        };
        if axis == "Device" {
            continue;
        }
        let Some(a) = declared.iter().find(|a| a.name == axis) else {
            continue;
        };
        if a.compile_time {
            continue;
        }
        if a.importance_ordered {
            if let Some(i) = a.values.iter().position(|v| v == value) {
                weight *= score::io_weight(i, a.values.len());
            }
        }
        parts.push(token.to_string());
    }
    let key = if parts.is_empty() {
        "*".to_string()
    } else {
        parts.join(" ")
    };
    (key, weight)
}

/// Everything about one bench that the runs need.
struct Plan<'a> {
    ws: &'a Workspace,
    args: &'a CargoArgs,
    target: &'a BenchTarget,
    info: &'a BenchInfo,
    function: &'a Function,
    declared: &'a [Axis],
    revision: String,
    device: String,
    arch: String,
    user_axes: Vec<String>,
    bench_args: Vec<String>,
    work_dir: PathBuf,
}

impl Plan<'_> {
    fn row(&self, ct: &str, variant: &str, rt: &str, weight: f64, status: &str) -> Measurement {
        Measurement {
            revision: self.revision.clone(),
            device: self.device.clone(),
            arch: self.arch.clone(),
            package: self.target.package.clone(),
            bench: self.info.name.clone(),
            function: self.function.name.clone(),
            ct_workload: ct.to_string(),
            variant: variant.to_string(),
            rt_workload: rt.to_string(),
            rt_weight: weight,
            status: status.to_string(),
            message: None,
            center: None,
            noise: None,
            bandwidth: None,
            samples: Vec::new(),
            build_seconds: None,
            run_seconds: None,
        }
    }

    /// One variant's rows from the states it streamed.
    fn rows(
        &self,
        ct: &CtWorkload,
        variant: &str,
        states: &[Value],
        seconds: f64,
        build_seconds: Option<f64>,
    ) -> Vec<Measurement> {
        if states.is_empty() {
            let mut row = self.row(&ct.key, variant, "*", 0.0, "crashed");
            row.message = Some("the bench reported no states for this variant".into());
            row.run_seconds = Some(seconds);
            row.build_seconds = build_seconds;
            return vec![row];
        }
        states
            .iter()
            .map(|st| {
                let (rt, weight) = rt_workload(st, self.declared);
                let verify_failed = st["verification"]["passed"] == false;
                let status = match st["status"].as_str().unwrap_or("failed") {
                    _ if verify_failed => "verify_failed",
                    "ok" => "ok",
                    "timeout" => "timeout",
                    "skipped" => "skipped",
                    _ => "launch_failed",
                };
                let mut row = self.row(&ct.key, variant, &rt, weight, status);
                row.message = st["error"]
                    .as_str()
                    .or(st["skip_reason"].as_str())
                    .map(str::to_string);
                row.center = protocol::summary(st, "nv/cold/time/gpu/median");
                row.noise = protocol::summary(st, "nv/cold/time/gpu/stdev/relative");
                row.bandwidth = protocol::summary(st, "nv/cold/bw/global/bytes_per_second");
                row.samples = st["samples"]["gpu"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_f64).collect())
                    .unwrap_or_default();
                row.run_seconds = Some(seconds);
                row.build_seconds = build_seconds;
                row
            })
            .collect()
    }

    /// Runs `labels` on one compile-time workload in as few bench processes as it takes:
    /// one, unless a variant crashes or hangs; that variant is recorded and the rest go on
    /// in a fresh process. `finished` gets each variant's rows as soon as its last state has
    /// been streamed, so that a kill of this process loses nothing finished. Returns the
    /// number of processes.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        bin: &Path,
        ct: &CtWorkload,
        labels: &[String],
        limit: Option<Duration>,
        build_seconds: Option<f64>,
        out: &mut Output,
        finished: &mut VariantSink<'_>,
    ) -> Result<usize> {
        let f = &self.function.name;
        let mut remaining: Vec<String> = labels.to_vec();
        let mut processes = 0;
        while !remaining.is_empty() {
            let mut args = vec!["-b".to_string(), self.info.name.clone()];
            args.extend(ct.args.iter().cloned());
            args.extend(self.user_axes.iter().cloned());
            args.push("--variant".into());
            args.push(
                remaining
                    .iter()
                    .map(|l| format!("{f}.{l}"))
                    .collect::<Vec<_>>()
                    .join(","),
            );
            args.extend(self.bench_args.iter().cloned());
            out.verbose(&format!("{} {}", bin.display(), args.join(" ")));
            let jsonl = self.work_dir.join("run.jsonl");
            // The variant in progress, its states, and when it started.
            let mut current: Option<(String, Vec<Value>, Instant)> = None;
            let mut started: Vec<String> = Vec::new();
            let outcome = protocol::run(bin, &args, &jsonl, limit, |event| {
                match event {
                    protocol::Event::Variant(label) => {
                        if let Some((prev, states, t)) = current.take() {
                            let secs = t.elapsed().as_secs_f64();
                            finished(
                                &prev,
                                self.rows(ct, &prev, &states, secs, build_seconds),
                                out,
                            )?;
                        }
                        let label = label.unwrap_or_else(|| "base".into());
                        started.push(label.clone());
                        current = Some((label, Vec::new(), Instant::now()));
                    }
                    protocol::Event::State(st) => {
                        if let Some((_, states, _)) = current.as_mut() {
                            states.push(st);
                        }
                    }
                }
                Ok(())
            })?;
            processes += 1;
            match outcome.exit {
                Exit::Code(code @ (2 | 3)) => protocol::check_exit(code, &outcome.stderr)?,
                Exit::Code(0 | 1) => {
                    if let Some((prev, states, t)) = current.take() {
                        let secs = t.elapsed().as_secs_f64();
                        finished(
                            &prev,
                            self.rows(ct, &prev, &states, secs, build_seconds),
                            out,
                        )?;
                    }
                    for label in remaining.iter().filter(|l| !started.contains(l)) {
                        let mut row = self.row(&ct.key, label, "*", 0.0, "crashed");
                        row.message = Some(format!(
                            "the bench ended without running it: {}",
                            outcome.stderr
                        ));
                        finished(label, vec![row], out)?;
                    }
                    remaining.clear();
                }
                exit => {
                    // The variant in progress died with the process (or, if none had
                    // started, the first one is charged, so that the loop ends).
                    let (label, secs) = match current.take() {
                        Some((label, _, t)) => (label, t.elapsed().as_secs_f64()),
                        None => (remaining[0].clone(), outcome.seconds),
                    };
                    let (status, message) = match exit {
                        Exit::TimedOut => (
                            "timeout",
                            format!("killed after {secs:.1} s without finishing a state (the run limit)"),
                        ),
                        Exit::Signal(sig) => (
                            "crashed",
                            format!("ended by {}: {}", process::signal_name(sig), outcome.stderr)
                                .trim_end_matches([' ', ':'])
                                .to_string(),
                        ),
                        Exit::Code(code) => {
                            ("crashed", format!("exited with code {code}: {}", outcome.stderr))
                        }
                    };
                    let mut row = self.row(&ct.key, &label, "*", 0.0, status);
                    row.message = Some(message);
                    row.run_seconds = Some(secs);
                    row.build_seconds = build_seconds;
                    finished(&label, vec![row], out)?;
                    started.push(label);
                    remaining.retain(|l| !started.contains(l));
                }
            }
        }
        Ok(processes)
    }
}

/// Where [`Plan::run`] hands each finished variant's rows.
type VariantSink<'a> = dyn FnMut(&str, Vec<Measurement>, &mut Output) -> Result<()> + 'a;

/// The production build of a target (base plus applied entries), reused across searches of
/// the same revision.
pub(crate) fn production(
    ws: &Workspace,
    args: &CargoArgs,
    target: &BenchTarget,
    revision: &str,
    counters: &mut Counters,
    out: &mut Output,
) -> Result<(
    PathBuf,
    Option<gputune_runtime::build::manifest::Manifest>,
    f64,
)> {
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
            std::fs::write(&cached, doc.to_string())
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

/// Runs the search; returns the counters and the groups it touched.
pub fn search(
    ws: &Workspace,
    args: &CargoArgs,
    s: &SearchArgs,
    store: &Store,
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
    let mut bench_args = s.bench_args.clone();
    if !bench_args
        .iter()
        .any(|a| a.starts_with("--stopping-criterion"))
    {
        // Entropy stops as soon as the distribution stops changing: what a search wants.
        bench_args.extend(["--stopping-criterion".to_string(), "entropy".to_string()]);
    }
    let mut searched_any = false;

    for target in ws.bench_targets(args)? {
        let revision = cargo::revision(ws, args, &target)?;
        let (base_bin, manifest, base_build) =
            production(ws, args, &target, &revision, &mut counters, out)?;
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
            store.put_space(
                &target.package,
                &function.name,
                function.space_size,
                &function.attribute,
            )?;
            let (device, arch) = protocol::device(&base_bin, &info.name)?;
            let work_dir = ws.gputune_dir().join("work");
            std::fs::create_dir_all(&work_dir)?;
            let plan = Plan {
                ws,
                args,
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
            touched.push((target.package.clone(), info.name.clone()));
            search_bench(
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
    failures: Vec<(String, &'static str, String, f64)>,
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
                        .push((group[0].clone(), "build_failed", message, seconds));
                }
                BuildOutcome::TimedOut { seconds } => {
                    let message = format!("build killed after {seconds:.1} s (the build limit)");
                    built
                        .failures
                        .push((group[0].clone(), "build_timeout", message, seconds));
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
    let existing: Vec<Measurement> = store
        .measurements()?
        .into_iter()
        .filter(|m| {
            m.revision == plan.revision
                && m.device == plan.device
                && m.package == plan.target.package
                && m.bench == plan.info.name
        })
        .collect();
    let mut done: BTreeSet<(String, String)> = existing
        .iter()
        .map(|m| (m.ct_workload.clone(), m.variant.clone()))
        .collect();
    let mut rows: BTreeMap<(String, String), Vec<Measurement>> = BTreeMap::new();
    for m in existing {
        rows.entry((m.ct_workload.clone(), m.variant.clone()))
            .or_default()
            .push(m);
    }

    // Base first, from the production build.
    let mut base_run: BTreeMap<String, f64> = BTreeMap::new();
    for ct in &cts {
        if done.contains(&(ct.key.clone(), "base".into())) {
            let secs = rows
                .get(&(ct.key.clone(), "base".to_string()))
                .and_then(|r| r.iter().find_map(|m| m.run_seconds))
                .unwrap_or(MIN_BASE_RUN);
            base_run.insert(ct.key.clone(), secs);
            continue;
        }
        let t = Instant::now();
        let mut new = Vec::new();
        counters.runs += plan.run(
            base_bin,
            ct,
            &["base".to_string()],
            None,
            Some(base_build),
            out,
            &mut |_, rows, _| {
                store.put(&rows)?;
                new = rows;
                Ok(())
            },
        )?;
        let secs = t.elapsed().as_secs_f64();
        counters.stored += new.len();
        if new.iter().all(|r| r.status != "ok") {
            out.line(&format!(
                "  {}.base [{}]  base failed: {}",
                f.name,
                ct.key,
                new.first()
                    .and_then(|r| r.message.clone())
                    .unwrap_or_default()
            ));
        }
        done.insert((ct.key.clone(), "base".into()));
        rows.insert((ct.key.clone(), "base".into()), new);
        base_run.insert(ct.key.clone(), secs);
    }

    let strategy: Box<dyn Strategy> = match s.strategy {
        StrategyKind::Exhaustive => Box::new(Exhaustive::new(s.seed)),
        StrategyKind::Random => Box::new(Random::new(s.seed, s.max_evals.unwrap_or(f.space_size))),
    };
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
        if cts
            .iter()
            .all(|ct| done.contains(&(ct.key.clone(), label.clone())))
        {
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
        ws: plan.ws,
        args: plan.args,
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
                    plan.args.profile(),
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
                    plan, store, &cts, label, status, message, *seconds, counters, out,
                )?;
                proposer.scored.insert(label.clone(), None);
            }
            for (bin, group, build_seconds) in &built.units {
                for ct in &cts {
                    let labels: Vec<String> = group
                        .iter()
                        .filter(|l| !done.contains(&(ct.key.clone(), (*l).clone())))
                        .cloned()
                        .collect();
                    for _ in labels.len()..group.len() {
                        out.advance();
                    }
                    if labels.is_empty() {
                        continue;
                    }
                    let base_secs = base_run.get(&ct.key).copied().unwrap_or(MIN_BASE_RUN);
                    let limit = Duration::from_secs_f64(s.run_limit * base_secs.max(MIN_BASE_RUN));
                    out.progress_message(&format!(
                        "running {} variant(s) [{}]",
                        labels.len(),
                        ct.key
                    ));
                    let base = rows
                        .get(&(ct.key.clone(), "base".to_string()))
                        .cloned()
                        .unwrap_or_default();
                    counters.runs += plan.run(
                        bin,
                        ct,
                        &labels,
                        Some(limit),
                        Some(build_seconds / group.len() as f64),
                        out,
                        &mut |label, new, out| {
                            store.put(&new)?;
                            counters.stored += new.len();
                            done.insert((ct.key.clone(), label.to_string()));
                            let line = match new.iter().find(|r| r.status != "ok") {
                                Some(bad) => format!(
                                    "{:<8} {}",
                                    bad.status,
                                    bad.message.clone().unwrap_or_default()
                                ),
                                None => match results::score_of(&base, &new) {
                                    Some(sc) => {
                                        proposer.scored.insert(label.to_string(), Some(sc.score));
                                        format!(
                                            "{:.4}{}",
                                            sc.score,
                                            if sc.significant {
                                                ""
                                            } else {
                                                "  (within noise)"
                                            }
                                        )
                                    }
                                    None => "unscored (base has no measurement)".into(),
                                },
                            };
                            out.line(&format!("  {}.{label} [{}]  {line}", f.name, ct.key));
                            out.advance();
                            Ok(())
                        },
                    )?;
                }
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

/// `-a` may narrow an axis but not add values: `{io}` weights come from the declared order,
/// and a value the bench author never declared has no place in it.
fn undeclared_values(filtered: &BenchInfo, declared: &BenchInfo) -> Result<()> {
    for axis in &filtered.axes {
        let Some(d) = declared.axes.iter().find(|d| d.name == axis.name) else {
            continue;
        };
        if let Some(v) = axis.values.iter().find(|v| !d.values.contains(v)) {
            return Err(anyhow::Error::new(Usage(format!(
                "-a gives `{}` the value {v}, which bench `{}` does not declare; declared: {}",
                axis.name,
                filtered.name,
                d.values.join(", ")
            ))));
        }
    }
    Ok(())
}

/// Records a variant that never ran, for every compile-time workload.
#[allow(clippy::too_many_arguments)]
fn record_failure(
    plan: &Plan<'_>,
    store: &Store,
    cts: &[CtWorkload],
    label: &str,
    status: &str,
    message: &str,
    seconds: f64,
    counters: &mut Counters,
    out: &mut Output,
) -> Result<()> {
    for ct in cts {
        let mut row = plan.row(&ct.key, label, "*", 0.0, status);
        row.message = Some(message.to_string());
        row.build_seconds = Some(seconds);
        store.put(std::slice::from_ref(&row))?;
        counters.stored += 1;
        let first = message.lines().last().unwrap_or_default();
        out.line(&format!(
            "  {}.{label} [{}]  {status:<8} {first}",
            plan.function.name, ct.key
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(name: &str, ct: bool, io: bool, values: &[&str]) -> Axis {
        Axis {
            name: name.into(),
            short: name.replace("{ct}", "").replace("{io}", ""),
            compile_time: ct,
            importance_ordered: io,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn compile_time_workloads_are_the_product_of_ct_axes() {
        let axes = [
            axis("T{ct}", true, false, &["f32", "f64"]),
            axis("Elements{io}", false, true, &["2^16", "2^20"]),
            axis("U{ct}", true, false, &["i32"]),
        ];
        let keys: Vec<String> = ct_workloads(&axes).into_iter().map(|w| w.key).collect();
        assert_eq!(keys, ["T=f32,U=i32", "T=f64,U=i32"]);
        assert_eq!(ct_workloads(&axes[1..2])[0].key, "*");
        assert_eq!(
            ct_workloads(&axes)[1].args,
            ["-a", "T{ct}=f64", "-a", "U{ct}=i32"]
        );
    }

    #[test]
    fn runtime_workloads_weigh_by_declared_position() {
        let declared = [
            axis("T{ct}", true, false, &["f32"]),
            axis(
                "Elements{io}",
                false,
                true,
                &["2^16", "2^20", "2^24", "2^28"],
            ),
            axis("Mode", false, false, &["a", "b"]),
        ];
        let state = json!({ "name": "Device=0 T{ct}=f32 Elements{io}=2^20 Mode=b" });
        let (key, weight) = rt_workload(&state, &declared);
        assert_eq!(key, "Elements{io}=2^20 Mode=b");
        assert!((weight - score::io_weight(1, 4)).abs() < 1e-12);
    }
}
