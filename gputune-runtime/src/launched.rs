//! The kernels a state launched: kernel handles note what each kernel compiled to as they
//! hand it out, and the runner takes the list into the state's record.
//!
//! A handle notes a kernel once per state: it keeps the epoch it last noted in, and
//! [`begin_state`] starts a new epoch, so the cost on the launch path is one atomic swap.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use gputune_protocol::KernelRecord;

/// The kernels launched since a state began, and that state's epoch.
struct Launched {
    /// The current state's epoch; 0 is never one, so a fresh handle notes its first use.
    epoch: AtomicU64,
    /// What the current state launched, in the order first launched.
    list: Mutex<Vec<KernelRecord>>,
}

/// The process's: one state runs at a time.
static LAUNCHED: Launched = Launched::new();

impl Launched {
    const fn new() -> Launched {
        Launched {
            epoch: AtomicU64::new(1),
            list: Mutex::new(Vec::new()),
        }
    }

    fn list(&self) -> MutexGuard<'_, Vec<KernelRecord>> {
        // The list stays whole even if a thread panicked while holding the lock.
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn begin_state(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        self.list().clear();
    }

    fn take(&self) -> Vec<KernelRecord> {
        std::mem::take(&mut *self.list())
    }

    fn excluding<T>(&self, f: impl FnOnce() -> T) -> T {
        let kept = self.take();
        let out = f();
        // A new epoch, so that a kernel first used inside `f` is noted when the state uses it.
        self.epoch.fetch_add(1, Ordering::SeqCst);
        *self.list() = kept;
        out
    }

    fn note(&self, seen: &AtomicU64, record: &KernelRecord) {
        let epoch = self.epoch.load(Ordering::SeqCst);
        if seen.swap(epoch, Ordering::Relaxed) == epoch {
            return;
        }
        let mut list = self.list();
        if !list.contains(record) {
            list.push(record.clone());
        }
    }
}

/// Starts a state: what earlier states launched is forgotten.
pub(crate) fn begin_state() {
    LAUNCHED.begin_state();
}

/// What the state launched since [`begin_state`].
pub(crate) fn take() -> Vec<KernelRecord> {
    LAUNCHED.take()
}

/// Runs `f` without keeping what it launches (base's run for the reference outputs, which
/// belongs to base, not to the variant being verified).
pub(crate) fn excluding<T>(f: impl FnOnce() -> T) -> T {
    LAUNCHED.excluding(f)
}

/// Notes `record` for the current state, unless `seen` (the handle's own epoch) says it
/// already did.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn note(seen: &AtomicU64, record: &KernelRecord) {
    LAUNCHED.note(seen, record);
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
        // A list of its own: the runner's tests run states on the process's list beside it.
        let launched = Launched::new();
        let (a, b) = (AtomicU64::new(0), AtomicU64::new(0));
        launched.begin_state();
        launched.note(&a, &record("a"));
        launched.note(&a, &record("a"));
        assert_eq!(launched.take(), [record("a")]);
        launched.begin_state();
        launched.note(&a, &record("a"));
        let inner = launched.excluding(|| {
            launched.note(&b, &record("base"));
            launched.note(&a, &record("a"));
            7
        });
        assert_eq!(inner, 7);
        launched.note(&a, &record("a"));
        launched.note(&b, &record("base"));
        assert_eq!(launched.take(), [record("a"), record("base")]);
    }
}
