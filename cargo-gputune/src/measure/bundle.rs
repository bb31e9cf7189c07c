//! Bundles: `search --build-only --bundle DIR` builds here, `DIR/cargo-gputune run-bundle DIR`
//! measures on a machine with a GPU and no Rust toolchain, and `report --db DIR/gputune.db`
//! reads the result anywhere (CI systems whose GPU runners have no cargo, HPC login nodes).
//!
//! `run-bundle DIR --shard I/N` measures base and part I of N of the variants into
//! `DIR/gputune-shard-I-of-N.db`, and `cargo gputune merge` ([`crate::results::merge`]) combines
//! the shards' stores: N GPUs, or N jobs of a batch system, share one search.
//!
//! A bundle is a directory: `bundle.json` (the plan below, versioned), the bench binaries
//! under `bin/`, and the cargo-gputune binary that built it. Nothing in it refers to the
//! workspace, so it can be copied anywhere.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use gputune_protocol::manifest::Function;
use serde::{Deserialize, Serialize};

use crate::host::cargo::BenchTarget;
use crate::host::output::Output;
use crate::host::usage::Usage;
use crate::measure::probed::ProbedDevice;
use crate::measure::protocol;
use crate::measure::runs::{
    ct_workloads, record_failure, Counters, CtWorkload, Measured, Plan, RunContext,
};
use crate::measure::search;
use crate::measure::search::pipeline::{
    drive, Bounds, BuildFailure, BuildStage, BuiltBatch, BuiltUnit, Proposer, RunStage,
};
use crate::measure::shard::Shard;
use crate::results::store::Store;
use crate::strategy::{Params, StrategyKind};

/// Version of `bundle.json`.
pub const BUNDLE_VERSION: u32 = 1;

/// The plan of a bundle: what was built, for which bench, from which revision.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Bundle {
    /// [`BUNDLE_VERSION`].
    pub version: u32,
    /// One entry per bench that tunes a function.
    pub benches: Vec<BundledBench>,
}

/// One bench of a bundle.
#[derive(Debug, Serialize, Deserialize)]
pub struct BundledBench {
    /// Package of the bench target.
    pub package: String,
    /// The bench target (`cargo bench --bench NAME`).
    pub target: String,
    /// The bench inside it (`-b NAME`).
    pub bench: String,
    /// The tuned function, as its manifest describes it.
    pub function: Function,
    /// Revision key of the build (toolchain, options, sources).
    pub revision: String,
    /// `-a` arguments of the search, as the bench takes them (`-a`, then a spec).
    pub user_axes: Vec<String>,
    /// Arguments passed through to the bench.
    pub bench_args: Vec<String>,
    /// The production binary, relative to the bundle.
    pub base: String,
    /// Its build time in seconds.
    pub base_build_seconds: f64,
    /// Binaries of batched variants.
    pub units: Vec<BundledUnit>,
    /// Variants that did not build.
    pub failures: Vec<BundledFailure>,
    /// Run limit, as a multiple of base's run time.
    pub run_limit: f64,
}

/// A batched binary of a bundle.
#[derive(Debug, Serialize, Deserialize)]
pub struct BundledUnit {
    /// Path relative to the bundle.
    pub bin: String,
    /// The variants it holds.
    pub labels: Vec<String>,
    /// Its build time in seconds.
    pub build_seconds: f64,
}

/// A variant that did not build.
#[derive(Debug, Serialize, Deserialize)]
pub struct BundledFailure {
    /// Its label.
    pub label: String,
    /// `build_failed` or `build_timeout`.
    pub status: gputune_protocol::Status,
    /// The end of the build log.
    pub message: String,
    /// Build time in seconds.
    pub seconds: f64,
}

impl BundledFailure {
    /// The failure as the build stage reports it.
    pub(crate) fn failure(&self) -> BuildFailure {
        BuildFailure {
            label: self.label.clone(),
            status: self.status,
            message: self.message.clone(),
            seconds: self.seconds,
        }
    }
}

/// The name of the plan inside a bundle.
const PLAN: &str = "bundle.json";

