//! The CUDA backend: CUDA events around the user's launches, nvbench's cold-sample protocol.
//!
//! cudarc loads `libcuda` and `libnvrtc` at run time, so this module builds and unit-tests on
//! machines without CUDA; [`CudaBackend::open`] is where a missing driver turns into
//! [`Error::NoDevice`] instead of cudarc's panic.
//!
//! Every driver error becomes an [`Error`] through [`driver_error`], which classifies it
//! ([`driver_error_kind`]): a sticky error (an illegal address, a trap, a failed launch)
//! becomes [`Error::DeviceLost`], after which the bench process reports the state and ends;
//! a launch the kernel cannot take becomes [`Error::InvalidLaunch`]. [`check_launch`] finds
//! the most common invalid launches before anything is launched. NVRTC rejecting a source
//! is [`Error::Compile`].
//!
//! The two helper kernels (the spin kernel that holds the stream and the timestamp kernel that
//! reads the SM clock) are hand-written PTX, so measuring needs neither NVRTC nor a toolkit:
//! the driver JITs them for whatever GPU it finds.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::mem::offset_of;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Once, OnceLock};
use std::time::{Duration, Instant};

use cudarc::driver::{
    result as driver, sys, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream,
    DevicePtr, DriverError, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys, Ptx};

use super::kernel_cache::{DiskCache, Image, Key, Memo, Origin, KERNEL_CACHE_ENV};
use super::{Backend, ColdSample, Launches};
use crate::device::{BackendKind, DeviceInfo};
use crate::error::{Error, ErrorKind, Result};
use crate::launch::Launch;

/// How long the spin kernel holds the stream before it gives up, in seconds (nvbench's value).
pub const DEFAULT_BLOCKING_TIMEOUT: f64 = 30.0;

/// The driver API version the cudarc bindings were generated for (`cuda-13000`); an older
/// driver lacks versioned entry points such as `cuEventElapsedTime_v2`, and cudarc panics on
/// the first call to a missing symbol.
const MIN_DRIVER_VERSION: i32 = 13000;

/// Entry point of the spin kernel in [`KERNELS_PTX`].
const SPIN_KERNEL: &str = "gputune_spin";
/// Entry point of the timestamp kernel in [`KERNELS_PTX`].
const TIMESTAMP_KERNEL: &str = "gputune_timestamp";

/// The helper kernels, in PTX so that no compiler is needed to measure.
///
/// `gputune_spin(flag, marker, timeout_ns)`: one thread polls `flag` (host-mapped) with
/// volatile loads until it is non-zero; if `%globaltimer` says `timeout_ns` passed first, it
/// writes 2 to `marker` and exits, so a sample whose launches never arrive cannot hang the
/// device.
///
/// `gputune_timestamp(out, slot)`: launched with one block per SM; the block that lands on
/// SM 0 writes `%globaltimer` and `%clock64` to `out[2 * slot]` and `out[2 * slot + 1]`.
/// `%clock64` is a per-SM counter, so both reads of a sample must come from the same SM
/// (nvbench does the same).
///
/// `sm_52` and PTX 7.0 keep the text loadable on every GPU a CUDA 13 driver supports.
const KERNELS_PTX: &str = r"
.version 7.0
.target sm_52
.address_size 64

.visible .entry gputune_spin(
	.param .u64 gputune_spin_flag,
	.param .u64 gputune_spin_marker,
	.param .u64 gputune_spin_timeout_ns
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [gputune_spin_flag];
	ld.param.u64 	%rd2, [gputune_spin_marker];
	ld.param.u64 	%rd3, [gputune_spin_timeout_ns];
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd2;
	mov.u64 	%rd6, %globaltimer;
$L_spin_poll:
	ld.volatile.global.u32 	%r1, [%rd4];
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L_spin_done;
	mov.u64 	%rd7, %globaltimer;
	sub.s64 	%rd7, %rd7, %rd6;
	setp.lt.u64 	%p2, %rd7, %rd3;
	@%p2 bra 	$L_spin_poll;
	mov.u32 	%r2, 2;
	st.volatile.global.u32 	[%rd5], %r2;
	membar.sys;
$L_spin_done:
	ret;
}

.visible .entry gputune_timestamp(
	.param .u64 gputune_timestamp_out,
	.param .u32 gputune_timestamp_slot
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<7>;

	mov.u32 	%r1, %smid;
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L_timestamp_done;
	ld.param.u64 	%rd1, [gputune_timestamp_out];
	ld.param.u32 	%r2, [gputune_timestamp_slot];
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r2, 16;
	add.s64 	%rd4, %rd2, %rd3;
	mov.u64 	%rd5, %globaltimer;
	mov.u64 	%rd6, %clock64;
	st.volatile.global.u64 	[%rd4], %rd5;
	st.volatile.global.u64 	[%rd4+8], %rd6;
$L_timestamp_done:
	ret;
}
";

/// What a bench uses to allocate buffers, copy data and load its kernels on the measured
/// device.
///
/// Launch timed work on [`Launch::stream`](crate::Launch::stream) inside `exec`; `stream` here
/// is that same stream, for setup and verification outside the timed region.
#[derive(Debug, Clone)]
pub struct CudaHandles {
    /// The primary context of the measured device.
    pub context: Arc<CudaContext>,
    /// The stream the measurement records its events on; work on another stream is not timed.
    pub stream: Arc<CudaStream>,
}

impl CudaHandles {
    /// Compiles CUDA C++ with NVRTC for this device and loads the module.
    ///
    /// Each `(NAME, VALUE)` in `defines` becomes `-DNAME=VALUE`, which is how tuned parameters
    /// reach the kernel. The code is compiled to SASS for the device's own architecture
    /// (`sm_XY`); if this NVRTC does not know that architecture, to PTX (`compute_XY`, then the
    /// newest architecture it knows below the device's) for the driver to JIT. Kernels need
    /// `extern "C"` to be found by name. The NVRTC log is part of the error, which is
    /// [`Error::Compile`] when NVRTC rejects the source (the variant does not build, and
    /// `cargo gputune` records it as `build_failed`).
    ///
    /// Compiling is cached: the same `(source, defines)` is compiled at most once per process
    /// (later calls return the loaded module), and images are kept on disk across processes
    /// (see [`kernel_cache`](super::kernel_cache): `$GPUTUNE_KERNEL_CACHE`, else
    /// `$XDG_CACHE_HOME/gputune/kernels`, else `~/.cache/gputune/kernels`), keyed by the
    /// source, the options and NVRTC's version. The order of `defines` is part of the key.
    ///
    /// Defines reach NVRTC's built-in headers too: a one-letter name such as `T` turns their
    /// `template <typename T>` into nonsense, so give defines distinctive names (`VALUE_T`).
    pub fn compile(&self, source: &str, defines: &[(&str, String)]) -> Result<Arc<CudaModule>> {
        load_module(&self.context, source, defines)
    }

