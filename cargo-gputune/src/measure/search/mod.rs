//! `search`: build batches of variants, run them through the bench protocol, store every
//! result as it comes, print each variant's score as it finishes.
//!
//! Order per bench: the production build (base) first, its `--list` and `--devices`; base is
//! measured for every compile-time workload; then the strategy proposes variants, which are built
//! in batches (a failing batch is split until the variant that breaks it is found) in a build
//! thread, pipelined with the runs where the bench measures on a GPU. Each batch's variants run in
//! one bench process per compile-time workload (`crate::measure::runs`). Keys already in the store
//! are not built or run again.

mod captured;
mod cargo_build;
pub mod pipeline;

pub use captured::{
    narrowing as captured_narrowing, searches as captured_searches, CapturedSearch, Narrowing,
};

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use gputune_protocol::manifest::Function;
use gputune_protocol::BenchArgs;
use regex::Regex;
use serde_json::{json, Value};

use self::cargo_build::{Announce, CargoBuilder};
use self::pipeline::{drive, Bounds, BuildFailure, BuildStage, BuiltUnit, Proposer, RunStage};
use crate::host::cargo::Options;
use crate::host::cargo::{self, BenchTarget, BuildOutcome, Workspace};
use crate::host::output::Output;
use crate::host::usage::Usage;
use crate::measure::bundle::{Bundle, BundledBench, BundledFailure, BundledUnit};
use crate::measure::probed::ProbedDevice;
use crate::measure::protocol::{self, BenchInfo};
use crate::measure::runs::{
    ct_workloads, measured_revision, record_failure, Counters, Measured, Plan, RunContext,
    MIN_BASE_BUILD,
};
use crate::results::store::Store;
use crate::strategy::{Params, Strategy, StrategyKind};

/// How the error of a search that found no bench to search begins.
pub const NOTHING_TO_SEARCH: &str = "nothing to search";

/// What a search does, as `commands` builds it from the command line (`search`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Only benches (or tuned functions) whose name matches this regex.
    pub regex: Option<String>,
    /// Narrow an axis, as bench binaries take it (`T{ct}=f32`, `Elements{io}[pow2]=[20,24]`).
    pub axes: Vec<String>,
    /// The search strategy.
    pub strategy: StrategyKind,
    /// Seed of the strategy's random order (reproducible).
    pub seed: u64,
    /// Most variants to evaluate per function (every strategy stops there; without it,
    /// every strategy ends up evaluating the whole space).
    pub max_evals: Option<usize>,
    /// Stop starting new variants after this many seconds.
    pub time_limit: Option<f64>,
    /// Build only: leave the bench binaries, a plan and this cargo-gputune in --bundle DIR,
    /// for `DIR/cargo-gputune run-bundle DIR` on a machine with a GPU and no cargo.
    pub build_only: bool,
    /// The bundle directory of --build-only.
    pub bundle: Option<PathBuf>,
    /// Variants per batch, each built into a binary of its own (`--batch-size`). `None`, the
    /// default: one batch of up to [`WHOLE_SPACE`] variants for a blind strategy, the space
    /// built whole and batches of [`GUIDED_BATCH_SIZE`] in one waiting process for a guided
    /// one, builds of [`DEFAULT_BATCH_SIZE`] for a larger blind search.
    pub batch_size: Option<usize>,
    /// Decide instead of converge (the default): screen every variant with `--min-samples`
    /// cold samples (base measured in each process as the control), then measure in full only
    /// the variants whose score can still reach the best one's within Z standard errors of
    /// both, and base beside them. 3 keeps the true best in over 99 % of searches
    /// (docs/search.md).
    pub decide: f64,
    /// The equivalence margin of the finals (`--tie-margin`; the bench's): a finalist that
    /// ties the leader within it stops. 0: none.
    pub tie_margin: f64,
    /// Instead of deciding, race at a fixed margin: stop a variant's measurement once it is
    /// more than FRACTION slower than the fastest variant so far on the same workload (its
    /// first quartile above that best median; the bench's `--race`).
    pub race: Option<f64>,
    /// Measure every variant in full, however slow (no screening, no race).
    pub no_race: bool,
    /// Also run the hot (batched) loop of every variant. Off by default: scores come from the
    /// cold times, so a search adds `--no-batch` to the bench arguments.
    pub hot: bool,
    /// What to optimise: energy and EDP measure every variant's energy, in full.
    pub objective: crate::results::objective::Objective,
    /// Kill a build after this many times the base build's time.
    pub build_limit: f64,
    /// Kill a run after this many times base's run time.
    pub run_limit: f64,
    /// Build the next batch while the current one runs: `auto` does when the bench measures
    /// on a GPU (builds use the CPU), never when it measures on the CPU, whose timings a
    /// concurrent build would disturb.
    pub pipeline: Pipeline,
    /// Print the results as JSON on stdout when done.
    pub json: bool,
    /// Measure on several GPUs of this host at once (`0,1,3` or `all`): the search is built
    /// as a bundle, then run as `run-bundle --devices` into the store (exhaustive and random
    /// strategies).
    pub devices: Option<String>,
    /// Arguments for the bench binaries (after `--`), e.g. `--stopping-criterion stdrel`.
    pub bench_args: Vec<String>,
    /// Axes (plain names) whose `-a` values need not be ones the bench declares: the sizes
    /// an application was captured calling with (`search --captured`).
    pub free_axes: Vec<String>,
}

