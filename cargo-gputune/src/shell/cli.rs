//! The command line: cargo's conventions, then one subcommand per stage.

use std::path::PathBuf;

use crate::measure::shard::Shard;
use crate::results::objective::Objective;
use clap::builder::PossibleValue;
use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::host::output::Color;
pub use crate::measure::search::Pipeline;
pub use crate::results::report::Format;
pub use crate::strategy::StrategyKind;

/// `cargo gputune`: cargo passes `gputune` as the first argument.
#[derive(Debug, Parser)]
#[command(name = "cargo", bin_name = "cargo", styles = clap::builder::Styles::plain())]
pub enum CargoCli {
    /// Tune GPU kernels: search variants of #[tune] functions, report, apply, check.
    // The doc line is the command's help text, where `#[tune]` is meant as written.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[command(name = "gputune", version)]
    Gputune(Gputune),
}

const EXAMPLES: &str = "\
Examples:
  cargo gputune list
  cargo gputune search -p my-kernels -R scale -a 'Elements{io}[pow2]=[24,28]'
  cargo gputune search --strategy random --max-evals 50 -- --stopping-criterion entropy
  cargo gputune report --top 5
  cargo gputune report --coverage --format markdown
  cargo gputune report --plot target/gputune/plots --plot-params ipt,tpb
  cargo gputune report --html target/gputune/report.html
  cargo gputune apply --dry-run
  cargo gputune report --format json > perf/baseline.json
  cargo gputune check --baseline perf/baseline.json --min-score 1.0
  cargo gputune check --baseline perf/baseline.json --junit target/gputune/check.xml
  cargo gputune check --baseline perf/baseline.json --remeasure --strict-provenance
  cargo gputune search --build-only --bundle gpu-bundle    # then, on the GPU host:
  gpu-bundle/cargo-gputune run-bundle gpu-bundle           # and anywhere:
  cargo gputune report --db gpu-bundle/gputune.db
  gpu-bundle/cargo-gputune run-bundle gpu-bundle --shard 2/4   # one of four GPUs or jobs
  cargo gputune merge --db all.db gpu-bundle/gputune-shard-*-of-4.db
  cargo gputune replay --db all.db --strategy genetic --seeds 20 --max-evals 32
  cargo gputune import pnpoly_RTX_3090.json.gz pnpoly.T1.json --db kt.db
  cargo gputune export --format kt-cache --db kt.db -p pnpoly_RTX_3090 -o pnpoly.json";

/// The subcommand and the options every subcommand shares.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct Gputune {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Cargo's options.
    #[command(flatten)]
    pub cargo: CargoArgs,
}