    /// Starts compiling `source` once per define set on the CPU's cores, in the background,
    /// so that later [`compile`](CudaHandles::compile) calls with the same arguments find
    /// the result ready (or wait for the one compilation in flight) instead of running
    /// NVRTC on the measurement's critical path.
    ///
    /// A bench calls this once, before measuring, with the define sets of every variant the
    /// process will run ([`tuned::planned`](crate::tuned::planned) says which), in the order
    /// they will run: the first is ready first, and the GPU measures while the rest compile.
    /// It uses one thread fewer than the machine has cores (at least one), leaving one to the
    /// measurement. Images already in the disk cache are only read.
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
        let cc = device_cc(&self.context)?;
        let version = nvrtc_version()?;
        let jobs: Vec<(Key, Vec<(String, String)>)> = define_sets
            .iter()
            .map(|defines| {
                let owned = defines
                    .iter()
                    .map(|(n, v)| ((*n).to_string(), v.clone()))
                    .collect();
                (image_key(source, defines, cc, version), owned)
            })
            .collect();
        let source: Arc<str> = Arc::from(source);
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .saturating_sub(1)
            .clamp(1, jobs.len().clamp(1, MAX_COMPILE_THREADS));
        // The first NVRTC use of the process on this thread, not on a worker: some NVRTC
        // versions crashed at exit when a child thread had initialised them (arrayfire#2707).
        let _ = quietly(|| nvrtc::create_program(c"", None).map(Program));
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
                        s.spawn(|| loop {
                            if EXITING.load(Ordering::SeqCst) {
                                break;
                            }
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some((key, defines)) = jobs.get(i) else {
                                break;
                            };
                            let defines: Vec<(&str, String)> = defines
                                .iter()
                                .map(|(n, v)| (n.as_str(), v.clone()))
                                .collect();
                            let (result, origin) = cached_image(*key, &source, &defines, cc);
                            let mut summary = summary.lock().unwrap_or_else(|e| e.into_inner());
                            match (result, origin) {
                                (Err((_, message)), _) => summary.failed.push(message),
                                (Ok(_), Origin::Compiled) => summary.compiled += 1,
                                (Ok(_), Origin::Disk) => summary.from_disk += 1,
                                (Ok(_), Origin::Memory) => summary.in_memory += 1,
                            }
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

/// Background compilations a bench process started, by key, and the ones still running.
struct Background {
    started: Vec<Box<dyn std::any::Any + Send>>,
    running: Vec<Precompile>,
}

static BACKGROUND: Mutex<Background> = Mutex::new(Background {
    started: Vec::new(),
    running: Vec::new(),
});

/// Starts a background compilation once per process and `key`, and reports on stderr each
/// one that has finished since the last call. A bench calls it at the start of every state,
/// keyed by what its kernels are compiled for (the element type, say), with `start` calling
/// [`CudaHandles::precompile`] for the variants the process will run
/// ([`crate::tuned::to_prepare`]), or returning `None` when there is nothing to start.
///
/// ```no_run
/// # use gputune_runtime::backend::cuda::{precompile_once, CudaHandles};
/// # fn f(cuda: &CudaHandles) -> gputune_runtime::Result<()> {
/// const SOURCE: &str = "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = IPT; }";
/// precompile_once("f32", || {
///     let sets: Vec<Vec<(&str, String)>> =
///         [1, 2, 4].iter().map(|ipt| vec![("IPT", ipt.to_string())]).collect();
///     cuda.precompile(SOURCE, &sets).map(Some)
/// })?;
/// # Ok(()) }
/// ```
pub fn precompile_once<K, E>(
    key: K,
    start: impl FnOnce() -> std::result::Result<Option<Precompile>, E>,
) -> std::result::Result<(), E>
where
    K: PartialEq + Send + 'static,
{
    let lock = || BACKGROUND.lock().unwrap_or_else(|e| e.into_inner());
    let first = {
        let mut b = lock();
        let seen = b
            .started
            .iter()
            .any(|k| k.downcast_ref::<K>() == Some(&key));
        if !seen {
            b.started.push(Box::new(key));
        }
        !seen
    };
    if first {
        if let Some(work) = start()? {
            lock().running.push(work);
        }
    }
    let done: Vec<Precompile> = {
        let mut b = lock();
        let (done, running) = std::mem::take(&mut b.running)
            .into_iter()
            .partition(Precompile::is_finished);
        b.running = running;
        done
    };
    for work in done {
        eprintln!("Note: {}", work.wait());
    }
    Ok(())
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
    /// Wall time from the call to the last compilation, in seconds.
    pub seconds: f64,
}

impl std::fmt::Display for PrecompileSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "precompiled {} kernel module(s) in {:.2} s on {} thread(s): {} compiled, {} from \
             the disk cache, {} already in memory, {} failed",
            self.compiled + self.from_disk + self.in_memory + self.failed.len(),
            self.seconds,
            self.threads,
            self.compiled,
            self.from_disk,
            self.in_memory,
            self.failed.len()
        )
    }
}

/// The in-process image cache of every context (images do not depend on the context).
/// What a failed compilation leaves in the memo: its kind (NVRTC rejected the source, or
/// something else went wrong) and the message.
type CompileFailed = (ErrorKind, String);

fn memo() -> &'static Memo<CompileFailed> {
    static MEMO: OnceLock<Memo<CompileFailed>> = OnceLock::new();
    MEMO.get_or_init(Memo::default)
}

/// The disk cache of this process, resolved once from the environment.
fn disk_cache() -> Option<&'static DiskCache> {
    static DISK: OnceLock<Option<DiskCache>> = OnceLock::new();
    DISK.get_or_init(DiskCache::from_env).as_ref()
}

/// NVRTC's version, which is part of every cache key; an error without NVRTC.
fn nvrtc_version() -> Result<(i32, i32)> {
    static VERSION: OnceLock<std::result::Result<(i32, i32), String>> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            // SAFETY: only tries to dlopen the candidate library names; nothing is called.
            if !unsafe { nvrtc_sys::is_culib_present() } {
                return Err(NO_NVRTC.to_string());
            }
            quietly(|| {
                let (mut major, mut minor) = (0, 0);
                // SAFETY: writes two ints.
                unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }
                    .result()
                    .map(|()| (major, minor))
                    .map_err(|e| format!("cannot read NVRTC's version: {e}"))
            })
            .unwrap_or_else(|panic| Err(format!("NVRTC cannot be used: {panic}")))
        })
        .clone()
        .map_err(Error::Device)
}

/// The device's compute capability as `major * 10 + minor`.
fn device_cc(context: &Arc<CudaContext>) -> Result<i32> {
    let (major, minor) = context.compute_capability().map_err(device_error(
        "reading the compute capability before compiling a kernel",
    ))?;
    Ok(major * 10 + minor)
}

/// The cache key of compiling `source` with `defines` for compute capability `cc`: the
/// options of the first target tried (the device's own `sm_XY`) stand for the device.
fn image_key(source: &str, defines: &[(&str, String)], cc: i32, version: (i32, i32)) -> Key {
    let arch = u32::try_from(cc).unwrap_or(0);
    Key::new(
        source,
        &nvrtc_options(defines, &Target::Cubin(arch)),
        version,
    )
}

/// The image for `key` from the caches, else compiled (and stored on disk).
fn cached_image(
    key: Key,
    source: &str,
    defines: &[(&str, String)],
    cc: i32,
) -> (std::result::Result<Arc<Image>, CompileFailed>, Origin) {
    memo().get_or_compile(
        key,
        disk_cache(),
        || {
            compile_for(source, defines, cc).map_err(|e| {
                let kind = e.kind();
                match e {
                    Error::Device(message) | Error::Compile(message) => (kind, message),
                    other => (kind, other.to_string()),
                }
            })
        },
        |dir, e| {
            // Once per process: a cache that cannot be written slows later runs, nothing else.
            static WARNED: Once = Once::new();
            WARNED.call_once(|| {
                eprintln!(
                    "warning: cannot write the kernel cache in {} ({e}); kernels are compiled \
                     again in each process (set {KERNEL_CACHE_ENV} to another directory, or to \
                     `off`)",
                    dir.display()
                );
            });
        },
    )
}

/// [`CudaHandles::compile`] for any context.
pub(crate) fn load_module(
    context: &Arc<CudaContext>,
    source: &str,
    defines: &[(&str, String)],
) -> Result<Arc<CudaModule>> {
    /// Loaded modules by context and key: loading a module again for every state of every
    /// variant would cost a driver call and device memory each time.
    type Modules = Mutex<HashMap<(usize, Key), Arc<CudaModule>>>;
    static MODULES: OnceLock<Modules> = OnceLock::new();

    let cc = device_cc(context)?;
    let key = image_key(source, defines, cc, nvrtc_version()?);
    let modules = MODULES.get_or_init(Modules::default);
    let id = (context.cu_ctx() as usize, key);
    // A poisoned lock only means a thread panicked while inserting; the map is whole.
    if let Some(m) = modules.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
        return Ok(m.clone());
    }
    let image = cached_image(key, source, defines, cc)
        .0
        .map_err(|(kind, message)| match kind {
            // NVRTC rejected the source: the variant does not build.
            ErrorKind::Compile => Error::Compile(message),
            _ => Error::Device(message),
        })?;
    // A driver that rejects the image (CUDA_ERROR_INVALID_PTX) classifies as a compile error.
    let module = context
        .load_module(Ptx::from_binary(image.bytes.clone()))
        .map_err(device_error("loading the compiled kernel module"))?;
    // Two threads may load the same module at once; the first one stored is the one shared.
    let shared = modules
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(id)
        .or_insert(module)
        .clone();
    Ok(shared)
}

/// The limits one kernel's launches must respect on its device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchLimits {
    /// Threads per block the kernel can be launched with
    /// (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`: the device's limit lowered by the kernel's
    /// registers and `__launch_bounds__`).
    pub max_threads_per_block: u32,
    /// Dynamic shared memory per block in bytes (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`,
    /// which a bench raises with `CudaFunction::set_attribute` up to what the device allows).
    pub max_dynamic_shared_bytes: u32,
    /// The device's largest block, per dimension.
    pub max_block_dim: [u32; 3],
    /// The device's largest grid, per dimension.
    pub max_grid_dim: [u32; 3],
}

