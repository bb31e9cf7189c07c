//! What a bench process keeps from one state to the next.
//!
//! A search runs many variants of a tuned function in one process (`--variant a,b,c`), each
//! over the same workloads. What does not depend on the variant (device buffers, inputs, an
//! exact answer) is worth making once per process: `State::with_setup` keeps such values by
//! workload, through [`take`] and [`put`].

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

/// Keeps `value` under `key` for the next [`take`].
pub(crate) fn put<K, V>(key: K, value: V)
where
    K: PartialEq + Send + 'static,
    V: Send + 'static,
{
    kept().push(Box::new((key, value)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_put_is_taken_once_by_key_and_type() {
        assert_eq!(take::<_, u64>(&("kept-test", 7u32)), None);
        put(("kept-test", 7u32), 41u64);
        // Same key, another value type: a separate entry.
        put(("kept-test", 7u32), "text");
        assert_eq!(take::<_, u64>(&("kept-test", 8u32)), None);
        assert_eq!(take(&("kept-test", 7u32)), Some(41u64));
        assert_eq!(take::<_, u64>(&("kept-test", 7u32)), None);
        assert_eq!(take(&("kept-test", 7u32)), Some("text"));
    }
}
