//! Timing on the GPU: the spin kernel holds the stream while a sample is enqueued, CUDA
//! events time the launches, and the timestamp kernel reads the SM clock around them.

use std::mem::offset_of;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{
    result as driver, sys, CudaContext, CudaEvent, CudaFunction, CudaSlice, DevicePtr,
    LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;

use super::device::{device_info, driver_version, RawAttributes, MIN_DRIVER_VERSION};
use super::errors::{describe, device_error};
use super::handles::CudaHandles;
use super::mapped::{MappedWords, Shared};
use super::quiet::quietly;
use super::shared_poison::SharedPoison;
use crate::backend::{Backend, ColdSample, Launches};
use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::launch::Launch;

/// How long the spin kernel holds the stream before it gives up, in seconds (nvbench's value).
pub const DEFAULT_BLOCKING_TIMEOUT: f64 = 30.0;

/// Entry point of the spin kernel in [`KERNELS_PTX`].
const SPIN_KERNEL: &str = "gputune_spin";
/// Entry point of the timestamp kernel in [`KERNELS_PTX`].
const TIMESTAMP_KERNEL: &str = "gputune_timestamp";
/// Entry point of the L2 flush kernel in [`KERNELS_PTX`].
const FLUSH_KERNEL: &str = "gputune_flush";
/// The flush buffer's size in multiples of the L2 size: reading twice the cache's size
/// through it leaves none of the user's lines, whatever the cache's set hashing.
const FLUSH_FACTOR: usize = 2;

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
/// `gputune_flush(buffer, vectors, sink)`: reads `vectors` 16-byte vectors of `buffer` through
/// L2 (`ld.global.cg.v4`), grid-stride. It leaves L2 full of clean lines of the flush buffer, so the
/// measured kernel starts with none of its own data cached and nothing to write back. (A
/// memset flush, as nvbench's, leaves L2 full of dirty lines whose write-back then competes
/// with a memory-bound kernel for bandwidth: on an H200 that made a 126 µs kernel read
/// 130 µs, against Nsight Compute's own flush.) The XOR of the words is stored to `sink`
/// only if it equals a value the zeroed buffer never gives, so the loads cannot be elided.
/// Each thread loads 16 bytes at a time: with 4-byte loads a full grid keeps about 1 MB in
/// flight, too little to read twice an H200's L2 at its memory's speed (the flush took about
/// 70 µs of every sample, more than many a kernel it precedes; 16 bytes, about 30 µs).
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

.visible .entry gputune_flush(
	.param .u64 gputune_flush_buffer,
	.param .u64 gputune_flush_vectors,
	.param .u64 gputune_flush_sink
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<12>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [gputune_flush_buffer];
	ld.param.u64 	%rd2, [gputune_flush_vectors];
	ld.param.u64 	%rd3, [gputune_flush_sink];
	cvta.to.global.u64 	%rd4, %rd1;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mul.wide.u32 	%rd5, %r1, %r2;
	cvt.u64.u32 	%rd6, %r3;
	add.s64 	%rd5, %rd5, %rd6;
	mov.u32 	%r4, %nctaid.x;
	mul.wide.u32 	%rd7, %r4, %r2;
	mov.u32 	%r5, 0;
	setp.ge.u64 	%p1, %rd5, %rd2;
	@%p1 bra 	$L_flush_end;
$L_flush_loop:
	shl.b64 	%rd8, %rd5, 4;
	add.s64 	%rd9, %rd4, %rd8;
	ld.global.cg.v4.u32 	{%r6, %r7, %r8, %r9}, [%rd9];
	xor.b32 	%r5, %r5, %r6;
	xor.b32 	%r5, %r5, %r7;
	xor.b32 	%r5, %r5, %r8;
	xor.b32 	%r5, %r5, %r9;
	add.s64 	%rd5, %rd5, %rd7;
	setp.lt.u64 	%p2, %rd5, %rd2;
	@%p2 bra 	$L_flush_loop;
$L_flush_end:
	setp.ne.u32 	%p1, %r5, 0x9E3779B9;
	@%p1 bra 	$L_flush_done;
	cvta.to.global.u64 	%rd10, %rd3;
	st.global.u32 	[%rd10], %r5;
$L_flush_done:
	ret;
}
";

/// Times CUDA launches with events, following nvbench's cold and hot protocols.
pub struct CudaBackend {
    info: DeviceInfo,
    handles: CudaHandles,
    start: CudaEvent,
    stop: CudaEvent,
    /// Recorded after a cold sample's last timestamp: the host waits for it, not for the
    /// stream, so the next sample's flush can already run behind it.
    done: CudaEvent,
    spin: CudaFunction,
    timestamp: CudaFunction,
    /// Written in full before every cold sample to evict the user's data from L2; `None`
    /// when the L2 size is unknown.
    flush: Option<FlushBuffer>,
    /// Fills shared memory with NaN before a verifying run; loaded at the first one, since
    /// a process that verifies nothing need not pay its JIT.
    shared_poison: Option<SharedPoison>,
    /// Whether the next cold sample's flush is already on the stream (enqueued at the end of
    /// the sample before).
    flushed_ahead: bool,
    mapped: MappedWords,
    /// Blocks of the timestamp kernel: one per SM, so that one of them lands on SM 0.
    timestamp_blocks: u32,
    blocking_timeout: f64,
    /// Whether the spin kernel holds the stream during a sample (off under a profiler).
    blocking: bool,
    /// The device's PCI bus id for NVML's energy counter, or why it has none; found on the
    /// first read (`None` until then).
    pub(super) energy_device: Option<std::result::Result<String, String>>,
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
    /// [`FLUSH_KERNEL`].
    kernel: CudaFunction,
    /// Its grid: a few blocks per SM, enough to saturate memory.
    blocks: u32,
}

impl CudaBackend {
    /// Opens CUDA device `ordinal` (as the driver numbers them, after `CUDA_VISIBLE_DEVICES`).
    ///
    /// A machine without a driver, without a GPU, with a driver older than CUDA 13.0, or
    /// without device `ordinal` gets [`Error::NoDevice`] with a message saying which; it never
    /// panics.
    pub fn open(ordinal: u32) -> Result<CudaBackend> {
        with_driver(ordinal, || Self::open_with_driver(ordinal))
    }

    /// What device `ordinal` is, without opening it: the driver's attributes need no
    /// context, and a context costs a few hundred milliseconds (the bench's `--devices`).
    /// The same checks and errors as [`CudaBackend::open`].
    pub fn describe(ordinal: u32) -> Result<DeviceInfo> {
        with_driver(ordinal, || {
            let device = checked_device(ordinal)?;
            Ok(device_info(ordinal, &RawAttributes::read(device)))
        })
    }

    fn open_with_driver(ordinal: u32) -> Result<CudaBackend> {
        let device = checked_device(ordinal)?;
        let context = CudaContext::new(ordinal as usize).map_err(|e| {
            Error::NoDevice(format!(
                "cannot create a context on CUDA device {ordinal}: {}",
                describe(e)
            ))
        })?;
        let info = device_info(ordinal, &RawAttributes::read(device));
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
        let done = context
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .map_err(device_error("creating a synchronisation event"))?;
        let module = context
            .load_module(Ptx::from_src(KERNELS_PTX))
            .map_err(device_error("loading the measurement kernels (PTX JIT)"))?;
        let spin = module
            .load_function(SPIN_KERNEL)
            .map_err(device_error("finding the spin kernel"))?;
        let timestamp = module
            .load_function(TIMESTAMP_KERNEL)
            .map_err(device_error("finding the timestamp kernel"))?;
        let flush_kernel = module
            .load_function(FLUSH_KERNEL)
            .map_err(device_error("finding the flush kernel"))?;
        let flush = match info.cache_size.and_then(|b| usize::try_from(b).ok()) {
            Some(l2) if l2 > 0 => {
                // Whole vectors, so that the kernel reads every byte.
                let bytes = (l2 * FLUSH_FACTOR).next_multiple_of(16);
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
                    kernel: flush_kernel,
                    blocks: info.sm_count.unwrap_or(1).max(1).saturating_mul(8),
                })
            }
            _ => None,
        };
        let mapped = MappedWords::new(&context).map_err(device_error(
            "allocating host-mapped memory for the spin kernel",
        ))?;
        Ok(CudaBackend {
            shared_poison: None,
            timestamp_blocks: info.sm_count.unwrap_or(1).max(1),
            info,
            handles: CudaHandles { context, stream },
            start,
            stop,
            done,
            spin,
            timestamp,
            flush,
            flushed_ahead: false,
            mapped,
            blocking_timeout: DEFAULT_BLOCKING_TIMEOUT,
            blocking: true,
            energy_device: None,
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
        if self.blocking {
            // SAFETY: the arguments match the PTX signature (u64, u64, u64); both pointers
            // are device views of `self.mapped`, which outlives every sample.
            unsafe {
                stream
                    .launch_builder(&self.spin)
                    .arg(&flag)
                    .arg(&marker)
                    .arg(&timeout_ns)
                    .launch(one)
            }
            .map_err(device_error("launching the spin kernel"))?;
        }
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

    /// Enqueues the L2 flush (nothing when the L2 size is unknown).
    fn launch_flush(&self) -> Result<()> {
        let Some(flush) = &self.flush else {
            return Ok(());
        };
        let vectors = (flush.bytes / 16) as u64;
        let config = LaunchConfig {
            grid_dim: (flush.blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments match the PTX signature (u64, u64, u64); the kernel reads
        // `vectors` 16-byte vectors of the live allocation owned by `flush` (a multiple of
        // 16 bytes, aligned as every allocation is) and writes at most its first word.
        unsafe {
            self.handles
                .stream
                .launch_builder(&flush.kernel)
                .arg(&flush.ptr)
                .arg(&vectors)
                .arg(&flush.ptr)
                .launch(config)
        }
        .map_err(device_error("flushing L2"))?;
        Ok(())
    }

    /// Ends a sample whose launches were all enqueued: records `done`, enqueues the next
    /// sample's flush behind it and waits for `done`. Returns whether a flush is now on the
    /// stream ahead of the next sample.
    fn flush_ahead(&self) -> Result<bool> {
        let stream = &self.handles.stream;
        self.done
            .record(stream)
            .map_err(device_error("recording the end of a sample"))?;
        if let Err(e) = self.launch_flush() {
            self.drain()?;
            return Err(e);
        }
        self.done
            .synchronize()
            .map_err(device_error("synchronising after a sample"))?;
        Ok(self.flush.is_some())
    }

    /// Waits for everything on the stream.
    fn drain(&self) -> Result<()> {
        self.handles
            .stream
            .synchronize()
            .map_err(device_error("synchronising after a sample"))
    }
}

impl Backend for CudaBackend {
    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn cold_sample(&mut self, launches: &mut Launches<'_>) -> Result<ColdSample> {
        self.handles
            .context
            .bind_to_thread()
            .map_err(device_error("binding the CUDA context"))?;
        // The previous sample's timestamps and spin kernel are done (its `done` event was
        // waited for), so nothing on the device reads or writes these.
        let shared = self.mapped.shared();
        for t in &shared.timestamps {
            t.store(0, Ordering::Relaxed);
        }
        shared.timeout_marker.store(0, Ordering::Relaxed);
        shared.flag.store(0, Ordering::SeqCst);

        let cpu_start = Instant::now();
        // The flush is enqueued, not waited for (nvbench synchronises here): the spin kernel
        // behind it holds the stream, so the start event still follows the flush, and the host
        // enqueues the sample's launches while the device reads the flush buffer instead of
        // leaving the device idle for a synchronisation round trip. Usually the sample before
        // has already put it on the stream (below).
        if !std::mem::take(&mut self.flushed_ahead) {
            self.launch_flush()?;
        }
        let held = {
            // Releases the spin kernel even if the user's closure panics.
            let _release = Release(&self.mapped.shared().flag);
            self.held(launches)
        };
        // The next sample's flush goes behind this one's last timestamp, and the host waits
        // for that timestamp only: the device flushes while the host reads this sample, runs
        // the stopping criterion and enqueues the next one, instead of idling through the
        // wake-up and the flush's launch latency (about a fifth of a short kernel's sample
        // cost). The kernels meet L2 exactly as before: the flush's clean lines, nothing else.
        // A flush left over when no sample follows only delays the stream's next work.
        let synced = match held {
            Ok(()) => self.flush_ahead().map(|ahead| self.flushed_ahead = ahead),
            // Even after an error the stream is drained, so the next sample starts clean.
            Err(_) => self.drain(),
        };
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

    fn begin_cold_run(&mut self) {
        // The verifying run that replaces a state's warm-up, for one, ran after the flush the
        // last sample of the state before left on the stream.
        self.flushed_ahead = false;
    }

    fn hot_batch(&mut self, launches: &mut Launches<'_>, count: u64) -> Result<f64> {
        // A flush a cold sample left on the stream runs before this batch, whose data then
        // fills L2: the next cold sample must flush again (after the hot loop, or the energy
        // batches, of the state before).
        self.flushed_ahead = false;
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

    fn set_blocking_kernel(&mut self, enabled: bool) {
        self.blocking = enabled;
    }

    fn energy_counter(&mut self) -> std::result::Result<f64, String> {
        self.read_energy()
    }

    fn cuda(&self) -> Option<&CudaHandles> {
        Some(&self.handles)
    }

    fn poison_shared_memory(&mut self) -> Result<()> {
        let poison = match &mut self.shared_poison {
            Some(p) => p,
            none => none.insert(SharedPoison::load(
                &self.handles.context,
                self.info.sm_count,
            )?),
        };
        poison.launch(&self.handles.stream)
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

/// Runs `f` with the driver loaded, turning a missing library or entry point into
/// [`Error::NoDevice`] (cudarc panics on those) instead of a panic.
fn with_driver<T>(ordinal: u32, f: impl FnOnce() -> Result<T>) -> Result<T> {
    if !crate::backend::cuda::library::driver_present() {
        return Err(Error::NoDevice(
            "the NVIDIA driver library (libcuda.so.1) could not be loaded: this machine has \
             no NVIDIA driver, or its library directory is not on the loader path \
             (LD_LIBRARY_PATH)"
                .into(),
        ));
    }
    match quietly(f) {
        Ok(result) => result,
        Err(panic) => Err(Error::NoDevice(format!(
            "the NVIDIA driver library could not be used to open CUDA device {ordinal}: \
             {panic}"
        ))),
    }
}

/// The driver's handle of device `ordinal`, after checking the driver's version and that the
/// device exists.
fn checked_device(ordinal: u32) -> Result<sys::CUdevice> {
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
    let ordinal =
        i32::try_from(ordinal).map_err(|_| Error::NoDevice(format!("no CUDA device {ordinal}")))?;
    driver::device::get(ordinal)
        .map_err(|e| Error::NoDevice(format!("cannot get CUDA device {ordinal}: {}", describe(e))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_without_a_driver_is_no_device_not_a_panic() {
        if crate::backend::cuda::library::driver_present() {
            crate::skipped("checks the path without an NVIDIA driver, and libcuda loads here");
            return;
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
}