impl LaunchLimits {
    /// Reads the limits of `function` from the driver.
    pub fn of(function: &CudaFunction) -> Result<LaunchLimits> {
        use sys::CUdevice_attribute as D;
        use sys::CUfunction_attribute as F;
        let what = "reading the kernel's launch limits";
        let non_negative = |v: i32| u32::try_from(v).unwrap_or(0);
        let attribute = |a: F| {
            function
                .get_attribute(a)
                .map(non_negative)
                .map_err(|e| driver_error(what, e))
        };
        // `get_attribute` made the function's context current, so its device is this one.
        let max_threads_per_block = attribute(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
        let max_dynamic_shared_bytes =
            attribute(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?;
        let mut device: sys::CUdevice = 0;
        // SAFETY: an out-pointer to a local; a context is current (bound just above).
        unsafe { sys::cuCtxGetDevice(&mut device) }
            .result()
            .map_err(|e| driver_error(what, e))?;
        let device_attribute = |a: D| {
            // SAFETY: `device` came from the driver.
            unsafe { driver::device::get_attribute(device, a) }
                .map(non_negative)
                .map_err(|e| driver_error(what, e))
        };
        Ok(LaunchLimits {
            max_threads_per_block,
            max_dynamic_shared_bytes,
            max_block_dim: [
                device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid_dim: [
                device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
        })
    }

    /// Whether `config` is a launch these limits allow; [`Error::InvalidLaunch`] saying which
    /// limit it exceeds if not.
    pub fn check(&self, config: &LaunchConfig) -> Result<()> {
        let (bx, by, bz) = config.block_dim;
        let (gx, gy, gz) = config.grid_dim;
        let invalid = |what: String| Err(Error::InvalidLaunch(what));
        if bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 {
            return invalid(format!(
                "an empty launch: grid {gx}×{gy}×{gz}, block {bx}×{by}×{bz}"
            ));
        }
        let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
        if threads > u64::from(self.max_threads_per_block) {
            return invalid(format!(
                "a block of {threads} threads ({bx}×{by}×{bz}) is more than this kernel can be \
                 launched with, {} (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: the device's limit, \
                 lowered by the kernel's registers and __launch_bounds__)",
                self.max_threads_per_block
            ));
        }
        for (axis, (block, max)) in ["x", "y", "z"]
            .into_iter()
            .zip([bx, by, bz].into_iter().zip(self.max_block_dim))
        {
            if block > max {
                return invalid(format!(
                    "the block's {axis} dimension {block} is larger than the device allows, {max}"
                ));
            }
        }
        for (axis, (grid, max)) in ["x", "y", "z"]
            .into_iter()
            .zip([gx, gy, gz].into_iter().zip(self.max_grid_dim))
        {
            if grid > max {
                return invalid(format!(
                    "the grid's {axis} dimension {grid} is larger than the device allows, {max}"
                ));
            }
        }
        if config.shared_mem_bytes > self.max_dynamic_shared_bytes {
            return invalid(format!(
                "{} bytes of dynamic shared memory per block are more than this kernel may use, {} \
                 (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; raise it with \
                 CudaFunction::set_attribute up to the device's opt-in limit)",
                config.shared_mem_bytes, self.max_dynamic_shared_bytes
            ));
        }
        Ok(())
    }
}

/// Checks a launch of `function` with `config` against the kernel's and the device's limits
/// before launching it: block size (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`), dynamic
/// shared memory (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`), and block and grid
/// dimensions.
///
/// A launch over a limit fails in the driver anyway, with an error that says less; checked
/// here it is [`Error::InvalidLaunch`], which `cargo gputune` records as `invalid`: the
/// variant is not a point the kernel can run, rather than one that failed. Call it where the
/// launch shape is decided (it costs a few attribute queries), not in the timed loop.
pub fn check_launch(function: &CudaFunction, config: &LaunchConfig) -> Result<()> {
    LaunchLimits::of(function)?.check(config)
}

/// Times CUDA launches with events, following nvbench's cold and hot protocols.
pub struct CudaBackend {
    info: DeviceInfo,
    handles: CudaHandles,
    start: CudaEvent,
    stop: CudaEvent,
    spin: CudaFunction,
    timestamp: CudaFunction,
    /// Written in full before every cold sample to evict the user's data from L2; `None`
    /// when the L2 size is unknown.
    flush: Option<FlushBuffer>,
    mapped: MappedWords,
    /// Blocks of the timestamp kernel: one per SM, so that one of them lands on SM 0.
    timestamp_blocks: u32,
    blocking_timeout: f64,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.info.name)
            .field("ordinal", &self.info.id)
            .field("blocking_timeout", &self.blocking_timeout)
            .finish_non_exhaustive()
    }
}

struct FlushBuffer {
    /// Owns the allocation that `ptr` points into.
    _buffer: CudaSlice<u8>,
    ptr: sys::CUdeviceptr,
    bytes: usize,
}

impl CudaBackend {
    /// Opens CUDA device `ordinal` (as the driver numbers them, after `CUDA_VISIBLE_DEVICES`).
    ///
    /// A machine without a driver, without a GPU, with a driver older than CUDA 13.0, or
    /// without device `ordinal` gets [`Error::NoDevice`] with a message saying which; it never
    /// panics.
    pub fn open(ordinal: u32) -> Result<CudaBackend> {
        // SAFETY: only tries to dlopen the candidate library names; nothing is called.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoDevice(
                "the NVIDIA driver library (libcuda.so.1) could not be loaded: this machine has \
                 no NVIDIA driver, or its library directory is not on the loader path \
                 (LD_LIBRARY_PATH)"
                    .into(),
            ));
        }
        // cudarc panics when a driver entry point is missing; turn that into an error too.
        match quietly(|| Self::open_with_driver(ordinal)) {
            Ok(result) => result,
            Err(panic) => Err(Error::NoDevice(format!(
                "the NVIDIA driver library could not be used to open CUDA device {ordinal}: \
                 {panic}"
            ))),
        }
    }

    fn open_with_driver(ordinal: u32) -> Result<CudaBackend> {
        let version = driver_version().map_err(|e| {
            Error::NoDevice(format!(
                "cannot query the NVIDIA driver version: {}",
                describe(e)
            ))
        })?;
        if version < MIN_DRIVER_VERSION {
            return Err(Error::NoDevice(format!(
                "the NVIDIA driver supports CUDA {}.{}, but gputune's CUDA backend needs a \
                 driver for CUDA 13.0 or newer (R580+)",
                version / 1000,
                version % 1000 / 10
            )));
        }
        driver::init().map_err(|e| {
            Error::NoDevice(format!(
                "the CUDA driver failed to initialise: {}",
                describe(e)
            ))
        })?;
        let count = driver::device::get_count()
            .map_err(|e| Error::NoDevice(format!("cannot count CUDA devices: {}", describe(e))))?;
        if i64::from(ordinal) >= i64::from(count) {
            let visible = std::env::var("CUDA_VISIBLE_DEVICES")
                .map(|v| format!(" (CUDA_VISIBLE_DEVICES={v})"))
                .unwrap_or_default();
            return Err(Error::NoDevice(format!(
                "CUDA device {ordinal} was requested, but {count} CUDA device(s) are \
                 visible{visible}"
            )));
        }
        let context = CudaContext::new(ordinal as usize).map_err(|e| {
            Error::NoDevice(format!(
                "cannot create a context on CUDA device {ordinal}: {}",
                describe(e)
            ))
        })?;
        let info = device_info(ordinal, &RawAttributes::read(&context));
        Self::with_context(info, context)
    }

    /// Everything past identification: the device exists, so failures are device errors.
    fn with_context(info: DeviceInfo, context: Arc<CudaContext>) -> Result<CudaBackend> {
        // SAFETY: cudarc's event tracking orders buffer use across streams by recording an
        // event on every slice at every launch — work that would land inside the timed
        // region. A bench does all its work on the one measurement stream (documented on
        // `CudaHandles`), where stream order already serialises it.
        unsafe { context.disable_event_tracking() };
        let stream = context
            .new_stream()
            .map_err(device_error("creating the measurement stream"))?;
        let timing_event = || {
            context
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(device_error("creating a timing event"))
        };
        let (start, stop) = (timing_event()?, timing_event()?);
        let module = context
            .load_module(Ptx::from_src(KERNELS_PTX))
            .map_err(device_error("loading the measurement kernels (PTX JIT)"))?;
        let spin = module
            .load_function(SPIN_KERNEL)
            .map_err(device_error("finding the spin kernel"))?;
        let timestamp = module
            .load_function(TIMESTAMP_KERNEL)
            .map_err(device_error("finding the timestamp kernel"))?;
        let flush = match info.cache_size.and_then(|b| usize::try_from(b).ok()) {
            Some(bytes) if bytes > 0 => {
                let buffer = stream
                    .alloc_zeros::<u8>(bytes)
                    .map_err(device_error("allocating the L2 flush buffer"))?;
                // The raw pointer skips cudarc's per-use event bookkeeping in every sample.
                let ptr = {
                    let (ptr, _record) = buffer.device_ptr(&stream);
                    ptr
                };
                Some(FlushBuffer {
                    ptr,
                    bytes,
                    _buffer: buffer,
                })
            }
            _ => None,
        };
        let mapped = MappedWords::new(&context).map_err(device_error(
            "allocating host-mapped memory for the spin kernel",
        ))?;
        Ok(CudaBackend {
            timestamp_blocks: info.sm_count.unwrap_or(1).max(1),
            info,
            handles: CudaHandles { context, stream },
            start,
            stop,
            spin,
            timestamp,
            flush,
            mapped,
            blocking_timeout: DEFAULT_BLOCKING_TIMEOUT,
        })
    }

    /// Sets how long the spin kernel holds the stream before it releases itself, in seconds.
    ///
    /// Raise it when one sample enqueues launches for longer than that (the sample then fails
    /// with [`Error::BlockingKernelTimeout`]). Non-finite or non-positive values are ignored.
    pub fn set_blocking_timeout(&mut self, seconds: f64) {
        if seconds.is_finite() && seconds > 0.0 {
            self.blocking_timeout = seconds;
        }
    }

    /// The spin kernel's limit in seconds.
    pub fn blocking_timeout(&self) -> f64 {
        self.blocking_timeout
    }

    /// The part of a cold sample during which the spin kernel holds the stream. The caller
    /// releases the flag and synchronises whatever this returns.
    fn held(&self, launches: &mut Launches<'_>) -> Result<()> {
        let stream = &self.handles.stream;
        let flag = self.mapped.device_ptr(offset_of!(Shared, flag));
        let marker = self.mapped.device_ptr(offset_of!(Shared, timeout_marker));
        let timeout_ns = timeout_ns(self.blocking_timeout);
        let one = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments match the PTX signature (u64, u64, u64); both pointers are
        // device views of `self.mapped`, which outlives every sample.
        unsafe {
            stream
                .launch_builder(&self.spin)
                .arg(&flag)
                .arg(&marker)
                .arg(&timeout_ns)
                .launch(one)
        }
        .map_err(device_error("launching the spin kernel"))?;
        self.launch_timestamp(0)?;
        self.start
            .record(stream)
            .map_err(device_error("recording the start event"))?;
        launches(&mut Launch {
            stream: Some(stream),
        })
        .map_err(Error::Launch)?;
        self.stop
            .record(stream)
            .map_err(device_error("recording the stop event"))?;
        self.launch_timestamp(1)
    }

    fn launch_timestamp(&self, slot: u32) -> Result<()> {
        let out = self.mapped.device_ptr(offset_of!(Shared, timestamps));
        let config = LaunchConfig {
            grid_dim: (self.timestamp_blocks, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments match the PTX signature (u64, u32); `out` is the device view
        // of four u64 in `self.mapped` and `slot` is 0 or 1.
        unsafe {
            self.handles
                .stream
                .launch_builder(&self.timestamp)
                .arg(&out)
                .arg(&slot)
                .launch(config)
        }
        .map_err(device_error("launching the timestamp kernel"))?;
        Ok(())
    }
}

impl Backend for CudaBackend {
    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn cold_sample(&mut self, launches: &mut Launches<'_>) -> Result<ColdSample> {
        let stream = &self.handles.stream;
        self.handles
            .context
            .bind_to_thread()
            .map_err(device_error("binding the CUDA context"))?;
        // The previous sample ended with a synchronize, so nothing on the device reads these.
        let shared = self.mapped.shared();
        for t in &shared.timestamps {
            t.store(0, Ordering::Relaxed);
        }
        shared.timeout_marker.store(0, Ordering::Relaxed);
        shared.flag.store(0, Ordering::SeqCst);

        let cpu_start = Instant::now();
        // The flush is enqueued, not waited for (nvbench synchronises here): the spin kernel
        // behind it holds the stream, so the start event still follows the flush, and the host
        // enqueues the sample's launches while the device writes the flush buffer instead of
        // leaving the device idle for a synchronisation round trip. The CPU time therefore
        // includes the flush.
        if let Some(flush) = &self.flush {
            // SAFETY: `ptr` and `bytes` describe the live allocation owned by `flush`.
            unsafe { driver::memset_d8_async(flush.ptr, 0, flush.bytes, stream.cu_stream()) }
                .map_err(device_error("flushing L2"))?;
        }
        let held = {
            // Releases the spin kernel even if the user's closure panics.
            let _release = Release(&shared.flag);
            self.held(launches)
        };
        // Even after an error the stream is drained, so the next sample starts clean.
        let synced = stream
            .synchronize()
            .map_err(device_error("synchronising after a sample"));
        let cpu_time = cpu_start.elapsed().as_secs_f64();
        held?;
        synced?;

        if shared.timeout_marker.load(Ordering::SeqCst) != 0 {
            return Err(Error::BlockingKernelTimeout {
                seconds: self.blocking_timeout,
            });
        }
        let gpu_ms = self
            .start
            .elapsed_ms(&self.stop)
            .map_err(device_error("reading the event times"))?;
        let timestamps = shared
            .timestamps
            .each_ref()
            .map(|t| t.load(Ordering::SeqCst));
        Ok(ColdSample {
            gpu_time: f64::from(gpu_ms) / 1e3,
            cpu_time,
            sm_clock_rate: sm_clock_rate(timestamps),
        })
    }

    fn hot_batch(&mut self, launches: &mut Launches<'_>, count: u64) -> Result<f64> {
        let stream = &self.handles.stream;
        self.start
            .record(stream)
            .map_err(device_error("recording the start event"))?;
        let mut launch = Launch {
            stream: Some(stream),
        };
        let mut user = Ok(());
        for _ in 0..count {
            if let Err(e) = launches(&mut launch) {
                user = Err(Error::Launch(e));
                break;
            }
        }
        let stopped = self
            .stop
            .record(stream)
            .map_err(device_error("recording the stop event"));
        let synced = stream
            .synchronize()
            .map_err(device_error("synchronising after a batch"));
        user?;
        stopped?;
        synced?;
        let ms = self
            .start
            .elapsed_ms(&self.stop)
            .map_err(device_error("reading the event times"))?;
        Ok(f64::from(ms) / 1e3)
    }

    fn cuda(&self) -> Option<&CudaHandles> {
        Some(&self.handles)
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        // The spin kernel reads the mapped flag: make sure none is running before the memory
        // goes (after a normal sample none is; this covers an unwinding one).
        self.mapped.shared().flag.store(1, Ordering::SeqCst);
        let _ = self.handles.stream.synchronize();
        self.mapped.free();
    }
}

/// Releases the spin kernel when dropped.
struct Release<'a>(&'a AtomicU32);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.store(1, Ordering::SeqCst);
    }
}