/// `search --pipeline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipeline {
    /// When the bench measures on a GPU.
    Auto,
    /// Always, even on the CPU (for testing the pipeline; CPU timings suffer).
    Always,
    /// Never: build, then run, then build the next batch.
    Never,
}

/// The production build of a target (base plus applied entries), reused across searches of
/// the same revision.
pub(crate) fn production(
    ws: &Workspace,
    args: &Options,
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
/// search's defaults: `entropy-or-stdrel` (entropy stops as soon as the distribution stops
/// changing, what a search wants, and stdrel ends the long kernels whose every sample is a new
/// clock value, where entropy would take a thousand), no hot loop (a search scores cold times) and deciding
/// (`--decide 3`: screen, then measure the finalists in full).
/// They are checked here, before anything is built; flags that the search itself sets per
/// run (`-b`, `-a`, `--variant`, `--json`, `--jsonl`, `--list`, `--devices`,
/// `--more-on-stdin`) are refused.
pub(crate) fn measurement_args(s: &Settings) -> Result<BenchArgs> {
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
    // `--workloads @FILE` is read here: the list travels in the flags (a bundle's too).
    a.read_workload_files()
        .and_then(|()| a.listed_workloads().map(|_| ()))
        .map_err(|e| usage(format!("bench arguments after `--`: {e}")))?;
    let owned = [
        (!a.benchmarks.is_empty(), "-b (use --bench or -R)"),
        (!a.axes.is_empty(), "-a (put it before `--`)"),
        (!a.variant.is_empty(), "--variant"),
        (a.json.is_some(), "--json"),
        (a.jsonl.is_some(), "--jsonl"),
        (a.list, "--list"),
        (a.devices, "--devices"),
        (a.more_on_stdin, "--more-on-stdin"),
    ];
    if let Some((_, flag)) = owned.iter().find(|(given, _)| *given) {
        return Err(usage(format!(
            "bench arguments after `--`: {flag} is set by the search itself"
        )));
    }
    if a.stopping_criterion.is_none() {
        a.stopping_criterion = Some("entropy-or-stdrel".into());
    }
    if !s.hot {
        a.no_batch = true;
    }
    // Energy and EDP need every variant's energy: a race or a screening stops a variant by
    // its time, before its energy is measured.
    if s.objective.needs_energy() {
        a.energy = true;
    }
    // `--race` or `--decide` after `--` is the user's own choice of the same thing.
    if !s.no_race && !s.objective.needs_energy() && a.race.is_none() && a.decide.is_none() {
        match s.race {
            Some(r) if !(r.is_finite() && r >= 0.0) => {
                return Err(usage(format!(
                    "--race must be a fraction of zero or more (0.05 is 5 %), not {r}"
                )))
            }
            Some(r) => a.race = Some(r),
            None if !(s.decide.is_finite() && s.decide > 0.0) => {
                return Err(usage(format!(
                    "--decide takes the confidence in standard errors (3 is 99.9 %), not {}",
                    s.decide
                )))
            }
            None => {
                if !(s.tie_margin.is_finite() && (0.0..1.0).contains(&s.tie_margin)) {
                    return Err(usage(format!(
                        "--tie-margin must be a fraction from 0 up to 1 (0.01 is 1 %), not {}",
                        s.tie_margin
                    )));
                }
                a.decide = Some(s.decide);
                a.tie_margin = (s.tie_margin > 0.0).then_some(s.tie_margin);
            }
        }
    }
    Ok(a)
}

/// Runs the search; returns the counters and the groups it touched.
pub fn search(
    ws: &Workspace,
    args: &Options,
    s: &Settings,
    mut sink: Sink<'_>,
    out: &mut Output,
) -> Result<(Counters, Vec<(String, String)>)> {
    let regex = s
        .regex
        .as_deref()
        .map(Regex::new)
        .transpose()
        .context("-R is not a valid regular expression")?;
    if s.batch_size == Some(0) {
        return Err(anyhow::Error::new(Usage(
            "--batch-size must be at least 1".into(),
        )));
    }
    // What can be checked without the benches is checked before anything is built: a typo
    // should not cost a release build of base first.
    for spec in &s.axes {
        gputune_protocol::axis_spec::AxisOverride::parse(spec)
            .map_err(|e| anyhow::Error::new(Usage(format!("-a: {e}"))))?;
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
        // A target none of whose benches -R selects is not listed again with -a: its benches
        // need not have the axes (a captured function's, say).
        if let Some(r) = &regex {
            let selected = declared
                .iter()
                .any(|b| r.is_match(&b.name) || b.tunes.as_deref().is_some_and(|f| r.is_match(f)));
            if !selected {
                continue;
            }
        }
        let filtered = protocol::list(&base_bin, &user_axes)
            .with_context(|| format!("bench target `{}`", target.bench))?;
        for (info, declared_info) in filtered.iter().zip(&declared) {
            undeclared_values(info, declared_info, &s.free_axes)?;
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
            let base = BaseBuild {
                bin: &base_bin,
                seconds: base_build,
                started,
            };
            let store = match &mut sink {
                Sink::Store(store) => *store,
                Sink::Bundle(dir, bundle) => {
                    let built = build_bench(
                        (ws, args, s),
                        (&target, info, function),
                        (&revision, &user_axes, &bench_args),
                        &base,
                        dir,
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
            // The first bench process names its device: no probe process on the critical path.
            let device =
                ProbedDevice::deferred(base_bin.clone(), info.name.clone(), bench_args.device);
            let work_dir = ws.work_dir(store.path());
            std::fs::create_dir_all(&work_dir)?;
            let plan = Plan {
                target: &target,
                info,
                function,
                declared: &declared_info.axes,
                revision: revision.clone(),
                device,
                user_axes: user_axes.clone(),
                bench_args: bench_args.clone(),
                work_dir,
                energy: Default::default(),
            };
            search_bench((ws, args, s), &plan, store, &base, &mut counters, out)?;
        }
    }
    if !searched_any {
        return Err(anyhow::Error::new(Usage(format!(
            "{NOTHING_TO_SEARCH}: no bench{} tunes a #[tune] function",
            s.regex
                .as_deref()
                .map(|r| format!(" matching `{r}`"))
                .unwrap_or_default()
        ))));
    }
    Ok((counters, touched))
}

/// The per-bench inputs of a search that are not the plan: where base is and how long it took
/// to build, and when the search started (for `--time-limit`).
struct BaseBuild<'a> {
    bin: &'a Path,
    seconds: f64,
    started: Instant,
}

/// Records what the run stage of a search measures into the store.
struct Recording<'a> {
    ctx: RunContext<'a>,
    measured: Measured,
    counters: &'a mut Counters,
    run_limit: f64,
    /// Whether the batches share their binaries (the whole space built at once).
    shared_bins: bool,
}

impl RunStage for Recording<'_> {
    fn run(&mut self, unit: &BuiltUnit, out: &mut Output) -> Result<Vec<(String, Option<f64>)>> {
        let scores =
            self.measured
                .measure_unit(&self.ctx, unit, self.run_limit, self.counters, out)?;
        // Measured is stored; a batch binary is not needed again, unless the search
        // decides (its finalists run from it again, `finals`) or later batches run from it:
        // then it is removed when the search ends.
        if self.ctx.plan.bench_args.decide.is_none() && !self.shared_bins {
            let _ = std::fs::remove_file(&unit.bin);
        }
        Ok(scores)
    }

    fn record(&mut self, failure: &BuildFailure, out: &mut Output) -> Result<()> {
        record_failure(&self.ctx, failure, self.counters, out)
    }
}

fn search_bench(
    (ws, args, s): (&Workspace, &Options, &Settings),
    plan: &Plan<'_>,
    store: &Store,
    base: &BaseBuild<'_>,
    counters: &mut Counters,
    out: &mut Output,
) -> Result<()> {
    let cts = ct_workloads(&plan.info.axes);
    let f = plan.function;
    let ctx = RunContext {
        plan,
        cts: &cts,
        store,
    };
    let mut measured = Measured::load(plan, store)?;
    measured.measure_base(&ctx, (base.bin, base.seconds), counters, out)?;

    let pipelined = match s.pipeline {
        Pipeline::Always => true,
        Pipeline::Never => false,
        Pipeline::Auto => plan.device.get()?.1 != "cpu",
    };
    let done: Vec<String> = f
        .labels
        .iter()
        .filter(|l| measured.complete(&cts, l))
        .cloned()
        .collect();
    let builder = CargoBuilder::new(
        (ws, args),
        plan.target,
        (&f.name, &plan.info.name, whole_space(s, f)),
        &plan.work_dir,
        s.build_limit * base.seconds.max(MIN_BASE_BUILD),
        Announce::Search,
    );
    let mut proposer = Proposer::new(
        bounds(s, base.started, f),
        strategy(s, f),
        f.labels.clone(),
        done,
    );
    out.status(&format!(
        "Searching {}.{} ({} variants, {} compile-time workload(s), {} strategy{})",
        plan.info.name,
        f.name,
        f.space_size,
        cts.len(),
        proposer.strategy_name(),
        if pipelined {
            ", builds pipelined with runs"
        } else {
            ""
        }
    ));
    out.start_progress((proposer.to_go() * cts.len()) as u64, "Searching");
    let mut recording = Recording {
        ctx,
        measured,
        counters: &mut *counters,
        run_limit: s.run_limit,
        shared_bins: builder.builds_whole(),
    };
    let result = drive(&mut proposer, &builder, &mut recording, pipelined, out);
    out.finish_progress();
    let Recording { mut measured, .. } = recording;
    counters.builds += result?;
    let ctx = RunContext {
        plan,
        cts: &cts,
        store,
    };
    let mut builds = 0;
    let mut build = |labels: &[String], out: &mut Output| -> Result<Vec<BuiltUnit>> {
        let batch = builder.build(labels.to_vec())?;
        builds += batch.builds;
        for failure in &batch.failures {
            out.line(&format!(
                "  {}.{}  {} on a rebuild for the finals: {}",
                f.name,
                failure.label,
                failure.status,
                failure.message.lines().last().unwrap_or_default()
            ));
        }
        Ok(batch.units)
    };
    let finals = measured.measure_finals(&ctx, base.bin, s.run_limit, &mut build, counters, out);
    counters.builds += builds;
    for bin in measured.bins.values() {
        let _ = std::fs::remove_file(bin);
    }
    finals
}

/// The largest space a blind search (exhaustive, random) builds at once, in one binary; a
/// larger one is built batch by batch, so that the GPU measures one batch while the next
/// builds.
pub const WHOLE_SPACE: usize = 2048;

/// Variants per batched build when `--batch-size` is not given and the space is too large to
/// build whole: a batch of 256 small kernels builds about as fast as one of 64
/// (BENCHMARKS.md).
pub const DEFAULT_BATCH_SIZE: usize = 256;

/// Variants per batch of a guided strategy when `--batch-size` is not given: what its next
/// batch learns from is the batches before it (the strategies' settings were chosen on batches
/// of one: docs/strategies.md), and the batches run one after another in one waiting process.
pub const GUIDED_BATCH_SIZE: usize = 4;

/// Whether `s` asks for a strategy that learns from the scores.
fn guided(s: &Settings) -> bool {
    !matches!(s.strategy, StrategyKind::Exhaustive | StrategyKind::Random)
}

/// `f`'s space, when it is built whole, into one binary, however the strategy batches it:
/// `--batch-size` not given, and a guided strategy (whose small batches, each a build of its
/// own, would cost a build per few variants: sgemm-large's 16,020 variants build whole in 60 s
/// on 2 cores, 50 builds of 4 take longer) or a blind one with a time limit (batches of 256
/// between which the time is checked) over at most [`WHOLE_SPACE`] variants.
fn whole_space<'f>(s: &Settings, f: &'f Function) -> Option<&'f [String]> {
    let batched_blind = s.time_limit.is_some() && f.labels.len() <= WHOLE_SPACE;
    let whole = s.batch_size.is_none() && (guided(s) || batched_blind);
    whole.then_some(&f.labels[..])
}