impl Bundle {
    /// Writes the plan and copies this cargo-gputune next to it.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        let tmp = dir.join(format!("{PLAN}.tmp"));
        std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, dir.join(PLAN))?;
        let me = std::env::current_exe().context("cannot find this cargo-gputune binary")?;
        std::fs::copy(&me, dir.join("cargo-gputune"))
            .with_context(|| format!("cannot copy {} into {}", me.display(), dir.display()))?;
        Ok(())
    }

    /// Reads the plan of the bundle in `dir`.
    pub fn read(dir: &Path) -> Result<Bundle> {
        let path = dir.join(PLAN);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            anyhow::Error::new(Usage(format!(
                "{} is not a bundle ({}: {e}); make one with `cargo gputune search --build-only \
                 --bundle DIR`",
                dir.display(),
                path.display()
            )))
        })?;
        let bundle: Bundle = serde_json::from_str(&text).map_err(|e| {
            anyhow::Error::new(Usage(format!("{} is malformed: {e}", path.display())))
        })?;
        if bundle.version != BUNDLE_VERSION {
            return Err(anyhow::Error::new(Usage(format!(
                "{} is bundle version {}; this cargo-gputune reads version {BUNDLE_VERSION}",
                path.display(),
                bundle.version
            ))));
        }
        Ok(bundle)
    }

    /// The bundle a run measures: `args.dir`'s plan, narrowed to the workloads in
    /// `args.captured` when given.
    pub fn for_run(args: &RunBundle, out: &mut Output) -> Result<Bundle> {
        let mut bundle = Bundle::read(&args.dir)?;
        if let Some(dir) = &args.captured {
            let captures = gputune_protocol::capture::read_dir(dir)
                .map_err(|e| anyhow::Error::new(Usage(e.to_string())))?;
            for line in bundle.narrow_to(&captures).map_err(|e| {
                anyhow::Error::new(Usage(format!("{e}; captures read from {}", dir.display())))
            })? {
                out.status(&line);
            }
        }
        Ok(bundle)
    }

    /// Keeps only the benches of captured functions, each narrowed to exactly its function's
    /// captured workloads (as `search --captured` narrows a search), so that a GPU host with
    /// no toolchain searches what its application launched with a bundle built beforehand.
    /// Returns a line per bench saying what it runs; an error when no bench tunes a captured
    /// function.
    pub fn narrow_to(
        &mut self,
        captures: &[gputune_protocol::capture::CaptureFile],
    ) -> std::result::Result<Vec<String>, String> {
        let mut lines = Vec::new();
        let mut kept = Vec::new();
        for mut b in std::mem::take(&mut self.benches) {
            let Some(c) = captures
                .iter()
                .find(|c| c.package == b.package && c.function == b.function.name)
            else {
                lines.push(format!(
                    "{}.{}: not captured, not run",
                    b.bench, b.function.name
                ));
                continue;
            };
            let n = search::captured_narrowing(c);
            // `-a SPEC` pairs: the bundle's own of other axes still hold; the captured ones
            // replace theirs.
            let mut axes: Vec<String> = n
                .axes
                .iter()
                .flat_map(|a| ["-a".to_string(), a.clone()])
                .collect();
            for pair in b.user_axes.chunks(2) {
                let captured_axis = pair.get(1).is_some_and(|spec| {
                    n.axes
                        .iter()
                        .any(|a| protocol::spec_axis(a) == protocol::spec_axis(spec))
                });
                if !captured_axis {
                    axes.extend(pair.iter().cloned());
                }
            }
            b.user_axes = axes;
            let mut args = Vec::new();
            let mut old = b.bench_args.iter();
            while let Some(a) = old.next() {
                if a == "--workloads" {
                    old.next();
                } else if !a.starts_with("--workloads=") {
                    args.push(a.clone());
                }
            }
            args.extend(n.bench_args.iter().cloned());
            b.bench_args = args;
            lines.push(format!(
                "{}.{}: the {} captured workload(s) ({} call(s)): {}",
                b.bench,
                b.function.name,
                n.workloads,
                n.calls,
                n.axes
                    .iter()
                    .map(|a| format!("-a '{a}'"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
            kept.push(b);
        }
        self.benches = kept;
        if self.benches.is_empty() {
            let names: Vec<String> = captures
                .iter()
                .map(|c| format!("{}::{}", c.package, c.function))
                .collect();
            return Err(format!(
                "no bench of the bundle tunes a captured function ({})",
                if names.is_empty() {
                    "nothing was captured".to_string()
                } else {
                    names.join(", ")
                }
            ));
        }
        Ok(lines)
    }
}

/// What `run-bundle` runs, as `commands` builds it from the command line.
#[derive(Debug, Clone)]
pub struct RunBundle {
    /// The bundle directory.
    pub dir: PathBuf,
    /// Only this part of each bench's variants (and base).
    pub shard: Option<Shard>,
    /// Every variant measured in full (no screening, no race): the reference of a deciding
    /// search.
    pub no_race: bool,
    /// Search the variants with this strategy instead of running them all.
    pub strategy: Option<StrategyKind>,
    /// The strategy's seed.
    pub seed: u64,
    /// Most variants the strategy evaluates.
    pub max_evals: Option<usize>,
    /// No new batch of the strategy after this many seconds.
    pub time_limit: Option<f64>,
    /// Variants per batch of the strategy (one bench process each).
    pub batch_size: usize,
    /// The GPU (CUDA ordinal) the bench processes measure on.
    pub device: u32,
    /// Only the workloads an application was captured calling (`GPUTUNE_CAPTURE=DIR`), of
    /// the functions it called.
    pub captured: Option<PathBuf>,
}

/// Runs every bench of the bundle in `dir`: base first, then each built variant, into
/// `store`; the build failures found when it was built are recorded too. What the store
/// already holds is not measured again.
///
/// With a `shard`, only that shard's block of each bench's built variants is run (in the
/// bundle's order, [`Shard::range`]); base is run by every shard, since a shard's scores
/// need base measured on its own device, and the build failures are recorded by shard 1
/// only, so that the shards' stores hold each variant once between them.
pub fn run_bundle(args: &RunBundle, store: &Store, out: &mut Output) -> Result<Counters> {
    let (dir, shard, no_race) = (args.dir.as_path(), args.shard, args.no_race);
    if args.strategy.is_some() && shard.is_some() {
        return Err(anyhow::Error::new(Usage(
            "--strategy searches the whole bundle; it does not take --shard".into(),
        )));
    }
    if args.batch_size == 0 {
        return Err(anyhow::Error::new(Usage(
            "--batch-size must be at least 1".into(),
        )));
    }
    let bundle = Bundle::for_run(args, out)?;
    let mut counters = Counters::default();
    // Shards may run at once on one machine (one GPU each), and a bench streams its results
    // through a file in the work directory: one directory per shard.
    let work_dir = match shard {
        Some(s) => dir
            .join("work")
            .join(format!("shard-{}-of-{}", s.index, s.count)),
        None => dir.join("work"),
    };
    std::fs::create_dir_all(&work_dir)
        .with_context(|| format!("cannot create {}", work_dir.display()))?;
    for b in &bundle.benches {
        let base_bin = dir.join(&b.base);
        // The first bench process names its device in its first event: no probe opens the
        // driver beside it. A store that holds this bench already is read by device before
        // that, and a bench that does not name it leaves the probe to start then.
        let device = ProbedDevice::deferred(base_bin.clone(), b.bench.clone(), args.device);
        let Opened {
            info,
            declared,
            target,
            mut bench_args,
            revision,
        } = open(dir, b, no_race, store)?;
        bench_args.device = args.device;
        let plan = Plan {
            target: &target,
            info: &info,
            function: &b.function,
            declared: &declared.axes,
            revision,
            device,
            user_axes: b.user_axes.clone(),
            bench_args,
            work_dir: work_dir.clone(),
            energy: Default::default(),
        };
        let cts = ct_workloads(&info.axes);
        let ctx = RunContext {
            plan: &plan,
            cts: &cts,
            store,
        };
        let mut measured = Measured::load(&plan, store)?;
        let units = shard_units(&b.units, shard);
        // A strategy meets the failures it proposes (FromBundle); shards after the first
        // leave them to shard 1.
        let failures: &[BundledFailure] = match shard {
            _ if args.strategy.is_some() => &[],
            Some(s) if s.index != 1 => &[],
            _ => &b.failures,
        };
        let built: usize = b.units.iter().map(|u| u.labels.len()).sum();
        let mine: usize = units.iter().map(|u| u.labels.len()).sum();
        out.status(&format!(
            "Running {}.{} from the bundle ({} binaries, {} variants{})",
            b.bench,
            b.function.name,
            units.len() + 1,
            mine + failures.len(),
            match shard {
                Some(s) => format!("; shard {s} of {} variants", built + b.failures.len()),
                None => String::new(),
            }
        ));
        measured.measure_base(&ctx, (&base_bin, b.base_build_seconds), &mut counters, out)?;
        for f in failures {
            if !measured.complete(&cts, &f.label) {
                record_failure(&ctx, &f.failure(), &mut counters, out)?;
            }
        }
        if let Some(kind) = args.strategy {
            let mut proposer = proposer(args, kind, b, &measured, &cts, args.batch_size);
            out.status(&format!(
                "Searching with the {} strategy (at most {} variants)",
                proposer.strategy_name(),
                proposer.to_go()
            ));
            out.start_progress((proposer.to_go() * cts.len()) as u64, "Running");
            let from = FromBundle::new(dir, b);
            let mut stage = Measuring {
                ctx: &ctx,
                measured: &mut measured,
                counters: &mut counters,
                run_limit: b.run_limit,
            };
            let searched = drive(&mut proposer, &from, &mut stage, false, out);
            out.finish_progress();
            searched?;
        } else {
            out.start_progress((mine * cts.len()) as u64, "Running");
            for u in &units {
                let unit = BuiltUnit {
                    bin: dir.join(&u.bin),
                    labels: u.labels.clone(),
                    seconds: u.build_seconds,
                };
                measured.measure_unit(&ctx, &unit, b.run_limit, &mut counters, out)?;
            }
            out.finish_progress();
        }
        // A finalist is always in the bundle (the shard ran it from there).
        let mut build = |labels: &[String], _: &mut Output| -> Result<Vec<BuiltUnit>> {
            anyhow::bail!("no binary of the bundle holds {}", labels.join(", "))
        };
        measured.measure_finals(&ctx, &base_bin, b.run_limit, &mut build, &mut counters, out)?;
    }
    Ok(counters)
}

/// A bench of a bundle opened to run: what its binaries list, and the flags and revision its
/// runs take (the device is the caller's to set).
pub(crate) struct Opened {
    /// The bench as `-a` narrows it.
    pub(crate) info: protocol::BenchInfo,
    /// The bench as it declares itself.
    pub(crate) declared: protocol::BenchInfo,
    /// Its bench target.
    pub(crate) target: BenchTarget,
    /// The flags of its runs.
    pub(crate) bench_args: gputune_protocol::BenchArgs,
    /// The revision its rows are stored under.
    pub(crate) revision: String,
}

/// Lists bench `b` of the bundle in `dir` (two processes of its base binary at once), stores
/// its space in `store`, and works out its runs' flags; `no_race` measures every variant in
/// full, under a revision of its own.
pub(crate) fn open(dir: &Path, b: &BundledBench, no_race: bool, store: &Store) -> Result<Opened> {
    let base_bin = dir.join(&b.base);
    let (declared, filtered) = std::thread::scope(|s| {
        let declared = s.spawn(|| protocol::list(&base_bin, &[]));
        let filtered = protocol::list(&base_bin, &b.user_axes);
        let joined = declared
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("a probe of the bench panicked")));
        (joined, filtered)
    });
    let (declared, filtered) = (declared?, filtered?);
    let find = |list: &[protocol::BenchInfo]| {
        list.iter()
            .find(|i| i.name == b.bench)
            .cloned()
            .with_context(|| format!("{} has no bench `{}`", base_bin.display(), b.bench))
    };
    let (info, declared) = (find(&filtered)?, find(&declared)?);
    store.put_space(
        &b.package,
        &b.function.name,
        b.function.space_size,
        &b.function.attribute,
    )?;
    let target = BenchTarget {
        package: b.package.clone(),
        package_id: String::new(),
        bench: b.target.clone(),
    };
    let mut bench_args = gputune_protocol::BenchArgs::from_flags(&b.bench_args)
        .with_context(|| format!("the bundle's bench arguments {:?}", b.bench_args))?;
    let mut revision = b.revision.clone();
    if no_race {
        bench_args.decide = None;
        bench_args.tie_margin = None;
        bench_args.race = None;
        // The code's revision, measured another way.
        let code = b
            .revision
            .rsplit_once(".m")
            .map_or(&b.revision[..], |(c, _)| c);
        revision = crate::measure::runs::measured_revision(code, &bench_args);
    }
    Ok(Opened {
        info,
        declared,
        target,
        bench_args,
        revision,
    })
}

/// The proposer of `run-bundle --strategy kind` over bench `b`'s whole space (its built
/// variants and its build failures), what `measured` holds counted as evaluated, in batches
/// of `batch_size`.
pub(crate) fn proposer(
    args: &RunBundle,
    kind: StrategyKind,
    b: &BundledBench,
    measured: &Measured,
    cts: &[CtWorkload],
    batch_size: usize,
) -> Proposer {
    let space: Vec<String> = b
        .units
        .iter()
        .flat_map(|u| u.labels.iter())
        .chain(b.failures.iter().map(|f| &f.label))
        .cloned()
        .collect();
    let done: Vec<String> = space
        .iter()
        .filter(|l| measured.complete(cts, l))
        .cloned()
        .collect();
    let bounds = Bounds {
        batch_size,
        max_evals: args.max_evals,
        time_limit: args.time_limit,
        started: std::time::Instant::now(),
    };
    let strategy = crate::strategy::build(
        kind,
        args.seed,
        args.max_evals,
        Params::from_function(&b.function),
        space.len(),
    );
    Proposer::new(bounds, strategy, space, done)
}

/// The build stage of `run-bundle --strategy`: nothing is built, a proposed batch is found in
/// the bundle's binaries (one unit per binary that holds part of it, charged its share of
/// that binary's build time), and the bundle's build failures are reported as such.
pub(crate) struct FromBundle {
    /// Every binary and build failure of the bench.
    bundled: BuiltBatch,
}

impl FromBundle {
    /// The build stage of bench `bench` of the bundle in `dir`.
    pub(crate) fn new(dir: &Path, bench: &BundledBench) -> FromBundle {
        let units = bench
            .units
            .iter()
            .map(|u| BuiltUnit {
                bin: dir.join(&u.bin),
                labels: u.labels.clone(),
                seconds: u.build_seconds,
            })
            .collect();
        let failures = bench.failures.iter().map(BundledFailure::failure).collect();
        FromBundle {
            bundled: BuiltBatch {
                units,
                failures,
                builds: 0,
            },
        }
    }
}

impl BuildStage for FromBundle {
    fn build(&self, batch: Vec<String>) -> Result<BuiltBatch> {
        Ok(self.bundled.part(&batch))
    }
}

/// The run stage of `run-bundle --strategy`: measures each proposed unit into the store.
struct Measuring<'a, 'c> {
    ctx: &'a RunContext<'c>,
    measured: &'a mut Measured,
    counters: &'a mut Counters,
    run_limit: f64,
}

impl RunStage for Measuring<'_, '_> {
    fn run(&mut self, unit: &BuiltUnit, out: &mut Output) -> Result<Vec<(String, Option<f64>)>> {
        self.measured
            .measure_unit(self.ctx, unit, self.run_limit, self.counters, out)
    }

    fn record(&mut self, failure: &BuildFailure, out: &mut Output) -> Result<()> {
        record_failure(self.ctx, failure, self.counters, out)
    }
}

/// The part of a bench's units that `shard` runs: the units that hold its block of labels
/// (the labels of all units, in order), each cut down to the labels in the block. A cut
/// unit's build time is its share of the whole unit's, so that each variant is charged the
/// build time an unsharded run would charge it.
pub(crate) fn shard_units(units: &[BundledUnit], shard: Option<Shard>) -> Vec<BundledUnit> {
    let total: usize = units.iter().map(|u| u.labels.len()).sum();
    let block = shard.map_or(0..total, |s| s.range(total));
    let mut first = 0;
    let mut out = Vec::new();
    for u in units {
        let (start, end) = (first, first + u.labels.len());
        first = end;
        let (from, to) = (start.max(block.start), end.min(block.end));
        if from >= to {
            continue;
        }
        let labels = u.labels[from - start..to - start].to_vec();
        out.push(BundledUnit {
            bin: u.bin.clone(),
            build_seconds: u.build_seconds * labels.len() as f64 / u.labels.len() as f64,
            labels,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(bin: &str, labels: &[&str]) -> BundledUnit {
        BundledUnit {
            bin: bin.into(),
            labels: labels.iter().map(|l| l.to_string()).collect(),
            build_seconds: labels.len() as f64,
        }
    }

    #[test]
    fn shards_cut_units_into_contiguous_blocks_of_labels() {
        let units = [unit("a", &["1", "2", "3"]), unit("b", &["4", "5"])];
        let cut = |index| {
            shard_units(&units, Some(Shard { index, count: 2 }))
                .into_iter()
                .map(|u| (u.bin, u.labels.join(","), u.build_seconds))
                .collect::<Vec<_>>()
        };
        assert_eq!(cut(1), [("a".into(), "1,2".into(), 2.0)]);
        assert_eq!(
            cut(2),
            [
                ("a".into(), "3".into(), 1.0),
                ("b".into(), "4,5".into(), 2.0)
            ]
        );
        let whole = shard_units(&units, None);
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[1].labels, ["4", "5"]);
        // More shards than variants: the extra shards run base only.
        let many = |index| shard_units(&units, Some(Shard { index, count: 8 })).len();
        assert_eq!((1..=8).map(many).sum::<usize>(), 5);
    }
}