/// Layout of the host-mapped words the helper kernels share with the host.
#[repr(C)]
struct Shared {
    /// 0 holds the spin kernel, non-zero releases it.
    flag: AtomicU32,
    /// Non-zero when the spin kernel released itself by timeout.
    timeout_marker: AtomicU32,
    /// globaltimer ns and clock64 before the start event, then after the stop event.
    timestamps: [AtomicU64; 4],
}

/// Pinned host memory mapped into the device's address space.
///
/// The host writes the flag while the spin kernel runs, which no stream-ordered copy could
/// do; the kernels' results land here directly, so no copy back is needed.
struct MappedWords {
    host: *mut Shared,
    device: sys::CUdeviceptr,
    context: Arc<CudaContext>,
}

// SAFETY: the pinned allocation belongs to the process, not to a thread, and the host only
// touches it through atomics.
unsafe impl Send for MappedWords {}
// SAFETY: as above.
unsafe impl Sync for MappedWords {}

impl MappedWords {
    fn new(context: &Arc<CudaContext>) -> std::result::Result<Self, DriverError> {
        context.bind_to_thread()?;
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: a plain allocation; it is initialised below before any use.
        let host =
            unsafe { driver::malloc_host(std::mem::size_of::<Shared>(), flags) }?.cast::<Shared>();
        // SAFETY: `host` is a fresh, page-aligned allocation of the right size.
        unsafe {
            host.write(Shared {
                flag: AtomicU32::new(1),
                timeout_marker: AtomicU32::new(0),
                timestamps: Default::default(),
            });
        }
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `host` was allocated with DEVICEMAP in this (current) context. With UVA the
        // device address usually equals `host`, but only the driver can say.
        let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0) };
        if let Err(e) = mapped.result() {
            // SAFETY: `host` came from `malloc_host` and is not used again.
            let _ = unsafe { driver::free_host(host.cast()) };
            return Err(e);
        }
        Ok(MappedWords {
            host,
            device,
            context: context.clone(),
        })
    }

    fn shared(&self) -> &Shared {
        // SAFETY: `host` is live and initialised until `free`, which only `Drop` calls.
        unsafe { &*self.host }
    }

    fn device_ptr(&self, offset: usize) -> sys::CUdeviceptr {
        self.device + offset as sys::CUdeviceptr
    }

    fn free(&mut self) {
        if self.host.is_null() {
            return;
        }
        let _ = self.context.bind_to_thread();
        // SAFETY: `host` came from `malloc_host`; it is nulled so it is freed once.
        let _ = unsafe { driver::free_host(self.host.cast()) };
        self.host = std::ptr::null_mut();
    }
}

