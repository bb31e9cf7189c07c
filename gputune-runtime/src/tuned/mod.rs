//! Which variant of a `#[tune]` function runs: the run-time half of the generated dispatch.
//!
//! The build helper (`crate::build`, feature `build`) writes, for each tuned function, a
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
//! - otherwise the applied entry for the workload and the running device's model ([`model`]),
//!   else its architecture ([`arch`]), else base ([`choose`]). Where entries are per size
//!   (a function with `size(Axis = expr, …)`), the choice is resolved once into [`Rule`]s
//!   over all shapes, and each call finds the first rule that holds: a few comparisons more.
//!
//! What a bench may ask: [`planned`], the variants this process was asked to run (so that it
//! can prepare them all up front, for example compile their kernels in parallel), and
//! [`Variant::parse`], a label's parameter values (with the `NAME_PARAMS` constant that
//! `#[tune]` declares next to each function).
//!
//! Nothing else here is meant to be called by hand except [`model`], [`arch`], [`request`]
//! and [`resolved`]; the rest is public for the generated code.

mod item;
mod policy;
mod size;
mod variant;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

pub use item::{Tuned, VALUE_SEPARATOR};
pub use policy::{choose, rule_arm, rules, Device, Entry, Key, Rule, Table};
pub use size::{size_value, SizeValue};
pub use variant::Variant;

/// Overrides the architecture that picks applied entries (`sm_90`, `cpu`, …).
pub const ARCH_ENV: &str = "GPUTUNE_ARCH";
/// Overrides the device model that picks applied entries (`NVIDIA H200`, a CPU's name).
pub const DEVICE_ENV: &str = "GPUTUNE_DEVICE";

/// The low half of a [`Cache`] slot whose arm depends on the call's sizes: look it up in the
/// slot's rules. No function has 2^31 arms.
const SIZED: u32 = 1 << 31;

/// Value of an unresolved [`Cache`] slot: its generation half never matches.
const UNRESOLVED: u64 = u64::MAX;

/// Bumped by every [`request`]; a cache slot resolved in an older generation resolves again.
static GENERATION: AtomicU32 = AtomicU32::new(0);

/// Bumped by every [`plan`]: a kernel handle prepares (compiles in the background) what is
/// planned once per plan, so a further pass of the process (`--more-on-stdin`) gets its new
/// variants compiled ahead too.
static PLANS: AtomicU64 = AtomicU64::new(0);

/// How many times variants were planned in this process (see [`plan`]).
#[cfg(feature = "cuda")]
pub(crate) fn plans() -> u64 {
    PLANS.load(Ordering::SeqCst)
}

/// The resolved arm per compile-time workload of one function (one slot per workload, plus
/// one for workloads without an entry). A slot holds the generation it was resolved in (high
/// half) and the arm (low half), or `SIZED` when the arm depends on the size: the slot's
/// rules then say which (resolved once per process: the device does not change).
#[derive(Debug)]
pub struct Cache<const N: usize> {
    slots: [AtomicU64; N],
    rules: [OnceLock<Box<[Rule]>>; N],
}