/// The bounds `s` sets for `f`'s search. Without `--batch-size`: a guided strategy proposes
/// [`GUIDED_BATCH_SIZE`] at a time; one that learns nothing from scores, with no time limit to
/// check between batches, proposes all it will at once over a space of at most [`WHOLE_SPACE`]
/// variants (one build of what it proposes, the whole space for exhaustive, and one pass of one
/// process per compile-time workload, where batches would take turns between the workloads'
/// processes).
fn bounds(s: &Settings, started: Instant, f: &Function) -> Bounds {
    let batch_size = match s.batch_size {
        Some(n) => n,
        None if guided(s) => GUIDED_BATCH_SIZE,
        None if s.time_limit.is_none() && f.labels.len() <= WHOLE_SPACE => {
            DEFAULT_BATCH_SIZE.max(f.labels.len())
        }
        None => DEFAULT_BATCH_SIZE,
    };
    Bounds {
        batch_size,
        max_evals: s.max_evals,
        time_limit: s.time_limit,
        started,
    }
}

/// The strategy `s` asks for, over `f`'s space.
fn strategy(s: &Settings, f: &Function) -> Box<dyn Strategy> {
    crate::strategy::build(
        s.strategy,
        s.seed,
        s.max_evals,
        Params::from_function(f),
        f.space_size,
    )
}