impl Drop for MappedWords {
    fn drop(&mut self) {
        self.free();
    }
}

/// The spin kernel's limit in globaltimer nanoseconds (saturating).
fn timeout_ns(seconds: f64) -> u64 {
    // `as` saturates: a huge limit means "never".
    (seconds * 1e9) as u64
}

/// SM clock over a sample from the timestamp kernel's two reads, in Hz.
///
/// `timestamps` is `[globaltimer_ns_0, clock64_0, globaltimer_ns_1, clock64_1]`. `None` when
/// a read is missing (no block of the timestamp kernel ran on SM 0, so its words stayed 0),
/// when no time passed, or when the counters ran backwards.
fn sm_clock_rate(timestamps: [u64; 4]) -> Option<f64> {
    let [ns0, clock0, ns1, clock1] = timestamps;
    if ns0 == 0 || ns1 == 0 {
        return None;
    }
    let ns = ns1.checked_sub(ns0).filter(|&d| d > 0)?;
    let cycles = clock1.checked_sub(clock0)?;
    Some(cycles as f64 / ns as f64 * 1e9)
}

/// Device attributes as the driver reports them; `None` where the query failed.
#[derive(Debug, Clone, Default, PartialEq)]
struct RawAttributes {
    name: Option<String>,
    compute_capability: Option<(i32, i32)>,
    multiprocessor_count: Option<i32>,
    clock_rate_khz: Option<i32>,
    memory_clock_rate_khz: Option<i32>,
    global_memory_bus_width_bits: Option<i32>,
    total_memory_bytes: Option<usize>,
    l2_cache_size_bytes: Option<i32>,
    max_threads_per_block: Option<i32>,
    max_shared_memory_per_block_optin: Option<i32>,
    ecc_enabled: Option<i32>,
}

