//! What a bench process keeps from one state to the next.
//!
//! A search runs many variants of a tuned function in one process (`--variant a,b,c`), each
//! over the same workloads. What does not depend on the variant (device buffers, inputs, an
//! exact answer) is worth making once per process: [`with`] keeps such values by key.

use std::any::Any;
use std::sync::{Mutex, MutexGuard};

/// The kept values, each a boxed `(K, V)`. A static that is never dropped: the driver frees
/// device memory when the process ends, and nothing at exit waits on a device that may be in
/// trouble.
static KEPT: Mutex<Vec<Box<dyn Any + Send>>> = Mutex::new(Vec::new());

/// Locks the kept values; a poisoned lock only means a thread panicked between two whole
/// operations on the list.
fn kept() -> MutexGuard<'static, Vec<Box<dyn Any + Send>>> {
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on the value of type `V` kept under `key`, made by `make` when there is none yet,
/// and keeps it for the next call.
///
/// The value is taken out while `f` runs, so no lock is held over the work and `f` may call
/// `with` for other keys. If `make` fails, its error is returned and nothing is kept; if `f`
/// panics, the value is dropped and the next call makes it again.
///
/// ```
/// # #![allow(deprecated)]
/// use gputune_runtime::kept;
///
/// let key = ("input", 1usize << 10);
/// let first = kept::with(key, || Ok::<_, String>(vec![1.0f32; 1 << 10]), |x| x.as_ptr())?;
/// // The second call finds the same buffer instead of making another.
/// let not_again = || Err("made twice".to_string());
/// let again = kept::with(key, not_again, |x: &mut Vec<f32>| x.as_ptr())?;
/// assert_eq!(first, again);
/// # Ok::<(), String>(())
/// ```
#[deprecated(
    since = "0.1.0",
    note = "use `State::with_setup`, which keeps a workload's setup across the variants of a process and times it"
)]
pub fn with<K, V, E, R>(
    key: K,
    make: impl FnOnce() -> Result<V, E>,
    f: impl FnOnce(&mut V) -> R,
) -> Result<R, E>
where
    K: PartialEq + Send + 'static,
    V: Send + 'static,
{
    let found = {
        let mut all = kept();
        let at = all.iter().position(|entry| {
            entry
                .downcast_ref::<(K, V)>()
                .is_some_and(|(k, _)| *k == key)
        });
        at.map(|i| all.swap_remove(i))
    };
    let mut entry: Box<(K, V)> = match found.and_then(|e| e.downcast::<(K, V)>().ok()) {
        Some(entry) => entry,
        None => Box::new((key, make()?)),
    };
    let result = f(&mut entry.1);
    kept().push(entry);
    Ok(result)
}

/// Takes the value of type `V` kept under `key` out of the store, if there is one; give it
/// back with [`put`]. For callers that need the value and something else mutably at once.
pub(crate) fn take<K, V>(key: &K) -> Option<V>
where
    K: PartialEq + Send + 'static,
    V: Send + 'static,
{
    let mut all = kept();
    let at = all.iter().position(|entry| {
        entry
            .downcast_ref::<(K, V)>()
            .is_some_and(|(k, _)| k == key)
    })?;
    all.swap_remove(at)
        .downcast::<(K, V)>()
        .ok()
        .map(|entry| entry.1)
}

/// Keeps `value` under `key` for the next [`take`] or [`with`].
pub(crate) fn put<K, V>(key: K, value: V)
where
    K: PartialEq + Send + 'static,
    V: Send + 'static,
{
    kept().push(Box::new((key, value)));
}

#[cfg(test)]
#[allow(deprecated)] // the tests of the deprecated `with` itself
mod tests {
    use super::*;

    #[test]
    fn a_value_is_made_once_per_key_and_type() {
        let mut made = 0;
        for _ in 0..3 {
            let n = with(
                ("kept-test", 7u32),
                || {
                    made += 1;
                    Ok::<_, ()>(41u64)
                },
                |v| {
                    *v += 1;
                    *v
                },
            );
            assert!(n.is_ok());
        }
        assert_eq!(made, 1);
        // Same key, another value type: a separate entry.
        let other = with(("kept-test", 7u32), || Ok::<_, ()>("text"), |v| *v);
        assert_eq!(other, Ok("text"));
        assert_eq!(
            with(("kept-test", 7u32), || Err(()), |v: &mut u64| *v),
            Ok(44)
        );
    }

    #[test]
    fn a_failed_make_keeps_nothing_and_nested_calls_work() {
        let failed = with(("kept-test-fail", 1u8), || Err::<u8, _>("no"), |v| *v);
        assert_eq!(failed, Err("no"));
        let outer = with(
            ("kept-test-outer", 0u8),
            || Ok::<_, ()>(1u8),
            |outer| {
                let inner = with(("kept-test-inner", 0u8), || Ok::<_, ()>(2u8), |v| *v);
                *outer + inner.unwrap_or(0)
            },
        );
        assert_eq!(outer, Ok(3));
        assert_eq!(
            with(("kept-test-fail", 1u8), || Ok::<_, &str>(5u8), |v| *v),
            Ok(5)
        );
    }
}