/// Cargo's conventions.
#[derive(Debug, Clone, Args)]
pub struct CargoArgs {
    /// Path to Cargo.toml.
    #[arg(long, global = true, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Package(s) whose benches and results to use (default, as cargo: the package of the
    /// current directory or --manifest-path, else every workspace member that uses gputune).
    #[arg(short = 'p', long, global = true, value_name = "SPEC")]
    pub package: Vec<String>,
    /// Every workspace member, even when run inside one (as cargo's --workspace).
    #[arg(long, global = true, conflicts_with = "package")]
    pub workspace: bool,
    /// Bench target(s) to use (default: all of the selected packages).
    #[arg(long, global = true, value_name = "NAME")]
    pub bench: Vec<String>,
    /// Build profile (default: release).
    #[arg(long, global = true, value_name = "NAME", conflicts_with = "release")]
    pub profile: Option<String>,
    /// Build with the release profile (the default).
    #[arg(long, global = true)]
    pub release: bool,
    /// Features to activate, as cargo takes them.
    #[arg(short = 'F', long, global = true)]
    pub features: Option<String>,
    /// Target directory (default: CARGO_TARGET_DIR or cargo's).
    #[arg(long, global = true, value_name = "DIR")]
    pub target_dir: Option<PathBuf>,
    /// Require Cargo.lock to be up to date.
    #[arg(long, global = true)]
    pub locked: bool,
    /// Do not access the network.
    #[arg(long, global = true)]
    pub offline: bool,
    /// More output (-v: bench and build commands).
    #[arg(short = 'v', long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Less output: only results and errors.
    #[arg(short = 'q', long, global = true)]
    pub quiet: bool,
    /// Colour: auto, always or never (a non-empty NO_COLOR turns it off).
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    /// The store (default: TARGET_DIR/gputune/gputune.db).
    #[arg(long, global = true, value_name = "FILE")]
    pub db: Option<PathBuf>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benches, tuned functions, parameters, space sizes and compile-time workloads.
    List,
    /// Build, run, verify and score variants against base; results go to the store.
    Search(SearchArgs),
    /// What won: per compile-time workload, the top variants with their scores.
    Report(ReportArgs),
    /// Write the significant, verified winners into gputune.toml.
    Apply(ApplyArgs),
    /// Gate CI: compare with a baseline report and check the applied variants' scores.
    Check(CheckArgs),
    /// Run a bundle from `search --build-only --bundle DIR` (no cargo needed): measures base
    /// and every built variant into DIR/gputune.db (or --db); with --shard I/N, base and the
    /// I-th of N parts of the variants into DIR/gputune-shard-I-of-N.db.
    RunBundle(RunBundleArgs),
    /// Merge stores (shards of one bundle, or searches of one revision on several machines)
    /// into the --db store: every row and space, idempotently. Stores of another revision,
    /// space or schema are refused.
    Merge(MergeArgs),
    /// Run a bundle's shards as a SLURM job array (`sbatch`): task I runs `run-bundle --shard
    /// I/N`; with --wait, wait for the array and merge the shards' stores. Submitting again
    /// resumes every shard from its store.
    Slurm(SlurmArgs),
    /// Replay a strategy against the recorded results of a store, without a GPU (Kernel
    /// Tuner's simulation mode): per seed, the best score it finds as a fraction of the best
    /// recorded, after how many evaluations, and the recorded time they would take.
    Replay(ReplayArgs),
    /// Read Kernel Tuner cache files (JSON, plain or gzip) and T4 results into the --db store,
    /// one package per file; a T1 file gives the base (its defaults), a T4 metadata file the
    /// device. Nothing is written unless every file reads.
    Import(ImportArgs),
    /// Write one kernel's results on one device (-p PACKAGE where the store holds several) as a
    /// Kernel Tuner cache file or T4 results, to -o FILE (`.gz`: compressed) or stdout.
    Export(ExportArgs),
}

/// `import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Kernel Tuner cache files, T4 results or metadata files, T1 files.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// The base of every results file: `name=value,…` or a label (`a_1.b_2`). Default: the
    /// default of a T1 file given with it, else the file's first configuration that ran.
    #[arg(long, value_name = "CONFIG")]
    pub base: Option<String>,
}

/// `export --format`: the community formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// T4 results (FAIR benchmark hub, Kernel Tuner's `store_output_file`).
    T4,
    /// A Kernel Tuner cache file (`tune_kernel(cache=…)`, simulation mode).
    KtCache,
}

/// `export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// The file to write (`.gz`: gzip); default: stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The runtime workload to write, where the group was measured on several.
    #[arg(long, value_name = "WORKLOAD")]
    pub workload: Option<String>,
}

/// `replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The strategy to replay.
    #[arg(long, value_enum)]
    pub strategy: StrategyKind,
    /// Seeds to replay: --seed, --seed + 1, …
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Most variants to evaluate per function (default: the whole space).
    #[arg(long, value_name = "N")]
    pub max_evals: Option<usize>,
    /// Stop once the evaluated variants' recorded seconds (build + run; for a Kernel Tuner
    /// cache, compile + benchmark + verification time, as its simulation mode charges) pass
    /// this; the variant that crosses it counts.
    #[arg(long, value_name = "SECONDS")]
    pub time_limit: Option<f64>,
    /// Variants per batch the strategy is asked for. Smaller than search's default, since a
    /// batch as large as the space leaves a strategy nothing to choose.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub batch_size: usize,
    /// The guided strategies' settings, `key=value,…` over the defaults (`docs/strategies.md`
    /// lists them): how the fold procedure tries candidates without a rebuild.
    #[arg(long, default_value = "", value_name = "KEY=VALUE,…")]
    pub settings: String,
    /// Output format: table or json.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `run-bundle`.
