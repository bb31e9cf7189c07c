//! The kernel clock: CUPTI's activity records time each kernel, copy and memset on the GPU
//! itself, from its start to its end.
//!
//! CUDA events bracket more than the launches: the front end's work of starting the first
//! kernel and retiring the last, 1.3–2.3 µs on an H200, which Nsight Compute's
//! `gpu__time_duration` and Nsight Systems do not count. On a 56 µs kernel that reads 3.5 %
//! slow. A cold sample timed by this clock is the span from the first of the user's
//! operations to start to the last to end, as the activity records give them.
//!
//! The sample's operations are told from the measurement's own by the timestamp kernel that
//! [`super::CudaBackend`] launches just before the start event and just after the stop event:
//! whatever ran between those two is the user's. CUPTI delivers records through C callbacks
//! with no user data, so they land in one process-wide list, drained by each sample.
//!
//! Only one CUPTI client may trace a process: under Nsight Compute or Nsight Systems the
//! subscription fails and cold samples keep the events' clock ([`Timer::Auto`]).

use std::alloc::{alloc, dealloc, Layout};
use std::ffi::CStr;
use std::ptr;
use std::sync::{Mutex, OnceLock};

use cudarc::cupti::result::{activity, get_timestamp, subscribe, CuptiError};
use cudarc::cupti::sys;

use super::quiet::quietly;

/// What a record is to a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// The timestamp kernel: it opens and closes the sample.
    Marker,
    /// One of the measurement's other kernels (spin, flush).
    Helper,
    /// The user's kernel, copy or memset.
    Work,
}

/// One GPU operation from CUPTI's records, in CUPTI's nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub role: Role,
    pub start: u64,
    pub end: u64,
}

/// The user's span in one sample's records: from the first operation that started after the
/// first marker at or after `since` to the last that ended before the next marker, in
/// nanoseconds. `None` when the two markers or any work between them are missing (records
/// dropped, or a sample that launched nothing CUPTI sees).
pub(super) fn sample_span(spans: &[Span], since: u64) -> Option<u64> {
    let mut markers: Vec<&Span> = spans
        .iter()
        .filter(|s| s.role == Role::Marker && s.start >= since)
        .collect();
    markers.sort_by_key(|s| s.start);
    let (open, close) = (markers.first()?, markers.get(1)?);
    let work = spans
        .iter()
        .filter(|s| s.role == Role::Work && s.start >= open.end && s.end <= close.start);
    let (first, last) = work.fold((u64::MAX, 0u64), |(a, b), s| (a.min(s.start), b.max(s.end)));
    (first != u64::MAX).then(|| last.saturating_sub(first))
}

/// The kernel clock of this process, once started.
#[derive(Debug)]
pub(super) struct KernelClock(());

/// Records delivered by CUPTI and not yet drained.
static RECORDS: Mutex<Vec<Span>> = Mutex::new(Vec::new());
/// The outcome of starting CUPTI: once per process, whichever backend asks first.
static STARTED: OnceLock<Result<(), String>> = OnceLock::new();

/// Bytes of each buffer handed to CUPTI: a sample's few records fit many times over.
const BUFFER_BYTES: usize = 256 * 1024;
/// CUPTI wants its buffers 8-byte aligned.
const BUFFER_ALIGN: usize = 8;
/// `cuptiActivityFlushAll`'s flag that hands over buffers that are not full yet.
const FLUSH_FORCED: u32 = sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED as u32;

/// Most records kept between two drains.
const MAX_RECORDS: usize = 1 << 16;
/// Names of the timestamp kernel and of the other helper kernels, as CUPTI reports them.
const MARKER: &str = "gputune_timestamp";
const HELPER_PREFIX: &str = "gputune_";

impl KernelClock {
    /// Starts CUPTI's activity tracing of kernels, copies and memsets for this process, or
    /// says why it cannot: libcupti not found, another CUPTI client (a profiler) already
    /// attached, or an older CUPTI than the driver needs.
    pub(super) fn start() -> Result<KernelClock, String> {
        STARTED
            .get_or_init(|| match quietly(start_tracing) {
                Ok(r) => r,
                Err(panic) => Err(format!("CUPTI could not be used: {panic}")),
            })
            .clone()
            .map(|()| KernelClock(()))
    }

    /// CUPTI's clock now, in nanoseconds: a sample's records are those after this.
    pub(super) fn now(&self) -> Option<u64> {
        let mut t = 0u64;
        // SAFETY: writes one u64 through a valid pointer.
        unsafe { get_timestamp(&mut t) }.ok().map(|()| t)
    }

    /// Runs `f` with tracing off: a hot batch's back-to-back launches are timed by events,
    /// and tracing each of them would only add work to what is measured.
    pub(super) fn paused<T>(&self, f: impl FnOnce() -> T) -> T {
        for kind in KINDS {
            let _ = activity::disable(kind);
        }
        let out = f();
        for kind in KINDS {
            let _ = activity::enable(kind);
        }
        out
    }