impl RawAttributes {
    fn read(context: &CudaContext) -> Self {
        use sys::CUdevice_attribute as A;
        let get = |a: A| context.attribute(a).ok();
        RawAttributes {
            name: context.name().ok(),
            compute_capability: get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
                .zip(get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
            multiprocessor_count: get(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            clock_rate_khz: get(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            memory_clock_rate_khz: get(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
            global_memory_bus_width_bits: get(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
            total_memory_bytes: context.total_mem().ok(),
            l2_cache_size_bytes: get(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
            max_threads_per_block: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
            max_shared_memory_per_block_optin: get(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            ),
            ecc_enabled: get(A::CU_DEVICE_ATTRIBUTE_ECC_ENABLED),
        }
    }
}

/// Maps raw attributes to [`DeviceInfo`].
///
/// CUDA 13 deprecates some attributes (the clocks among them) and a deprecated attribute may
/// read 0, so 0 means "unknown" here, except for ECC, where 0 is a real "disabled".
fn device_info(ordinal: u32, raw: &RawAttributes) -> DeviceInfo {
    let positive = |v: Option<i32>| v.and_then(|v| u32::try_from(v).ok()).filter(|&v| v > 0);
    let khz_to_hz = |v: Option<i32>| positive(v).map(|khz| f64::from(khz) * 1e3);
    DeviceInfo {
        id: ordinal,
        backend: BackendKind::Cuda,
        name: raw
            .name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map_or_else(|| format!("CUDA device {ordinal}"), str::to_owned),
        sm_version: raw.compute_capability.and_then(|(major, minor)| {
            let major = positive(Some(major))?;
            let minor = u32::try_from(minor).ok()?;
            Some(major * 10 + minor)
        }),
        sm_count: positive(raw.multiprocessor_count),
        sm_default_clock_rate: khz_to_hz(raw.clock_rate_khz),
        memory_clock_rate: khz_to_hz(raw.memory_clock_rate_khz),
        memory_bus_width: positive(raw.global_memory_bus_width_bits),
        global_memory_size: raw.total_memory_bytes.map(|b| b as u64).filter(|&b| b > 0),
        cache_size: positive(raw.l2_cache_size_bytes).map(u64::from),
        max_threads_per_block: positive(raw.max_threads_per_block),
        shared_memory_per_block: positive(raw.max_shared_memory_per_block_optin).map(u64::from),
        ecc_enabled: raw.ecc_enabled.map(|v| v != 0),
    }
}

/// `sm_XY` of the current context's device, or of device 0 when no context is current;
/// `None` without a usable driver. Picks applied `gputune.toml` entries in production.
pub(crate) fn current_arch() -> Option<String> {
    // SAFETY: only tries to dlopen the candidate library names; nothing is called.
    if !unsafe { sys::is_culib_present() } {
        return None;
    }
    quietly(|| -> std::result::Result<String, DriverError> {
        if driver_version()? < MIN_DRIVER_VERSION {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_SUPPORTED));
        }
        driver::init()?;
        let mut context: sys::CUcontext = std::ptr::null_mut();
        let mut device: sys::CUdevice = 0;
        // SAFETY: out-pointers to locals; a null context means none is current.
        unsafe {
            sys::cuCtxGetCurrent(&mut context).result()?;
            if context.is_null() {
                sys::cuDeviceGet(&mut device, 0).result()?;
            } else {
                sys::cuCtxGetDevice(&mut device).result()?;
            }
        }
        let attribute = |a| {
            let mut v = 0;
            // SAFETY: out-pointer to a local; `device` came from the driver.
            unsafe { sys::cuDeviceGetAttribute(&mut v, a, device) }
                .result()
                .map(|()| v)
        };
        use sys::CUdevice_attribute as A;
        let major = attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok(format!("sm_{major}{minor}"))
    })
    .ok()?
    .ok()
}

fn driver_version() -> std::result::Result<i32, DriverError> {
    let mut version = 0;
    // SAFETY: writes one int; needs no cuInit.
    unsafe { sys::cuDriverGetVersion(&mut version) }.result()?;
    Ok(version)
}

/// `CUDA_ERROR_NAME: description`, the way CUDA programmers recognise errors.
pub(crate) fn describe(e: DriverError) -> String {
    match (e.error_name(), e.error_string()) {
        (Ok(name), Ok(text)) => format!("{}: {}", name.to_string_lossy(), text.to_string_lossy()),
        _ => format!("{:?}", e.0),
    }
}

/// Driver errors after which the context cannot be used again: every later call returns
/// the same error, and (as the driver API documentation says of each) "to continue using
/// CUDA, the process must be terminated and relaunched". Uncorrectable ECC and NVLink errors
/// are here too: nothing the context holds can be trusted after them.
pub const STICKY_ERRORS: [sys::CUresult; 12] = {
    use sys::CUresult as R;
    [
        R::CUDA_ERROR_ECC_UNCORRECTABLE,
        R::CUDA_ERROR_NVLINK_UNCORRECTABLE,
        R::CUDA_ERROR_ILLEGAL_ADDRESS,
        R::CUDA_ERROR_LAUNCH_TIMEOUT,
        R::CUDA_ERROR_ASSERT,
        R::CUDA_ERROR_HARDWARE_STACK_ERROR,
        R::CUDA_ERROR_ILLEGAL_INSTRUCTION,
        R::CUDA_ERROR_MISALIGNED_ADDRESS,
        R::CUDA_ERROR_INVALID_ADDRESS_SPACE,
        R::CUDA_ERROR_INVALID_PC,
        R::CUDA_ERROR_LAUNCH_FAILED,
        R::CUDA_ERROR_EXTERNAL_DEVICE,
    ]
};

/// Launches the kernel cannot take: too many resources for its block, a cooperative grid
/// larger than can be co-resident, a bad cluster shape. The variant is not a valid point.
pub const INVALID_LAUNCH_ERRORS: [sys::CUresult; 3] = {
    use sys::CUresult as R;
    [
        R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        R::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
        R::CUDA_ERROR_INVALID_CLUSTER_SIZE,
    ]
};

/// What kind of failure a driver error is: [`ErrorKind::DeviceLost`] for the
/// [`STICKY_ERRORS`], [`ErrorKind::Invalid`] for the [`INVALID_LAUNCH_ERRORS`],
/// [`ErrorKind::Compile`] for PTX the driver's JIT rejects, else [`ErrorKind::Launch`].
pub fn driver_error_kind(code: sys::CUresult) -> ErrorKind {
    if STICKY_ERRORS.contains(&code) {
        ErrorKind::DeviceLost
    } else if INVALID_LAUNCH_ERRORS.contains(&code) {
        ErrorKind::Invalid
    } else if code == sys::CUresult::CUDA_ERROR_INVALID_PTX {
        ErrorKind::Compile
    } else {
        ErrorKind::Launch
    }
}

/// A driver error as an [`Error`] of its kind ([`driver_error_kind`]), saying what was being
/// done and naming the CUDA error.
pub fn driver_error(what: &str, e: DriverError) -> Error {
    let message = format!("{what}: {}", describe(e));
    match driver_error_kind(e.0) {
        ErrorKind::DeviceLost => Error::DeviceLost(message),
        ErrorKind::Invalid => Error::InvalidLaunch(message),
        ErrorKind::Compile => Error::Compile(message),
        _ => Error::Device(message),
    }
}

/// [`driver_error`] for `map_err`.
fn device_error(what: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| driver_error(what, e)
}

/// The kind of a cudarc error that a bench's own cudarc calls returned (a `DriverError`, or
/// NVRTC's `CompileError`); `None` for other errors.
pub(crate) fn cudarc_error_kind(e: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    if let Some(d) = e.downcast_ref::<DriverError>() {
        return Some(driver_error_kind(d.0));
    }
    e.downcast_ref::<cudarc::nvrtc::CompileError>()
        .map(|c| match c {
            cudarc::nvrtc::CompileError::CompileError { .. } => ErrorKind::Compile,
            _ => ErrorKind::Other,
        })
}

/// Why nothing can be compiled on a machine without NVRTC.
const NO_NVRTC: &str = "NVRTC (libnvrtc.so.13, part of the CUDA toolkit) could not be loaded, \
                        so kernels cannot be compiled at run time: install the CUDA toolkit or \
                        put its lib directory on LD_LIBRARY_PATH";

/// Where NVRTC is asked to compile to, in the order tried.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// SASS for a real architecture (`sm_XY`): loads without JIT.
    Cubin(u32),
    /// PTX for a virtual architecture (`compute_XY`): the driver JITs it.
    Ptx(u32),
}

impl Target {
    fn option(&self) -> String {
        match self {
            Target::Cubin(arch) => format!("--gpu-architecture=sm_{arch}"),
            Target::Ptx(arch) => format!("--gpu-architecture=compute_{arch}"),
        }
    }
}

/// Why one NVRTC attempt failed.
enum CompileFailure {
    /// NVRTC does not accept the architecture option: try the next target.
    ArchRejected(String),
    /// NVRTC rejected the source (`NVRTC_ERROR_COMPILATION`): the variant does not build.
    Source(String),
    /// Anything else (a compile error in the source, an NVRTC failure): final.
    Final(String),
}

/// The NVRTC option list for one target.
fn nvrtc_options(defines: &[(&str, String)], target: &Target) -> Vec<String> {
    let mut options = vec![target.option()];
    options.extend(
        defines
            .iter()
            .map(|(name, value)| format!("-D{name}={value}")),
    );
    options
}

/// Whether `source` compiles under NVRTC with `defines` for compute capability `cc`
/// (`major * 10 + minor`), without a GPU: what kernel crates unit-test their sources with.
///
/// `Ok(false)` when NVRTC cannot be loaded (nothing to compile with); a rejected source is an
/// [`Error::Compile`] with NVRTC's log.
///
/// ```
/// # fn main() -> gputune_runtime::Result<()> {
/// let source = r#"extern "C" __global__ void k(float* y) { y[threadIdx.x] = TPB; }"#;
/// let checked = gputune_runtime::backend::cuda::compiles_for(source, &[("TPB", "256".into())], 90)?;
/// # let _ = checked;
/// # Ok(())
/// # }
/// ```
pub fn compiles_for(source: &str, defines: &[(&str, String)], cc: i32) -> Result<bool> {
    match compile_for(source, defines, cc) {
        Ok(_) => Ok(true),
        Err(Error::Device(m)) if m == NO_NVRTC => Ok(false),
        Err(e) => Err(e),
    }
}

/// Compiles `source` for compute capability `cc` (`major * 10 + minor`).
pub(crate) fn compile_for(source: &str, defines: &[(&str, String)], cc: i32) -> Result<Image> {
    let cc =
        u32::try_from(cc).map_err(|_| Error::Device(format!("invalid compute capability {cc}")))?;
    let src = CString::new(source)
        .map_err(|_| Error::Device("the kernel source contains a NUL byte".into()))?;
    if let Some((name, value)) = defines
        .iter()
        .find(|(n, v)| n.contains('\0') || v.contains('\0'))
    {
        return Err(Error::Device(format!(
            "the define {name:?}={value:?} contains a NUL byte"
        )));
    }
    // SAFETY: only tries to dlopen the candidate library names; nothing is called.
    if !unsafe { nvrtc_sys::is_culib_present() } {
        return Err(Error::Device(NO_NVRTC.into()));
    }
    let mut targets = vec![Target::Cubin(cc), Target::Ptx(cc)];
    let mut rejected = Vec::new();
    let mut i = 0;
    while i < targets.len() {
        let target = targets[i].clone();
        let options = nvrtc_options(defines, &target);
        let attempt = quietly(|| compile_once(&src, &options, &target))
            .unwrap_or_else(|panic| Err(CompileFailure::Final(format!("NVRTC failed: {panic}"))));
        match attempt {
            Ok(image) => return Ok(image),
            Err(CompileFailure::Source(message)) => return Err(Error::Compile(message)),
            Err(CompileFailure::Final(message)) => return Err(Error::Device(message)),
            Err(CompileFailure::ArchRejected(log)) => {
                rejected.push(format!("{} ({log})", target.option()));
                if i == 1 {
                    // Neither form of the device's own architecture is known to this NVRTC
                    // (a GPU newer than the toolkit): compile PTX for the newest one it
                    // knows below it, which the driver can JIT forward.
                    if let Some(older) = quietly(supported_archs)
                        .ok()
                        .flatten()
                        .and_then(|archs| archs.into_iter().filter(|&a| a < cc).max())
                    {
                        targets.push(Target::Ptx(older));
                    }
                }
            }
        }
        i += 1;
    }
    Err(Error::Device(format!(
        "NVRTC rejected every target architecture for this compute {}.{} device: {}",
        cc / 10,
        cc % 10,
        rejected.join("; ")
    )))
}

/// An NVRTC program, destroyed on drop.
struct Program(nvrtc_sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by `create_program` and destroyed only here.
        let _ = unsafe { nvrtc::destroy_program(self.0) };
    }
}

fn compile_once(
    src: &CStr,
    options: &[String],
    target: &Target,
) -> std::result::Result<Image, CompileFailure> {
    let program = Program(
        nvrtc::create_program(src, Some(c"gputune_kernel.cu"))
            .map_err(|e| CompileFailure::Final(format!("NVRTC cannot create a program: {e}")))?,
    );
    // SAFETY: `program` is live; the options contain no NUL (checked by the caller).
    if let Err(e) = unsafe { nvrtc::compile_program(program.0, options) } {
        let log = program_log(&program);
        return Err(match e.0 {
            nvrtc_sys::nvrtcResult::NVRTC_ERROR_INVALID_OPTION => {
                CompileFailure::ArchRejected(if log.is_empty() { format!("{e}") } else { log })
            }
            code => {
                let message = format!(
                    "NVRTC could not compile the kernel ({e}) with options {}:\n{log}",
                    options.join(" ")
                );
                if code == nvrtc_sys::nvrtcResult::NVRTC_ERROR_COMPILATION {
                    CompileFailure::Source(message)
                } else {
                    CompileFailure::Final(message)
                }
            }
        });
    }
    let output = |what: &str, e: nvrtc::NvrtcError| {
        CompileFailure::Final(format!("NVRTC compiled the kernel but {what} failed: {e}"))
    };
    match target {
        Target::Cubin(_) => {
            let mut size = 0usize;
            // SAFETY: `program` compiled successfully for a real architecture.
            unsafe { nvrtc_sys::nvrtcGetCUBINSize(program.0, &mut size) }
                .result()
                .map_err(|e| output("nvrtcGetCUBINSize", e))?;
            let mut cubin = vec![0u8; size];
            // SAFETY: `cubin` holds `size` bytes as NVRTC asked.
            unsafe { nvrtc_sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr().cast::<c_char>()) }
                .result()
                .map_err(|e| output("nvrtcGetCUBIN", e))?;
            Ok(Image::cubin(cubin))
        }
        Target::Ptx(_) => {
            // SAFETY: `program` compiled successfully.
            let ptx = unsafe { nvrtc::get_ptx(program.0) }.map_err(|e| output("nvrtcGetPTX", e))?;
            // Kept NUL-terminated: the driver reads the image as a C string.
            Ok(Image::ptx(&c_chars_to_string(&ptx)))
        }
    }
}

fn program_log(program: &Program) -> String {
    // SAFETY: `program` is live.
    match unsafe { nvrtc::get_program_log(program.0) } {
        Ok(log) => c_chars_to_string(&log).trim().to_owned(),
        Err(e) => format!("(no log: {e})"),
    }
}

/// The architectures this NVRTC can compile for, as `major * 10 + minor`.
fn supported_archs() -> Option<Vec<u32>> {
    let mut count = 0;
    // SAFETY: writes one int.
    unsafe { nvrtc_sys::nvrtcGetNumSupportedArchs(&mut count) }
        .result()
        .ok()?;
    let mut archs = vec![0; usize::try_from(count).ok()?];
    // SAFETY: `archs` holds `count` ints as NVRTC asked.
    unsafe { nvrtc_sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .ok()?;
    Some(
        archs
            .into_iter()
            .filter_map(|a| u32::try_from(a).ok())
            .collect(),
    )
}

/// A NUL-terminated C buffer as a string (everything if there is no NUL).
fn c_chars_to_string(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}
static QUIET_HOOK: Once = Once::new();

/// Runs `f`, turning a panic into `Err(message)` without printing it.
///
/// cudarc panics when a library or symbol is missing; a bench must print one clear line, not
/// a backtrace. The panic hook is wrapped once, and silenced only on this thread while `f`
/// runs, so panics elsewhere still print.
fn quietly<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    QUIET_HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was_quiet = QUIET.with(|q| q.replace(true));
    let outcome = panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was_quiet));
    outcome.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> RawAttributes {
        RawAttributes {
            name: Some("NVIDIA H100 80GB HBM3".into()),
            compute_capability: Some((9, 0)),
            multiprocessor_count: Some(132),
            clock_rate_khz: Some(1_980_000),
            memory_clock_rate_khz: Some(2_619_000),
            global_memory_bus_width_bits: Some(5120),
            total_memory_bytes: Some(85_029_158_912),
            l2_cache_size_bytes: Some(52_428_800),
            max_threads_per_block: Some(1024),
            max_shared_memory_per_block_optin: Some(232_448),
            ecc_enabled: Some(1),
        }
    }

    #[test]
    fn open_without_a_driver_is_no_device_not_a_panic() {
        // SAFETY: only tries to dlopen.
        if unsafe { sys::is_culib_present() } {
            return; // a machine with a driver: nothing to check here
        }
        match CudaBackend::open(0) {
            Err(Error::NoDevice(msg)) => {
                assert!(msg.contains("libcuda"), "{msg}");
                assert!(msg.contains("driver"), "{msg}");
            }
            other => panic!("expected NoDevice, got {other:?}"),
        }
    }

    #[test]
    fn attributes_map_to_device_info_in_si_units() {
        let info = device_info(3, &h100());
        assert_eq!(info.id, 3);
        assert_eq!(info.backend, BackendKind::Cuda);
        assert_eq!(info.name, "NVIDIA H100 80GB HBM3");
        assert_eq!(info.sm_version, Some(90));
        assert_eq!(info.sm_count, Some(132));
        assert_eq!(info.sm_default_clock_rate, Some(1.98e9));
        assert_eq!(info.memory_clock_rate, Some(2.619e9));
        assert_eq!(info.memory_bus_width, Some(5120));
        assert_eq!(info.global_memory_size, Some(85_029_158_912));
        assert_eq!(info.cache_size, Some(52_428_800));
        assert_eq!(info.max_threads_per_block, Some(1024));
        assert_eq!(info.shared_memory_per_block, Some(232_448));
        assert_eq!(info.ecc_enabled, Some(true));
        let bandwidth = info.peak_bandwidth().unwrap_or_default();
        assert!((bandwidth - 3.35232e12).abs() < 1.0, "{bandwidth}");
    }

    #[test]
    fn failed_or_zero_attributes_are_unknown() {
        let raw = RawAttributes {
            clock_rate_khz: Some(0),
            memory_clock_rate_khz: None,
            global_memory_bus_width_bits: Some(0),
            l2_cache_size_bytes: Some(0),
            multiprocessor_count: Some(-1),
            total_memory_bytes: Some(0),
            ..h100()
        };
        let info = device_info(0, &raw);
        assert_eq!(info.sm_default_clock_rate, None);
        assert_eq!(info.memory_clock_rate, None);
        assert_eq!(info.memory_bus_width, None);
        assert_eq!(info.cache_size, None);
        assert_eq!(info.sm_count, None);
        assert_eq!(info.global_memory_size, None);
        assert_eq!(info.peak_bandwidth(), None);
        assert_eq!(info.sm_version, Some(90));

        let info = device_info(2, &RawAttributes::default());
        assert_eq!(info.name, "CUDA device 2");
        assert_eq!(info.sm_version, None);
        assert_eq!(info.ecc_enabled, None);
        assert_eq!(info.shared_memory_per_block, None);
        assert_eq!(info.max_threads_per_block, None);
    }

    #[test]
    fn ecc_zero_means_disabled_not_unknown() {
        let raw = RawAttributes {
            ecc_enabled: Some(0),
            ..h100()
        };
        assert_eq!(device_info(0, &raw).ecc_enabled, Some(false));
    }

    #[test]
    fn compute_capability_is_major_times_ten_plus_minor() {
        let raw = RawAttributes {
            compute_capability: Some((12, 1)),
            ..h100()
        };
        assert_eq!(device_info(0, &raw).sm_version, Some(121));
        let raw = RawAttributes {
            compute_capability: Some((0, 0)),
            ..h100()
        };
        assert_eq!(device_info(0, &raw).sm_version, None);
    }

    #[test]
    fn sm_clock_is_cycles_over_globaltimer_nanoseconds() {
        // 1.98e6 cycles in 1 ms: 1.98 GHz.
        let rate = sm_clock_rate([5_000_000, 70_000, 6_000_000, 2_050_000]);
        assert!(rate.is_some_and(|r| (r - 1.98e9).abs() < 1.0), "{rate:?}");
        // Half the cycles in the same time: throttled to half.
        let rate = sm_clock_rate([5_000_000, 70_000, 6_000_000, 1_060_000]);
        assert!(rate.is_some_and(|r| (r - 0.99e9).abs() < 1.0), "{rate:?}");
    }

    #[test]
    fn sm_clock_is_unknown_without_elapsed_time_or_a_read() {
        assert_eq!(sm_clock_rate([7, 100, 7, 200]), None);
        assert_eq!(sm_clock_rate([0, 0, 6_000_000, 1_060_000]), None);
        assert_eq!(sm_clock_rate([5_000_000, 70_000, 0, 0]), None);
        assert_eq!(sm_clock_rate([6_000_000, 70_000, 5_000_000, 80_000]), None);
        assert_eq!(sm_clock_rate([5_000_000, 80_000, 6_000_000, 70_000]), None);
    }

    #[test]
    fn timeout_converts_to_nanoseconds_and_saturates() {
        assert_eq!(timeout_ns(DEFAULT_BLOCKING_TIMEOUT), 30_000_000_000);
        assert_eq!(timeout_ns(0.25), 250_000_000);
        assert_eq!(timeout_ns(f64::INFINITY), u64::MAX);
        assert_eq!(timeout_ns(1e30), u64::MAX);
    }

    #[test]
    fn ptx_declares_both_entry_points_with_their_parameters() {
        for entry in [SPIN_KERNEL, TIMESTAMP_KERNEL] {
            assert!(
                KERNELS_PTX.contains(&format!(".visible .entry {entry}(")),
                "{entry}"
            );
        }
        assert!(KERNELS_PTX.contains(".version 7.0"));
        assert!(KERNELS_PTX.contains(".target sm_52"));
        assert!(KERNELS_PTX.contains("%globaltimer"));
        assert!(KERNELS_PTX.contains("%clock64"));
        assert!(KERNELS_PTX.contains("ld.volatile.global.u32"));
        // cudarc hands the text to the driver as a C string.
        assert!(!KERNELS_PTX.contains('\0'));
        // Every brace opened is closed: a truncated edit would fail to JIT at run time.
        assert_eq!(
            KERNELS_PTX.matches('{').count(),
            KERNELS_PTX.matches('}').count()
        );
    }

    #[test]
    fn shared_words_have_the_offsets_the_kernels_assume() {
        // The spin kernel writes a u32 marker; the timestamp kernel writes 16 bytes per slot.
        assert_eq!(offset_of!(Shared, flag), 0);
        assert_eq!(offset_of!(Shared, timeout_marker), 4);
        assert_eq!(offset_of!(Shared, timestamps) % 8, 0);
        assert_eq!(std::mem::size_of::<Shared>(), 8 + 32);
    }

    #[test]
    fn nvrtc_options_put_the_architecture_first_then_defines() {
        let defines = [("IPT", "4".to_string()), ("TPB", "256".to_string())];
        assert_eq!(
            nvrtc_options(&defines, &Target::Cubin(90)),
            ["--gpu-architecture=sm_90", "-DIPT=4", "-DTPB=256"]
        );
        assert_eq!(
            nvrtc_options(&[], &Target::Ptx(100)),
            ["--gpu-architecture=compute_100"]
        );
    }

    #[test]
    fn compiling_without_nvrtc_is_an_error_not_a_panic() {
        // SAFETY: only tries to dlopen.
        if unsafe { nvrtc_sys::is_culib_present() } {
            return;
        }
        match compile_for("extern \"C\" __global__ void k() {}", &[], 90) {
            Err(Error::Device(msg)) => assert!(msg.contains("NVRTC"), "{msg}"),
            Err(other) => panic!("expected a device error, got {other:?}"),
            Ok(_) => panic!("compiled without NVRTC"),
        }
    }

    #[test]
    fn sticky_errors_lose_the_device_and_others_do_not() {
        use sys::CUresult as R;
        for code in [
            R::CUDA_ERROR_ILLEGAL_ADDRESS,
            R::CUDA_ERROR_LAUNCH_FAILED,
            R::CUDA_ERROR_ILLEGAL_INSTRUCTION,
            R::CUDA_ERROR_MISALIGNED_ADDRESS,
            R::CUDA_ERROR_HARDWARE_STACK_ERROR,
            R::CUDA_ERROR_INVALID_PC,
            R::CUDA_ERROR_INVALID_ADDRESS_SPACE,
            R::CUDA_ERROR_ASSERT,
            R::CUDA_ERROR_LAUNCH_TIMEOUT,
            R::CUDA_ERROR_EXTERNAL_DEVICE,
            R::CUDA_ERROR_ECC_UNCORRECTABLE,
        ] {
            assert_eq!(driver_error_kind(code), ErrorKind::DeviceLost, "{code:?}");
        }
        // Errors that leave the context usable: the state fails, the process goes on.
        for code in [
            R::CUDA_ERROR_INVALID_VALUE,
            R::CUDA_ERROR_OUT_OF_MEMORY,
            R::CUDA_ERROR_NOT_READY,
            R::CUDA_ERROR_INVALID_HANDLE,
            R::CUDA_ERROR_NOT_FOUND,
            R::CUDA_ERROR_TIMEOUT,
            R::CUDA_ERROR_UNKNOWN,
        ] {
            assert_eq!(driver_error_kind(code), ErrorKind::Launch, "{code:?}");
        }
        assert_eq!(
            driver_error_kind(R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES),
            ErrorKind::Invalid
        );
        assert_eq!(
            driver_error_kind(R::CUDA_ERROR_INVALID_PTX),
            ErrorKind::Compile
        );
    }

    #[test]
    fn a_bench_s_own_cudarc_errors_are_classified_through_the_box() {
        // What `?` on a cudarc call inside a bench function produces.
        let lost: crate::BoxError =
            Box::new(DriverError(sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert_eq!(ErrorKind::of(lost.as_ref()), ErrorKind::DeviceLost);
        let failed = Error::Launch(Box::new(DriverError(
            sys::CUresult::CUDA_ERROR_INVALID_VALUE,
        )));
        assert_eq!(failed.kind(), ErrorKind::Launch);
        let too_big = Error::Launch(Box::new(DriverError(
            sys::CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        )));
        assert_eq!(too_big.kind(), ErrorKind::Invalid);
    }

    fn h100_limits() -> LaunchLimits {
        LaunchLimits {
            max_threads_per_block: 256,
            max_dynamic_shared_bytes: 48 * 1024,
            max_block_dim: [1024, 1024, 64],
            max_grid_dim: [i32::MAX as u32, 65535, 65535],
        }
    }

    fn config(grid: (u32, u32, u32), block: (u32, u32, u32), shared: u32) -> LaunchConfig {
        LaunchConfig {
            grid_dim: grid,
            block_dim: block,
            shared_mem_bytes: shared,
        }
    }

    #[test]
    fn the_image_key_covers_defines_their_order_the_device_and_nvrtc() {
        let src = "extern \"C\" __global__ void k() {}";
        let d = |ipt: &str, tpb: &str| vec![("IPT", ipt.to_string()), ("TPB", tpb.to_string())];
        let key = image_key(src, &d("4", "256"), 90, (13, 0));
        assert_eq!(key, image_key(src, &d("4", "256"), 90, (13, 0)));
        assert_eq!(
            key,
            Key::new(
                src,
                &nvrtc_options(&d("4", "256"), &Target::Cubin(90)),
                (13, 0)
            )
        );
        for other in [
            image_key(src, &d("8", "256"), 90, (13, 0)),
            image_key(src, &d("4", "128"), 90, (13, 0)),
            image_key(src, &d("4", "256"), 100, (13, 0)),
            image_key(src, &d("4", "256"), 90, (13, 1)),
            image_key(
                "extern \"C\" __global__ void j() {}",
                &d("4", "256"),
                90,
                (13, 0),
            ),
            image_key(
                src,
                &[("TPB", "256".to_string()), ("IPT", "4".to_string())],
                90,
                (13, 0),
            ),
        ] {
            assert_ne!(other, key);
        }
    }

    #[test]
    fn launches_within_the_kernel_s_limits_pass() {
        let limits = h100_limits();
        assert!(limits
            .check(&config((1 << 20, 1, 1), (256, 1, 1), 0))
            .is_ok());
        assert!(limits
            .check(&config((4, 4, 4), (16, 16, 1), 48 * 1024))
            .is_ok());
    }

    #[test]
    fn launches_over_a_limit_are_invalid_and_say_which() {
        let limits = h100_limits();
        let invalid = |c: LaunchConfig| match limits.check(&c) {
            Err(e @ Error::InvalidLaunch(_)) => {
                assert_eq!(e.kind(), ErrorKind::Invalid);
                e.to_string()
            }
            other => panic!("expected an invalid launch, got {other:?}"),
        };
        let msg = invalid(config((1, 1, 1), (512, 1, 1), 0));
        assert!(msg.contains("512 threads"), "{msg}");
        assert!(
            msg.contains("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
            "{msg}"
        );
        // The product counts, not one dimension.
        let msg = invalid(config((1, 1, 1), (32, 16, 1), 0));
        assert!(msg.contains("512 threads (32×16×1)"), "{msg}");
        let msg = invalid(config((1, 1, 1), (128, 1, 1), 48 * 1024 + 1));
        assert!(
            msg.contains("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"),
            "{msg}"
        );
        let msg = invalid(config((1, 70_000, 1), (128, 1, 1), 0));
        assert!(msg.contains("grid's y dimension 70000"), "{msg}");
        let msg = invalid(config((1, 1, 1), (1, 1, 128), 0));
        assert!(msg.contains("block's z dimension 128"), "{msg}");
        let msg = invalid(config((0, 1, 1), (128, 1, 1), 0));
        assert!(msg.contains("empty launch"), "{msg}");
    }

    #[test]
    fn a_source_nvrtc_rejects_is_a_compile_error_where_it_is_installed() {
        // NVRTC needs no GPU, but it is part of the CUDA toolkit: skip where it is missing.
        // SAFETY: only tries to dlopen.
        if !unsafe { nvrtc_sys::is_culib_present() } {
            return;
        }
        let source = "#if BROKEN\n#error \"injected\"\n#endif\nextern \"C\" __global__ void k() {}";
        match compile_for(source, &[("BROKEN", "1".into())], 90) {
            Err(e @ Error::Compile(_)) => {
                assert_eq!(e.kind(), ErrorKind::Compile);
                let msg = e.to_string();
                assert!(
                    msg.contains("injected") && msg.contains("-DBROKEN=1"),
                    "{msg}"
                );
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
        assert!(compile_for(source, &[("BROKEN", "0".into())], 90).is_ok());
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

    #[test]
    fn no_nvrtc_means_no_version_and_a_plain_error() {
        // SAFETY: only tries to dlopen.
        if unsafe { nvrtc_sys::is_culib_present() } {
            return;
        }
        match nvrtc_version() {
            Err(Error::Device(msg)) => assert!(msg.contains("NVRTC"), "{msg}"),
            other => panic!("expected a device error, got {other:?}"),
        }
    }

    #[test]
    fn c_buffers_stop_at_the_first_nul() {
        let chars: Vec<c_char> = b"ptx text\0junk".iter().map(|&b| b as c_char).collect();
        assert_eq!(c_chars_to_string(&chars), "ptx text");
        let chars: Vec<c_char> = b"no nul".iter().map(|&b| b as c_char).collect();
        assert_eq!(c_chars_to_string(&chars), "no nul");
    }

    #[test]
    fn quietly_turns_a_panic_into_its_message() {
        assert_eq!(quietly(|| 7), Ok(7));
        let out: std::result::Result<(), String> = quietly(|| panic!("Missing symbol cuFoo"));
        assert_eq!(out, Err("Missing symbol cuFoo".to_string()));
        let n = 3;
        let out: std::result::Result<(), String> = quietly(|| panic!("value {n}"));
        assert_eq!(out, Err("value 3".to_string()));
    }
}
