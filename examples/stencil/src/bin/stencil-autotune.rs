//! Runs the Jacobi sweep under the runtime autotuner and prints, as JSON on standard output,
//! what tuning cost: the block size chosen, each candidate's samples, the total time, the
//! time spent on non-winning candidates and its share of the run.
//!
//! ```text
//! stencil-autotune                 # CUDA (built with --features cuda): 200 000 sweeps of 4096 x 4096
//! stencil-autotune --cache FILE    # persist the winner; a second run with FILE starts tuned
//! stencil-autotune --cpu           # the CPU variant (rows per task), no GPU needed
//! ```
//!
//! Before the tuned run every candidate is checked against the CPU reference on a small grid
//! (poisoned output, three sweeps); after it, every candidate is timed again over
//! back-to-back launches, as an independent check that the tuner chose the best (or one
//! within the noise). Exit codes: 0 done, 1 failed, 2 bad arguments, 3 no usable device.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use gputune_example_stencil::{
    cpu_tuner, initial_field, reference, step_parallel, Shape, CPU_ROWS_PER_TASK,
};
use gputune_runtime::autotune::{
    self, Autotuner, AutotunerBuilder, CacheFile, CpuTimer, Statistic, Summary, Timer,
};
use gputune_runtime::BoxError;
use serde_json::json;

/// Sweeps per candidate in the correctness check.
const VERIFY_SWEEPS: u64 = 3;
/// The correctness check's grid: sizes that no block size divides, so partial blocks occur.
const VERIFY_SHAPE: Shape = Shape { nx: 1031, ny: 67 };

#[derive(Debug, Parser)]
#[command(about = "Jacobi sweeps under gputune's runtime autotuner; prints JSON")]
struct Args {
    /// Run the CPU variant (the parameter is rows per task) instead of the CUDA one.
    #[arg(long)]
    cpu: bool,
    /// Cells per row (default 4096 on CUDA, 512 on the CPU).
    #[arg(long)]
    nx: Option<usize>,
    /// Rows (default 4096 on CUDA, 512 on the CPU; at most 65535 on CUDA).
    #[arg(long)]
    ny: Option<usize>,
    /// Sweeps under the tuner (default 200000 on CUDA, 2000 on the CPU).
    #[arg(long)]
    launches: Option<u64>,
    /// Samples per candidate in a scan (odd).
    #[arg(long, default_value_t = 5)]
    samples: usize,
    /// Refine stage: candidates within this many percent of the best are finalists.
    #[arg(long, default_value_t = 2.0)]
    refine_margin: f64,
    /// Refine stage: at most this many finalists.
    #[arg(long, default_value_t = 4)]
    refine_finalists: usize,
    /// Refine stage: extra samples per finalist, in multiples of --samples (0: no refine).
    #[arg(long, default_value_t = 4)]
    refine_rounds: usize,
    /// Untimed launches between rescans.
    #[arg(long, default_value_t = 100_000)]
    period: u64,
    /// How samples are reduced.
    #[arg(long, value_enum, default_value_t = StatisticArg::Median)]
    statistic: StatisticArg,
    /// Persist winners in this file: a second run with the same file starts tuned. Without
    /// it nothing is read or written.
    #[arg(long)]
    cache: Option<PathBuf>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: u32,
    /// CPU worker threads (default: the available parallelism).
    #[arg(long)]
    threads: Option<usize>,
    /// Back-to-back launches per reference timing of each candidate after the run (0 skips
    /// the reference timing).
    #[arg(long, default_value_t = 200)]
    reference_launches: u32,
    /// Reference timings per candidate (interleaved over candidates).
    #[arg(long, default_value_t = 5)]
    reference_repeats: u32,
    /// Also write the JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum StatisticArg {
    Median,
    Mean,
    Max,
}

impl From<StatisticArg> for Statistic {
    fn from(s: StatisticArg) -> Statistic {
        match s {
            StatisticArg::Median => Statistic::Median,
            StatisticArg::Mean => Statistic::Mean,
            StatisticArg::Max => Statistic::Max,
        }
    }
}