    /// Everything recorded since the last drain. The caller has synchronised the stream, so
    /// the sample's records are complete; a forced flush hands over half-filled buffers too.
    pub(super) fn drain(&self) -> Vec<Span> {
        let _ = activity::flush_all(FLUSH_FORCED);
        std::mem::take(&mut *lock_records())
    }
}

fn start_tracing() -> Result<(), String> {
    load_library()?;
    let mut subscriber: sys::CUpti_SubscriberHandle = ptr::null_mut();
    // SAFETY: the handle is written by CUPTI; no callback is registered through it.
    unsafe { subscribe(&mut subscriber, None, ptr::null_mut()) }.map_err(|e| match e.0 {
        sys::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => {
            "another CUPTI client (a profiler) is attached to this process".to_string()
        }
        other => format!("CUPTI did not start: {other:?}"),
    })?;
    activity::register_callbacks(Some(buffer_requested), Some(buffer_completed))
        .map_err(|e| cupti_error("registering the activity buffers", e))?;
    for kind in KINDS {
        activity::enable(kind).map_err(|e| cupti_error("enabling activity records", e))?;
    }
    Ok(())
}

/// The records a sample is timed by.
const KINDS: [sys::CUpti_ActivityKind; 3] = [
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET,
];

fn cupti_error(what: &str, e: CuptiError) -> String {
    // CuptiError's Debug asks CUPTI for the text and unwraps; the code alone is enough.
    format!("{what} failed: {:?}", e.0)
}

/// Makes libcupti loadable by the name cudarc asks for. It is on the loader path where
/// `LD_LIBRARY_PATH` says so; otherwise the toolkit's usual places are tried, and a library
/// opened by its full path is then found again by its soname.
fn load_library() -> Result<(), String> {
    // SAFETY: only tries to dlopen the candidate names.
    if unsafe { sys::is_culib_present() } {
        return Ok(());
    }
    let roots = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(std::path::PathBuf::from)
        .chain([std::path::PathBuf::from("/usr/local/cuda")]);
    for root in roots {
        for dir in ["extras/CUPTI/lib64", "targets/x86_64-linux/lib", "lib64"] {
            for name in ["libcupti.so.13", "libcupti.so"] {
                let path = root.join(dir).join(name);
                if !path.exists() {
                    continue;
                }
                // SAFETY: libcupti's initialisers are those of a library meant to be loaded
                // into CUDA programs; the handle is kept for the life of the process.
                if let Ok(lib) = unsafe { libloading::Library::new(&path) } {
                    std::mem::forget(lib);
                    return Ok(());
                }
            }
        }
    }
    Err("libcupti was not found on the loader path (LD_LIBRARY_PATH) or under \
         $CUDA_HOME, $CUDA_PATH or /usr/local/cuda"
        .into())
}

fn lock_records() -> std::sync::MutexGuard<'static, Vec<Span>> {
    // A panic while holding the lock leaves whole records behind; they are still good.
    RECORDS.lock().unwrap_or_else(|p| p.into_inner())
}

fn buffer_layout() -> Layout {
    // Both constants are valid (non-zero size, power-of-two alignment): this cannot fail.
    Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN).unwrap_or_else(|_| Layout::new::<u64>())
}

unsafe extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
) {
    // SAFETY: the layout is non-zero sized; CUPTI hands the buffer back to
    // `buffer_completed`, which frees it with the same layout. A null buffer of size 0 makes
    // CUPTI drop records instead of writing anywhere.
    unsafe {
        let p = alloc(buffer_layout());
        *buffer = p;
        *size = if p.is_null() { 0 } else { BUFFER_BYTES };
        *max_records = 0;
    }
}

unsafe extern "C" fn buffer_completed(
    _context: cudarc::driver::sys::CUcontext,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    let mut found = Vec::new();
    let mut record: *mut sys::CUpti_Activity = ptr::null_mut();
    // SAFETY: `buffer` holds `valid` bytes of records written by CUPTI; each record is read
    // through the prefix its kind shares in every version of its struct.
    unsafe {
        while activity::get_next_record(buffer, valid, &mut record).is_ok() {
            if let Some(span) = span_of(record) {
                found.push(span);
            }
        }
        dealloc(buffer, buffer_layout());
    }
    let mut records = lock_records();
    // Records are drained by every sample; what piles up beyond this is of no sample's use.
    if records.len() + found.len() > MAX_RECORDS {
        records.clear();
    }
    records.extend(found);
}

