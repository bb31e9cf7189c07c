//! Background compilation: NVRTC runs on the CPU's other cores while the GPU measures, and
//! the process waits for it before it exits.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use super::compile_worker::{compile_in_worker, top_up, Job, WorkerSlot};
use super::device::device_cc;
use super::handles::CudaHandles;
use super::module::{cached_image_by, image_key, is_cached};
use super::nvrtc::{init_on_this_thread, nvrtc_version};
use super::program::Program;
use crate::backend::kernel_cache::{Key, Origin};
use crate::error::{Error, Result};

/// One compilation for [`CudaHandles::precompile_programs`]: a program and its defines.
pub type CompileJob<'a> = (Program, Vec<(&'a str, String)>);

/// A job as the compile threads own it, with its cache key.
type OwnedJob = (Key, Program, Vec<(String, String)>);

impl CudaHandles {
    /// Starts compiling `source` once per define set on the CPU's cores, in the background,
    /// so that later [`compile`](CudaHandles::compile) calls with the same arguments find
    /// the result ready (or wait for the one compilation in flight) instead of running
    /// NVRTC on the measurement's critical path.
    ///
    /// A bench calls this once, before measuring, with the define sets of every variant the
    /// process will run ([`tuned::planned`](crate::tuned::planned) says which), in the order
    /// they will run: the first is ready first, and the GPU measures while the rest compile.
    /// It uses one thread fewer than the machine has cores (at least one), leaving one to the
    /// measurement; in a bench binary (one whose `main` is [`crate::main`]) each thread hands
    /// its compilations to a compile worker process of its own, since NVRTC compiles one
    /// program at a time per process ([`compile_worker`](super::compile_worker)). Images
    /// already in the disk cache are only read.
    ///
    /// Errors of individual define sets are not returned here: each is remembered and
    /// returned by the `compile` call for that set, so it fails the variant it belongs to.
    /// This fails only when nothing can be compiled at all (no NVRTC, no device
    /// architecture). Dropping the returned [`Precompile`] leaves the work going on;
    /// [`Precompile::wait`] waits for it and says what happened.
    ///
    /// ```no_run
    /// # fn f(cuda: &gputune_runtime::backend::cuda::CudaHandles) -> gputune_runtime::Result<()> {
    /// const SOURCE: &str = "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = IPT; }";
    /// let sets: Vec<Vec<(&str, String)>> =
    ///     [1, 2, 4, 8].iter().map(|ipt| vec![("IPT", ipt.to_string())]).collect();
    /// let _background = cuda.precompile(SOURCE, &sets)?;
    /// // …measure: each cuda.compile(SOURCE, &[("IPT", "4".into())]) finds its image ready.
    /// # Ok(()) }
    /// ```
    pub fn precompile(
        &self,
        source: &str,
        define_sets: &[Vec<(&str, String)>],
    ) -> Result<Precompile> {
        self.precompile_named(source, define_sets, &[])
    }

    /// [`CudaHandles::precompile`] for [`CudaHandles::compile_named`]: the same name
    /// expressions go with every define set.
    pub fn precompile_named(
        &self,
        source: &str,
        define_sets: &[Vec<(&str, String)>],
        names: &[&str],
    ) -> Result<Precompile> {
        let program = Program::new(source);
        let jobs: Vec<CompileJob<'_>> = define_sets
            .iter()
            .map(|defines| (program.clone(), defines.clone()))
            .collect();
        self.precompile_programs(&jobs, names)
    }

