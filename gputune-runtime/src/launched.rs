//! The kernels a state launched: kernel handles note what each kernel compiled to as they
//! hand it out, and the runner takes the list into the state's record.
//!
//! A handle notes a kernel once per state: it keeps the epoch it last noted in, and
//! [`begin_state`] starts a new epoch, so the cost on the launch path is one atomic swap.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use gputune_protocol::KernelRecord;

/// The current state's epoch; 0 is never one, so a fresh handle notes its first use.
static EPOCH: AtomicU64 = AtomicU64::new(1);

/// What the current state launched, in the order first launched.
static LAUNCHED: Mutex<Vec<KernelRecord>> = Mutex::new(Vec::new());

fn launched() -> std::sync::MutexGuard<'static, Vec<KernelRecord>> {
    // The list stays whole even if a thread panicked while holding the lock.
    LAUNCHED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts a state: what earlier states launched is forgotten.
pub(crate) fn begin_state() {
    EPOCH.fetch_add(1, Ordering::SeqCst);
    launched().clear();
}

/// What the state launched since [`begin_state`].
pub(crate) fn take() -> Vec<KernelRecord> {
    std::mem::take(&mut *launched())
}

/// Runs `f` without keeping what it launches (base's run for the reference outputs, which
/// belongs to base, not to the variant being verified).
pub(crate) fn excluding<T>(f: impl FnOnce() -> T) -> T {
    let kept = take();
    let out = f();
    // A new epoch, so that a kernel first used inside `f` is noted when the state uses it.
    EPOCH.fetch_add(1, Ordering::SeqCst);
    *launched() = kept;
    out
}

/// Notes `record` for the current state, unless `seen` (the handle's own epoch) says it
/// already did.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn note(seen: &AtomicU64, record: &KernelRecord) {
    let epoch = EPOCH.load(Ordering::SeqCst);
    if seen.swap(epoch, Ordering::Relaxed) == epoch {
        return;
    }
    let mut list = launched();
    if !list.contains(record) {
        list.push(record.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str) -> KernelRecord {
        KernelRecord {
            name: name.into(),
            registers: 32,
            local_bytes: 0,
            shared_bytes: 0,
            options: vec!["-std=c++17".into()],
        }
    }

    #[test]
    fn each_kernel_is_noted_once_per_state_and_excluded_runs_leave_nothing() {
        // One test for the process-wide list, so no other test races it.
        let (a, b) = (AtomicU64::new(0), AtomicU64::new(0));
        begin_state();
        note(&a, &record("a"));
        note(&a, &record("a"));
        assert_eq!(take(), [record("a")]);
        begin_state();
        note(&a, &record("a"));
        let inner = excluding(|| {
            note(&b, &record("base"));
            note(&a, &record("a"));
            7
        });
        assert_eq!(inner, 7);
        note(&a, &record("a"));
        note(&b, &record("base"));
        assert_eq!(take(), [record("a"), record("base")]);
    }
}