#[derive(Debug, Args)]
pub struct RunBundleArgs {
    /// The bundle directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Measure only part I of N of each bench's variants (contiguous blocks of the bundle's
    /// order, which is the search's shuffled order), and base, which every shard measures;
    /// build failures are recorded by shard 1. Default store: DIR/gputune-shard-I-of-N.db.
    /// Merge the shards' stores with `cargo gputune merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Measure every variant in full (no screening, no race), whatever the bundle was built
    /// with: the reference a deciding search's winner is checked against. Stored under its
    /// own measurement settings, as `search --no-race` would.
    #[arg(long)]
    pub no_race: bool,
    /// Search the bundle's variants with this strategy instead of running them all: a bundle
    /// built with every point (`search --build-only`, exhaustive) serves any strategy, each
    /// batch it proposes running from the binaries that hold it.
    #[arg(long, value_enum, value_name = "STRATEGY")]
    pub strategy: Option<StrategyKind>,
    /// Seed of --strategy.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Most variants --strategy evaluates.
    #[arg(long, value_name = "N")]
    pub max_evals: Option<usize>,
    /// Stop starting new batches of --strategy after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub time_limit: Option<f64>,
    /// Variants per batch of --strategy: each batch is one bench process.
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub batch_size: usize,
    /// The GPU (CUDA ordinal) the bench processes measure on.
    #[arg(
        long,
        default_value_t = 0,
        value_name = "N",
        conflicts_with = "devices"
    )]
    pub device: u32,
    /// Measure on several GPUs of this host at once (`0,1,3`, or `all`), as one search into
    /// DIR/gputune.db (or --db): screening spread over the GPUs, the finals chosen from all of
    /// them together and spread again, a strategy's batches (at least one variant per GPU)
    /// spread too. Each variant is scored against base measured in its own process, on its
    /// own GPU. A GPU that fails ends its own work only: the others take what it left.
    #[arg(long, value_name = "LIST|all", conflicts_with = "shard")]
    pub devices: Option<String>,
    /// Run only what an application was captured launching (`GPUTUNE_CAPTURE=DIR`): the
    /// benches of the captured functions, each on exactly its captured workloads, as `search
    /// --captured DIR` would have built it. The bundle need hold only those functions'
    /// variants; a captured size need not be one the bench declares.
    #[arg(long, value_name = "DIR")]
    pub captured: Option<PathBuf>,
}

/// `slurm`.
#[derive(Debug, Args)]
pub struct SlurmArgs {
    /// The bundle directory (`search --build-only --bundle DIR`), on a file system the nodes
    /// share.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Tasks of the array: the bundle's variants in N contiguous parts, each with base.
    #[arg(long, value_name = "N")]
    pub shards: usize,
    /// `#SBATCH --partition`.
    #[arg(long)]
    pub partition: Option<String>,
    /// `#SBATCH --gpus-per-task`.
    #[arg(long, value_name = "N")]
    pub gpus_per_task: Option<u32>,
    /// `#SBATCH --time`, the time limit of each task (`HH:MM:SS`).
    #[arg(long)]
    pub time: Option<String>,
    /// A further `#SBATCH` option, passed as it is (repeatable: `--sbatch-arg=--account=x`).
    #[arg(long = "sbatch-arg", value_name = "OPTION", allow_hyphen_values = true)]
    pub sbatch_args: Vec<String>,
    /// `#SBATCH --job-name`.
    #[arg(long, default_value = "gputune")]
    pub job_name: String,
    /// Wait for the array to finish, then merge the shards into DIR/gputune.db (or --db);
    /// exit 1 if a task did not finish (submit again to resume it).
    #[arg(long)]
    pub wait: bool,
}

/// `merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The stores to merge into the --db store (which is created if missing). They are only
    /// read. A measurement that the target holds too (base, measured by every shard) is kept
    /// from whichever side measured it last.
    #[arg(value_name = "SOURCE", required = true)]
    pub sources: Vec<PathBuf>,
}