    /// [`CudaHandles::precompile_named`] for programs with headers and options: each job is
    /// a program (its options may differ per variant) and its defines.
    pub fn precompile_programs(
        &self,
        jobs: &[CompileJob<'_>],
        names: &[&str],
    ) -> Result<Precompile> {
        let cc = device_cc(&self.context)?;
        let version = nvrtc_version()?;
        let jobs: Vec<OwnedJob> = jobs
            .iter()
            .map(|(program, defines)| {
                let owned = defines
                    .iter()
                    .map(|(n, v)| ((*n).to_string(), v.clone()))
                    .collect();
                (
                    image_key(program, defines, names, cc, version),
                    program.clone(),
                    owned,
                )
            })
            .collect();
        let names: Vec<String> = names.iter().map(|n| (*n).to_string()).collect();
        let threads = compile_threads(jobs.len());
        // Workers for the images that must be compiled, no more: with every image cached (a
        // search run again), a worker per core loading NVRTC beside the first samples only
        // slowed them and the process's end (an H200 host, 2026-11-27: a warm search of the
        // sum took 2.50 s with fifteen, 2.21 s with one).
        let misses = jobs.iter().filter(|(key, ..)| !is_cached(*key)).count();
        if misses > 0 {
            top_up(compile_threads(misses));
        }
        // The first NVRTC use of the process on this thread, not on a worker: some NVRTC
        // versions crashed at exit when a child thread had initialised them (arrayfire#2707).
        init_on_this_thread();
        let started = Instant::now();
        let in_flight = InFlight::enter();
        let handle = std::thread::Builder::new()
            .name("gputune-precompile".into())
            .spawn(move || {
                let _in_flight = in_flight;
                let next = AtomicUsize::new(0);
                let summary = Mutex::new(PrecompileSummary::default());
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        s.spawn(|| {
                            let mut slot = WorkerSlot::default();
                            loop {
                                if EXITING.load(Ordering::SeqCst) {
                                    break;
                                }
                                let i = next.fetch_add(1, Ordering::Relaxed);
                                let Some((key, program, defines)) = jobs.get(i) else {
                                    break;
                                };
                                let defines: Vec<(&str, String)> = defines
                                    .iter()
                                    .map(|(n, v)| (n.as_str(), v.clone()))
                                    .collect();
                                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                                let job = Job {
                                    key: *key,
                                    program,
                                    defines: &defines,
                                    names: &names,
                                    cc,
                                };
                                // Only the image: loading its module here, beside the
                                // measurement, was tried and stalled it (an H200, 2026-11-26:
                                // a 2.5 s search took 332 s). The driver's module load waits
                                // for the device, which the spin kernel holds until the
                                // measuring thread, itself waiting on the driver, releases it.
                                let (result, origin) =
                                    cached_image_by(*key, || compile_in_worker(&mut slot, &job));
                                let mut summary = summary.lock().unwrap_or_else(|e| e.into_inner());
                                match (result, origin) {
                                    (Err((_, message)), _) => summary.failed.push(message),
                                    (Ok(_), Origin::Compiled) => summary.compiled += 1,
                                    (Ok(_), Origin::Disk) => summary.from_disk += 1,
                                    (Ok(_), Origin::Memory) => summary.in_memory += 1,
                                }
                            }
                            let mut summary = summary.lock().unwrap_or_else(|e| e.into_inner());
                            summary.worker_processes += slot.started;
                            slot.release();
                        });
                    }
                });
                let mut summary = summary.into_inner().unwrap_or_else(|e| e.into_inner());
                summary.threads = threads;
                summary.seconds = started.elapsed().as_secs_f64();
                summary
            })
            .map_err(|e| Error::Device(format!("cannot start the compile threads: {e}")))?;
        Ok(Precompile { handle })
    }
}

/// The threads [`CudaHandles::precompile`] uses for `jobs` compilations: one fewer than the
/// machine has cores (the measurement keeps one), at least one, at most one per job and
/// [`MAX_COMPILE_THREADS`], or at most [`COMPILE_THREADS_ENV`] where that is set.
pub fn compile_threads(jobs: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    threads_for(
        jobs,
        cores,
        std::env::var(COMPILE_THREADS_ENV).ok().as_deref(),
    )
}

/// Caps the compile threads (and so the compile worker processes) of a bench process: a
/// positive integer. Each NVRTC instance holds a few hundred MB while it compiles, which a
/// node shared with other jobs may not have to spare.
pub const COMPILE_THREADS_ENV: &str = "GPUTUNE_COMPILE_THREADS";

/// [`compile_threads`] for `cores` cores and the cap `cap` (the variable's value, if set).
fn threads_for(jobs: usize, cores: usize, cap: Option<&str>) -> usize {
    let default = cores.saturating_sub(1).clamp(1, MAX_COMPILE_THREADS);
    let most = match cap.map(|c| c.trim().parse::<usize>()) {
        None => default,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                eprintln!(
                    "warning: {COMPILE_THREADS_ENV}={:?} is not a positive integer; using {default} \
                     compile threads",
                    cap.unwrap_or_default()
                );
            });
            default
        }
    };
    most.clamp(1, jobs.max(1))
}

/// Most threads [`CudaHandles::precompile`] uses: each NVRTC instance holds a few hundred MB
/// while it compiles, and a host with many cores gains little from more.
const MAX_COMPILE_THREADS: usize = 16;

/// Set by [`finish_compilations`]: compile threads take no new job.
static EXITING: AtomicBool = AtomicBool::new(false);