impl<const N: usize> Cache<N> {
    /// An empty cache, for a `static`.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Cache<N> {
        Cache {
            slots: [const { AtomicU64::new(UNRESOLVED) }; N],
            rules: [const { OnceLock::new() }; N],
        }
    }

    /// The arm for workload `workload` of a function without a size: two relaxed loads once
    /// resolved.
    #[inline(always)]
    pub fn arm(&self, table: &Table, workload: usize) -> u32 {
        self.arm_at(table, workload, &[])
    }

    /// The arm for workload `workload` at `sizes` (the values of a function's `size(…)`
    /// axes, in order): two relaxed loads once resolved, and where the winner depends on the
    /// sizes, a look-up among its few rules.
    #[inline(always)]
    pub fn arm_at(&self, table: &Table, workload: usize, sizes: &[u64]) -> u32 {
        let i = workload.min(N - 1);
        let generation = GENERATION.load(Ordering::Relaxed);
        let value = self.slots[i].load(Ordering::Relaxed);
        if (value >> 32) as u32 == generation && value != UNRESOLVED {
            let low = value as u32;
            if low & SIZED == 0 {
                return low;
            }
            if let Some(rules) = self.rules[i].get() {
                return rule_arm(rules, sizes);
            }
        }
        self.resolve(table, i, generation, sizes)
    }

    #[cold]
    #[inline(never)]
    fn resolve(&self, table: &Table, workload: usize, generation: u32, sizes: &[u64]) -> u32 {
        let requested = with_registry(|r| r.requested.get(table.function).cloned());
        let (arm, low) = match requested.as_deref() {
            Some(label) => {
                let arm = choose(table, workload, Some(label), &device(), sizes);
                (arm, arm.unwrap_or(0))
            }
            None => {
                let rules = self.rules[workload]
                    .get_or_init(|| rules(table, workload, &device()).into_boxed_slice());
                let arm = rule_arm(rules, sizes);
                let low = if rules.len() == 1 { arm } else { SIZED };
                (Some(arm), low)
            }
        };
        // Record a miss so the runner can fail the state instead of timing base. Only the
        // first resolution since this function's last request, refresh or withdraw is what
        // its state ran: any other function's request moves the shared generation too, and
        // the call that resolves again then may be at another size.
        let resolved = Resolved {
            label: table.arms[arm.unwrap_or(0) as usize].to_string(),
            missing: requested.filter(|_| arm.is_none()),
        };
        with_registry(|r| {
            r.resolved
                .entry(table.function.to_string())
                .or_insert(resolved);
        });
        self.slots[workload].store(
            u64::from(generation) << 32 | u64::from(low),
            Ordering::Relaxed,
        );
        arm.unwrap_or(0)
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
    /// Function → every label this process will request, in order (see [`plan`]).
    planned: HashMap<String, Vec<String>>,
    /// Function → what it resolved to first since its last [`request`], [`refresh`] or
    /// [`withdraw`] (each removes the entry).
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

/// Makes `function` resolve again on its next call (and [`resolved`] say what ran then): the
/// bench runner calls it before each state of a production run, so that a per-size choice is
/// reported for the state's own size.
pub fn refresh(function: &str) {
    with_registry(|r| {
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

/// Records the variants of `function` this process will run, in order. The bench runner
/// calls this with the `--variant` list before the first state, so a bench can read it with
/// [`planned`].
pub fn plan(function: &str, labels: &[&str]) {
    with_registry(|r| {
        r.planned.insert(
            function.to_string(),
            labels.iter().map(|l| (*l).to_string()).collect(),
        );
    });
    PLANS.fetch_add(1, Ordering::SeqCst);
}

/// The variants of `function` this process was asked to run (`--variant`), in the order it
/// runs them, as labels without the function's name (`ipt_8.tpb_128`, `base`). Empty when
/// no variant was requested: the process then runs the production choice (an applied
/// `gputune.toml` entry, else base).
///
/// Verification against base ([`State::verify`](crate::State::verify)) also runs `base` in
/// every state of another variant; a bench preparing the variants should prepare base too.
///
/// ```
/// use gputune_runtime::tuned;
///
/// tuned::plan("scale", &["ipt_8.tpb_128", "ipt_1.tpb_64"]);
/// assert_eq!(tuned::planned("scale"), ["ipt_8.tpb_128", "ipt_1.tpb_64"]);
/// assert!(tuned::planned("other").is_empty());
/// ```
pub fn planned(function: &str) -> Vec<String> {
    with_registry(|r| r.planned.get(function).cloned().unwrap_or_default())
}

/// What a bench process should prepare for `function` (compile, say): [`planned`] with `base`
/// in front when it is not there already, since verification runs base in every state of
/// another variant. Empty when nothing is planned (the production choice runs, one variant).
///
/// ```
/// use gputune_runtime::tuned;
///
/// tuned::plan("saxpy", &["ipt_8.tpb_128"]);
/// assert_eq!(tuned::to_prepare("saxpy"), ["base", "ipt_8.tpb_128"]);
/// assert!(tuned::to_prepare("other").is_empty());
/// ```
pub fn to_prepare(function: &str) -> Vec<String> {
    let mut labels = planned(function);
    if !labels.is_empty() && !labels.iter().any(|l| l == "base") {
        labels.insert(0, "base".to_string());
    }
    labels
}

/// What `function` resolved to in this process, if it was called: its first resolution since
/// its last [`request`], [`refresh`] or [`withdraw`] (in a bench process: what the state ran).
pub fn resolved(function: &str) -> Option<Resolved> {
    with_registry(|r| r.resolved.get(function).cloned())
}

/// The architecture that picks applied entries: [`ARCH_ENV`] if set; else, with the `cuda`
/// feature, `sm_XY` of the current CUDA context's device (or device 0); else `cpu`.
pub fn arch() -> &'static str {
    static ARCH: OnceLock<String> = OnceLock::new();
    ARCH.get_or_init(|| {
        env(ARCH_ENV)
            .or_else(|| detected().map(|(_, arch)| arch.clone()))
            .unwrap_or_else(|| "cpu".to_string())
    })
}

/// The device model that picks applied entries, as the store records it: [`DEVICE_ENV`] if
/// set; else, with the `cuda` feature, the name of the current CUDA context's device (or
/// device 0), `NVIDIA H200`; else the CPU's model name (`/proc/cpuinfo`'s `model name`, or
/// the target architecture, `x86_64`), as the CPU backend names the device.
pub fn model() -> &'static str {
    static MODEL: OnceLock<String> = OnceLock::new();
    MODEL.get_or_init(|| {
        env(DEVICE_ENV)
            .or_else(|| detected().map(|(name, _)| name.clone()))
            .unwrap_or_else(crate::backend::cpu::model_name)
    })
}

/// The running device, [`model`] and [`arch`].
pub fn device() -> Device<'static> {
    Device {
        model: model(),
        arch: arch(),
    }
}

/// A non-empty override from the environment.
fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The CUDA device production code runs on (model name and `sm_XY`), looked up once.
fn detected() -> Option<&'static (String, String)> {
    static DETECTED: OnceLock<Option<(String, String)>> = OnceLock::new();
    DETECTED.get_or_init(cuda_device).as_ref()
}