/// `search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Only benches (or tuned functions) whose name matches this regex.
    #[arg(short = 'R', long, value_name = "REGEX")]
    pub regex: Option<String>,
    /// Narrow an axis, as bench binaries take it (`T{ct}=f32`, `Elements{io}[pow2]=[20,24]`).
    #[arg(short = 'a', long = "axis", value_name = "SPEC")]
    pub axes: Vec<String>,
    /// Search each tuned function an application was captured calling
    /// (`GPUTUNE_CAPTURE=DIR`), on exactly the types and sizes it called it with.
    #[arg(long, value_name = "DIR", conflicts_with = "devices")]
    pub captured: Option<PathBuf>,
    /// The search strategy.
    #[arg(long, value_enum, default_value_t = StrategyKind::Exhaustive)]
    pub strategy: StrategyKind,
    /// Seed of the strategy's random order (reproducible).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Most variants to evaluate per function (every strategy stops there; without it,
    /// every strategy ends up evaluating the whole space).
    #[arg(long, value_name = "N")]
    pub max_evals: Option<usize>,
    /// Stop starting new variants after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub time_limit: Option<f64>,
    /// Build only: leave the bench binaries, a plan and this cargo-gputune in --bundle DIR,
    /// for `DIR/cargo-gputune run-bundle DIR` on a machine with a GPU and no cargo.
    #[arg(long, requires = "bundle")]
    pub build_only: bool,
    /// The bundle directory of --build-only.
    #[arg(long, value_name = "DIR", requires = "build_only")]
    pub bundle: Option<PathBuf>,
    /// Variants per batch, each built into a binary of its own and run in a bench process of
    /// its own. Not given: an exhaustive or random search of up to 2048 variants proposes all
    /// it measures in one batch; a guided strategy's space is built whole into one binary and
    /// its batches of 4 run one after another in one bench process per compile-time workload
    /// (one start-up and one setup of the bench's workloads); a larger exhaustive space in
    /// batches of 256 (a batch of 256 small kernels builds about as fast as one of 64:
    /// BENCHMARKS.md).
    #[arg(long, value_name = "N")]
    pub batch_size: Option<usize>,
    /// Decide instead of converge (the default): screen every variant with `--min-samples`
    /// cold samples (base measured in each process as the control), then measure in full only
    /// the variants whose score can still reach the best one's within Z standard errors of
    /// both, and base beside them. 3 keeps the true best in over 99 % of searches
    /// (docs/search.md).
    #[arg(long, default_value_t = 3.0, value_name = "Z")]
    pub decide: f64,
    /// The equivalence margin of a deciding search's finals: a finalist stops, as tied, once
    /// its median is resolved (Z standard errors) to lie within FRACTION of the leader's on
    /// both sides, instead of running to the stopping criterion; the winner is then within
    /// FRACTION of the best. 0 measures every finalist to the criterion (docs/search.md).
    #[arg(long, default_value_t = 0.01, value_name = "FRACTION")]
    pub tie_margin: f64,
    /// Instead of deciding, race at a fixed margin: stop a variant's measurement once it is
    /// more than FRACTION slower than the fastest variant so far on the same workload (its
    /// first quartile above that best median; the bench's `--race`).
    #[arg(long, value_name = "FRACTION")]
    pub race: Option<f64>,
    /// Measure every variant in full, however slow (no screening, no race).
    #[arg(long, conflicts_with = "race")]
    pub no_race: bool,
    /// Also run the hot (batched) loop of every variant. Off by default: scores come from the
    /// cold times, so a search adds `--no-batch` to the bench arguments.
    #[arg(long)]
    pub hot: bool,
    /// What to optimise: `time` (the default), `energy` (joules per launch, NVML's energy
    /// counter) or `edp` (energy × time). `energy` and `edp` measure every variant's energy
    /// (the bench's `--energy`) and in full (`--no-race`: a race decides by time), which
    /// costs about 0.7 s more per variant and workload; where the GPU has no energy counter
    /// the search says so and goes on by time.
    #[arg(long, value_enum, default_value_t = Objective::Time)]
    pub objective: Objective,
    /// Kill a build after this many times the base build's time.
    #[arg(long, default_value_t = 10.0, value_name = "FACTOR")]
    pub build_limit: f64,
    /// Kill a run after this many times base's run time.
    #[arg(long, default_value_t = 50.0, value_name = "FACTOR")]
    pub run_limit: f64,
    /// Build the next batch while the current one runs: `auto` does when the bench measures
    /// on a GPU (builds use the CPU), never when it measures on the CPU, whose timings a
    /// concurrent build would disturb.
    #[arg(long, value_enum, default_value_t = Pipeline::Auto, value_name = "WHEN")]
    pub pipeline: Pipeline,
    /// Print the results as JSON on stdout when done.
    #[arg(long)]
    pub json: bool,
    /// Measure on several GPUs of this host at once (`0,1,3` or `all`): the search is built
    /// as a bundle (the whole space, for a guided strategy), then run as `run-bundle
    /// --devices` into the store: one search over the GPUs.
    #[arg(long, value_name = "LIST|all", conflicts_with = "build_only")]
    pub devices: Option<String>,
    /// Arguments for the bench binaries (after `--`), e.g. `--stopping-criterion stdrel`.
    #[arg(last = true, value_name = "BENCH_ARGS")]
    pub bench_args: Vec<String>,
}