/// The run stage of `--build-only`: what was built goes into the bundle, unmeasured.
struct Bundling<'a> {
    bench: &'a mut BundledBench,
    function: &'a str,
}

impl RunStage for Bundling<'_> {
    fn run(&mut self, unit: &BuiltUnit, _: &mut Output) -> Result<Vec<(String, Option<f64>)>> {
        let name = unit
            .bin
            .file_name()
            .context("a binary without a file name")?;
        self.bench.units.push(BundledUnit {
            bin: format!("bin/{}", name.to_string_lossy()),
            labels: unit.labels.clone(),
            build_seconds: unit.seconds,
        });
        Ok(unit.labels.iter().map(|l| (l.clone(), None)).collect())
    }

    fn record(&mut self, failure: &BuildFailure, out: &mut Output) -> Result<()> {
        out.line(&format!(
            "  {}.{}  {:<8} {}",
            self.function,
            failure.label,
            failure.status,
            failure.message.lines().last().unwrap_or_default()
        ));
        self.bench.failures.push(BundledFailure {
            label: failure.label.clone(),
            status: failure.status,
            message: failure.message.clone(),
            seconds: failure.seconds,
        });
        Ok(())
    }
}

/// `--build-only`: builds the variants the strategy proposes (without scores, so all of
/// them for exhaustive, `--max-evals` for random) into `dir/bin`, with the production binary,
/// and returns the bundle's entry for the bench.
fn build_bench(
    (ws, args, s): (&Workspace, &Options, &Settings),
    (target, info, function): (&BenchTarget, &BenchInfo, &Function),
    (revision, user_axes, bench_args): (&str, &[String], &BenchArgs),
    base: &BaseBuild<'_>,
    dir: &Path,
    counters: &mut Counters,
    out: &mut Output,
) -> Result<BundledBench> {
    let bin_dir = dir.join("bin");
    std::fs::create_dir_all(&bin_dir)
        .with_context(|| format!("cannot create {}", bin_dir.display()))?;
    let base_rel = format!("bin/{}-base", target.bench);
    std::fs::copy(base.bin, dir.join(&base_rel))
        .with_context(|| format!("cannot copy {} into the bundle", base.bin.display()))?;
    let builder = CargoBuilder::new(
        (ws, args),
        target,
        (&function.name, &info.name, whole_space(s, function)),
        &bin_dir,
        s.build_limit * base.seconds.max(MIN_BASE_BUILD),
        Announce::Bundle,
    );
    let mut proposer = Proposer::new(
        bounds(s, base.started, function),
        strategy(s, function),
        function.labels.clone(),
        Vec::new(),
    );
    let mut bench = BundledBench {
        package: target.package.clone(),
        target: target.bench.clone(),
        bench: info.name.clone(),
        function: function.clone(),
        revision: revision.to_string(),
        user_axes: user_axes.to_vec(),
        bench_args: bench_args.to_args(),
        base: base_rel,
        base_build_seconds: base.seconds,
        units: Vec::new(),
        failures: Vec::new(),
        run_limit: s.run_limit,
    };
    let mut bundling = Bundling {
        bench: &mut bench,
        function: &function.name,
    };
    counters.builds += drive(&mut proposer, &builder, &mut bundling, false, out)?;
    Ok(bench)
}