/// The span of one record, if it is a kernel, a copy or a memset.
///
/// # Safety
/// `record` points to a complete activity record from CUPTI.
unsafe fn span_of(record: *const sys::CUpti_Activity) -> Option<Span> {
    use sys::CUpti_ActivityKind as K;
    // SAFETY (all reads): the fields read are in the prefix shared by every version of the
    // record's struct (kernel 4 onwards, memcpy, memset); the records are packed, hence
    // the unaligned reads.
    unsafe {
        match ptr::addr_of!((*record).kind).read_unaligned() {
            K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL | K::CUPTI_ACTIVITY_KIND_KERNEL => {
                let k = record.cast::<sys::CUpti_ActivityKernel10>();
                let name = ptr::addr_of!((*k).name).read_unaligned();
                let role = if name.is_null() {
                    Role::Work
                } else {
                    role_of(CStr::from_ptr(name).to_bytes())
                };
                Some(Span {
                    role,
                    start: ptr::addr_of!((*k).start).read_unaligned(),
                    end: ptr::addr_of!((*k).end).read_unaligned(),
                })
            }
            K::CUPTI_ACTIVITY_KIND_MEMCPY => {
                let c = record.cast::<sys::CUpti_ActivityMemcpy6>();
                Some(Span {
                    role: Role::Work,
                    start: ptr::addr_of!((*c).start).read_unaligned(),
                    end: ptr::addr_of!((*c).end).read_unaligned(),
                })
            }
            K::CUPTI_ACTIVITY_KIND_MEMSET => {
                let s = record.cast::<sys::CUpti_ActivityMemset4>();
                Some(Span {
                    role: Role::Work,
                    start: ptr::addr_of!((*s).start).read_unaligned(),
                    end: ptr::addr_of!((*s).end).read_unaligned(),
                })
            }
            _ => None,
        }
    }
}

/// The measurement's kernels are PTX entry points, so CUPTI reports their names unmangled.
fn role_of(name: &[u8]) -> Role {
    if name == MARKER.as_bytes() {
        Role::Marker
    } else if name.starts_with(HELPER_PREFIX.as_bytes()) {
        Role::Helper
    } else {
        Role::Work
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(role: Role, start: u64, end: u64) -> Span {
        Span { role, start, end }
    }

    #[test]
    fn a_sample_is_the_work_between_the_two_markers() {
        let spans = [
            span(Role::Helper, 0, 50),   // flush
            span(Role::Helper, 51, 400), // spin
            span(Role::Marker, 402, 404),
            span(Role::Work, 407, 900),
            span(Role::Work, 903, 1_000),
            span(Role::Marker, 1_003, 1_005),
        ];
        // From the first kernel's start to the last one's end: the gap between them counts,
        // the markers and the front end's work around them do not.
        assert_eq!(sample_span(&spans, 0), Some(593));
    }

    #[test]
    fn records_before_the_sample_began_are_not_its_own() {
        let spans = [
            // A late record of an earlier sample, with its own markers.
            span(Role::Marker, 10, 11),
            span(Role::Work, 12, 20),
            span(Role::Marker, 21, 22),
            span(Role::Marker, 100, 101),
            span(Role::Work, 105, 205),
            span(Role::Marker, 210, 211),
        ];
        assert_eq!(sample_span(&spans, 50), Some(100));
        // Order of delivery does not matter.
        let mut reversed = spans;
        reversed.reverse();
        assert_eq!(sample_span(&reversed, 50), Some(100));
    }

    #[test]
    fn without_both_markers_or_any_work_there_is_no_span() {
        assert_eq!(sample_span(&[], 0), None);
        let one_marker = [span(Role::Marker, 0, 1), span(Role::Work, 2, 9)];
        assert_eq!(sample_span(&one_marker, 0), None);
        let no_work = [
            span(Role::Marker, 0, 1),
            span(Role::Helper, 2, 9),
            span(Role::Marker, 10, 11),
        ];
        assert_eq!(sample_span(&no_work, 0), None);
    }

    #[test]
    fn the_measurement_kernels_are_told_from_the_users() {
        assert_eq!(role_of(b"gputune_timestamp"), Role::Marker);
        assert_eq!(role_of(b"gputune_spin"), Role::Helper);
        assert_eq!(role_of(b"gputune_flush"), Role::Helper);
        assert_eq!(role_of(b"_Z9transposePfPKfi"), Role::Work);
        assert_eq!(role_of(b"sweep"), Role::Work);
    }

    #[test]
    fn starting_without_cupti_says_why_instead_of_panicking() {
        // SAFETY: only tries to dlopen.
        if unsafe { sys::is_culib_present() } || std::path::Path::new("/usr/local/cuda").exists()
        {
            crate::test_skipped("checks the path without CUPTI, and a CUDA toolkit is here");
            return;
        }
        let err = KernelClock::start().expect_err("no CUPTI on this machine");
        assert!(err.contains("libcupti"), "{err}");
    }
}