/// `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Variants to show per compile-time workload.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub top: usize,
    /// Only the tuned functions (or benches) whose name matches this regex, as `search -R`.
    #[arg(short = 'R', long = "function", value_name = "REGEX")]
    pub function: Option<String>,
    /// Show measured / space size per compile-time workload instead.
    #[arg(long)]
    pub coverage: bool,
    /// Show instead, per function and compile-time workload measured at several runtime
    /// workloads, what the single winner costs against each workload's best variant (as a
    /// speedup, with significance): whether `apply --per-size` is worth it.
    #[arg(long, conflicts_with = "coverage")]
    pub per_size: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write SVG pictures into DIR: sample distributions of base and the top variants per
    /// workload, and the score over two parameters.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// The one or two parameters the score is plotted over (default: each function's first
    /// two).
    #[arg(
        long,
        value_name = "NAME,NAME",
        value_delimiter = ',',
        num_args = 1,
        requires = "plot"
    )]
    pub plot_params: Vec<String>,
    /// Also write one self-contained HTML page to FILE (no network needed to open it): per
    /// workload every variant in a table to search, sort and filter by parameter values,
    /// each variant's samples, status and times, the sample distributions, the score over
    /// two parameters and the search's timeline.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Where the store has energy (`search --objective energy|edp`), rank its energy table
    /// by this: `time`, `energy` or `edp`. The time table above it stays ranked by time.
    #[arg(long, value_enum, default_value_t = Objective::Energy)]
    pub objective: Objective,
}

/// `apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// Show the change without writing it.
    #[arg(long)]
    pub dry_run: bool,
    /// Key each winner by the architecture (`sm_90`, `cpu`), the fallback of every model
    /// without its own entry, instead of by the device model the store recorded
    /// (`NVIDIA H200`).
    #[arg(long)]
    pub arch_only: bool,
    /// Where the best variant differs between the measured sizes beyond noise and the
    /// significance rule, write one winner per size range (boundaries at the geometric
    /// midpoints between measured sizes); production builds pick by the function's
    /// `size(Axis = expr)` at run time.
    #[arg(long)]
    pub per_size: bool,
    /// The runtime axis whose values are the sizes (`Elements`); default: the axis the
    /// function's `size(…)` names, which it must be.
    #[arg(long, value_name = "AXIS", requires = "per_size")]
    pub size_axis: Option<String>,
    /// Pick each winner by `time` (the default), `energy` (joules per launch) or `edp`
    /// (energy × time), against base with the same significance rule; `energy` and `edp`
    /// need a store with energy (`search --objective energy|edp`).
    #[arg(long, value_enum, default_value_t = Objective::Time, conflicts_with = "per_size")]
    pub objective: Objective,
}

