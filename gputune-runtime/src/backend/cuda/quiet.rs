//! cudarc panics where a library or a symbol is missing; these run such calls without the
//! panic's backtrace.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}
static QUIET_HOOK: Once = Once::new();

/// Runs `f`, turning a panic into `Err(message)` without printing it.
///
/// cudarc panics when a library or symbol is missing; a bench must print one clear line, not
/// a backtrace. The panic hook is wrapped once, and silenced only on this thread while `f`
/// runs, so panics elsewhere still print.
pub(super) fn quietly<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
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