/// A failure and the exit code it gets.
struct Failure {
    code: u8,
    message: String,
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Failure {
        Failure {
            code: 1,
            message: e.to_string(),
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn run(args: &Args) -> Result<(), Failure> {
    let doc = if args.cpu {
        run_cpu(args)?
    } else {
        run_cuda(args)?
    };
    let text = serde_json::to_string_pretty(&doc)?;
    println!("{text}");
    if let Some(path) = &args.json {
        std::fs::write(path, format!("{text}\n"))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// What the experiment needs besides the variant.
struct Plan {
    shape: Shape,
    launches: u64,
}

fn plan(args: &Args, cpu: bool) -> Result<Plan, Failure> {
    let (side, launches) = if cpu { (512, 2_000) } else { (4096, 200_000) };
    let shape = Shape {
        nx: args.nx.unwrap_or(side),
        ny: args.ny.unwrap_or(side),
    };
    if shape.nx < 3 || shape.ny < 3 {
        return Err(Failure {
            code: 2,
            message: format!(
                "the grid must be at least 3 x 3, not {} x {}",
                shape.nx, shape.ny
            ),
        });
    }
    Ok(Plan {
        shape,
        launches: args.launches.unwrap_or(launches),
    })
}

/// The tuner as the arguments configure it; a configuration the tuner rejects (an even
/// sample count) is a usage error.
fn configure<T: Timer>(
    builder: AutotunerBuilder<u32>,
    args: &Args,
    timer: T,
) -> Result<Autotuner<u32, T>, Failure> {
    let builder = builder
        .samples(args.samples)
        .refine(
            args.refine_margin / 100.0,
            args.refine_finalists,
            args.refine_rounds,
        )
        .period(args.period)
        .statistic(args.statistic.into())
        .log_to_stderr();
    let builder = match &args.cache {
        Some(path) => builder.cache_file(CacheFile::new(path)),
        None => builder,
    };
    builder.build(timer).map_err(|e| Failure {
        code: if matches!(e, autotune::Error::Config(_)) {
            2
        } else {
            1
        },
        message: e.to_string(),
    })
}

/// One variant of the sweep, as the experiment drives it.
trait Sweeper {
    /// Sets the current field to `field` and poisons the other buffer.
    fn load(&mut self, field: &[f32]) -> Result<(), BoxError>;
    /// Runs or enqueues one sweep with `param`; the result becomes the current field.
    fn sweep(&mut self, param: u32) -> Result<(), BoxError>;
    /// Waits for every enqueued sweep.
    fn finish(&mut self) -> Result<(), BoxError>;
    /// The current field.
    fn field(&mut self) -> Result<Vec<f32>, BoxError>;
}

struct CpuSweeper {
    shape: Shape,
    threads: usize,
    a: Vec<f32>,
    b: Vec<f32>,
}

impl Sweeper for CpuSweeper {
    fn load(&mut self, field: &[f32]) -> Result<(), BoxError> {
        self.a = field.to_vec();
        self.b = vec![f32::NAN; field.len()];
        Ok(())
    }
    fn sweep(&mut self, rows: u32) -> Result<(), BoxError> {
        step_parallel(
            self.shape,
            &self.a,
            &mut self.b,
            rows as usize,
            self.threads,
        );
        std::mem::swap(&mut self.a, &mut self.b);
        Ok(())
    }
    fn finish(&mut self) -> Result<(), BoxError> {
        Ok(())
    }
    fn field(&mut self) -> Result<Vec<f32>, BoxError> {
        Ok(self.a.clone())
    }
}

fn run_cpu(args: &Args) -> Result<serde_json::Value, Failure> {
    let plan = plan(args, true)?;
    let threads = args
        .threads
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
        .max(1);
    let tuner = configure(cpu_tuner(), args, CpuTimer::new())?;
    let make = |shape: Shape| -> Result<CpuSweeper, BoxError> {
        Ok(CpuSweeper {
            shape,
            threads,
            a: Vec::new(),
            b: Vec::new(),
        })
    };
    let mut doc = experiment(make, tuner, CpuTimer::new(), &plan, args)?;
    doc["variant"] = json!("cpu");
    doc["parameter"] = json!("rows per task");
    doc["threads"] = json!(threads);
    doc["candidates_given"] = json!(CPU_ROWS_PER_TASK);
    Ok(doc)
}

#[cfg(not(feature = "cuda"))]
fn run_cuda(_args: &Args) -> Result<serde_json::Value, Failure> {
    Err(Failure {
        code: 2,
        message: "this binary was built without the `cuda` feature: rebuild with \
                  `--features cuda`, or pass --cpu"
            .into(),
    })
}

#[cfg(feature = "cuda")]
fn run_cuda(args: &Args) -> Result<serde_json::Value, Failure> {
    use gputune_example_stencil::gpu::{block_size_candidates, GpuJacobi};
    use gputune_runtime::autotune::CudaEventTimer;
    use gputune_runtime::backend::{cuda::CudaBackend, Backend};

    let plan = plan(args, false)?;
    let backend = CudaBackend::open(args.device).map_err(|e| Failure {
        code: 3,
        message: e.to_string(),
    })?;
    let handles = backend
        .cuda()
        .cloned()
        .ok_or("the CUDA backend has no CUDA handles")?;
    let kernel = GpuJacobi::compile(&handles)?;
    let tuner = configure(kernel.tuner(), args, CudaEventTimer::new(&handles.stream)?)?;
    let make = |shape: Shape| cuda_sweeper::new(&handles, &kernel, shape);
    let mut doc = experiment(
        make,
        tuner,
        CudaEventTimer::new(&handles.stream)?,
        &plan,
        args,
    )?;
    let info = backend.device();
    doc["variant"] = json!("cuda");
    doc["parameter"] = json!("threads per block");
    doc["gpu"] = json!({
        "name": info.name,
        "sm_version": info.sm_version,
        "sm_count": info.sm_count,
        "ordinal": info.id,
    });
    doc["max_threads_per_block"] = json!(kernel.max_threads_per_block());
    doc["candidates_given"] = json!(block_size_candidates());
    Ok(doc)
}

#[cfg(feature = "cuda")]
mod cuda_sweeper {
    use std::sync::Arc;

    use gputune_example_stencil::gpu::GpuJacobi;
    use gputune_example_stencil::Shape;
    use gputune_runtime::backend::cuda::CudaHandles;
    use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream};
    use gputune_runtime::BoxError;

    pub struct CudaSweeper {
        stream: Arc<CudaStream>,
        kernel: GpuJacobi,
        shape: Shape,
        a: CudaSlice<f32>,
        b: CudaSlice<f32>,
    }

    pub fn new(
        handles: &CudaHandles,
        kernel: &GpuJacobi,
        shape: Shape,
    ) -> Result<CudaSweeper, BoxError> {
        let stream = handles.stream.clone();
        Ok(CudaSweeper {
            a: stream.alloc_zeros::<f32>(shape.cells())?,
            b: stream.alloc_zeros::<f32>(shape.cells())?,
            stream,
            kernel: kernel.clone(),
            shape,
        })
    }

    impl super::Sweeper for CudaSweeper {
        fn load(&mut self, field: &[f32]) -> Result<(), BoxError> {
            self.stream.memcpy_htod(field, &mut self.a)?;
            self.stream
                .memcpy_htod(&vec![f32::NAN; field.len()], &mut self.b)?;
            Ok(())
        }
        fn sweep(&mut self, block: u32) -> Result<(), BoxError> {
            self.kernel
                .launch(&self.stream, self.shape, &self.a, &mut self.b, block)?;
            std::mem::swap(&mut self.a, &mut self.b);
            Ok(())
        }
        fn finish(&mut self) -> Result<(), BoxError> {
            self.stream.synchronize()?;
            Ok(())
        }
        fn field(&mut self) -> Result<Vec<f32>, BoxError> {
            Ok(self.stream.clone_dtoh(&self.a)?)
        }
    }
}

/// Checks every candidate, runs the tuned loop, times every candidate again, and reports.
fn experiment<S: Sweeper, T: Timer, R: Timer>(
    mut make: impl FnMut(Shape) -> Result<S, BoxError>,
    mut tuner: Autotuner<u32, T>,
    mut reference_timer: R,
    plan: &Plan,
    args: &Args,
) -> Result<serde_json::Value, Failure> {
    let candidates = tuner.candidates().to_vec();
    for e in tuner.take_cache_errors() {
        eprintln!("warning: {e}");
    }

    // Every candidate must compute the reference result before any is timed.
    let bit_exact = verify(&mut make(VERIFY_SHAPE)?, &candidates)?;

    let key = plan.shape.cells() as u64;
    let started_tuned = tuner.is_complete_for(key);
    let mut sweeper = make(plan.shape)?;
    sweeper.load(&initial_field(plan.shape))?;
    let mut launches_of: BTreeMap<u32, u64> = BTreeMap::new();
    let start = Instant::now();
    for _ in 0..plan.launches {
        let param = tuner.begin(key)?;
        sweeper.sweep(param)?;
        tuner.end()?;
        *launches_of.entry(param).or_default() += 1;
    }
    sweeper.finish()?;
    let total = start.elapsed().as_secs_f64();
    let field = sweeper.field()?;
    if let Some(i) = field.iter().position(|v| !v.is_finite()) {
        return Err(format!("the field holds {} at cell {i} after the run", field[i]).into());
    }
    drop(sweeper);
    for e in tuner.take_cache_errors() {
        eprintln!("warning: {e}");
    }
    let summary = tuner.summary(key).ok_or_else(|| {
        format!(
            "the tuner did not finish its startup scan in {} launches ({} candidates x {} \
             samples are needed)",
            plan.launches,
            candidates.len(),
            args.samples
        )
    })?;

    let reference = if args.reference_launches > 0 && args.reference_repeats > 0 {
        let mut sweeper = make(plan.shape)?;
        sweeper.load(&initial_field(plan.shape))?;
        Some(time_each(
            &mut sweeper,
            &mut reference_timer,
            &candidates,
            args.reference_launches,
            args.reference_repeats,
        )?)
    } else {
        None
    };

    let mut doc = report(
        &summary,
        plan,
        total,
        &launches_of,
        reference.as_deref(),
        args,
    );
    doc["started_tuned"] = json!(started_tuned);
    doc["verified"] = json!({
        "grid": [VERIFY_SHAPE.nx, VERIFY_SHAPE.ny],
        "sweeps": VERIFY_SWEEPS,
        "candidates": candidates.len(),
        "bit_exact": bit_exact,
    });
    eprintln!(
        "chose {} after {} launches: {:.4} % of {:.3} s at non-winning parameters",
        summary.winner,
        plan.launches,
        doc["non_optimal_share"].as_f64().unwrap_or(f64::NAN) * 100.0,
        total
    );
    Ok(doc)
}

/// Runs every candidate on a poisoned small grid and compares with the serial reference;
/// returns whether all agreed bit for bit (they must agree within rounding).
fn verify<S: Sweeper>(sweeper: &mut S, candidates: &[u32]) -> Result<bool, BoxError> {
    let initial = initial_field(VERIFY_SHAPE);
    let expected = reference(VERIFY_SHAPE, &initial, VERIFY_SWEEPS);
    let scale = expected.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let mut bit_exact = true;
    for &param in candidates {
        sweeper.load(&initial)?;
        for _ in 0..VERIFY_SWEEPS {
            sweeper.sweep(param)?;
        }
        sweeper.finish()?;
        let got = sweeper.field()?;
        if got.len() != expected.len() {
            return Err(format!("parameter {param} returned {} cells", got.len()).into());
        }
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            // A NaN (a cell never written) is not close to anything.
            let close = (g - e).abs() <= 1e-5 * scale;
            if !close {
                return Err(format!(
                    "parameter {param} computes {g} at cell {i} (x {}, y {}), the reference \
                     {e}",
                    i % VERIFY_SHAPE.nx,
                    i / VERIFY_SHAPE.nx
                )
                .into());
            }
            bit_exact &= g.to_bits() == e.to_bits();
        }
    }
    Ok(bit_exact)
}

/// Seconds per launch of each candidate over `launches` back-to-back launches, `repeats`
/// times, the repeats interleaved over candidates so drift spreads evenly.
fn time_each<S: Sweeper, R: Timer>(
    sweeper: &mut S,
    timer: &mut R,
    candidates: &[u32],
    launches: u32,
    repeats: u32,
) -> Result<Vec<Vec<f64>>, BoxError> {
    let mut times = vec![Vec::new(); candidates.len()];
    for &param in candidates {
        for _ in 0..3 {
            sweeper.sweep(param)?;
        }
    }
    sweeper.finish()?;
    for _ in 0..repeats {
        for (i, &param) in candidates.iter().enumerate() {
            timer.start()?;
            for _ in 0..launches {
                sweeper.sweep(param)?;
            }
            let seconds = timer.stop()?;
            sweeper.finish()?;
            times[i].push(seconds / f64::from(launches));
        }
    }
    Ok(times)
}

/// The JSON document.
fn report(
    summary: &Summary<u32>,
    plan: &Plan,
    total: f64,
    launches_of: &BTreeMap<u32, u64>,
    reference: Option<&[Vec<f64>]>,
    args: &Args,
) -> serde_json::Value {
    let winner = summary.winner;
    let mut non_optimal = 0.0;
    let mut sampled = 0.0;
    let mut timed_launches = 0;
    let mut untimed_elsewhere = 0;
    let mut untimed_elsewhere_time = 0.0;
    let mut rows = Vec::new();
    for (i, c) in summary.candidates.iter().enumerate() {
        let launches = launches_of.get(&c.param).copied().unwrap_or(0);
        sampled += c.time_sampled;
        timed_launches += c.samples_taken;
        if c.param != winner {
            non_optimal += c.time_sampled;
            // Untimed launches at a candidate that is not the final winner: it won an
            // earlier scan (or came from the cache) and lost a later one.
            let untimed = launches.saturating_sub(c.samples_taken);
            untimed_elsewhere += untimed;
            untimed_elsewhere_time += untimed as f64 * c.statistic.unwrap_or(0.0);
        }
        let mut row = json!({
            "param": c.param,
            "statistic_s": c.statistic,
            "samples_taken": c.samples_taken,
            "time_sampled_s": c.time_sampled,
            "launches": launches,
        });
        if let Some(times) = reference.and_then(|r| r.get(i)) {
            row["reference_s"] = json!(Statistic::Median.of(times));
            row["reference_min_s"] = json!(times.iter().copied().reduce(f64::min));
            row["reference_max_s"] = json!(times.iter().copied().reduce(f64::max));
        }
        rows.push(row);
    }
    let mut doc = json!({
        "tuner": summary.tuner,
        "device": summary.device,
        "grid": [plan.shape.nx, plan.shape.ny],
        "key": summary.key,
        "launches": plan.launches,
        "samples_per_candidate": args.samples,
        "statistic": summary.statistic,
        "period": args.period,
        "chosen": winner,
        "from_cache": summary.from_cache,
        "scans": summary.scans,
        "spread": summary.spread,
        "total_time_s": total,
        "timed_launches": timed_launches,
        "sampled_time_s": sampled,
        "non_optimal_time_s": non_optimal,
        "non_optimal_share": non_optimal / total,
        "untimed_launches_at_non_winners": untimed_elsewhere,
        "untimed_non_winner_time_estimate_s": untimed_elsewhere_time,
        "non_optimal_share_with_untimed_estimate": (non_optimal + untimed_elsewhere_time) / total,
        "candidates": rows,
    });
    if let Some(reference) = reference {
        doc["reference"] = reference_verdict(summary, reference, args);
    }
    doc
}

/// Which candidate the back-to-back timings rank first, and whether the tuner's choice is
/// within their noise (its fastest repeat no slower than the best's slowest).
fn reference_verdict(
    summary: &Summary<u32>,
    reference: &[Vec<f64>],
    args: &Args,
) -> serde_json::Value {
    let median = |t: &[f64]| Statistic::Median.of(t).unwrap_or(f64::INFINITY);
    let Some((best, best_times)) = reference
        .iter()
        .enumerate()
        .min_by(|a, b| median(a.1).total_cmp(&median(b.1)))
    else {
        return serde_json::Value::Null;
    };
    let chosen = summary
        .candidates
        .iter()
        .position(|c| c.param == summary.winner)
        .and_then(|i| reference.get(i));
    let best_param = summary.candidates.get(best).map(|c| c.param);
    let (ratio, within) = match chosen {
        Some(times) => {
            let fastest = times.iter().copied().fold(f64::INFINITY, f64::min);
            let slowest_best = best_times.iter().copied().fold(0.0, f64::max);
            (median(times) / median(best_times), fastest <= slowest_best)
        }
        None => (f64::NAN, false),
    };
    json!({
        "method": format!(
            "{} back-to-back launches between events (or the clock on the CPU), {} repeats \
             interleaved over candidates, median per launch",
            args.reference_launches, args.reference_repeats
        ),
        "best": best_param,
        "best_s": median(best_times),
        "chosen_over_best": ratio,
        "chosen_is_best": best_param == Some(summary.winner),
        "chosen_within_noise_of_best": within,
    })
}