/// `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A `report --format json` export from an earlier run on the same GPU model.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Smallest relative difference that counts as FAST or SLOW (0.05 is 5 %). The default,
    /// 0.5 %, is the search's noise threshold: two runs of the same code drift by a few
    /// tenths of a per cent that neither run's noise shows.
    #[arg(long, default_value_t = crate::results::score::NOISE_THRESHOLD)]
    pub threshold: f64,
    /// The applied variants must score at least this against base.
    #[arg(long, value_name = "SCORE")]
    pub min_score: Option<f64>,
    /// What to print on stdout: the verdict table (markdown, which reads as a table in a
    /// terminal too) or JSON. The exit code is the same either way.
    #[arg(long, value_enum, default_value_t = CheckFormat::Table)]
    pub format: CheckFormat,
    /// Also write JUnit XML to FILE, for CI systems' test reports: one test case per compared
    /// workload (failed when SLOW, with its numbers), one per applied variant under
    /// --min-score.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write the markdown summary to FILE (a PR comment, an artifact).
    #[arg(long, visible_alias = "summary", value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Do not append the markdown summary to $GITHUB_STEP_SUMMARY (by default it is, when
    /// that is set, as it is in a GitHub Actions step).
    #[arg(long)]
    pub no_step_summary: bool,
    /// An UNDECIDED workload (outside the SAME band, inside what the samples can resolve)
    /// does not fail the gate (without it: exit 3).
    #[arg(long)]
    pub allow_undecided: bool,
    /// A current run measured under another provenance than the baseline (driver, CUDA,
    /// NVRTC, application clocks, power limit) fails the gate (exit 4); without it, check
    /// says so and passes.
    #[arg(long)]
    pub strict_provenance: bool,
    /// Measure the UNDECIDED workloads again (needs their bench binaries: built from the
    /// workspace, or from --bundle DIR; and the device they were measured on): base and the
    /// variant interleaved in one process, in passes of --remeasure-block samples, until each
    /// is decided or has --remeasure-budget samples. The new samples replace the rows in the
    /// store.
    #[arg(long)]
    pub remeasure: bool,
    /// With --remeasure: take the bench binaries from this bundle (`search --build-only
    /// --bundle DIR`) instead of building them; what a GPU host without cargo does.
    #[arg(long, value_name = "DIR", requires = "remeasure")]
    pub bundle: Option<PathBuf>,
    /// With --remeasure: the most new samples of each workload (and as many of base beside
    /// it).
    #[arg(long, default_value_t = 400, value_name = "N", requires = "remeasure")]
    pub remeasure_budget: usize,
    /// With --remeasure: cold samples of base and of each variant per pass.
    #[arg(long, default_value_t = 10, value_name = "N", requires = "remeasure")]
    pub remeasure_block: usize,
    /// With --remeasure: the CUDA device (ordinal) to measure on; it must be the device the
    /// rows were measured on.
    #[arg(long, default_value_t = 0, value_name = "N", requires = "remeasure")]
    pub device: u32,
}

/// `check --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    /// The verdict table and the result, in markdown.
    Table,
    /// JSON.
    Json,
}

// The option values are the stages' own types; the command line only names them.
impl ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &[Format::Table, Format::Json, Format::Csv, Format::Markdown]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let (name, help) = match self {
            Format::Table => ("table", "Aligned columns"),
            Format::Json => ("json", "JSON (what `check --baseline` reads)"),
            Format::Csv => ("csv", "CSV"),
            Format::Markdown => ("markdown", "A markdown table"),
        };
        Some(PossibleValue::new(name).help(help))
    }
}

impl ValueEnum for Color {
    fn value_variants<'a>() -> &'a [Self] {
        &[Color::Auto, Color::Always, Color::Never]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let (name, help) = match self {
            Color::Auto => (
                "auto",
                "On a terminal, unless NO_COLOR is set and not empty",
            ),
            Color::Always => ("always", "Always"),
            Color::Never => ("never", "Never"),
        };
        Some(PossibleValue::new(name).help(help))
    }
}

impl ValueEnum for Pipeline {
    fn value_variants<'a>() -> &'a [Self] {
        &[Pipeline::Auto, Pipeline::Always, Pipeline::Never]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let (name, help) = match self {
            Pipeline::Auto => ("auto", "When the bench measures on a GPU"),
            Pipeline::Always => (
                "always",
                "Always, even on the CPU (for testing the pipeline; CPU timings suffer)",
            ),
            Pipeline::Never => ("never", "Never: build, then run, then build the next batch"),
        };
        Some(PossibleValue::new(name).help(help))
    }
}