/// `-a` may narrow an axis but not add values: `{io}` weights come from the declared order,
/// and a value the bench author never declared has no place in it.
fn undeclared_values(filtered: &BenchInfo, declared: &BenchInfo, free: &[String]) -> Result<()> {
    for axis in &filtered.axes {
        let Some(d) = declared.axes.iter().find(|d| d.name == axis.name) else {
            continue;
        };
        let plain = axis.name.split(['{', '[']).next().unwrap_or(&axis.name);
        if free.iter().any(|f| f == plain) {
            continue;
        }
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

#[cfg(test)]
pub(crate) mod tests_support {
    /// Settings as `search` with no flags makes them.
    pub fn settings() -> super::Settings {
        super::Settings {
            regex: None,
            axes: Vec::new(),
            strategy: crate::strategy::StrategyKind::Exhaustive,
            seed: 0,
            max_evals: None,
            time_limit: None,
            build_only: false,
            bundle: None,
            batch_size: None,
            decide: 3.0,
            tie_margin: 0.01,
            race: None,
            no_race: false,
            hot: false,
            objective: crate::results::objective::Objective::Time,
            build_limit: 10.0,
            run_limit: 50.0,
            pipeline: super::Pipeline::Auto,
            json: false,
            devices: None,
            bench_args: Vec::new(),
            free_axes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::settings;
    use super::*;

    #[test]
    fn a_deciding_search_passes_its_tie_margin_and_zero_turns_it_off() {
        let a = measurement_args(&settings()).expect("valid");
        assert_eq!((a.decide, a.tie_margin), (Some(3.0), Some(0.01)));
        assert!(
            a.measurement_settings().contains(" decide=3 tie=0.01"),
            "{}",
            a.measurement_settings()
        );
        let off = Settings {
            tie_margin: 0.0,
            ..settings()
        };
        let a = measurement_args(&off).expect("valid");
        assert_eq!((a.decide, a.tie_margin), (Some(3.0), None));
        assert!(a.to_args().iter().all(|f| f != "--tie-margin"));
        let racing = Settings {
            race: Some(0.05),
            ..settings()
        };
        assert_eq!(measurement_args(&racing).expect("valid").tie_margin, None);
        let bad = Settings {
            tie_margin: 1.5,
            ..settings()
        };
        let e = measurement_args(&bad).expect_err("a usage error");
        assert!(e.to_string().contains("--tie-margin"), "{e}");
    }
}