/// Background compilations running, and the condition the exit waits on.
static IN_FLIGHT: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

/// How long the exit waits for compilations in flight (each takes well under a second).
const EXIT_WAIT: Duration = Duration::from_secs(30);

/// One background compilation in flight, from [`InFlight::enter`] to drop.
struct InFlight;

impl InFlight {
    fn enter() -> InFlight {
        *IN_FLIGHT.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut n = IN_FLIGHT.0.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        IN_FLIGHT.1.notify_all();
    }
}

/// Stops the background compilations of [`CudaHandles::precompile`] from starting new work
/// and waits (at most 30 s) for the ones running; the bench runner calls it before the
/// process exits.
///
/// `exit` runs the libraries' static destructors while other threads still run, and NVRTC is
/// a compiler with global state: destroying it under a compilation could crash the process at
/// its very end, turning a finished run into a crash. A process that runs fewer states than
/// it precompiled variants (every one failing fast, say) would otherwise get there.
pub fn finish_compilations() {
    EXITING.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + EXIT_WAIT;
    let mut n = IN_FLIGHT.0.lock().unwrap_or_else(|e| e.into_inner());
    while *n > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        n = match IN_FLIGHT.1.wait_timeout(n, left) {
            Ok((guard, _)) => guard,
            Err(poisoned) => poisoned.into_inner().0,
        };
    }
}

/// Compilations started by [`CudaHandles::precompile`], running in the background.
#[derive(Debug)]
pub struct Precompile {
    handle: std::thread::JoinHandle<PrecompileSummary>,
}

impl Precompile {
    /// Waits until every define set is compiled (or failed) and says what happened.
    pub fn wait(self) -> PrecompileSummary {
        self.handle.join().unwrap_or_else(|_| PrecompileSummary {
            failed: vec!["a compile thread panicked".into()],
            ..PrecompileSummary::default()
        })
    }

    /// Whether every define set is done.
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }
}

/// What [`Precompile::wait`] reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrecompileSummary {
    /// Define sets NVRTC compiled.
    pub compiled: usize,
    /// Define sets read from the disk cache.
    pub from_disk: usize,
    /// Define sets this process had already compiled (or was compiling elsewhere).
    pub in_memory: usize,
    /// The errors of define sets that failed to compile.
    pub failed: Vec<String>,
    /// Threads that compiled.
    pub threads: usize,
    /// Compile worker processes the threads started (none where the bench binary cannot
    /// serve as one: then NVRTC ran on the threads themselves).
    pub worker_processes: usize,
    /// Wall time from the call to the last compilation, in seconds.
    pub seconds: f64,
}

impl std::fmt::Display for PrecompileSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "precompiled {} kernel module(s) in {:.2} s on {} thread(s) ({} compile worker \
             process(es)): {} compiled, {} from the disk cache, {} already in memory, {} failed",
            self.compiled + self.from_disk + self.in_memory + self.failed.len(),
            self.seconds,
            self.threads,
            self.worker_processes,
            self.compiled,
            self.from_disk,
            self.in_memory,
            self.failed.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compile_threads_leave_a_core_to_the_measurement_and_obey_the_cap() {
        assert_eq!(threads_for(128, 16, None), 15);
        assert_eq!(threads_for(128, 64, None), MAX_COMPILE_THREADS);
        assert_eq!(threads_for(3, 16, None), 3, "no more than the jobs");
        assert_eq!(threads_for(0, 16, None), 1);
        assert_eq!(threads_for(128, 1, None), 1);
        assert_eq!(threads_for(128, 16, Some("4")), 4);
        assert_eq!(
            threads_for(128, 16, Some(" 32 ")),
            32,
            "a cap above the default"
        );
        assert_eq!(threads_for(2, 16, Some("4")), 2);
        for bad in ["0", "-1", "four", ""] {
            assert_eq!(threads_for(128, 16, Some(bad)), 15, "{bad:?}");
        }
    }

    #[test]
    fn finishing_waits_for_the_compilations_in_flight() {
        let held = InFlight::enter();
        let worker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(60));
            drop(held);
        });
        let started = Instant::now();
        finish_compilations();
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert!(started.elapsed() < EXIT_WAIT);
        assert!(
            EXITING.load(Ordering::SeqCst),
            "no new work starts after it"
        );
        assert_eq!(*IN_FLIGHT.0.lock().unwrap_or_else(|e| e.into_inner()), 0);
        worker.join().expect("the worker ends");
        // With nothing in flight it returns at once.
        let started = Instant::now();
        finish_compilations();
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