impl ValueEnum for StrategyKind {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            StrategyKind::Exhaustive,
            StrategyKind::Random,
            StrategyKind::Genetic,
            StrategyKind::Annealing,
            StrategyKind::Surrogate,
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let (name, help) = match self {
            StrategyKind::Exhaustive => ("exhaustive", "Every point, in a seeded random order"),
            StrategyKind::Random => ("random", "A seeded random sample (`--max-evals`, `--time-limit`)"),
            StrategyKind::Genetic => (
                "genetic",
                "A genetic algorithm: crossover and mutation of the best points so far",
            ),
            StrategyKind::Annealing => (
                "annealing",
                "Simulated annealing over neighbouring points (one parameter one value away), with restarts",
            ),
            StrategyKind::Surrogate => (
                "surrogate",
                "Model-guided, the default guided strategy: a tree ensemble and k nearest neighbours taking turns as the surrogate, expected improvement, most rounds among the best point's one-parameter neighbours",
            ),
        };
        Some(PossibleValue::new(name).help(help))
    }
}

impl From<&RunBundleArgs> for crate::measure::bundle::RunBundle {
    fn from(r: &RunBundleArgs) -> Self {
        crate::measure::bundle::RunBundle {
            dir: r.dir.clone(),
            shard: r.shard,
            no_race: r.no_race,
            strategy: r.strategy,
            seed: r.seed,
            max_evals: r.max_evals,
            time_limit: r.time_limit,
            batch_size: r.batch_size,
            device: r.device,
            captured: r.captured.clone(),
        }
    }
}

impl From<&SlurmArgs> for crate::measure::slurm::Submission {
    fn from(s: &SlurmArgs) -> Self {
        crate::measure::slurm::Submission {
            dir: s.dir.clone(),
            shards: s.shards,
            partition: s.partition.clone(),
            gpus_per_task: s.gpus_per_task,
            time: s.time.clone(),
            sbatch_args: s.sbatch_args.clone(),
            job_name: s.job_name.clone(),
            wait: s.wait,
        }
    }
}

impl From<&CargoArgs> for crate::host::cargo::Options {
    fn from(a: &CargoArgs) -> Self {
        crate::host::cargo::Options {
            manifest_path: a.manifest_path.clone(),
            package: a.package.clone(),
            workspace: a.workspace,
            bench: a.bench.clone(),
            profile: a.profile.clone(),
            release: a.release,
            features: a.features.clone(),
            target_dir: a.target_dir.clone(),
            locked: a.locked,
            offline: a.offline,
            db: a.db.clone(),
        }
    }
}

impl From<&SearchArgs> for crate::measure::search::Settings {
    fn from(s: &SearchArgs) -> Self {
        crate::measure::search::Settings {
            regex: s.regex.clone(),
            axes: s.axes.clone(),
            strategy: s.strategy,
            seed: s.seed,
            max_evals: s.max_evals,
            time_limit: s.time_limit,
            build_only: s.build_only,
            bundle: s.bundle.clone(),
            batch_size: s.batch_size,
            decide: s.decide,
            tie_margin: s.tie_margin,
            race: s.race,
            no_race: s.no_race,
            hot: s.hot,
            objective: s.objective,
            build_limit: s.build_limit,
            run_limit: s.run_limit,
            pipeline: s.pipeline,
            json: s.json,
            devices: s.devices.clone(),
            bench_args: s.bench_args.clone(),
            free_axes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_partition_into_contiguous_blocks() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/2", "3/2", "1/0", "2", "a/b", "1/2/3", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        for len in 0..20 {
            for count in 1..7 {
                let ranges: Vec<_> = (1..=count)
                    .map(|index| Shard { index, count }.range(len))
                    .collect();
                // Every item in exactly one shard, in order, sizes within one of each other.
                assert_eq!(ranges[0].start, 0);
                assert_eq!(ranges[count - 1].end, len);
                assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
                let sizes: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
                let (min, max) = (sizes.iter().min(), sizes.iter().max());
                assert!(max.zip(min).is_some_and(|(a, b)| a - b <= 1), "{sizes:?}");
            }
        }
        assert_eq!(
            Shard { index: 1, count: 2 }.store_name(),
            "gputune-shard-1-of-2.db"
        );
    }
}
