//! Which variant of a `#[tune]` function runs: the run-time half of the generated dispatch.
//!
//! The build helper ([`crate::build`], feature `build`) writes, for each tuned function, a
//! `match` over the *arms* compiled into this build: arm 0 is always `base`, then the
//! entries applied in `gputune.toml`, then the variants that `GPUTUNE_VARIANTS` selected.
//! The generated code keeps a [`Cache`] per function; the first call for a compile-time
//! workload resolves the arm here and every later call is two relaxed loads and the `match`.
//! A new [`request`] (a bench process running several variants one after another, or
//! verification running base for its reference) makes every cache resolve again.
//!
//! Resolution:
//! - a bench process asked to run a variant (`--variant`, see [`request`]) runs that arm of
//!   the function the bench tunes, or records that the variant is not compiled in;
//! - otherwise the applied entry for the workload and the running device's architecture
//!   ([`arch`]) runs, else base.
//!
//! Nothing here is meant to be called by hand except [`arch`], [`request`] and
//! [`resolved`]; the rest is public for the generated code.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Overrides the architecture that picks applied entries (`sm_90`, `cpu`, …).
pub const ARCH_ENV: &str = "GPUTUNE_ARCH";

/// Value of an unresolved [`Cache`] slot: its generation half never matches.
const UNRESOLVED: u64 = u64::MAX;

/// Bumped by every [`request`]; a cache slot resolved in an older generation resolves again.
static GENERATION: AtomicU32 = AtomicU32::new(0);

/// What the generated dispatch of one tuned function knows, as plain data.
#[derive(Debug)]
pub struct Table {
    /// The function's name (`scale`).
    pub function: &'static str,
    /// The label of each arm, in `match` order; `arms[0]` is `"base"`.
    pub arms: &'static [&'static str],
    /// Applied entries from `gputune.toml`.
    pub policy: &'static [Entry],
}

/// One applied entry: on `arch`, compile-time workload `workload` runs arm `arm`.
#[derive(Debug)]
pub struct Entry {
    /// Index of the compile-time workload, as the generated code numbers them.
    pub workload: usize,
    /// Device architecture: `sm_90` for compute capability 9.0, `cpu` for the CPU backend.
    pub arch: &'static str,
    /// Index into [`Table::arms`].
    pub arm: u32,
}

/// The resolved arm per compile-time workload of one function (one slot per workload, plus
/// one for workloads without an entry). A slot holds the generation it was resolved in (high
/// half) and the arm (low half).
#[derive(Debug)]
pub struct Cache<const N: usize>([AtomicU64; N]);

impl<const N: usize> Cache<N> {
    /// An empty cache, for a `static`.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Cache<N> {
        Cache([const { AtomicU64::new(UNRESOLVED) }; N])
    }

    /// The arm for workload `workload`: two relaxed loads once resolved.
    #[inline(always)]
    pub fn arm(&self, table: &Table, workload: usize) -> u32 {
        let slot = &self.0[workload.min(N - 1)];
        let generation = GENERATION.load(Ordering::Relaxed);
        let value = slot.load(Ordering::Relaxed);
        if (value >> 32) as u32 == generation && value != UNRESOLVED {
            return value as u32;
        }
        let arm = resolve(table, workload);
        slot.store(
            u64::from(generation) << 32 | u64::from(arm),
            Ordering::Relaxed,
        );
        arm
    }
}

/// Whether the type parameter `T` is the type named `name` (`f32`, `my_crate::Half`, or just
/// `Half`). `name` is how a bench's type axis names it.
#[inline(always)]
pub fn type_is<T: ?Sized>(name: &str) -> bool {
    let full = std::any::type_name::<T>();
    full == name
        || (full.len() > name.len() + 2
            && full.ends_with(name)
            && full[..full.len() - name.len()].ends_with("::"))
}

/// What a tuned function resolved to in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The label of the arm that runs (`base` when a requested variant is missing).
    pub label: String,
    /// The requested variant that is not compiled into this build, if that happened.
    pub missing: Option<String>,
}

#[derive(Default)]
struct Registry {
    /// Function → requested label (set by a bench process).
    requested: HashMap<String, String>,
    /// Function → what it resolved to last.
    resolved: HashMap<String, Resolved>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

fn with_registry<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    // A poisoned lock only means another thread panicked while holding it; the maps are
    // still consistent (every update is a single insert).
    let mut guard = registry()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    f(&mut guard)
}