#[cfg(feature = "cuda")]
fn cuda_device() -> Option<(String, String)> {
    crate::backend::cuda::current_device()
}

#[cfg(not(feature = "cuda"))]
fn cuda_device() -> Option<(String, String)> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_per_size_choice_is_looked_up_per_call_and_reported_per_resolution() {
        // Entries for this very machine, whatever it is: the model's below 100 and from 1000,
        // the architecture's everywhere.
        let (model, arch) = (model(), arch());
        let entry = |key, device, sizes, arm| Entry {
            workload: 0,
            key,
            device,
            sizes,
            arm,
        };
        let policy: &'static [Entry] = Box::leak(Box::new([
            entry(Key::Model, model, &[(0, 99)], 1),
            entry(Key::Model, model, &[(1000, u64::MAX)], 2),
            entry(Key::Arch, arch, &[], 3),
        ]));
        let table = Table {
            function: "tuned_test_sized",
            arms: &["base", "x_1", "x_2", "x_3"],
            policy,
        };
        let cache: Cache<2> = Cache::new();
        refresh("tuned_test_sized");
        assert_eq!(cache.arm_at(&table, 0, &[5000]), 2);
        assert_eq!(
            resolved("tuned_test_sized").map(|r| r.label),
            Some("x_2".into())
        );
        // Later calls need no resolution: inside, between and outside the model's ranges.
        for (size, arm) in [
            (0, 1),
            (99, 1),
            (100, 3),
            (999, 3),
            (1000, 2),
            (u64::MAX, 2),
        ] {
            assert_eq!(cache.arm_at(&table, 0, &[size]), arm, "{size}");
        }
        // Another function's request makes every cache resolve again (tests running beside
        // this one do the same), here at another size: still not what this state ran first.
        request("tuned_test_sized_other", "base");
        assert_eq!(cache.arm_at(&table, 0, &[50]), 1);
        assert_eq!(
            resolved("tuned_test_sized").map(|r| r.label),
            Some("x_2".into()),
            "calls after resolution record nothing"
        );
        // A refresh (a new state) reports what its first call ran.
        refresh("tuned_test_sized");
        assert_eq!(cache.arm_at(&table, 0, &[50]), 1);
        assert_eq!(
            resolved("tuned_test_sized").map(|r| r.label),
            Some("x_1".into())
        );
        // A request wins at every size; another workload has no entries (base).
        request("tuned_test_sized", "x_3");
        assert_eq!(cache.arm_at(&table, 0, &[50]), 3);
        withdraw("tuned_test_sized");
        assert_eq!(cache.arm_at(&table, 1, &[50]), 0);
        assert_eq!(cache.arm_at(&table, 0, &[50]), 1);
    }

    #[test]
    fn the_device_is_overridden_by_the_environment_or_detected() {
        // Whatever this machine is, both are named; without CUDA, the CPU's own name (what
        // the CPU backend records for the store) and `cpu`.
        assert!(!model().is_empty());
        assert!(!arch().is_empty());
        if std::env::var_os(DEVICE_ENV).is_none() && detected().is_none() {
            assert_eq!(model(), crate::backend::cpu::model_name());
        }
        if std::env::var_os(ARCH_ENV).is_none() && detected().is_none() {
            assert_eq!(arch(), "cpu");
        }
        assert_eq!(
            device(),
            Device {
                model: model(),
                arch: arch()
            }
        );
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
    fn the_plan_is_per_function_and_replaced_whole() {
        plan("tuned_test_plan", &["a_1", "base"]);
        assert_eq!(planned("tuned_test_plan"), ["a_1", "base"]);
        plan("tuned_test_plan", &[]);
        assert!(planned("tuned_test_plan").is_empty());
        assert!(planned("tuned_test_never_planned").is_empty());
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