/// Asks every later call of `function` to run variant `label` (`ipt_8.tpb_128` or `base`).
/// The bench runner calls this for each `--variant` in turn, and verification to run base.
pub fn request(function: &str, label: &str) {
    with_registry(|r| {
        r.requested.insert(function.to_string(), label.to_string());
        r.resolved.remove(function);
    });
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Withdraws a [`request`]: `function` runs its production choice again.
pub fn withdraw(function: &str) {
    with_registry(|r| {
        r.requested.remove(function);
        r.resolved.remove(function);
    });
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The variant requested for `function`, if any.
pub fn requested(function: &str) -> Option<String> {
    with_registry(|r| r.requested.get(function).cloned())
}

/// What `function` resolved to in this process, if it was called.
pub fn resolved(function: &str) -> Option<Resolved> {
    with_registry(|r| r.resolved.get(function).cloned())
}

/// The architecture that picks applied entries: [`ARCH_ENV`] if set; else, with the `cuda`
/// feature, `sm_XY` of the current CUDA context's device (or device 0); else `cpu`.
pub fn arch() -> &'static str {
    static ARCH: OnceLock<String> = OnceLock::new();
    ARCH.get_or_init(|| {
        std::env::var(ARCH_ENV)
            .ok()
            .filter(|a| !a.is_empty())
            .or_else(device_arch)
            .unwrap_or_else(|| "cpu".to_string())
    })
}

#[cfg(feature = "cuda")]
fn device_arch() -> Option<String> {
    crate::backend::cuda::current_arch()
}

#[cfg(not(feature = "cuda"))]
fn device_arch() -> Option<String> {
    None
}

#[cold]
#[inline(never)]
fn resolve(table: &Table, workload: usize) -> u32 {
    let requested = with_registry(|r| r.requested.get(table.function).cloned());
    let arm = choose(table, workload, requested.as_deref(), arch());
    // Record a miss so the runner can fail the state instead of timing base.
    let resolved = Resolved {
        label: table.arms[arm.unwrap_or(0) as usize].to_string(),
        missing: requested.filter(|_| arm.is_none()),
    };
    with_registry(|r| {
        r.resolved.insert(table.function.to_string(), resolved);
    });
    arm.unwrap_or(0)
}

/// The arm to run: the requested variant if any (`None` when it is not compiled in), else the
/// applied entry for `workload` on `arch`, else base.
pub fn choose(table: &Table, workload: usize, requested: Option<&str>, arch: &str) -> Option<u32> {
    if let Some(label) = requested {
        return table
            .arms
            .iter()
            .position(|a| *a == label)
            .map(|i| i as u32);
    }
    Some(
        table
            .policy
            .iter()
            .find(|e| e.workload == workload && e.arch == arch)
            .map_or(0, |e| e.arm),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    static TABLE: Table = Table {
        function: "scale",
        arms: &["base", "ipt_8.tpb_128", "ipt_4.tpb_512", "ipt_1.tpb_64"],
        policy: &[
            Entry {
                workload: 0,
                arch: "sm_90",
                arm: 1,
            },
            Entry {
                workload: 1,
                arch: "sm_90",
                arm: 2,
            },
            Entry {
                workload: 0,
                arch: "sm_80",
                arm: 2,
            },
        ],
    };

    #[test]
    fn production_picks_the_entry_for_the_architecture_else_base() {
        assert_eq!(choose(&TABLE, 0, None, "sm_90"), Some(1));
        assert_eq!(choose(&TABLE, 1, None, "sm_90"), Some(2));
        assert_eq!(choose(&TABLE, 0, None, "sm_80"), Some(2));
        // No entry for this workload on sm_80, none at all for sm_100 or an unknown workload.
        assert_eq!(choose(&TABLE, 1, None, "sm_80"), Some(0));
        assert_eq!(choose(&TABLE, 0, None, "sm_100"), Some(0));
        assert_eq!(choose(&TABLE, 2, None, "sm_90"), Some(0));
    }

    #[test]
    fn a_request_wins_over_the_policy_and_a_missing_one_is_reported() {
        assert_eq!(choose(&TABLE, 0, Some("ipt_1.tpb_64"), "sm_90"), Some(3));
        assert_eq!(choose(&TABLE, 0, Some("base"), "sm_90"), Some(0));
        assert_eq!(choose(&TABLE, 0, Some("ipt_2.tpb_64"), "sm_90"), None);
    }

    #[test]
    fn the_cache_resolves_once_and_records_what_ran() {
        static T: Table = Table {
            function: "tuned_test_cache",
            arms: &["base", "x_1", "x_2"],
            policy: &[],
        };
        static C: Cache<1> = Cache::new();
        request("tuned_test_cache", "x_2");
        assert_eq!(C.arm(&T, 0), 2);
        assert_eq!(
            resolved("tuned_test_cache"),
            Some(Resolved {
                label: "x_2".into(),
                missing: None
            })
        );
        // A later request resolves again; withdrawing it runs the production choice (base).
        request("tuned_test_cache", "x_1");
        assert_eq!(resolved("tuned_test_cache"), None);
        assert_eq!(C.arm(&T, 0), 1);
        withdraw("tuned_test_cache");
        assert_eq!(C.arm(&T, 0), 0);
        assert_eq!(
            resolved("tuned_test_cache").map(|r| r.label),
            Some("base".into())
        );
    }

    #[test]
    fn a_missing_variant_runs_base_and_says_so() {
        static T: Table = Table {
            function: "tuned_test_missing",
            arms: &["base", "x_1"],
            policy: &[],
        };
        static C: Cache<1> = Cache::new();
        request("tuned_test_missing", "x_9");
        assert_eq!(C.arm(&T, 0), 0);
        assert_eq!(
            resolved("tuned_test_missing"),
            Some(Resolved {
                label: "base".into(),
                missing: Some("x_9".into())
            })
        );
    }

    #[test]
    fn type_names_match_short_and_full_paths() {
        assert!(type_is::<f32>("f32"));
        assert!(!type_is::<f64>("f32"));
        assert!(type_is::<String>("String"));
        assert!(type_is::<String>("alloc::string::String"));
        assert!(!type_is::<String>("ring"));
    }
}
